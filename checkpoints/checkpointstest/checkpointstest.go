// Package checkpointstest is the conformance suite of flow.Checkpointer. Every
// store runs it from its own test:
//
//	func TestMemory(t *testing.T) {
//		checkpointstest.Run(t, func(t *testing.T) flow.Checkpointer {
//			return checkpoints.NewMemory()
//		})
//	}
//
// The suite only uses the flow contract, so a new store (PostgreSQL, say) adds
// one constructor and no test file.
//
// RunBuffer is the suite of checkpoints.Buffer over a store that is a
// flow.Bufferer: the conformance suite over the buffer, then Flush,
// Discard, Preload and fencing against the store and a second handle on
// its data (BufferStores).
package checkpointstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"assistant/flow"
)

// Run runs the conformance suite as subtests of t. newStore returns an empty
// store for one subtest; it registers its own cleanup (t.Cleanup). Subtests
// run in parallel, each with its own store.
func Run(t *testing.T, newStore func(t *testing.T) flow.Checkpointer) {
	t.Helper()
	for _, tc := range []struct {
		name string
		test func(t *testing.T, s flow.Checkpointer)
	}{
		{"PutAndGetHead", testPutAndGetHead},
		{"PutAssignsSeq", testPutAssignsSeq},
		{"GetByID", testGetByID},
		{"UnknownGivesNil", testUnknownGivesNil},
		{"RoundTripUnchanged", testRoundTripUnchanged},
		{"CallersCannotAliasStoredData", testNoAliasing},
		{"ListNewestFirst", testListNewestFirst},
		{"ListFilters", testListFilters},
		{"PendingWritesReturnedWithCheckpoint", testPendingWrites},
		{"PutWritesTwiceIsIdempotent", testPutWritesIdempotent},
		{"NewCheckpointStartsWithoutPendingWrites", testNewCheckpointNoWrites},
		{"PutWritesUnknownCheckpointFails", testPutWritesUnknownCheckpoint},
		{"DeleteThreadKeepsOtherThreads", testDeleteThread},
		{"DeleteMissingThreadIsNoop", testDeleteMissingThread},
		{"PutRefusesStaleParent", testConflict},
		{"PutWritesAtHeadRefusesAnotherHead", testPutWritesAtHead},
		{"FencedWriterRefusedAfterTakeover", testFenced},
		{"ConcurrentPutSameParentOneWins", testConcurrentSameParent},
		{"ConcurrentWritersOnDifferentThreads", testConcurrentThreads},
		{"OrderIsBySeqWhenTheClockStepsBack", testClockStepsBack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.test(t, newStore(t))
		})
	}
}

// newID returns a fresh time-ordered checkpoint id.
func newID(tb testing.TB) string {
	tb.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		tb.Fatalf("uuid: %v", err)
	}
	return id.String()
}

// newCheckpoint returns a loop checkpoint of thread whose parent is parent.
func newCheckpoint(tb testing.TB, thread, parent string, step int) *flow.Checkpoint {
	tb.Helper()
	source := flow.SourceLoop
	if step < 0 {
		source = flow.SourceInput
	}
	return &flow.Checkpoint{
		ThreadID:  thread,
		ID:        newID(tb),
		ParentID:  parent,
		Format:    1,
		Values:    json.RawMessage(fmt.Sprintf(`{"step":%d}`, step)),
		Next:      []string{"node"},
		Metadata:  flow.Metadata{Source: source, Step: step},
		CreatedAt: time.Now().UTC(),
	}
}

// mustPut puts cp and fails the test on error.
func mustPut(tb testing.TB, s flow.Checkpointer, cp *flow.Checkpoint) {
	tb.Helper()
	if err := s.Put(context.Background(), cp); err != nil {
		tb.Fatalf("Put(%s/%s): %v", cp.ThreadID, cp.ID, err)
	}
}

// mustChain puts n checkpoints on thread (steps -1, 0, 1 …) and returns them
// oldest first.
func mustChain(tb testing.TB, s flow.Checkpointer, thread string, n int) []*flow.Checkpoint {
	tb.Helper()
	var cps []*flow.Checkpoint
	parent := ""
	for i := range n {
		cp := newCheckpoint(tb, thread, parent, i-1)
		mustPut(tb, s, cp)
		cps = append(cps, cp)
		parent = cp.ID
	}
	return cps
}

// mustGet gets a checkpoint and fails the test on error.
func mustGet(tb testing.TB, s flow.Checkpointer, thread, id string) *flow.Checkpoint {
	tb.Helper()
	cp, err := s.Get(context.Background(), thread, id)
	if err != nil {
		tb.Fatalf("Get(%s, %q): %v", thread, id, err)
	}
	return cp
}

