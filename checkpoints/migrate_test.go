package checkpoints_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"assistant/checkpoints"
	"assistant/flow"
	"assistant/internal/sqlite"
	"assistant/internal/sqlstore"
)

// v1Thread is a thread as schema version 1 stored it, read with its rules.
type v1Thread struct {
	headID, updatedAt string
	checkpoints       []*flow.Checkpoint // by seq, each with its PendingWrites
}

// mustReadV1 reads every thread of a schema version 1 file the way version 1
// of SQLite.Get did, straight from its columns.
func mustReadV1(tb testing.TB, path string) map[string]*v1Thread {
	tb.Helper()
	db := mustOpenRaw(tb, path)
	defer db.Close()
	threads := map[string]*v1Thread{}
	rows, err := db.Query(`SELECT thread_id, head_id, updated_at FROM threads`)
	if err != nil {
		tb.Fatal(err)
	}
	for rows.Next() {
		var id string
		th := &v1Thread{}
		if err := rows.Scan(&id, &th.headID, &th.updatedAt); err != nil {
			tb.Fatal(err)
		}
		threads[id] = th
	}
	rows.Close()
	rows, err = db.Query(`SELECT thread_id, checkpoint_id, seq, parent_id, format, values_json, next_json,
		breakpoint, metadata_json, created_at FROM checkpoints ORDER BY thread_id, seq`)
	if err != nil {
		tb.Fatal(err)
	}
	byID := map[string]*flow.Checkpoint{}
	for rows.Next() {
		cp := &flow.Checkpoint{}
		var values, next sql.NullString
		var meta, created string
		if err := rows.Scan(&cp.ThreadID, &cp.ID, &cp.Seq, &cp.ParentID, &cp.Format, &values, &next,
			&cp.Breakpoint, &meta, &created); err != nil {
			tb.Fatal(err)
		}
		if values.Valid {
			cp.Values = json.RawMessage(values.String)
		}
		if next.Valid {
			if err := json.Unmarshal([]byte(next.String), &cp.Next); err != nil {
				tb.Fatal(err)
			}
		}
		if err := json.Unmarshal([]byte(meta), &cp.Metadata); err != nil {
			tb.Fatal(err)
		}
		at, err := time.Parse(time.RFC3339Nano, created)
		if err != nil {
			tb.Fatal(err)
		}
		cp.CreatedAt = at.UTC()
		threads[cp.ThreadID].checkpoints = append(threads[cp.ThreadID].checkpoints, cp)
		byID[cp.ThreadID+"/"+cp.ID] = cp
	}
	rows.Close()
	rows, err = db.Query(`SELECT thread_id, checkpoint_id, task_id, kind, idx, node, value_json FROM writes
		ORDER BY thread_id, checkpoint_id, task_id, kind, idx`)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var thread, id string
		var w flow.Write
		var value sql.NullString
		if err := rows.Scan(&thread, &id, &w.TaskID, &w.Kind, &w.Idx, &w.Node, &value); err != nil {
			tb.Fatal(err)
		}
		if value.Valid {
			w.Value = json.RawMessage(value.String)
		}
		cp := byID[thread+"/"+id]
		cp.PendingWrites = append(cp.PendingWrites, w)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return threads
}

// checkSame fails unless s gives back every thread of want unchanged: Get
// by id (with pending writes), Get of the head and List.
func checkSame(tb testing.TB, s flow.Checkpointer, want map[string]*v1Thread) {
	tb.Helper()
	ctx := context.Background()
	for thread, th := range want {
		var listed []string
		for i := len(th.checkpoints) - 1; i >= 0; i-- {
			cp := th.checkpoints[i]
			got, err := s.Get(ctx, thread, cp.ID)
			if err != nil || !reflect.DeepEqual(got, cp) {
				tb.Errorf("Get(%s, %s) =\n %+v, %v\nwant\n %+v", thread, cp.ID, got, err, cp)
			}
			listed = append(listed, cp.ID)
		}
		if head, err := s.Get(ctx, thread, ""); err != nil || head == nil || head.ID != th.headID {
			tb.Errorf("head of %s = %+v, %v; want %s", thread, head, err, th.headID)
		}
		cps, err := s.List(ctx, thread, flow.ListOptions{})
		if err != nil {
			tb.Fatal(err)
		}
		var ids []string
		for i, cp := range cps {
			ids = append(ids, cp.ID)
			want := *th.checkpoints[len(th.checkpoints)-1-i]
			want.PendingWrites = nil
			if !reflect.DeepEqual(cp, &want) {
				tb.Errorf("List(%s)[%d] =\n %+v\nwant\n %+v", thread, i, cp, &want)
			}
		}
		if !reflect.DeepEqual(ids, listed) {
			tb.Errorf("List(%s) = %v, want %v", thread, ids, listed)
		}
	}
}

