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
	// StateFormat is the format of State.
	//  1: the shape of the first release (testdata/fixtures/v1 holds states
	//     of this format): "draft" is the whole business.Draft, "trace"
	//     lists the nodes that completed.
	//  2: "draft" keeps only draft_id and expires_at (its order, reason,
	//     user and task are the state's own fields); no "trace" (the
	//     checkpoint chain and the timeline say which nodes ran).
	StateFormat = 2
	// BatchStateFormat is the format of BatchState.
	BatchStateFormat = 1
)

// stateUpgrades turn a stored State of format v into format v+1. Keep every
// entry for as long as a checkpoint of that format may exist.
var stateUpgrades = map[int]flow.Upgrade{1: upgradeState1}

// upgradeState1 turns a State of format 1 into format 2: the draft keeps
// draft_id and expires_at, its order and reason fill the state's when
// those are missing or differ (the draft is what was prepared and will be
// submitted), and trace is dropped. Other fields are kept as they are.
func upgradeState1(old []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(old, &m); err != nil {
		return nil, err
	}
	delete(m, "trace")
	if raw, ok := m["draft"]; ok && string(raw) != "null" {
		var d struct {
			ID        json.RawMessage `json:"draft_id"`
			OrderID   string          `json:"order_id"`
			Reason    string          `json:"reason"`
			ExpiresAt json.RawMessage `json:"expires_at"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("draft: %w", err)
		}
		ref := map[string]json.RawMessage{}
		if d.ID != nil {
			ref["draft_id"] = d.ID
		}
		if d.ExpiresAt != nil {
			ref["expires_at"] = d.ExpiresAt
		}
		var err error
		if m["draft"], err = json.Marshal(ref); err != nil {
			return nil, err
		}
		for field, v := range map[string]string{"order": d.OrderID, "reason": d.Reason} {
			if v == "" {
				continue
			}
			if m[field], err = json.Marshal(v); err != nil {
				return nil, err
			}
		}
	}
	return json.Marshal(m)
}

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