// mustPutWrites saves writes and fails the test on error.
func mustPutWrites(tb testing.TB, s flow.Checkpointer, thread, id string, writes ...flow.Write) {
	tb.Helper()
	if err := s.PutWrites(context.Background(), thread, id, writes); err != nil {
		tb.Fatalf("PutWrites(%s, %s): %v", thread, id, err)
	}
}

// mustList lists checkpoints and returns their ids, failing on error.
func mustList(tb testing.TB, s flow.Checkpointer, thread string, opts flow.ListOptions) []string {
	tb.Helper()
	cps, err := s.List(context.Background(), thread, opts)
	if err != nil {
		tb.Fatalf("List(%s, %+v): %v", thread, opts, err)
	}
	ids := []string{}
	for _, cp := range cps {
		if cp.PendingWrites != nil {
			tb.Errorf("List(%s): checkpoint %s has pending writes %v, want none", thread, cp.ID, cp.PendingWrites)
		}
		ids = append(ids, cp.ID)
	}
	return ids
}

// withSeq returns a copy of cp as a store gives it back: Seq set, no writes.
func withSeq(cp *flow.Checkpoint, seq int64) *flow.Checkpoint {
	c := *cp
	c.Seq = seq
	c.PendingWrites = nil
	return &c
}

// checkEqual fails when got differs from want in any field.
func checkEqual(tb testing.TB, what string, got, want *flow.Checkpoint) {
	tb.Helper()
	if !reflect.DeepEqual(got, want) {
		tb.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func testPutAndGetHead(t *testing.T, s flow.Checkpointer) {
	cps := mustChain(t, s, "t1", 3)
	checkEqual(t, "Get head", mustGet(t, s, "t1", ""), withSeq(cps[2], 3))
}

func testPutAssignsSeq(t *testing.T, s flow.Checkpointer) {
	parent := ""
	for want := int64(1); want <= 3; want++ {
		cp := newCheckpoint(t, "t1", parent, int(want)-2)
		cp.Seq = 42 // the store assigns Seq; what the caller sets is ignored
		mustPut(t, s, cp)
		if cp.Seq != want {
			t.Errorf("Put set Seq = %d, want %d", cp.Seq, want)
		}
		if got := mustGet(t, s, "t1", cp.ID); got == nil || got.Seq != want {
			t.Errorf("Get(%s).Seq = %v, want %d", cp.ID, got, want)
		}
		parent = cp.ID
	}
}

func testGetByID(t *testing.T, s flow.Checkpointer) {
	cps := mustChain(t, s, "t1", 3)
	for i, cp := range cps {
		checkEqual(t, fmt.Sprintf("Get(%d)", i), mustGet(t, s, "t1", cp.ID), withSeq(cp, int64(i+1)))
	}
}

func testUnknownGivesNil(t *testing.T, s flow.Checkpointer) {
	cps := mustChain(t, s, "t1", 2)
	other := mustChain(t, s, "t2", 1)
	for _, tc := range []struct {
		name, thread, id string
	}{
		{"UnknownThreadHead", "nope", ""},
		{"UnknownThreadID", "nope", cps[0].ID},
		{"UnknownID", "t1", newID(t)},
		{"IDOfAnotherThread", "t1", other[0].ID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp, err := s.Get(context.Background(), tc.thread, tc.id)
			if cp != nil || err != nil {
				t.Errorf("Get(%s, %q) = %+v, %v; want nil, nil", tc.thread, tc.id, cp, err)
			}
		})
	}
	t.Run("ListUnknownThread", func(t *testing.T) {
		if ids := mustList(t, s, "nope", flow.ListOptions{}); len(ids) != 0 {
			t.Errorf("List(unknown) = %v, want empty", ids)
		}
	})
}

// testRoundTripUnchanged puts checkpoints with every field set, and with
// every optional one left out, and checks Get and List give them back as
// they were put.
func testRoundTripUnchanged(t *testing.T, s flow.Checkpointer) {
	for _, tc := range roundTripCases() {
		t.Run(tc.name, func(t *testing.T) {
			cp := newCheckpoint(t, "t-"+tc.name, "", -1)
			tc.modify(cp)
			want := withSeq(cp, 1)
			mustPut(t, s, cp)
			checkEqual(t, "Get head", mustGet(t, s, cp.ThreadID, ""), want)
			checkEqual(t, "Get by id", mustGet(t, s, cp.ThreadID, cp.ID), want)
			cps, err := s.List(context.Background(), cp.ThreadID, flow.ListOptions{})
			if err != nil || len(cps) != 1 {
				t.Fatalf("List = %v, %v; want one checkpoint", cps, err)
			}
			checkEqual(t, "List", cps[0], want)
		})
	}
	t.Run("CreatedAtComesBackInUTC", func(t *testing.T) { testCreatedAtInUTC(t, s) })
	t.Run("WriteFieldsRoundTrip", func(t *testing.T) { testWriteFieldsRoundTrip(t, s) })
}

// roundTripCase changes a fresh checkpoint into one testRoundTripUnchanged
// puts and reads back.
type roundTripCase struct {
	name   string
	modify func(cp *flow.Checkpoint)
}

// roundTripCases are the checkpoints testRoundTripUnchanged puts.
func roundTripCases() []roundTripCase {
	created := time.Date(2026, 3, 1, 12, 30, 45, 123456789, time.UTC)
	return []roundTripCase{
		{"AllFields", func(cp *flow.Checkpoint) {
			cp.Format = 7
			cp.Values = json.RawMessage(`{"order":"A3003","trace":["lookup","prepare"],"n":1.5,"html":"<b>&</b>"}`)
			cp.Next = []string{"review", "submit"}
			cp.Breakpoint = "before:review"
			cp.Metadata = flow.Metadata{Source: flow.SourceUpdate, Step: 4, Writes: map[string]json.RawMessage{
				"prepare": json.RawMessage(`{"draft_id":"d-1"}`),
				"lookup":  json.RawMessage(`"ok"`),
			}, Waiting: map[string][]string{"join": {"a", "b"}}}
			cp.CreatedAt = created
		}},
		{"ZeroOptionalFields", func(cp *flow.Checkpoint) {
			cp.Format = 0
			cp.Values = nil
			cp.Next = nil
			cp.Breakpoint = ""
			cp.Metadata = flow.Metadata{Source: flow.SourceInput, Step: -1}
			cp.CreatedAt = time.Time{}
		}},
		{"EmptyNextStaysEmpty", func(cp *flow.Checkpoint) {
			cp.Next = []string{}
		}},
		{"JSONKeepsItsBytes", func(cp *flow.Checkpoint) {
			cp.Values = json.RawMessage("{\n  \"b\": 1,\n  \"a\": \"\\u00e9\"\n}")
			cp.Metadata.Writes = map[string]json.RawMessage{"node": json.RawMessage(`{ "x" : [1, 2] }`)}
		}},
	}
}

// testCreatedAtInUTC puts a checkpoint made in another zone, with a
// monotonic clock reading, and checks it comes back as the same instant in
// UTC.
func testCreatedAtInUTC(t *testing.T, s flow.Checkpointer) {
	cp := newCheckpoint(t, "t-zone", "", -1)
	cp.CreatedAt = time.Now().In(time.FixedZone("CEST", 2*60*60)) // with a monotonic reading too
	mustPut(t, s, cp)
	got := mustGet(t, s, cp.ThreadID, "")
	if !got.CreatedAt.Equal(cp.CreatedAt) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt = %v, want %v in UTC", got.CreatedAt, cp.CreatedAt.UTC())
	}
}

