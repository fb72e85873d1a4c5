package returns

import (
	"context"
	"encoding/json"
	"errors"
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
		if s.Draft == nil || s.Draft.ExpiresAt.Year() != 2099 || s.TTLSeconds != 300 || s.Stage != StageDraftReady {
			t.Errorf("decoded %+v", s)
		}
	})
}

// stateV2 is a made-up next shape of State: ttl_seconds became a duration
// text "draft_ttl". It proves the upgrade path end to end through the
// engine and a real store, with a state the first release really wrote.
type stateV2 struct {
	Task     string `json:"task"`
	Reason   string `json:"reason"`
	DraftTTL string `json:"draft_ttl"`
	Stage    string `json:"stage"`
}

func upgradeTTL(old []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(old, &m); err != nil {
		return nil, err
	}
	var secs int64
	if err := json.Unmarshal(m["ttl_seconds"], &secs); err != nil {
		return nil, err
	}
	delete(m, "ttl_seconds")
	m["draft_ttl"], _ = json.Marshal((time.Duration(secs) * time.Second).String())
	return json.Marshal(m)
}

func TestStateFormatUpgrade(t *testing.T) {
	ctx := context.Background()
	newRunnable := func(t *testing.T, cps flow.Checkpointer, version int, ups map[int]flow.Upgrade) *flow.Runnable[stateV2] {
		t.Helper()
		g := flow.NewGraph(func(s, u stateV2) stateV2 { return u })
		g.StateFormat(version, ups)
		g.AddNode("n", func(ctx context.Context, s stateV2) (stateV2, error) { return s, nil })
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
		cps, _ := put(t, v1State, 1)
		r := newRunnable(t, cps, 2, map[int]flow.Upgrade{1: upgradeTTL})
		snap, err := r.State(ctx, "return-25")
		if err != nil {
			t.Fatal(err)
		}
		want := stateV2{Task: "return-25", Reason: "尺寸不合适", DraftTTL: "5m0s", Stage: StageDraftReady}
		if snap.Values != want {
			t.Errorf("values = %+v, want %+v", snap.Values, want)
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
		{"NoUpgradeRegistered", v1State, 1, 2, nil, "no upgrade from state format 1"},
		{"UpgradeFails", `{"task":"t","ttl_seconds":"soon"}`, 1, 2, map[int]flow.Upgrade{1: upgradeTTL}, "upgrade from format 1"},
		{"NewerFormat", v1State, 3, 2, map[int]flow.Upgrade{1: upgradeTTL}, "newer state format"},
		{"WrongType", `{"task":5}`, 2, 2, nil, "cannot unmarshal number"},
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
