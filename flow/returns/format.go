package returns

import (
	"encoding/json"
	"fmt"

	"assistant/flow"
)

// State format versions (flow.Graph.StateFormat): the version of the JSON
// shape of State and BatchState stored in every checkpoint. A change that an
// older stored state would not decode into correctly bumps the version and
// adds an upgrade from the old shape below, so a task parked by an older
// build resumes with this one.
const (
	// StateFormat is the format of State. 1: the shape since the first
	// release (testdata/fixtures/v1 holds states of this format).
	StateFormat = 1
	// BatchStateFormat is the format of BatchState.
	BatchStateFormat = 1
)

// stateUpgrades turn a stored State of format v into format v+1. Keep every
// entry for as long as a checkpoint of that format may exist.
var stateUpgrades = map[int]flow.Upgrade{}

// batchStateUpgrades are the upgrades of BatchState.
var batchStateUpgrades = map[int]flow.Upgrade{}

// decodeAt upgrades a state stored at format to want and decodes it into S,
// as the engine does when it reads a checkpoint. History uses it to tell,
// checkpoint by checkpoint, which states no longer decode.
func decodeAt[S any](raw json.RawMessage, format, want int, upgrades map[int]flow.Upgrade) (S, error) {
	var s S
	if format == 0 {
		format = 1
	}
	if format > want {
		return s, fmt.Errorf("written by a newer state format %d (this build reads up to %d)", format, want)
	}
	b := []byte(raw)
	for v := format; v < want; v++ {
		up := upgrades[v]
		if up == nil {
			return s, fmt.Errorf("no upgrade from state format %d", v)
		}
		var err error
		if b, err = up(b); err != nil {
			return s, fmt.Errorf("upgrade from state format %d: %w", v, err)
		}
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, err
	}
	return s, nil
}