// testWriteFieldsRoundTrip checks every field of pending writes, a nil
// value too, comes back from Get as it was put.
func testWriteFieldsRoundTrip(t *testing.T, s flow.Checkpointer) {
	cp := newCheckpoint(t, "t-writes", "", -1)
	mustPut(t, s, cp)
	want := []flow.Write{
		{TaskID: "task-a", Node: "review", Kind: flow.WriteInterrupt, Idx: 0, Value: json.RawMessage(`{"kind": "approval"}`)},
		{TaskID: "task-a", Node: "review", Kind: flow.WriteResume, Idx: 0, Value: json.RawMessage(`"approve"`)},
		{TaskID: "task-b", Node: "submit", Kind: flow.WriteError, Idx: 0, Value: json.RawMessage(`"boom"`)},
		{TaskID: "task-c", Node: "noop", Kind: flow.WriteUpdate, Idx: 0, Value: nil},
	}
	mustPutWrites(t, s, cp.ThreadID, cp.ID, want...)
	if got := mustGet(t, s, cp.ThreadID, cp.ID).PendingWrites; !reflect.DeepEqual(got, want) {
		t.Errorf("PendingWrites:\n got %+v\nwant %+v", got, want)
	}
}

func testNoAliasing(t *testing.T, s flow.Checkpointer) {
	cp := newCheckpoint(t, "t1", "", -1)
	cp.Metadata.Writes = map[string]json.RawMessage{"n": json.RawMessage(`[1]`)}
	mustPut(t, s, cp)
	want := withSeq(cp, 1)
	want.Values = append(json.RawMessage(nil), cp.Values...)
	want.Next = append([]string(nil), cp.Next...)
	want.Metadata.Writes = map[string]json.RawMessage{"n": json.RawMessage(`[1]`)}
	w := flow.Write{TaskID: "a", Node: "n", Kind: flow.WriteUpdate, Value: json.RawMessage(`[2]`)}
	writes := []flow.Write{w}
	mustPutWrites(t, s, "t1", cp.ID, writes...)
	want.PendingWrites = []flow.Write{{TaskID: "a", Node: "n", Kind: flow.WriteUpdate, Value: json.RawMessage(`[2]`)}}

	// Change everything the caller still holds, then what Get gave out.
	cp.Values[0] = '['
	cp.Next[0] = "changed"
	cp.Metadata.Writes["n"][1] = '9'
	cp.Metadata.Writes["extra"] = json.RawMessage(`1`)
	writes[0].Value[1] = '9'
	got := mustGet(t, s, "t1", "")
	got.Values[0] = '['
	got.Next[0] = "changed"
	got.Metadata.Writes["n"][1] = '9'
	got.PendingWrites[0].Value[1] = '9'

	checkEqual(t, "Get after the caller changed its copies", mustGet(t, s, "t1", ""), want)
}

