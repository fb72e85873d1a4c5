package returns

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"assistant/flow"
	"assistant/runs"
)

// History is what Service.History reads of a task: its checkpoints
// newest first and its timeline steps in order.
type History struct {
	Task        string              `json:"task"`
	Kind        string              `json:"kind"` // runs.KindReturn or KindBatch
	Checkpoints []CheckpointSummary `json:"checkpoints"`
	Steps       []runs.TimelineStep `json:"steps"`
	// Decisions is the task's decision trail from the business file: who
	// answered what, when, bound to which draft version ([] when none).
	Decisions []DecisionView `json:"decisions"`
	// Holder is the process that holds the task, as show names it
	// (View.Holder): alive false means it is gone and its running step
	// was cut short. nil when none is named.
	Holder *HolderView `json:"holder"`
	// endedUnrecorded: show reads the task ended while its record does
	// not say so (stepsNow).
	endedUnrecorded bool
}

// CheckpointSummary is one checkpoint of a task's history.
type CheckpointSummary struct {
	ID         string    `json:"id"`
	Seq        int64     `json:"seq"` // position in the thread, 1 for the first
	Step       int       `json:"step"`
	Source     string    `json:"source"` // input, loop or update
	Next       []string  `json:"next"`
	Breakpoint string    `json:"breakpoint,omitempty"`
	CreatedAt  time.Time `json:"created_at"` // UTC
	Format     int       `json:"format"`     // state format version as stored
	// Values is the state as stored (before any upgrade), so a state that
	// no longer decodes can still be read.
	Values json.RawMessage `json:"values"`
	// Changes are the state fields that differ from the previous (older)
	// checkpoint, in field order; the thread's first checkpoint lists every
	// field it sets.
	Changes []FieldChange `json:"changes"`
	// DecodeError says why the state does not decode with this build (the
	// checkpoint is kept as it is); "" when it decodes.
	DecodeError string `json:"decode_error,omitempty"`
}

// FieldChange is one top-level state field that changed between two
// consecutive checkpoints. Old and New are JSON; nil means absent.
type FieldChange struct {
	Field string          `json:"field"`
	Old   json.RawMessage `json:"old"`
	New   json.RawMessage `json:"new"`
}

// History returns the task's checkpoints (newest first, each with the state
// fields it changed), its timeline steps and its decision trail; the
// owner and the approvers the owner granted may read it. A checkpoint whose state no
// longer decodes is listed with DecodeError and its stored values: history
// is how a person finds it. Errors: ErrInvalid, ErrNotFound (unknown task or
// another user's), storage errors.
func (s *Service) History(ctx context.Context, task, user string) (*History, error) {
	t, err := s.decidable(ctx, task, user)
	if err != nil {
		return nil, err
	}
	return judgedNow(ctx, s, t, func(t runs.TaskRecord, first bool) (*History, bool, error) {
		h, err := s.historyOf(ctx, t, first)
		// A task read ended though its record is not (stepsNow) may
		// have ended after its steps were read: look again as for a
		// holder judged gone.
		return h, err == nil && (judgedGone(h.Holder) || h.endedUnrecorded), err
	})
}

