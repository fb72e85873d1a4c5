package returns_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"assistant/flow/returns"
	"assistant/internal/sqlite"
)

// The floor benchmarks measure the least SQLite work that the durability
// rules of docs/design.md allow for what BenchmarkStartApprove and
// BenchmarkDecide measure, with the same driver and pragmas and no engine,
// JSON, checks or bookkeeping at all: the ceiling any build of this design
// could reach on the machine that runs them. Run each next to the
// benchmark it bounds, in one `go test` run (scripts/bench.sh does), and
// compare the two: the machine's speed drifts by half within minutes, the
// ratio much less (docs/performance.md "Targets and current figures").

// floorDSN is a DSN with the pragmas every pool of the stores uses
// (internal/sqlite's opening.pool), synchronous as given.
func floorDSN(path, synchronous string) string {
	return sqlite.DSN(path,
		"_txlock=immediate",
		"_pragma=busy_timeout(5000)",
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous("+synchronous+")",
		"_pragma=foreign_keys(ON)",
		"_pragma=journal_size_limit(4194304)",
		"_pragma=cache_size(-128)",
	)
}

// openFloor opens a pool of one connection on path.
func openFloor(tb testing.TB, path, synchronous string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", floorDSN(path, synchronous))
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	tb.Cleanup(func() { db.Close() })
	return db
}

// prepareFloor prepares query on db.
func prepareFloor(tb testing.TB, db *sql.DB, query string) *sql.Stmt {
	tb.Helper()
	st, err := db.Prepare(query)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkCycleFloor is the floor of BenchmarkStartApprove: per op, the
// six durable commits a start+approve cycle must make (docs/performance.md
// "Cycles in one process": start's draft, question and release, approve's
// application, checkpoint and release), alternating between two files as
// the cycle does (business, checkpoints, business, business, checkpoints,
// business), each one prepared INSERT of a 300-byte row at
// synchronous=FULL, and nothing else. It reports cycles/s.
func BenchmarkCycleFloor(b *testing.B) {
	dir := b.TempDir()
	var ins [2]*sql.Stmt
	for i, name := range []string{returns.BusinessFile, returns.CheckpointsFile} {
		db := openFloor(b, filepath.Join(dir, name), "FULL")
		if _, err := db.Exec(`CREATE TABLE rows (id INTEGER PRIMARY KEY, k TEXT NOT NULL, v TEXT NOT NULL)`); err != nil {
			b.Fatal(err)
		}
		ins[i] = prepareFloor(b, db, `INSERT INTO rows (k, v) VALUES (?, ?)`)
	}
	v := strings.Repeat("v", 300)
	order := [6]int{0, 1, 0, 0, 1, 0}
	b.ResetTimer()
	for i := range b.N {
		for j, f := range order {
			if _, err := ins[f].Exec(fmt.Sprintf("t%d-%d", i, j), v); err != nil { // autocommit: one durable commit
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
}

// BenchmarkDecideFloor is the floor of BenchmarkDecide: a batch parks b.N
// tasks at approval as there (not timed), then each is approved with the
// least SQL the design allows, on the data dir's own files (their schema,
// indexes and foreign keys), in chunks of returns' 100 rows with one
// durable commit per file per chunk: per decision, the business
// transaction reads the task's current draft (the decision binds to it),
// writes the decision, the application, the task's status with its lease
// released, one step of the timeline and the batch row's outcome; the
// checkpoints transaction writes one checkpoint (the state the task
// parked with) and moves the thread's head. It reports decisions/s.
func BenchmarkDecideFloor(b *testing.B) {
	svc, dir := openService(b, b.N)
	parkTasks(b, svc, "d", b.N, 0)
	biz := openFloor(b, filepath.Join(dir, returns.BusinessFile), "FULL")
	cps := openFloor(b, filepath.Join(dir, returns.CheckpointsFile), "FULL")
	var values string
	if err := cps.QueryRow(`SELECT values_json FROM checkpoints WHERE thread_id = 'd0' ORDER BY seq DESC LIMIT 1`).Scan(&values); err != nil {
		b.Fatal(err)
	}
	draft := prepareFloor(b, biz, `SELECT draft_id, version, order_id, user FROM drafts WHERE task_id = ? AND superseded_at IS NULL`)
	decision := prepareFloor(b, biz, `INSERT INTO decisions (decision_id, task_id, by_user, action, draft_id, version, at) VALUES (?, ?, ?, 'approve', ?, ?, ?)`)
	application := prepareFloor(b, biz, `INSERT INTO applications (application_id, draft_id, order_id, user, review_status, created_at) VALUES (?, ?, ?, ?, 'submitted', ?)`)
	task := prepareFloor(b, biz, `UPDATE tasks SET status = 'done', stage = 'submitted', lease_owner = NULL, lease_pid = 0, lease_host = '', lease_until = '', updated_at = ? WHERE task_id = ?`)
	step := prepareFloor(b, biz, `INSERT INTO steps (task_id, seq, node, attempt, status, started_at, ended_at) VALUES (?, 1000, 'submit', 1, 'done', ?, ?)`)
	outcome := prepareFloor(b, biz, `UPDATE batch_rows SET outcome = 'submitted' WHERE batch_id = 'parked' AND row_no = ?`)
	checkpoint := prepareFloor(b, cps, `INSERT INTO checkpoints (thread_id, checkpoint_id, seq, step, source, format, values_json, breakpoint, created_at) VALUES (?, ?, 1000, 9, 'loop', 2, ?, '', ?)`)
	head := prepareFloor(b, cps, `UPDATE threads SET head_id = ?, head_seq = 1000, updated_at = ? WHERE thread_id = ?`)
	exec := func(tx *sql.Tx, st *sql.Stmt, args ...any) {
		if _, err := tx.Stmt(st).Exec(args...); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for lo := 0; lo < b.N; lo += 100 {
		hi := min(b.N, lo+100)
		tx, err := biz.Begin()
		if err != nil {
			b.Fatal(err)
		}
		for i := lo; i < hi; i++ {
			id, now := fmt.Sprintf("d%d", i), time.Now().UTC().Format(time.RFC3339Nano)
			var draftID, order, user string
			var version int
			if err := tx.Stmt(draft).QueryRow(id).Scan(&draftID, &version, &order, &user); err != nil {
				b.Fatal(err)
			}
			decisionID := "dec_" + uuid.NewSHA1(uuid.NameSpaceURL, []byte("floor:"+id)).String() // as decide's: a hash of run and row
			exec(tx, decision, decisionID, id, user, draftID, version, now)
			exec(tx, application, "app_"+uuid.Must(uuid.NewV7()).String(), draftID, order, user, now)
			exec(tx, task, now, id)
			exec(tx, step, id, now, now)
			exec(tx, outcome, i+1)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		if tx, err = cps.Begin(); err != nil {
			b.Fatal(err)
		}
		for i := lo; i < hi; i++ {
			id, cp, now := fmt.Sprintf("d%d", i), uuid.Must(uuid.NewV7()).String(), time.Now().UnixNano()
			exec(tx, checkpoint, id, cp, values, now)
			exec(tx, head, cp, now, id)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}