func testListNewestFirst(t *testing.T, s flow.Checkpointer) {
	cps := mustChain(t, s, "t1", 5)
	mustChain(t, s, "t2", 2) // another thread must not show up
	id := func(i int) string { return cps[i].ID }
	for _, tc := range []struct {
		name string
		opts flow.ListOptions
		want []string
	}{
		{"All", flow.ListOptions{}, []string{id(4), id(3), id(2), id(1), id(0)}},
		{"Limit", flow.ListOptions{Limit: 2}, []string{id(4), id(3)}},
		{"LimitAboveCount", flow.ListOptions{Limit: 10}, []string{id(4), id(3), id(2), id(1), id(0)}},
		{"Before", flow.ListOptions{Before: id(3)}, []string{id(2), id(1), id(0)}},
		{"BeforeFirst", flow.ListOptions{Before: id(0)}, []string{}},
		{"BeforeAndLimit", flow.ListOptions{Before: id(3), Limit: 2}, []string{id(2), id(1)}},
		{"UnknownBefore", flow.ListOptions{Before: newID(t)}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustList(t, s, "t1", tc.opts); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("List(%+v) = %v, want %v", tc.opts, got, tc.want)
			}
		})
	}
	t.Run("PagesCoverTheThread", func(t *testing.T) {
		var all []string
		before := ""
		for {
			page := mustList(t, s, "t1", flow.ListOptions{Limit: 2, Before: before})
			if len(page) == 0 {
				break
			}
			all = append(all, page...)
			before = page[len(page)-1]
		}
		if want := mustList(t, s, "t1", flow.ListOptions{}); !reflect.DeepEqual(all, want) {
			t.Errorf("pages = %v, want %v", all, want)
		}
	})
}

func testListFilters(t *testing.T, s flow.Checkpointer) {
	// Steps -1 (input), 0, 1, then an update at step 1, then loop at 2.
	cps := mustChain(t, s, "t1", 3)
	upd := newCheckpoint(t, "t1", cps[2].ID, 1)
	upd.Metadata.Source = flow.SourceUpdate
	mustPut(t, s, upd)
	last := newCheckpoint(t, "t1", upd.ID, 2)
	mustPut(t, s, last)
	step := func(n int) *int { return &n }
	for _, tc := range []struct {
		name string
		opts flow.ListOptions
		want []string
	}{
		{"SourceInput", flow.ListOptions{Source: flow.SourceInput}, []string{cps[0].ID}},
		{"SourceLoop", flow.ListOptions{Source: flow.SourceLoop}, []string{last.ID, cps[2].ID, cps[1].ID}},
		{"SourceUpdate", flow.ListOptions{Source: flow.SourceUpdate}, []string{upd.ID}},
		{"UnknownSource", flow.ListOptions{Source: "nope"}, []string{}},
		{"StepZero", flow.ListOptions{Step: step(0)}, []string{cps[1].ID}},
		{"StepInput", flow.ListOptions{Step: step(-1)}, []string{cps[0].ID}},
		{"StepOne", flow.ListOptions{Step: step(1)}, []string{upd.ID, cps[2].ID}},
		{"StepAndSource", flow.ListOptions{Step: step(1), Source: flow.SourceLoop}, []string{cps[2].ID}},
		{"StepAndLimit", flow.ListOptions{Step: step(1), Limit: 1}, []string{upd.ID}},
		{"SourceBeforeAndLimit", flow.ListOptions{Source: flow.SourceLoop, Before: upd.ID, Limit: 1}, []string{cps[2].ID}},
		{"AllCombined", flow.ListOptions{Source: flow.SourceLoop, Step: step(0), Before: last.ID, Limit: 5}, []string{cps[1].ID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustList(t, s, "t1", tc.opts); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("List(%+v) = %v, want %v", tc.opts, got, tc.want)
			}
		})
	}
}

