package returns

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"assistant/checkpoints"
	"assistant/flow"
)

// v1State is a State as the first release stored it, taken from
// testdata/fixtures/v1/checkpoints.sqlite (checkpoint seq 3 of return-25).
const v1State = `{"task":"return-25","user":"demo-user","order":"A3003","reason":"尺寸不合适","ttl_seconds":300,` +
	`"stage":"draft_ready","draft":{"draft_id":"d_01a22901-da8b-7b10-86d4-71cb827a6ebc","task_id":"return-25",` +
	`"order_id":"A3003","user":"demo-user","reason":"尺寸不合适","created_at":"2026-11-29T20:31:57.067513277Z",` +
	`"expires_at":"2099-01-01T00:00:00Z"},"trace":["lookup","prepare"]}`

func TestStateFormatChainIsComplete(t *testing.T) {
	for _, tc := range []struct {
		name     string
		version  int
		upgrades map[int]flow.Upgrade
	}{
		{"State", StateFormat, stateUpgrades},
		{"BatchState", BatchStateFormat, batchStateUpgrades},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for v := 1; v < tc.version; v++ {
				if tc.upgrades[v] == nil {
					t.Errorf("no upgrade from format %d to %d: checkpoints of format %d would no longer decode", v, v+1, v)
				}
			}
		})
	}
	t.Run("StoredV1StateDecodes", func(t *testing.T) {
		s, err := decodeAt[State](json.RawMessage(v1State), 1, StateFormat, stateUpgrades)
		if err != nil {
			t.Fatal(err)
		}
		if !sameState(s, v1Upgraded()) {
			t.Errorf("decoded %+v (draft %+v), want %+v", s, s.Draft, v1Upgraded().Draft)
		}
	})
}

// v1Upgraded is v1State as format 2 reads it: every fact of the v1 state
// that is not said twice, nothing else.
func v1Upgraded() State {
	return State{Task: "return-25", User: "demo-user", Order: "A3003", Reason: "尺寸不合适", TTLSeconds: 300,
		Stage: StageDraftReady, Draft: &DraftRef{ID: "d_01a22901-da8b-7b10-86d4-71cb827a6ebc",
			ExpiresAt: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)}}
}

// sameState compares two states field by field, the draft by value.
func sameState(a, b State) bool {
	if (a.Draft == nil) != (b.Draft == nil) || a.Draft != nil && *a.Draft != *b.Draft {
		return false
	}
	if (a.Result == nil) != (b.Result == nil) || a.Result != nil && *a.Result != *b.Result {
		return false
	}
	if (a.Error == nil) != (b.Error == nil) || a.Error != nil && *a.Error != *b.Error {
		return false
	}
	if !slices.Equal(a.Decisions, b.Decisions) {
		return false
	}
	a.Draft, b.Draft, a.Result, b.Result, a.Error, b.Error = nil, nil, nil, nil, nil, nil
	a.Decisions, b.Decisions = nil, nil
	return reflect.DeepEqual(a, b)
}

