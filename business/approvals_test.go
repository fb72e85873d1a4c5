package business

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDraftVersions(t *testing.T) {
	forStores(t, testDraftVersions)
}

func testDraftVersions(t *testing.T, kind storeKind) {
	ctx := context.Background()

	t.Run("NewVersionSupersedesOlder", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		v1 := mustPrepare(t, s, "t1", "A3001", time.Minute, t0)
		v2, reused, err := s.PrepareDraftVersion(ctx, "t1", 2, "A3001", "demo-user", "colour", time.Minute, t0.Add(time.Second))
		if err != nil || reused || v2.Version != 2 || v2.ID == v1.ID {
			t.Fatalf("PrepareDraftVersion(2) = %+v, %v, %v", v2, reused, err)
		}
		again, reused, err := s.PrepareDraftVersion(ctx, "t1", 2, "A3001", "demo-user", "colour", time.Minute, t0.Add(time.Hour))
		if err != nil || !reused || again.ID != v2.ID || !again.ExpiresAt.Equal(v2.ExpiresAt) {
			t.Fatalf("prepare of version 2 again = %+v, %v, %v; want it reused unchanged", again, reused, err)
		}
		cur, err := s.DraftByTask(ctx, "t1")
		if err != nil || cur.ID != v2.ID {
			t.Fatalf("DraftByTask = %+v, %v; want version 2", cur, err)
		}
		all, err := s.DraftVersions(ctx, "t1")
		if err != nil || len(all) != 2 || !all[0].Superseded || all[1].Superseded || all[0].Version != 1 {
			t.Fatalf("DraftVersions = %+v, %v", all, err)
		}
		if _, _, err := s.Submit(ctx, v1.ID, "demo-user", t0.Add(2*time.Second)); !errors.Is(err, ErrConflict) {
			t.Fatalf("Submit(superseded) = %v; want ErrConflict", err)
		}
		if _, _, err := s.Submit(ctx, v2.ID, "demo-user", t0.Add(2*time.Second)); err != nil {
			t.Fatalf("Submit(current) = %v", err)
		}
	})

	t.Run("SchemaFiveFileKeepsItsDraftsAsVersionOne", func(t *testing.T) {
		if kind != sqliteStore {
			t.Skip("a file of an older schema: SQLite only")
		}
		withMigrations(t, migrations()[:5])
		s, path := newSeededOn(t, kind)
		// Rows as a schema-5 build wrote them.
		d := Draft{ID: "d_old"}
		a := Application{ID: "app_old"}
		if _, err := s.DB().Exec(`INSERT INTO drafts (draft_id, task_id, order_id, user, reason, created_at, expires_at)
			VALUES ('d_old', 'old', 'A3001', 'demo-user', 'size', ?1, ?1);
			INSERT INTO applications VALUES ('app_old', 'd_old', 'A3001', 'demo-user', 'pending', ?1)`, formatTime(t0)); err != nil {
			t.Fatal(err)
		}
		s.Close()
		withMigrations(t, mustLoadMigrations(migrationFiles))
		s = mustOpen(t, path, Options{})
		got, err := s.DraftByTask(ctx, "old")
		if err != nil || got.ID != d.ID || got.Version != 1 || got.Superseded {
			t.Fatalf("DraftByTask after migration = %+v, %v", got, err)
		}
		app, err := s.ApplicationByTask(ctx, "old")
		if err != nil || app.ID != a.ID {
			t.Fatalf("ApplicationByTask after migration = %+v, %v", app, err)
		}
		var fk int
		if err := s.DB().QueryRow(`SELECT count(*) FROM pragma_foreign_key_check`).Scan(&fk); err != nil || fk != 0 {
			t.Fatalf("foreign_key_check: %d rows, %v", fk, err)
		}
		if _, _, err := s.PrepareDraftVersion(ctx, "old", 2, "A3001", "demo-user", "size", time.Minute, t0); err != nil {
			t.Fatalf("version 2 of a migrated task: %v", err)
		}
	})
}

func TestDecisions(t *testing.T) {
	t.Parallel()
	forStores(t, testDecisions)
}

func testDecisions(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	d := Decision{ID: "dec-1", TaskID: "t1", By: "alice", Action: "approve", DraftID: "d_1", Version: 1, At: t0}
	for range 2 { // the node that takes the answer may run again
		if err := s.RecordDecision(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordDecision(ctx, Decision{ID: "dec-2", TaskID: "t1", By: "bob", Action: "cancel", At: t0.Add(time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Decisions(ctx, "t1")
	if err != nil || len(got) != 2 || got[0].By != "alice" || got[0].Version != 1 || got[1].Action != "cancel" || !got[0].At.Equal(t0) {
		t.Fatalf("Decisions = %+v, %v", got, err)
	}
	if none, err := s.Decisions(ctx, "t2"); err != nil || none == nil || len(none) != 0 {
		t.Fatalf("Decisions(unknown) = %#v, %v; want empty", none, err)
	}
}

func TestApprovers(t *testing.T) {
	t.Parallel()
	forStores(t, testApprovers)
}

func testApprovers(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := openStore(t, kind, Options{Now: fixedClock(t0)})
	if ok, err := s.MayDecide(ctx, "ci-bot", "ci-bot"); err != nil || !ok {
		t.Fatalf("owner MayDecide = %v, %v", ok, err)
	}
	if ok, _ := s.MayDecide(ctx, "ci-bot", "alice"); ok {
		t.Fatal("alice may decide before a grant")
	}
	for i, want := range []bool{true, false} {
		if changed, err := s.GrantApprover(ctx, "ci-bot", "alice", "ci-bot", t0.Add(time.Duration(i)*time.Second)); err != nil || changed != want {
			t.Fatalf("grant #%d = %v, %v; want %v", i+1, changed, err, want)
		}
	}
	if ok, _ := s.MayDecide(ctx, "ci-bot", "alice"); !ok {
		t.Fatal("alice may not decide after the grant")
	}
	if owners, err := s.OwnersGranting(ctx, "alice"); err != nil || len(owners) != 1 || owners[0] != "ci-bot" {
		t.Fatalf("OwnersGranting = %v, %v", owners, err)
	}
	if g, err := s.Grants(ctx, "alice"); err != nil || len(g) != 1 || g[0].GrantedBy != "ci-bot" || !g[0].GrantedAt.Equal(t0) {
		t.Fatalf("Grants = %+v, %v", g, err)
	}
	for i, want := range []bool{true, false} {
		if changed, err := s.RevokeApprover(ctx, "ci-bot", "alice", "ci-bot", t0.Add(time.Minute)); err != nil || changed != want {
			t.Fatalf("revoke #%d = %v, %v; want %v", i+1, changed, err, want)
		}
	}
	if ok, _ := s.MayDecide(ctx, "ci-bot", "alice"); ok {
		t.Fatal("alice may decide after the revoke")
	}
	ch, err := s.GrantChanges(ctx, "alice")
	if err != nil || len(ch) != 2 || ch[0].Change != ChangeGrant || ch[1].Change != ChangeRevoke || ch[1].By != "ci-bot" || !ch[1].At.Equal(t0.Add(time.Minute)) {
		t.Fatalf("GrantChanges = %+v, %v", ch, err)
	}
}