func testPendingWrites(t *testing.T, s flow.Checkpointer) {
	cps := mustChain(t, s, "t1", 2)
	head := cps[1]
	// Two tasks save separately, out of order; Get orders by task, kind, idx.
	b := []flow.Write{
		{TaskID: "task-b", Node: "review", Kind: flow.WriteInterrupt, Idx: 1, Value: json.RawMessage(`"second"`)},
		{TaskID: "task-b", Node: "review", Kind: flow.WriteInterrupt, Idx: 0, Value: json.RawMessage(`"first"`)},
	}
	a := []flow.Write{{TaskID: "task-a", Node: "lookup", Kind: flow.WriteUpdate, Idx: 0, Value: json.RawMessage(`{"ok":true}`)}}
	mustPutWrites(t, s, "t1", head.ID, b...)
	mustPutWrites(t, s, "t1", head.ID, a...)
	// Writes of the older checkpoint stay with it.
	old := flow.Write{TaskID: "task-a", Node: "lookup", Kind: flow.WriteError, Value: json.RawMessage(`"old"`)}
	mustPutWrites(t, s, "t1", cps[0].ID, old)

	want := []flow.Write{a[0], b[1], b[0]}
	for _, tc := range []struct{ name, id string }{{"Head", ""}, {"ByID", head.ID}} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustGet(t, s, "t1", tc.id)
			if !reflect.DeepEqual(got.PendingWrites, want) {
				t.Errorf("PendingWrites:\n got %+v\nwant %+v", got.PendingWrites, want)
			}
		})
	}
	t.Run("OlderCheckpoint", func(t *testing.T) {
		got := mustGet(t, s, "t1", cps[0].ID)
		if !reflect.DeepEqual(got.PendingWrites, []flow.Write{old}) {
			t.Errorf("PendingWrites = %+v, want %+v", got.PendingWrites, []flow.Write{old})
		}
	})
	t.Run("ListLeavesThemOut", func(t *testing.T) {
		mustList(t, s, "t1", flow.ListOptions{}) // mustList checks
	})
}

func testPutWritesIdempotent(t *testing.T, s flow.Checkpointer) {
	cp := mustChain(t, s, "t1", 1)[0]
	writes := []flow.Write{
		{TaskID: "task-a", Node: "n", Kind: flow.WriteUpdate, Idx: 0, Value: json.RawMessage(`1`)},
		{TaskID: "task-a", Node: "n", Kind: flow.WriteInterrupt, Idx: 0, Value: json.RawMessage(`2`)},
	}
	mustPutWrites(t, s, "t1", cp.ID, writes...)
	mustPutWrites(t, s, "t1", cp.ID, writes...)
	want := []flow.Write{writes[1], writes[0]} // interrupt < update
	if got := mustGet(t, s, "t1", "").PendingWrites; !reflect.DeepEqual(got, want) {
		t.Errorf("after putting twice:\n got %+v\nwant %+v", got, want)
	}
	// The same key again keeps the last value.
	again := flow.Write{TaskID: "task-a", Node: "n", Kind: flow.WriteUpdate, Idx: 0, Value: json.RawMessage(`3`)}
	mustPutWrites(t, s, "t1", cp.ID, again)
	want = []flow.Write{writes[1], again}
	if got := mustGet(t, s, "t1", "").PendingWrites; !reflect.DeepEqual(got, want) {
		t.Errorf("after replacing:\n got %+v\nwant %+v", got, want)
	}
}

func testNewCheckpointNoWrites(t *testing.T, s flow.Checkpointer) {
	first := mustChain(t, s, "t1", 1)[0]
	mustPutWrites(t, s, "t1", first.ID, flow.Write{TaskID: "a", Node: "n", Kind: flow.WriteUpdate, Value: json.RawMessage(`1`)})
	next := newCheckpoint(t, "t1", first.ID, 0)
	next.PendingWrites = []flow.Write{{TaskID: "ignored", Kind: flow.WriteUpdate}} // Put ignores them
	mustPut(t, s, next)
	if got := mustGet(t, s, "t1", ""); got.ID != next.ID || got.PendingWrites != nil {
		t.Errorf("head %s has pending writes %+v, want head %s without any", got.ID, got.PendingWrites, next.ID)
	}
	if got := mustGet(t, s, "t1", first.ID); len(got.PendingWrites) != 1 {
		t.Errorf("first checkpoint lost its writes: %+v", got.PendingWrites)
	}
}

