// Package checkpoints holds the implementations of flow.Checkpointer: the
// durable store the engine uses in production and a store in memory for tests.
//
//   - SQLite keeps threads, checkpoints and pending writes in one SQLite file
//     (WAL, synchronous=NORMAL with one Sync per run, busy timeout). Several processes may share the
//     file: Put is a compare-and-set on the thread's head inside a BEGIN
//     IMMEDIATE transaction, so two processes can never fork a thread.
//   - Memory keeps the same data in maps behind a mutex. It copies on the way
//     in and on the way out, so callers never alias stored data.
//   - Buffer keeps Put and PutWrites over a store in memory until Flush
//     writes them all in one durable transaction: the fast path of a batch.
//     It is the flow.WriteBuffer that SQLite.NewBuffer makes (flow.Bufferer),
//     and checkpoints/postgres's Store.NewBuffer; what differs per store is
//     its BufferBase (buffer.go).
//
// Optional powers of flow, each asserted at compile time where it is
// implemented: SQLite is a flow.Syncer, flow.DurableWriter, flow.HeadWriter,
// flow.Pruner and flow.Bufferer; Memory is a flow.HeadWriter.
//
// All three run the conformance suite in checkpoints/checkpointstest:
//
//	checkpointstest.Run(t, func(t *testing.T) flow.Checkpointer {
//		path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
//		s, err := checkpoints.OpenSQLite(t.Context(), path, checkpoints.SQLiteOptions{Create: true})
//		if err != nil {
//			t.Fatal(err)
//		}
//		t.Cleanup(func() { s.Close() })
//		return s
//	})
//
// Rules every store keeps:
//
//   - A checkpoint comes back as it was put: Values, Metadata.Writes and
//     Write.Value byte for byte, CreatedAt in UTC (without a monotonic clock
//     reading), Next nil or empty as given. Store-made fields: Seq, and
//     PendingWrites on Get. An empty Metadata.Writes map comes back nil.
//   - JSON fields (Values, Write.Value) are nil or valid JSON; Metadata.Writes
//     values are valid JSON. Anything else is refused before storing.
//   - SQLite stores CreatedAt as int64 Unix nanoseconds (NULL for the zero
//     time), so it refuses any other time outside 1677-09-21 to 2262-04-11.
//   - Pending writes may only be saved against a checkpoint that exists
//     (ErrUnknownCheckpoint otherwise), so deleting a thread never races with a
//     late writer into orphan rows.
package checkpoints

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"assistant/flow"
)

// ErrUnknownCheckpoint is returned (wrapped) by PutWrites when the thread has
// no checkpoint with the given id, for example because the thread was deleted.
var ErrUnknownCheckpoint = errors.New("unknown checkpoint")

// validateCheckpoint refuses what the stores could not give back unchanged.
func validateCheckpoint(cp *flow.Checkpoint) error {
	switch {
	case cp == nil:
		return errors.New("put checkpoint: nil checkpoint")
	case cp.ThreadID == "":
		return errors.New("put checkpoint: empty thread id")
	case cp.ID == "":
		return fmt.Errorf("put checkpoint in thread %s: empty checkpoint id", cp.ThreadID)
	case cp.ID == cp.ParentID:
		return fmt.Errorf("put checkpoint %s/%s: checkpoint is its own parent", cp.ThreadID, cp.ID)
	}
	if cp.Values != nil && !json.Valid(cp.Values) {
		return fmt.Errorf("put checkpoint %s/%s: values are not valid JSON", cp.ThreadID, cp.ID)
	}
	for node, w := range cp.Metadata.Writes {
		if !json.Valid(w) {
			return fmt.Errorf("put checkpoint %s/%s: metadata write of node %q is not valid JSON", cp.ThreadID, cp.ID, node)
		}
	}
	return nil
}

// validateWrites refuses pending writes whose value is not JSON.
func validateWrites(threadID, checkpointID string, writes []flow.Write) error {
	if threadID == "" || checkpointID == "" {
		return fmt.Errorf("put writes: empty thread id %q or checkpoint id %q", threadID, checkpointID)
	}
	for _, w := range writes {
		if w.Value != nil && !json.Valid(w.Value) {
			return fmt.Errorf("put writes %s/%s: value of task %s (%s %d) is not valid JSON",
				threadID, checkpointID, w.TaskID, w.Kind, w.Idx)
		}
	}
	return nil
}