// copyFile copies the file at src to dst (mode 0600).
func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	writeFile(tb, dst, b)
}

// mustOpenV1 makes a schema version 1 file at path, as the first release
// did, and returns the pool for the rows of a test.
func mustOpenV1(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	init, err := os.ReadFile(filepath.Join("migrations", "0001_init.sql"))
	if err != nil {
		tb.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), path, sqlite.Spec{
		ApplicationID: checkpoints.ApplicationID,
		Migrations:    []sqlstore.Migration{{Version: 1, Name: "0001_init.sql", SQL: string(init)}},
		Create:        true,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

// mustQuery returns the one value of a query on the file at path.
func mustQuery(tb testing.TB, path, q string, args ...any) string {
	tb.Helper()
	db := mustOpenRaw(tb, path)
	defer db.Close()
	var v sql.NullString
	if err := db.QueryRow(q, args...).Scan(&v); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
	if !v.Valid {
		return "NULL"
	}
	return v.String
}

// TestSQLiteMigratesV1Fixture opens the real version 1 file of
// testdata/fixtures and checks that version 2 gives back every checkpoint
// and write as version 1 did, and goes on from the head.
func TestSQLiteMigratesV1Fixture(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
	copyFile(t, filepath.Join("..", "testdata", "fixtures", "v1", "checkpoints.sqlite"), path)
	want := mustReadV1(t, path)
	if len(want) == 0 {
		t.Fatal("the fixture holds no thread")
	}

	s := mustOpenSQLite(t, path, checkpoints.SQLiteOptions{})
	if v := mustQuery(t, path, `PRAGMA user_version`); v != "4" {
		t.Fatalf("user_version = %s after open, want 4", v)
	}
	checkSame(t, s, want)
	for thread, th := range want {
		next := &flow.Checkpoint{ThreadID: thread, ID: uuid.Must(uuid.NewV7()).String(), ParentID: th.headID}
		if err := s.Put(ctx, next); err != nil || next.Seq != int64(len(th.checkpoints)+1) {
			t.Errorf("Put after the head of %s = %v, seq %d", thread, err, next.Seq)
		}
	}
}

// TestSQLiteMigratesV1EdgeCases converts version 1 rows that the compact
// rules must not lose: the zero time, short and negative fractions, a time
// with an offset, metadata whose writes are spaced out or in another layout,
// a pruned thread whose oldest checkpoint names a removed parent, a write
// without a value.
func TestSQLiteMigratesV1EdgeCases(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
	db := mustOpenV1(t, path)
	mustExec(t, db,
		`INSERT INTO threads VALUES ('a', 'a4', 4, '2026-03-01T12:30:45.1Z'), ('p', 'p4', 4, '2030-01-01T00:00:00Z')`,
		`INSERT INTO checkpoints VALUES
		 ('a', 'a1', 1, '',   -1, 'input',  1, '{"order":"A3003"}', '["lookup"]', '', '{"source":"input","step":-1}', '0001-01-01T00:00:00Z'),
		 ('a', 'a2', 2, 'a1',  0, 'loop',   2, NULL, '[]', '', '{"source":"loop","step":0,"writes":{"n":{ "x" : [1, 2] },"m":"\u00e9"}}', '2026-03-01T12:30:45.5Z'),
		 ('a', 'a3', 3, 'a2',  1, 'loop',   2, '{}', NULL, 'after:n', '{"step":1,"source":"loop","waiting":{"j":["a"]}}', '1969-12-31T23:59:59.999999999Z'),
		 ('a', 'a4', 4, 'a3',  1, 'update', 2, '{}', '["j"]', '', '{"source":"update","step":1,"writes":{"a":1},"waiting":{"j":["a","b"]}}', '2026-03-01T14:30:45.000000001+02:00'),
		 ('p', 'p3', 3, 'p2',  1, 'loop',   2, '{}', NULL, '', '{"source":"loop","step":1}', '2030-01-01T00:00:00.000000001Z'),
		 ('p', 'p4', 4, 'p3',  2, 'loop',   2, '{}', NULL, '', '{"source":"loop","step":2}', '2262-04-11T23:47:16.854775807Z')`,
		`INSERT INTO writes VALUES
		 ('a', 'a2', 'task-b', 'update', 0, 'n', '{ "spaced": true }'),
		 ('a', 'a2', 'task-a', 'interrupt', 1, 'n', '"q"'),
		 ('p', 'p4', 'task', 'update', 0, 'n', NULL)`)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	want := mustReadV1(t, path)

	s := mustOpenSQLite(t, path, checkpoints.SQLiteOptions{})
	checkSame(t, s, want)
	for _, tc := range []struct{ name, query, want string }{
		{"OnlyThePrunedParentIsStored", `SELECT group_concat(checkpoint_id || '>' || pruned_parent_id) FROM checkpoints WHERE pruned_parent_id IS NOT NULL`, "p3>p2"},
		{"NoWritesNoMetadata", `SELECT metadata_json FROM checkpoints WHERE checkpoint_id = 'a1'`, "NULL"},
		{"WritesKeepTheirBytes", `SELECT metadata_json FROM checkpoints WHERE checkpoint_id = 'a2'`, `{"writes":{"n":{ "x" : [1, 2] },"m":"\u00e9"}}`},
		{"OtherLayoutKeptWhole", `SELECT metadata_json FROM checkpoints WHERE checkpoint_id = 'a3'`, `{"step":1,"source":"loop","waiting":{"j":["a"]}}`},
		{"ZeroTimeIsNull", `SELECT created_at FROM checkpoints WHERE checkpoint_id = 'a1'`, "NULL"},
		{"TimesAreIntegers", `SELECT count(*) FROM checkpoints WHERE typeof(created_at) NOT IN ('integer', 'null')`, "0"},
		{"ThreadTimes", `SELECT group_concat(updated_at) FROM (SELECT updated_at FROM threads ORDER BY thread_id)`, "1772368245100000000,1893456000000000000"},
		{"OldTablesGone", `SELECT group_concat(name) FROM (SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name)`, "checkpoints,data_dir,fences,threads,writes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustQuery(t, path, tc.query); got != tc.want {
				t.Errorf("%s = %s, want %s", tc.query, got, tc.want)
			}
		})
	}

	t.Run("PutAndPruneGoOn", func(t *testing.T) {
		next := &flow.Checkpoint{ThreadID: "p", ID: "p5", ParentID: "p4"}
		if err := s.Put(ctx, next); err != nil || next.Seq != 5 {
			t.Fatalf("Put after p4 = %v, seq %d; want nil, 5", err, next.Seq)
		}
		if _, _, err := s.Prune(ctx, "p", 1); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "p", "")
		if err != nil || got == nil || got.ID != "p5" || got.ParentID != "p4" {
			t.Errorf("head after prune = %+v, %v; want p5 with parent p4", got, err)
		}
	})
}