func testPutWritesUnknownCheckpoint(t *testing.T, s flow.Checkpointer) {
	cp := mustChain(t, s, "t1", 1)[0]
	w := flow.Write{TaskID: "a", Node: "n", Kind: flow.WriteUpdate, Value: json.RawMessage(`1`)}
	for _, tc := range []struct{ name, thread, id string }{
		{"UnknownThread", "nope", cp.ID},
		{"UnknownID", "t1", newID(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.PutWrites(context.Background(), tc.thread, tc.id, []flow.Write{w}); err == nil {
				t.Errorf("PutWrites(%s, %s) = nil, want an error", tc.thread, tc.id)
			}
		})
	}
	if got := mustGet(t, s, "t1", "").PendingWrites; got != nil {
		t.Errorf("head got writes %+v", got)
	}
}

func testDeleteThread(t *testing.T, s flow.Checkpointer) {
	ctx := context.Background()
	gone := mustChain(t, s, "gone", 3)
	kept := mustChain(t, s, "kept", 2)
	w := flow.Write{TaskID: "a", Node: "n", Kind: flow.WriteUpdate, Value: json.RawMessage(`1`)}
	mustPutWrites(t, s, "gone", gone[2].ID, w)
	mustPutWrites(t, s, "kept", kept[1].ID, w)

	if err := s.DeleteThread(ctx, "gone"); err != nil {
		t.Fatalf("DeleteThread: %v", err)
	}
	if got := mustGet(t, s, "gone", ""); got != nil {
		t.Errorf("head after delete = %+v, want nil", got)
	}
	for _, cp := range gone {
		if got := mustGet(t, s, "gone", cp.ID); got != nil {
			t.Errorf("Get(%s) after delete = %+v, want nil", cp.ID, got)
		}
	}
	if ids := mustList(t, s, "gone", flow.ListOptions{}); len(ids) != 0 {
		t.Errorf("List after delete = %v, want empty", ids)
	}
	want := withSeq(kept[1], 2)
	want.PendingWrites = []flow.Write{w}
	checkEqual(t, "other thread's head", mustGet(t, s, "kept", ""), want)
	if ids := mustList(t, s, "kept", flow.ListOptions{}); len(ids) != 2 {
		t.Errorf("other thread lists %v, want 2 checkpoints", ids)
	}

	// The thread can start again from nothing, without the old writes.
	again := newCheckpoint(t, "gone", "", -1)
	mustPut(t, s, again)
	if got := mustGet(t, s, "gone", ""); got.Seq != 1 || got.PendingWrites != nil {
		t.Errorf("restarted thread head = seq %d, writes %+v; want seq 1, none", got.Seq, got.PendingWrites)
	}
}

func testDeleteMissingThread(t *testing.T, s flow.Checkpointer) {
	kept := mustChain(t, s, "kept", 1)
	if err := s.DeleteThread(context.Background(), "nope"); err != nil {
		t.Errorf("DeleteThread(missing) = %v, want nil", err)
	}
	if got := mustGet(t, s, "kept", ""); got == nil || got.ID != kept[0].ID {
		t.Errorf("other thread's head = %+v, want %s", got, kept[0].ID)
	}
}

func testConflict(t *testing.T, s flow.Checkpointer) {
	cps := mustChain(t, s, "t1", 3)
	for _, tc := range []struct {
		name, thread, parent, head string
	}{
		{"StaleParent", "t1", cps[1].ID, cps[2].ID},
		{"FirstCheckpointOnExistingThread", "t1", "", cps[2].ID},
		{"UnknownParent", "t1", newID(t), cps[2].ID},
		{"ParentOnEmptyThread", "empty", cps[2].ID, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := mustList(t, s, tc.thread, flow.ListOptions{})
			cp := newCheckpoint(t, tc.thread, tc.parent, 9)
			err := s.Put(context.Background(), cp)
			if !errors.Is(err, flow.ErrConflict) {
				t.Fatalf("Put = %v, want ErrConflict", err)
			}
			var ce *flow.ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("Put = %T %v, want *flow.ConflictError", err, err)
			}
			if want := (flow.ConflictError{ThreadID: tc.thread, Want: tc.parent, Head: tc.head}); *ce != want {
				t.Errorf("ConflictError = %+v, want %+v", *ce, want)
			}
			if after := mustList(t, s, tc.thread, flow.ListOptions{}); !reflect.DeepEqual(after, before) {
				t.Errorf("a refused Put changed the thread: %v, was %v", after, before)
			}
			if got := mustGet(t, s, tc.thread, cp.ID); got != nil {
				t.Errorf("refused checkpoint was stored: %+v", got)
			}
		})
	}
}