// cloneCheckpoint returns a deep copy of cp without PendingWrites, normalized
// the way every store gives checkpoints back: CreatedAt in UTC (which also
// drops the monotonic clock reading) and an empty Metadata.Writes as nil.
func cloneCheckpoint(cp *flow.Checkpoint) *flow.Checkpoint {
	c := *cp
	c.Values = bytes.Clone(cp.Values)
	c.Next = slices.Clone(cp.Next)
	c.CreatedAt = cp.CreatedAt.UTC()
	c.Metadata.Writes = nil
	if len(cp.Metadata.Writes) > 0 {
		c.Metadata.Writes = make(map[string]json.RawMessage, len(cp.Metadata.Writes))
		for k, v := range cp.Metadata.Writes {
			c.Metadata.Writes[k] = bytes.Clone(v)
		}
	}
	c.PendingWrites = nil
	return &c
}

// cloneWrite returns a copy of w that shares no memory with it.
func cloneWrite(w flow.Write) flow.Write {
	w.Value = bytes.Clone(w.Value)
	return w
}

// mergeWrites stores copies of writes in byCheckpoint[checkpointID], a
// write replacing the stored one with the same (TaskID, Kind, Idx), and
// returns the copies in the order given.
func mergeWrites(byCheckpoint map[string]map[writeKey]flow.Write, checkpointID string, writes []flow.Write) []flow.Write {
	ws := byCheckpoint[checkpointID]
	if ws == nil {
		ws = make(map[writeKey]flow.Write, len(writes))
		byCheckpoint[checkpointID] = ws
	}
	copies := make([]flow.Write, len(writes))
	for i, w := range writes {
		copies[i] = cloneWrite(w)
		ws[writeKey{w.TaskID, w.Kind, w.Idx}] = copies[i]
	}
	return copies
}

// matches reports whether cp passes the Source and Step filters of opts
// (flow.ListOptions); Limit and Before are the caller's to apply.
func matches(cp *flow.Checkpoint, opts flow.ListOptions) bool {
	return (opts.Source == "" || cp.Metadata.Source == opts.Source) &&
		(opts.Step == nil || cp.Metadata.Step == *opts.Step)
}

// compareWrites orders pending writes by (TaskID, Kind, Idx), the order Get
// returns them in.
func compareWrites(a, b flow.Write) int {
	if c := strings.Compare(a.TaskID, b.TaskID); c != 0 {
		return c
	}
	if c := strings.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	return a.Idx - b.Idx
}

// encodeMetadata writes the parts of m that have no column of their own
// (Writes and Waiting) as one JSON object, and "" when both are empty: Source
// and Step are stored in columns. It does not use json.Marshal because that
// compacts (and HTML-escapes) every json.RawMessage in Writes, and a
// checkpoint must come back byte for byte. Callers validate Writes first.
func encodeMetadata(m flow.Metadata) (string, error) {
	if len(m.Writes) == 0 && len(m.Waiting) == 0 {
		return "", nil
	}
	var b strings.Builder
	b.WriteByte('{')
	if len(m.Writes) > 0 {
		b.WriteString(`"writes":{`)
		for i, node := range slices.Sorted(maps.Keys(m.Writes)) {
			if i > 0 {
				b.WriteByte(',')
			}
			key, err := json.Marshal(node)
			if err != nil {
				return "", err
			}
			b.Write(key)
			b.WriteByte(':')
			b.Write(m.Writes[node])
		}
		b.WriteByte('}')
	}
	if len(m.Waiting) > 0 {
		// Join progress: without it a join whose branches finish at
		// different checkpoints would never fire after a reload.
		w, err := json.Marshal(m.Waiting)
		if err != nil {
			return "", err
		}
		if len(m.Writes) > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"waiting":`)
		b.Write(w)
	}
	b.WriteByte('}')
	return b.String(), nil
}

// GetContext is the context an error of a store's Get says: "get
// checkpoint THREAD/ID", or "get the head checkpoint of THREAD" when
// checkpointID is "" (the thread's head), so no message names an empty
// id.
func GetContext(threadID, checkpointID string) string {
	if checkpointID == "" {
		return "get the head checkpoint of " + threadID
	}
	return "get checkpoint " + threadID + "/" + checkpointID
}
