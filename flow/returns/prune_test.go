package returns

import "assistant/checkpoints"

// The SQLite checkpoint store has the power Service.Prune looks for.
var _ Pruner = (*checkpoints.SQLite)(nil)