// testPutWritesAtHead checks the flow.HeadWriter power, where the store has
// it: writes against the head are saved, and against any other checkpoint
// they are refused with a *flow.ConflictError and nothing is stored.
func testPutWritesAtHead(t *testing.T, s flow.Checkpointer) {
	hw, ok := s.(flow.HeadWriter)
	if !ok {
		t.Skipf("%T has no flow.HeadWriter power", s)
	}
	ctx := context.Background()
	cps := mustChain(t, s, "t1", 2)
	w := flow.Write{TaskID: "task", Node: "n", Kind: flow.WriteUpdate, Value: json.RawMessage(`1`)}
	if err := hw.PutWritesAtHead(ctx, "t1", cps[1].ID, []flow.Write{w}); err != nil {
		t.Fatalf("PutWritesAtHead(head) = %v", err)
	}
	if got := mustGet(t, s, "t1", "").PendingWrites; !reflect.DeepEqual(got, []flow.Write{w}) {
		t.Fatalf("head's writes = %+v, want %+v", got, w)
	}
	for _, tc := range []struct {
		name, thread, id, head string
	}{
		{"OlderCheckpoint", "t1", cps[0].ID, cps[1].ID},
		{"UnknownCheckpoint", "t1", newID(t), cps[1].ID},
		{"UnknownThread", "nope", cps[1].ID, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := hw.PutWritesAtHead(ctx, tc.thread, tc.id, []flow.Write{w})
			var ce *flow.ConflictError
			if !errors.Is(err, flow.ErrConflict) || !errors.As(err, &ce) {
				t.Fatalf("PutWritesAtHead = %v, want a *flow.ConflictError", err)
			}
			if want := (flow.ConflictError{ThreadID: tc.thread, Want: tc.id, Head: tc.head}); *ce != want {
				t.Errorf("ConflictError = %+v, want %+v", *ce, want)
			}
			if got := mustGet(t, s, "t1", cps[0].ID).PendingWrites; len(got) != 0 {
				t.Errorf("refused writes were stored: %+v", got)
			}
			if got := mustGet(t, s, "t1", "").PendingWrites; len(got) != 1 {
				t.Errorf("head's writes = %+v, want only the first", got)
			}
		})
	}
}

