package checkpoints

import (
	"context"
	"fmt"

	"assistant/internal/sqlite"
)

// ErrPairMismatch: the checkpoint file carries another data dir's identity
// than the business file beside it (sqlite.ErrPairMismatch).
var ErrPairMismatch = sqlite.ErrPairMismatch

// DataDirID returns the data dir identity the checkpoint file carries (a
// UUID, sqlite.DataDirTable), written when the file was made or migrated
// to schema 4: the identity of the business file beside it, or a new one.
// The business file is then opened with it (business.Options.DataDirID)
// and refused if it carries another. "" for a view of a file that has
// none. Errors: reading the file.
func (s *SQLite) DataDirID(ctx context.Context) (string, error) {
	id, err := sqlite.DataDirID(ctx, s.db)
	if err != nil {
		return "", fmt.Errorf("checkpoints: data dir identity: %w", err)
	}
	return id, nil
}