// TestSQLiteMigrationRefusesUnreadableTime checks that a version 1 time the
// conversion cannot read exactly fails the migration, which leaves the file
// at version 1 with every row.
func TestSQLiteMigrationRefusesUnreadableTime(t *testing.T) {
	for _, created := range []string{"yesterday", "2026-03-01T12:30:45.12x4Z", "1500-01-01T00:00:00Z", "2026-03-01T12:30:45.1234567891Z"} {
		t.Run(created, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
			db := mustOpenV1(t, path)
			mustExec(t, db,
				`INSERT INTO threads VALUES ('a', 'a1', 1, '2026-03-01T12:30:45Z')`,
				`INSERT INTO checkpoints VALUES ('a', 'a1', 1, '', -1, 'input', 1, NULL, NULL, '', '{"source":"input","step":-1}', '`+created+`')`)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			s, err := checkpoints.OpenSQLite(context.Background(), path, checkpoints.SQLiteOptions{})
			if err == nil {
				s.Close()
				t.Fatal("OpenSQLite = nil, want the migration to fail")
			}
			if !strings.Contains(err.Error(), "0002_compact.sql") || !strings.Contains(err.Error(), "CHECK") {
				t.Errorf("OpenSQLite = %v, want a CHECK failure of 0002_compact.sql", err)
			}
			if v := mustQuery(t, path, `PRAGMA user_version`); v != "1" {
				t.Errorf("user_version = %s, want 1", v)
			}
			if got := mustQuery(t, path, `SELECT created_at FROM checkpoints`); got != created {
				t.Errorf("created_at = %s, want %s kept", got, created)
			}
		})
	}
}