func TestUpgradeState1(t *testing.T) {
	t.Run("V1FixtureState", func(t *testing.T) {
		got, err := upgradeState1([]byte(v1State))
		if err != nil {
			t.Fatal(err)
		}
		want := `{"draft":{"draft_id":"d_01a22901-da8b-7b10-86d4-71cb827a6ebc","expires_at":"2099-01-01T00:00:00Z"},` +
			`"order":"A3003","reason":"尺寸不合适","stage":"draft_ready","task":"return-25","ttl_seconds":300,"user":"demo-user"}`
		if string(got) != want {
			t.Errorf("upgraded\n%s\nwant\n%s", got, want)
		}
	})
	for _, tc := range []struct{ name, v1, want string }{
		// Before prepare: no draft; only the trace goes.
		{"NoDraft", `{"task":"t","order":"A3001","reason":"size","ttl_seconds":300,"trace":["lookup"]}`,
			`{"order":"A3001","reason":"size","task":"t","ttl_seconds":300}`},
		// The draft's reason is the one prepared and submitted.
		{"DraftReasonWins", `{"task":"t","order":"A3001","reason":" size ","draft":{"draft_id":"d_1","order_id":"A3001","reason":"size","expires_at":"2099-01-01T00:00:00Z"}}`,
			`{"draft":{"draft_id":"d_1","expires_at":"2099-01-01T00:00:00Z"},"order":"A3001","reason":"size","task":"t"}`},
		// Finished states keep their decision, result and error.
		{"Finished", `{"task":"t","stage":"failed","decision":"approve","draft":{"draft_id":"d_1","expires_at":"2000-01-01T00:00:00Z"},` +
			`"error":{"code":"draft_expired","message":"m"},"trace":["lookup","prepare","review","submit"]}`,
			`{"decision":"approve","draft":{"draft_id":"d_1","expires_at":"2000-01-01T00:00:00Z"},"error":{"code":"draft_expired","message":"m"},"stage":"failed","task":"t"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := upgradeState1([]byte(tc.v1))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("upgraded\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	if _, err := upgradeState1([]byte(`{"draft":"soon"}`)); err == nil {
		t.Error("a draft that is not an object upgraded without error")
	}
}

// TestApprovalViewComposesStoredQuestion: the approval question stored by
// format 2 (its kind) is shown, with the state it was asked in, exactly as
// the whole question format 1 stored, which is also shown unchanged but
// for the draft version, 1 for a draft stored before versions.
func TestApprovalViewComposesStoredQuestion(t *testing.T) {
	const v1Question = `{"kind":"approval","draft_id":"d_01a22901-da8b-7b10-86d4-71cb827a6ebc","order_id":"A3003",` +
		`"reason":"尺寸不合适","expires_at":"2099-01-01T00:00:00Z",` +
		`"effect":"approve creates a return application for order A3003, which awaits review (no refund is made); cancel ends the request without one"}`
	shown := v1Question[:len(v1Question)-1] + `,"version":1}`
	st := v1Upgraded()
	stored, err := json.Marshal(approvalAsked{Kind: KindApproval})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(approvalView(stored, st)); got != shown {
		t.Errorf("format 2 question shown as\n%s\nwant\n%s", got, shown)
	}
	if got := string(approvalView(json.RawMessage(v1Question), State{})); got != shown {
		t.Errorf("format 1 question shown as\n%s\nwant\n%s", got, shown)
	}
	if string(stored) != `{"kind":"approval"}` {
		t.Errorf("stored question %s", stored)
	}
	asked, _ := json.Marshal(approvalAsked{Kind: KindApproval, Problem: "p"})
	var q ApprovalQuestion
	if err := json.Unmarshal(approvalView(asked, st), &q); err != nil || q.Problem != "p" || q.OrderID != "A3003" || q.DraftID != st.Draft.ID {
		t.Errorf("question with a problem shown as %+v (%v)", q, err)
	}
}

// TestStateFormatUpgrade runs a state the first release really wrote
// through the engine and a real store: read with this build's format and
// upgrades, it decodes as format 2; a state the chain cannot bring to
// format 2 is reported and kept.
func TestStateFormatUpgrade(t *testing.T) {
	ctx := context.Background()
	newRunnable := func(t *testing.T, cps flow.Checkpointer, version int, ups map[int]flow.Upgrade) *flow.Runnable[State] {
		t.Helper()
		g := flow.NewGraph(Reduce)
		g.StateFormat(version, ups)
		g.AddNode("n", func(ctx context.Context, s State) (State, error) { return State{}, nil })
		g.AddEdge(flow.Start, "n")
		g.AddEdge("n", flow.End)
		r, err := g.Compile(flow.Options{Checkpointer: cps})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	put := func(t *testing.T, values string, format int) (flow.Checkpointer, string) {
		t.Helper()
		s, err := checkpoints.OpenSQLite(ctx, t.TempDir()+"/checkpoints.sqlite", checkpoints.SQLiteOptions{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		cp := &flow.Checkpoint{ThreadID: "return-25", ID: "01a22901-da8b-7b10-86d4-71cb827a6ebd", Format: format,
			Values: json.RawMessage(values), Next: []string{"n"}, Metadata: flow.Metadata{Source: flow.SourceLoop, Step: 1},
			CreatedAt: time.Now().UTC()}
		if err := s.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
		return s, cp.ID
	}

	t.Run("V1StateUpgradesToV2", func(t *testing.T) {
		cps, id := put(t, v1State, 1)
		r := newRunnable(t, cps, StateFormat, stateUpgrades)
		snap, err := r.State(ctx, "return-25")
		if err != nil {
			t.Fatal(err)
		}
		if !sameState(snap.Values, v1Upgraded()) {
			t.Errorf("values = %+v (draft %+v), want %+v", snap.Values, snap.Values.Draft, v1Upgraded().Draft)
		}
		// Reading upgrades in memory only: the stored checkpoint is kept.
		cp, err := cps.Get(ctx, "return-25", id)
		if err != nil || cp == nil || string(cp.Values) != v1State || cp.Format != 1 {
			t.Errorf("stored checkpoint after the read: %+v, %v", cp, err)
		}
		// Running on from it writes format 2.
		if _, err := r.Resume(ctx, "return-25", flow.Command{}); err != nil {
			t.Fatal(err)
		}
		head, err := cps.Get(ctx, "return-25", "")
		if err != nil || head == nil || head.Format != StateFormat || strings.Contains(string(head.Values), "trace") {
			t.Errorf("checkpoint written after the upgrade: %+v, %v", head, err)
		}
	})

	for _, tc := range []struct {
		name    string
		values  string
		format  int
		version int
		ups     map[int]flow.Upgrade
		cause   string
	}{
		{"NoUpgradeRegistered", v1State, 1, StateFormat, nil, "no upgrade from state format 1"},
		{"UpgradeFails", `{"task":"t","draft":"soon"}`, 1, StateFormat, stateUpgrades, "upgrade from format 1"},
		{"NewerFormat", v1State, StateFormat + 1, StateFormat, stateUpgrades, "newer state format"},
		{"WrongType", `{"task":5}`, StateFormat, StateFormat, stateUpgrades, "cannot unmarshal number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cps, id := put(t, tc.values, tc.format)
			r := newRunnable(t, cps, tc.version, tc.ups)
			_, err := r.State(ctx, "return-25")
			var de *flow.StateDecodeError
			if !errors.As(err, &de) {
				t.Fatalf("State = %v, want a *flow.StateDecodeError", err)
			}
			if de.ThreadID != "return-25" || de.CheckpointID != id || !strings.Contains(err.Error(), tc.cause) {
				t.Errorf("error %q: want thread return-25, checkpoint %s, cause %q", err, id, tc.cause)
			}
			// The checkpoint is kept as it was stored.
			got, err := cps.Get(ctx, "return-25", id)
			if err != nil || got == nil || string(got.Values) != tc.values || got.Format != tc.format {
				t.Errorf("stored checkpoint after the failure: %+v, %v", got, err)
			}
		})
	}
}