func testConcurrentSameParent(t *testing.T, s flow.Checkpointer) {
	const n = 16
	parent := mustChain(t, s, "t1", 1)[0]
	start := make(chan struct{})
	errs := make([]error, n)
	cps := make([]*flow.Checkpoint, n)
	var wg sync.WaitGroup
	for i := range n {
		cps[i] = newCheckpoint(t, "t1", parent.ID, 0)
		wg.Go(func() {
			<-start
			errs[i] = s.Put(context.Background(), cps[i])
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("Put %d and Put %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, flow.ErrConflict):
			t.Errorf("Put %d = %v, want nil or ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no Put won")
	}
	if head := mustGet(t, s, "t1", ""); head.ID != cps[winner].ID || head.Seq != 2 {
		t.Errorf("head = %s seq %d, want the winner %s seq 2", head.ID, head.Seq, cps[winner].ID)
	}
	if ids := mustList(t, s, "t1", flow.ListOptions{}); len(ids) != 2 {
		t.Errorf("thread has %d checkpoints, want 2", len(ids))
	}
}

func testConcurrentThreads(t *testing.T, s flow.Checkpointer) {
	const threads, perThread = 8, 10
	start := make(chan struct{})
	errs := make(chan error, threads)
	var wg sync.WaitGroup
	for i := range threads {
		thread := fmt.Sprintf("t%d", i)
		wg.Go(func() {
			<-start
			parent := ""
			for step := range perThread {
				cp := newCheckpoint(t, thread, parent, step-1)
				if err := s.Put(context.Background(), cp); err != nil {
					errs <- fmt.Errorf("put %s step %d: %w", thread, step, err)
					return
				}
				w := flow.Write{TaskID: "task", Node: "n", Kind: flow.WriteUpdate, Value: json.RawMessage(`1`)}
				if err := s.PutWrites(context.Background(), thread, cp.ID, []flow.Write{w}); err != nil {
					errs <- fmt.Errorf("put writes %s step %d: %w", thread, step, err)
					return
				}
				parent = cp.ID
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range threads {
		thread := fmt.Sprintf("t%d", i)
		if head := mustGet(t, s, thread, ""); head == nil || head.Seq != perThread || len(head.PendingWrites) != 1 {
			t.Errorf("thread %s head = %+v, want seq %d with 1 write", thread, head, perThread)
		}
	}
}

// testClockStepsBack puts a chain whose wall clock steps back (as between two
// processes on hosts with skewed clocks, or after an NTP correction), so that
// CreatedAt and the time-ordered ids both run backwards: the store still
// orders by Seq, the head is the last put, and Before follows Seq.
func testClockStepsBack(t *testing.T, s flow.Checkpointer) {
	base := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	ids := []string{newID(t), newID(t), newID(t), newID(t)}
	// Newest put gets the oldest id and the oldest time.
	var cps []*flow.Checkpoint
	parent := ""
	for i := range ids {
		cp := newCheckpoint(t, "t1", parent, i-1)
		cp.ID = ids[len(ids)-1-i]
		cp.CreatedAt = base.Add(-time.Duration(i) * time.Hour)
		mustPut(t, s, cp)
		cps = append(cps, cp)
		parent = cp.ID
	}
	if head := mustGet(t, s, "t1", ""); head == nil || head.ID != cps[3].ID {
		t.Fatalf("head = %v, want the last put %s", head, cps[3].ID)
	}
	want := []string{cps[3].ID, cps[2].ID, cps[1].ID, cps[0].ID}
	if got := mustList(t, s, "t1", flow.ListOptions{}); !reflect.DeepEqual(got, want) {
		t.Errorf("List = %v, want by seq %v", got, want)
	}
	if got := mustList(t, s, "t1", flow.ListOptions{Before: cps[2].ID, Limit: 1}); !reflect.DeepEqual(got, want[2:3]) {
		t.Errorf("List(Before seq 3, Limit 1) = %v, want %v", got, want[2:3])
	}
}

// testFenced checks flow.Fencer, when the store has it: a holder's fenced
// view writes while its epoch is the thread's fence, and every kind of write
// it makes is refused with a *flow.FencedError, storing nothing, once a
// newer holder raised the fence. Fence never lowers a fence, and other
// threads are not fenced.
func testFenced(t *testing.T, s flow.Checkpointer) {
	f, ok := s.(flow.Fencer)
	if !ok {
		t.Skip("the store has no fencing")
	}
	ctx := context.Background()
	if err := f.Fence(ctx, "t", 1); err != nil {
		t.Fatalf("Fence(1): %v", err)
	}
	old := f.Fenced("t", 1)
	first := newCheckpoint(t, "t", "", -1)
	if err := old.Put(ctx, first); err != nil {
		t.Fatalf("Put by the holder at the fence: %v", err)
	}
	if err := f.Fence(ctx, "t", 2); err != nil {
		t.Fatalf("Fence(2): %v", err)
	}
	var fe *flow.FencedError
	if err := f.Fence(ctx, "t", 1); !errors.As(err, &fe) || fe.Fence != 2 {
		t.Errorf("Fence(1) after Fence(2) = %v, want *FencedError with fence 2", err)
	}
	w := []flow.Write{{TaskID: "x", Node: "n", Kind: flow.WriteUpdate, Value: json.RawMessage(`{}`)}}
	writes := map[string]func() error{
		"Put":       func() error { return old.Put(ctx, newCheckpoint(t, "t", first.ID, 0)) },
		"PutWrites": func() error { return old.PutWrites(ctx, "t", first.ID, w) },
	}
	if hw, ok := old.(flow.HeadWriter); ok {
		writes["PutWritesAtHead"] = func() error { return hw.PutWritesAtHead(ctx, "t", first.ID, w) }
	}
	if dw, ok := old.(flow.DurableWriter); ok {
		writes["PutDurable"] = func() error { return dw.PutDurable(ctx, newCheckpoint(t, "t", first.ID, 0)) }
		writes["PutWritesDurable"] = func() error { return dw.PutWritesDurable(ctx, "t", first.ID, w) }
	}
	for name, write := range writes {
		if err := write(); !errors.Is(err, flow.ErrFenced) {
			t.Errorf("%s by the holder at epoch 1 after the fence rose to 2: %v, want ErrFenced", name, err)
		}
	}
	head, err := s.Get(ctx, "t", "")
	if err != nil || head == nil || head.ID != first.ID || len(head.PendingWrites) != 0 {
		t.Errorf("head after the refused writes = %+v, %v; want %s with no pending writes", head, err, first.ID)
	}
	if err := f.Fenced("t", 2).Put(ctx, newCheckpoint(t, "t", first.ID, 0)); err != nil {
		t.Errorf("Put by the holder at epoch 2: %v", err)
	}
	if err := old.Put(ctx, newCheckpoint(t, "other", "", -1)); err != nil {
		t.Errorf("Put to another thread through the fenced view: %v", err)
	}
}