// historyOf is History of the task whose record is t; first is whether it
// is History's first look (fault point history:before-holder).
func (s *Service) historyOf(ctx context.Context, t runs.TaskRecord, first bool) (*History, error) {
	kind := t.Kind
	decode := func(cp *flow.Checkpoint) error {
		_, err := decodeAt[State](cp.Values, cp.Format, StateFormat, stateUpgrades)
		return err
	}
	if kind == runs.KindBatch {
		decode = func(cp *flow.Checkpoint) error {
			_, err := decodeAt[BatchState](cp.Values, cp.Format, BatchStateFormat, batchStateUpgrades)
			return err
		}
	}
	cps, err := s.cps.List(ctx, t.ID, flow.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", t.ID, err)
	}
	steps, err := s.runs.Steps(ctx, t.ID)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", t.ID, err)
	}
	v, err := s.withTrail(ctx, &View{Task: t.ID})
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", t.ID, err)
	}
	h := &History{Task: t.ID, Kind: kind, Checkpoints: make([]CheckpointSummary, 0, len(cps)), Steps: steps, Decisions: v.Decisions}
	if h.Steps == nil {
		h.Steps = []runs.TimelineStep{}
	}
	if first {
		Fault("history:before-holder")
	}
	s.stepsNow(ctx, h, t)
	for i, cp := range cps {
		var older json.RawMessage
		if i+1 < len(cps) {
			older = cps[i+1].Values
		}
		c := CheckpointSummary{
			ID: cp.ID, Seq: cp.Seq, Step: cp.Metadata.Step, Source: cp.Metadata.Source,
			Next: append([]string{}, cp.Next...), Breakpoint: cp.Breakpoint,
			CreatedAt: cp.CreatedAt, Format: cp.Format, Values: cp.Values,
			Changes: diffFields(older, cp.Values),
		}
		if err := decode(cp); err != nil {
			c.DecodeError = (&flow.StateDecodeError{ThreadID: cp.ThreadID, CheckpointID: cp.ID, Format: cp.Format, Err: err}).Error()
		}
		h.Checkpoints = append(h.Checkpoints, c)
	}
	return h, nil
}

// diffFields compares two stored states field by field. Nested objects are
// compared field by field too, named with dots ("draft.expires_at"); arrays
// and other values are compared whole. A state that is not a JSON object
// counts as one field "$".
func diffFields(older, newer json.RawMessage) []FieldChange {
	oldFields, newFields := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	flatten("", older, oldFields)
	flatten("", newer, newFields)
	keys := slices.Collect(maps.Keys(oldFields))
	for k := range newFields {
		if _, ok := oldFields[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := []FieldChange{}
	for _, k := range keys {
		o, n := oldFields[k], newFields[k]
		if equalJSON(o, n) {
			continue
		}
		out = append(out, FieldChange{Field: k, Old: o, New: n})
	}
	return out
}

// flatten adds the leaves of raw to out, keyed by their dotted path under
// prefix. null and absent values add nothing.
func flatten(prefix string, raw json.RawMessage, out map[string]json.RawMessage) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return
	}
	var m map[string]json.RawMessage
	if t[0] != '{' || json.Unmarshal(t, &m) != nil {
		if prefix == "" {
			prefix = "$"
		}
		out[prefix] = raw
		return
	}
	for k, v := range m {
		if prefix != "" {
			k = prefix + "." + k
		}
		flatten(k, v, out)
	}
}

// equalJSON compares two JSON values by meaning (key order, spacing), and
// falls back to bytes for text that is not JSON.
func equalJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return bytes.Equal(ca, cb)
}

// stepsNow closes, in h, the timeline steps of task t that its record
// says can no longer run on, as show tells the task (asNow): a step still
// running when t is interrupted was cut short by the stop, which ended it
// at the stop's time (the record's updated_at), as its holder records when
// it lets go (runs.MsgInterrupted); a step still running when the holder
// of a running t is gone was cut short by its process's end, at a time no
// record holds (runs.MsgProcessGone, ended_at zero). A task show reads
// ended (asShown: a record left running whose run or application the
// business file holds ended) names no holder and cuts nothing short;
// h.endedUnrecorded says so when its record is not ended.
// h.Holder is the holder show names. The stored timeline is not changed;
// the process that continues the run settles it (runner.settleSteps).
func (s *Service) stepsNow(ctx context.Context, h *History, t runs.TaskRecord) {
	shown := s.asShown(ctx, t)
	if endedStatus(shown.Status) {
		h.endedUnrecorded = !endedStatus(t.Status)
		return
	}
	v := &View{Status: shown.Status}
	s.addHolder(v, t.Lease)
	h.Holder = v.Holder
	gone := shown.Status == StatusRunning && v.Holder != nil && !v.Holder.Alive
	if shown.Status != StatusInterrupted && !gone {
		return
	}
	for i := range h.Steps {
		st := &h.Steps[i]
		if st.Status != runs.StepRunning {
			continue
		}
		st.Status, st.Error = runs.StepFailed, runs.MsgProcessGone
		if !gone {
			st.Error, st.EndedAt = runs.MsgInterrupted, t.UpdatedAt.UTC()
		}
	}
}
