package e2e

// The fault matrix and the chaos test (docs/recovery.md "The fault
// matrix", "Chaos test", "Verification points"): every fault point of the
// return flow × every command of the walkthrough that reaches it. The
// process is killed with SIGKILL at the point (ASSISTANT_FAULT), the same
// command is run again to recover, the walkthrough finishes, and seven
// checks are made. The matrix is printed to the test log and, when
// FAULT_REPORT names a file, written there (scripts/faults.sh prints it);
// when FAULT_FIGURES names a file, the run's figures are added to it as
// one line (keepFigures).

import (
	"assistant/flow/returns"
	"assistant/internal/pgtest"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// faultNodes are the nodes of the return flow; each has three fault phases.
var faultNodes = []string{"lookup", "ask_reason", "prepare", "review", "review_2", "submit", "cancel"}

// faultPoints lists every fault point of the return flow.
func faultPoints() []string {
	var ps []string
	for _, n := range faultNodes {
		ps = append(ps, "before:"+n, "after:"+n, "after-checkpoint:"+n)
	}
	return append(ps, "submit:after-business-commit")
}

// scenario is a walkthrough: commands run one after the other on task "t".
type scenario struct {
	name   string
	steps  [][]string
	apps   int // applications at the end
	drafts int // draft versions at the end; 0 means 1
	// width is how many nodes its widest superstep runs at once (0 means
	// 1): a kill may cut all of them, so a recovery may run that many
	// again.
	width int
}

// Each walkthrough's draft lives an hour: a case starts from a copy of
// what the reference run left, which on a loaded machine (or with
// -parallel 1) may be more than the default 300 s older than the case.
var scenarios = []scenario{
	{"approve", [][]string{{"start", "t", "A3003", "--reason", "too small", "--draft-ttl", "1h"}, {"resume", "t", "--action", "approve"}}, 1, 0, 0},
	{"reason", [][]string{{"start", "t", "A3004", "--draft-ttl", "1h"}, {"resume", "t", "--reason", "wrong colour"}, {"resume", "t", "--action", "approve"}}, 1, 0, 0},
	{"cancel", [][]string{{"start", "t", "A3001", "--reason", "broken", "--draft-ttl", "1h"}, {"resume", "t", "--action", "cancel"}}, 0, 0, 0},
	// An edit loops back through prepare (a second draft
	// version); two approvals run review and review_2 in one superstep.
	// The grant comes after start: only start makes a data dir.
	{"edit", [][]string{{"start", "t", "A3002", "--reason", "broken", "--draft-ttl", "1h"}, {"resume", "t", "--action", "edit", "--reason", "too big"}, {"resume", "t", "--action", "approve", "--draft", currentDraft}}, 1, 2, 0},
	{"two", [][]string{{"start", "t", "A3003", "--reason", "broken", "--approvals", "2", "--draft-ttl", "1h"}, {"approvers", "grant", "alice"}, {"approvers", "grant", "bob"}, {"resume", "t", "--action", "approve", "--user", "alice"}, {"resume", "t", "--action", "approve", "--user", "bob"}}, 1, 0, 2},
}

// faultRunOn is faultRun on the stores of st.
func faultRunOn(tb testing.TB, st faultStore, point string, args []string) (string, int, time.Duration) {
	tb.Helper()
	return faultRunEnv(tb, st, point, nil, args)
}

// faultRunEnv is faultRunOn with env (KEY=VALUE items) added to the
// command's environment.
func faultRunEnv(tb testing.TB, st faultStore, point string, env, args []string) (string, int, time.Duration) {
	tb.Helper()
	args = withCurrentDraft(tb, st, args)
	c := exec.Command(assistantBin(), withDefaults(args, append(st.flags(), "--output", "json")...)...)
	c.Env = append(append(os.Environ(), "ASSISTANT_FAULT="+point), env...)
	var out bytes.Buffer
	c.Stdout = &out
	start := time.Now()
	err := c.Run()
	return out.String(), exitOf(tb, err), time.Since(start)
}

// currentDraft stands in a scenario step for the id of task t's current
// draft: an approve after an edit names the version it approves
// (docs/approvals.md "Answering a question").
const currentDraft = "{draft}"

// withCurrentDraft is args with currentDraft replaced by the id of task
// t's current draft in st, as show reports it.
func withCurrentDraft(tb testing.TB, st faultStore, args []string) []string {
	tb.Helper()
	if !slices.Contains(args, currentDraft) {
		return args
	}
	out, code, _ := faultRunOn(tb, st, "", []string{"show", "t"})
	var v struct {
		Draft struct {
			DraftID string `json:"draft_id"`
		} `json:"draft"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Draft.DraftID == "" {
		tb.Fatalf("show t (exit %d) names no draft: %s", code, out)
	}
	replaced := slices.Clone(args)
	for i, a := range replaced {
		if a == currentDraft {
			replaced[i] = v.Draft.DraftID
		}
	}
	return replaced
}

// faultStore is where a fault case keeps its two stores: a data dir of
// SQLite files, or a PostgreSQL database (the matrix's store dimension).
type faultStore interface {
	// flags are the global flags that name the stores.
	flags() []string
	// scalar runs q and returns the first column of its first row as text.
	scalar(tb testing.TB, q storeQuery, args ...any) string
	// verifyClean fails tb unless `assistant verify` finds no error.
	verifyClean(tb testing.TB)
}

// storeQuery is one question to the stores, in each store's SQL: file is
// the SQLite file it reads, pg its text on PostgreSQL.
type storeQuery struct{ file, sqlite, pg string }

// dirStore is a data dir.
type dirStore string

func (d dirStore) flags() []string { return []string{"--data", string(d)} }

func (d dirStore) scalar(tb testing.TB, q storeQuery, args ...any) string {
	tb.Helper()
	return query(tb, string(d), q.file, q.sqlite, args...)
}

func (d dirStore) verifyClean(tb testing.TB) { tb.Helper(); verifyClean(tb, string(d)) }

// pgFaultStore is a PostgreSQL database (pgStore).
type pgFaultStore struct{ pgStore }

func (p pgFaultStore) flags() []string { return []string{"--store", p.url} }

func (p pgFaultStore) scalar(tb testing.TB, q storeQuery, args ...any) string {
	tb.Helper()
	return p.query(tb, q.pg, args...)
}

// storeKind makes a fresh, empty store of one kind for a test.
type storeKind struct {
	name string
	make func(t *testing.T) faultStore
	// copy makes a new store holding what from holds, which no process
	// has open; nil when the kind cannot, and a case runs the steps
	// before its own again.
	copy func(t *testing.T, from faultStore) faultStore
}

var (
	sqliteKind = storeKind{"sqlite",
		func(t *testing.T) faultStore { return dirStore(t.TempDir()) },
		func(t *testing.T, from faultStore) faultStore {
			dir := t.TempDir()
			copyDataDir(t, string(from.(dirStore)), dir)
			return dirStore(dir)
		}}
	postgresKind = storeKind{"postgres",
		func(t *testing.T) faultStore { return pgFaultStore{newPGStore(t)} },
		func(t *testing.T, from faultStore) faultStore { return pgFaultStore{from.(pgFaultStore).clone(t)} }}
)

// clones numbers the databases clone makes, for their names.
var clones atomic.Int64

// clone makes a new database on s's server holding what s holds, which no
// session may have open (CREATE DATABASE … TEMPLATE), dropped when t
// ends.
func (s pgStore) clone(t *testing.T) pgStore {
	t.Helper()
	src, err := databaseName(s.url)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("%s_%d", src, clones.Add(1))
	// From a session on another database: one on the template would be
	// a session open on it.
	admin, err := pgtest.WithDatabase(s.url, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	pgStore{admin}.exec(t, pgtest.CreateFrom(name, src))
	t.Cleanup(func() {
		pgStore{admin}.exec(t, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
	})
	u, err := pgtest.WithDatabase(s.url, name)
	if err != nil {
		t.Fatal(err)
	}
	return pgStore{u}
}

// databaseName is the database a connection string names: a URL's path,
// or the last dbname of a keyword/value string.
func databaseName(conn string) (string, error) {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err != nil {
			return "", errors.New("the database's connection URL does not parse")
		}
		return strings.TrimPrefix(u.Path, "/"), nil
	}
	name := ""
	for _, kv := range strings.Fields(conn) {
		if v, ok := strings.CutPrefix(kv, "dbname="); ok {
			name = v
		}
	}
	if name == "" {
		return "", errors.New("the database's connection string names no dbname")
	}
	return name, nil
}

// The matrix's questions to the stores, about task "t".
var (
	qHead = storeQuery{"checkpoints.sqlite",
		`SELECT coalesce((SELECT head_id FROM threads WHERE thread_id = 't'), '')`,
		`SELECT coalesce((SELECT head_id FROM checkpoints.threads WHERE thread_id = 't'), '')`}
	qValues = storeQuery{"checkpoints.sqlite",
		`SELECT values_json FROM checkpoints WHERE thread_id = 't' AND checkpoint_id = ?`,
		`SELECT values_json::text FROM checkpoints.checkpoints WHERE thread_id = 't' AND checkpoint_id = $1`}
	// A thread is linear (Put is a compare-and-set on its head), so the
	// head's parent chain is every checkpoint of the thread up to the
	// head's seq.
	qOnChain = storeQuery{"checkpoints.sqlite",
		`SELECT count(*) FROM checkpoints c JOIN threads h USING (thread_id) WHERE c.thread_id = 't' AND c.checkpoint_id = ? AND c.seq <= h.head_seq`,
		`SELECT count(*) FROM checkpoints.checkpoints c JOIN checkpoints.threads h USING (thread_id) WHERE c.thread_id = 't' AND c.checkpoint_id = $1 AND c.seq <= h.head_seq`}
	qApps = storeQuery{"business.sqlite",
		`SELECT count(*) FROM applications a JOIN drafts d USING (draft_id) WHERE d.task_id = 't'`,
		`SELECT count(*) FROM business.applications a JOIN business.drafts d USING (draft_id) WHERE d.task_id = 't'`}
	qDrafts = storeQuery{"business.sqlite",
		`SELECT count(*) FROM drafts WHERE task_id = 't'`,
		`SELECT count(*) FROM business.drafts WHERE task_id = 't'`}
	// The idempotency keys must be enforced by the store itself, not only
	// by the lookups in the code: UNIQUE(draft_id), and for drafts
	// UNIQUE(task_id, version) and one current draft per task
	// (drafts_current, partial on task_id). 3 when all are there.
	qKeys = storeQuery{"business.sqlite", `
		SELECT (SELECT count(*) FROM pragma_index_list('applications') l JOIN pragma_index_info(l.name) i WHERE l."unique" = 1 AND i.name = 'draft_id')
		     + (SELECT count(*) FROM pragma_index_list('drafts') l WHERE l."unique" = 1
		          AND (SELECT group_concat(name) FROM pragma_index_info(l.name)) IN ('task_id,version', 'task_id'))`, `
		SELECT count(*) FROM pg_indexes WHERE schemaname = 'business' AND indexdef LIKE 'CREATE UNIQUE INDEX %'
		  AND ((tablename = 'applications' AND indexdef LIKE '%(draft_id)')
		    OR (tablename = 'drafts' AND (indexdef LIKE '%(task_id, version)' OR indexdef LIKE '%(task_id) WHERE %')))`}
)

var maskRE = regexp.MustCompile(`"(draft_id|application_id|id|expires_at|until|at)": "[^"]*"|"reused": (true|false)|"pid": \d+`)

// mask hides ids, times and the reused flag (a recovered submit reports the
// application it found, by design) so runs can be compared.
func mask(s string) string { return maskRE.ReplaceAllString(s, `"$1": "…"`) }

// head returns the thread's head checkpoint id and its values.
func head(tb testing.TB, st faultStore) (string, string) {
	tb.Helper()
	id := st.scalar(tb, qHead)
	if id == "" {
		return "", ""
	}
	return id, st.scalar(tb, qValues, id)
}

// isAncestor reports whether checkpoint id is on the parent chain of the
// head.
func isAncestor(tb testing.TB, st faultStore, id string) bool {
	tb.Helper()
	return st.scalar(tb, qOnChain, id) == "1"
}

type faultCase struct {
	scenario string
	step     int
	point    string
	// order is the case's place in the matrix: its scenario's, then its
	// step's, then its point's in faultPoints.
	order  [3]int
	checks [7]string // pass, FAIL: why, or n/a
	// The recovering command's own figures (its JSON "recovery"; zero when
	// it continued no crashed run): finished steps kept and run again,
	// steps the kill cut, its wall time.
	kept, redone, interrupted int
	recoveryMS                int64
	wall                      time.Duration
}

// TestFaultMatrix runs the matrix on SQLite, every scenario.
func TestFaultMatrix(t *testing.T) {
	t.Parallel()
	faultMatrix(t, sqliteKind, scenarios)
}

// TestFaultMatrixPostgres runs the matrix on PostgreSQL: the scenarios
// named in FAULT_PG_SCENARIOS ("all" for every one; default approve and
// two, which reach every submit point and the parallel review).
func TestFaultMatrixPostgres(t *testing.T) {
	t.Parallel()
	names := "approve,two"
	if s := os.Getenv("FAULT_PG_SCENARIOS"); s != "" {
		names = s
	}
	var scs []scenario
	for _, sc := range scenarios {
		if names == "all" || slices.Contains(strings.Split(names, ","), sc.name) {
			scs = append(scs, sc)
		}
	}
	faultMatrix(t, postgresKind, scs)
}

// faultMatrix runs every fault point of every step of scs on stores of
// kind, and checks that the points the matrix needs were reached: all of
// them when scs is every scenario, the submit points otherwise.
func faultMatrix(t *testing.T, kind storeKind, scs []scenario) {
	// Each case runs in a subtest of its own, in parallel with the others
	// (they share nothing), unless FAULT_FIGURES asks for the figures:
	// then one at a time, so that each recovery's wall time is its own.
	parallel := !measured()
	var (
		mu    sync.Mutex
		cases []faultCase
	)
	t.Run("cases", func(t *testing.T) {
		for i, sc := range scs {
			t.Run(sc.name, func(t *testing.T) {
				if parallel {
					t.Parallel()
				}
				// The run with no fault, the reference for equivalence; on
				// the way, a copy of what the steps before each step leave,
				// where a case of that step starts (nil: from nothing), and
				// the points each step passes, as it traces them.
				ref := kind.make(t)
				before := make([]faultStore, len(sc.steps))
				passes := make([]map[string]bool, len(sc.steps))
				traces := t.TempDir()
				for k, st := range sc.steps {
					if k > 0 && kind.copy != nil {
						before[k] = kind.copy(t, ref)
					}
					trace := filepath.Join(traces, fmt.Sprintf("step-%d", k+1))
					if _, code, _ := faultRunOn(t, ref, returns.FaultTrace+trace, st); code != 0 {
						t.Fatalf("%s: reference run: %v exit %d", sc.name, st, code)
					}
					passes[k] = tracedPoints(t, trace)
				}
				final, _, _ := faultRunOn(t, ref, "", []string{"show", "t"})
				for k := range sc.steps {
					for j, point := range faultPoints() {
						t.Run(fmt.Sprintf("%d_%s", k+1, point), func(t *testing.T) {
							// A point the step does not pass is no case:
							// switched on, it would kill nothing.
							if !passes[k][point] {
								return
							}
							if parallel {
								t.Parallel()
							}
							c, killed := runFaultCase(t, kind, sc, k, point, mask(final), before[k], !parallel)
							if !killed {
								t.Errorf("%s: step %v passes %s without a fault, but with it switched on it was not killed there", sc.name, sc.steps[k], point)
								return
							}
							c.order = [3]int{i, k, j}
							mu.Lock()
							cases = append(cases, c)
							mu.Unlock()
						})
					}
				}
			})
		}
	})
	slices.SortFunc(cases, func(a, b faultCase) int { return slices.Compare(a.order[:], b.order[:]) })
	report := formatMatrix(cases)
	t.Logf("\nstores: %s\n%s", kind.name, report)
	if path := os.Getenv("FAULT_REPORT"); path != "" && kind.name == sqliteKind.name {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
	if path := os.Getenv("FAULT_FIGURES"); path != "" && kind.name == sqliteKind.name {
		if err := keepFigures(path, os.Getenv("FAULT_REV"), cases); err != nil {
			t.Error(err)
		}
	}
	if kind.name == sqliteKind.name && len(scs) == len(scenarios) {
		checkCaseCountDocumented(t, len(cases))
	}
	// Every node × phase and the business-commit point must be reached by
	// some command, or the matrix does not cover the flow.
	must := faultPoints()
	if len(scs) < len(scenarios) {
		must = []string{"before:submit", "after:submit", "after-checkpoint:submit", "submit:after-business-commit"}
	}
	for _, p := range must {
		if !slices.ContainsFunc(cases, func(c faultCase) bool { return c.point == p }) {
			t.Errorf("fault point %s is reached by no command", p)
		}
	}
	for _, c := range cases {
		for i, r := range c.checks {
			if strings.HasPrefix(r, "FAIL") {
				t.Errorf("%s %s step %d %s: check %d: %s", kind.name, c.scenario, c.step+1, c.point, i+1, r)
			}
		}
	}
}

// tracedPoints is the set of fault points a trace file names
// (returns.FaultTrace), one a line; a missing file names none (the
// command passed no point).
func tracedPoints(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	points := map[string]bool{}
	for _, p := range strings.Fields(string(b)) {
		points[p] = true
	}
	return points
}

// runFaultCase kills step k of sc at point and checks recovery. The case
// starts from a copy of before, what the steps before k leave, or, when
// before is nil, runs those steps on a new store. the bool is false when
// the command was not killed at the point.
//
// timed says the case runs alone (measured), so that its recovery's wall
// time is its own and check 7 bounds it; else check 7 is n/a.
func runFaultCase(t *testing.T, kind storeKind, sc scenario, k int, point, wantFinal string, before faultStore, timed bool) (faultCase, bool) {
	t.Helper()
	c := faultCase{scenario: sc.name, step: k, point: point}
	var dir faultStore
	if before != nil {
		dir = kind.copy(t, before)
	} else {
		dir = kind.make(t)
		for _, st := range sc.steps[:k] {
			if _, code, _ := faultRunOn(t, dir, "", st); code != 0 {
				t.Fatalf("%s: step %v exit %d", sc.name, st, code)
			}
		}
	}
	_, code, _ := faultRunOn(t, dir, point, sc.steps[k])
	if code != 137 {
		return c, false
	}
	killedHead, killedValues := head(t, dir)

	// Recover: the same command again.
	out, code, wall := faultRunOn(t, dir, "", sc.steps[k])
	c.wall = wall
	if code != 0 {
		c.checks[0] = fmt.Sprintf("FAIL: recovering command exit %d", code)
		return c, true
	}
	// 1. The run went on from the last checkpoint before the kill.
	switch {
	case killedHead == "":
		c.checks[0] = "pass" // killed before the first checkpoint: nothing to keep
	case !isAncestor(t, dir, killedHead):
		c.checks[0] = "FAIL: the checkpoint at the kill is not on the recovered chain"
	case dir.scalar(t, qValues, killedHead) != killedValues:
		c.checks[0] = "FAIL: the checkpoint at the kill changed"
	default:
		c.checks[0] = "pass"
	}
	// 4. The approval gate: a kill before the approval answer leaves the
	// task waiting for a person, with nothing submitted.
	answerStep := len(sc.steps) - 1
	if k < answerStep {
		var v struct{ Status, Kind string }
		_ = json.Unmarshal([]byte(out), &v)
		apps := dir.scalar(t, qApps)
		if v.Status == "waiting" && apps == "0" {
			c.checks[3] = "pass"
		} else {
			c.checks[3] = fmt.Sprintf("FAIL: after recovery status %q kind %q, %s applications", v.Status, v.Kind, apps)
		}
	} else {
		c.checks[3] = "n/a"
	}
	// 6. What the recovery redid, by its own report: at most one
	// superstep's work may be lost to a kill (a checkpoint after each
	// superstep): one node, or the nodes of a parallel superstep (review
	// and review_2); a jump means the checkpoint policy changed.
	var rv struct {
		Recovery struct {
			StepsKept        int   `json:"steps_kept"`
			StepsRedone      int   `json:"steps_redone"`
			StepsInterrupted int   `json:"steps_interrupted"`
			RecoveryMS       int64 `json:"recovery_ms"`
		}
	}
	_ = json.Unmarshal([]byte(out), &rv)
	c.kept, c.redone, c.interrupted, c.recoveryMS = rv.Recovery.StepsKept, rv.Recovery.StepsRedone, rv.Recovery.StepsInterrupted, rv.Recovery.RecoveryMS
	if n := c.redone + c.interrupted; n > max(sc.width, 1) {
		c.checks[5] = fmt.Sprintf("FAIL: the recovery ran %d steps again (%d finished, %d cut by the kill), more than one superstep's work (%d nodes)", n, c.redone, c.interrupted, max(sc.width, 1))
	} else {
		c.checks[5] = "pass"
	}
	// 7. How long the recovery took, by its own report: at most
	// faultRecoveryLimit. Only a case that runs alone is measured; among
	// parallel cases the wall time is the machine's load as much as the
	// recovery's.
	switch {
	case !timed:
		c.checks[6] = "n/a"
	case c.recoveryMS > faultRecoveryLimit.Milliseconds():
		c.checks[6] = fmt.Sprintf("FAIL: the recovery took %d ms, more than %d ms", c.recoveryMS, faultRecoveryLimit.Milliseconds())
	default:
		c.checks[6] = "pass"
	}

	for _, st := range sc.steps[k+1:] {
		if _, code, _ := faultRunOn(t, dir, "", st); code != 0 {
			c.checks[2] = fmt.Sprintf("FAIL: step %v after recovery exit %d", st, code)
			return c, true
		}
	}
	// 2. Side effects once.
	apps := dir.scalar(t, qApps)
	drafts := dir.scalar(t, qDrafts)
	keys := dir.scalar(t, qKeys)
	wantDrafts := max(sc.drafts, 1)
	if apps == fmt.Sprint(sc.apps) && drafts == fmt.Sprint(wantDrafts) && keys == "3" {
		c.checks[1] = "pass"
	} else if keys != "3" {
		c.checks[1] = "FAIL: UNIQUE(applications.draft_id), UNIQUE(drafts.task_id, version) or drafts_current is missing"
	} else {
		c.checks[1] = fmt.Sprintf("FAIL: %s applications (want %d), %s drafts (want %d)", apps, sc.apps, drafts, wantDrafts)
	}
	// 3. Equivalence with the run without a fault.
	got, _, _ := faultRunOn(t, dir, "", []string{"show", "t"})
	if mask(got) == wantFinal {
		c.checks[2] = "pass"
	} else {
		c.checks[2] = "FAIL: final JSON differs from the run without a fault:\n" + mask(got) + "\nwant:\n" + wantFinal
	}
	// 5. Expiry across the crash.
	c.checks[4] = expiryAcrossCrash(t, kind, sc, k, point)
	dir.verifyClean(t) // the stores the recovery leaves: the two agree
	return c, true
}

// expiryAcrossCrash kills the approval command at point, lets the draft
// expire while no process runs, then recovers: the request must end
// failed/draft_expired with nothing submitted — unless the kill came
// after the application committed, when the application stands. The
// draft is valid for draftTTLAcrossCrash, which no load outlasts before
// the approval runs; the recovering command lives past it on the test
// clock (docs/ci.md "A test clock").
func expiryAcrossCrash(t *testing.T, kind storeKind, sc scenario, k int, point string) string {
	if sc.name != "approve" || k != 1 {
		return "n/a"
	}
	dir := kind.make(t)
	start := append(withoutFlag(sc.steps[0], "--draft-ttl"), "--draft-ttl", draftTTLAcrossCrash)
	if _, code, _ := faultRunOn(t, dir, "", start); code != 0 {
		return "FAIL: start"
	}
	if _, code, _ := faultRunOn(t, dir, point, sc.steps[1]); code != 137 {
		return "FAIL: not killed"
	}
	committed := dir.scalar(t, qApps) == "1"
	out, code, _ := faultRunEnv(t, dir, "", []string{"ASSISTANT_CLOCK=" + clockPastTTL}, sc.steps[1])
	if code != 0 {
		return fmt.Sprintf("FAIL: recovery exit %d", code)
	}
	var v struct {
		Stage string
		Error *struct{ Code string }
	}
	_ = json.Unmarshal([]byte(out), &v)
	apps := dir.scalar(t, qApps)
	switch {
	case committed && v.Stage == "submitted" && apps == "1":
		return "pass (committed before the kill)"
	case !committed && v.Stage == "failed" && v.Error != nil && v.Error.Code == "draft_expired" && apps == "0":
		return "pass"
	}
	return fmt.Sprintf("FAIL: stage %q, %s applications, committed before kill %v", v.Stage, apps, committed)
}

// withoutFlag is args without flag and the value after it.
func withoutFlag(args []string, flag string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == flag {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// The draft of check 5 (expiryAcrossCrash) and the test clock of its
// recovery, a minute past the draft's expiry.
const (
	draftTTLAcrossCrash = "10m"
	clockPastTTL        = "+11m"
)

// faultRecoveryLimit bounds each recovery of the fault matrix, by the
// recovering command's recovery_ms (check 7, docs/recovery.md "The fault
// matrix"): a recovery re-runs at most one superstep of one task, which
// takes milliseconds; a second means it waits on something (a lease, a
// lock) it should not.
const faultRecoveryLimit = time.Second

// measured reports whether the matrix runs to measure (FAULT_FIGURES
// names the file its figures are kept in, as scripts/faults.sh does): then
// its cases run one at a time, and each recovery's time is bounded.
func measured() bool { return os.Getenv("FAULT_FIGURES") != "" }

// figuresHeader is the first line of a figures file (keepFigures).
const figuresHeader = "at\trev\tcases\tfailed_checks\trecovery_p50_ms\trecovery_max_ms\tredo_ratio\n"

// keepFigures adds one line for this run of the matrix to the figures
// file at path (scripts/faults.sh names it; docs/recovery.md "The fault
// matrix"), with a header when the file is new: when, the revision, the
// cases, the failed checks, the median and the longest recovery_ms, and
// the redo ratio of all cases together (finished steps run again / all
// finished steps). Tab-separated, one line per run, so a jump shows.
func keepFigures(path, rev string, cases []faultCase) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	var b strings.Builder
	if st, err := f.Stat(); err == nil && st.Size() == 0 {
		b.WriteString(figuresHeader)
	}
	ms := make([]int64, 0, len(cases))
	kept, redone := 0, 0
	for _, c := range cases {
		ms = append(ms, c.recoveryMS)
		kept, redone = kept+c.kept, redone+c.redone
	}
	slices.Sort(ms)
	var p50, longest int64
	if len(ms) > 0 {
		p50, longest = ms[(len(ms)-1)/2], ms[len(ms)-1]
	}
	ratio := 0.0
	if kept+redone > 0 {
		ratio = float64(redone) / float64(kept+redone)
	}
	fmt.Fprintf(&b, "%s\t%s\t%d\t%d\t%d\t%d\t%.3f\n", time.Now().UTC().Format(time.RFC3339), rev, len(cases), failedChecks(cases), p50, longest, ratio)
	_, err = f.WriteString(b.String())
	return errors.Join(err, f.Close())
}

// failedChecks counts the checks of cases that failed.
func failedChecks(cases []faultCase) int {
	n := 0
	for _, c := range cases {
		for _, r := range c.checks {
			if strings.HasPrefix(r, "FAIL") {
				n++
			}
		}
	}
	return n
}

// TestFaultRecoveryLimitDocumented: docs/recovery.md "The fault matrix"
// states check 7's bound as the code has it (faultRecoveryLimit).
func TestFaultRecoveryLimitDocumented(t *testing.T) {
	t.Parallel()
	section := faultMatrixSection(t)
	if want := "at most `" + faultRecoveryLimit.String() + "`"; !strings.Contains(section, want) {
		t.Errorf(`docs/recovery.md "The fault matrix" does not state check 7's bound as %q`, want)
	}
}

// faultMatrixSection is docs/recovery.md's section "The fault matrix".
func faultMatrixSection(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/recovery.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## The fault matrix\n")
	if !ok {
		t.Fatal(`docs/recovery.md has no section "The fault matrix"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// caseCountRE finds the count of the matrix's cases that docs/recovery.md
// "The fault matrix" states.
var caseCountRE = regexp.MustCompile(`(?s)has\s+(\d+)\s+cases`)

// checkCaseCountDocumented fails t unless docs/recovery.md "The fault
// matrix" states n, the count of cases the matrix ran on SQLite with
// every scenario ("… has N cases"): the doc's number is the code's.
func checkCaseCountDocumented(t *testing.T, n int) {
	t.Helper()
	m := caseCountRE.FindStringSubmatch(faultMatrixSection(t))
	if m == nil {
		t.Errorf(`docs/recovery.md "The fault matrix" states no case count ("has N cases"); the matrix has %d`, n)
	} else if m[1] != fmt.Sprint(n) {
		t.Errorf(`docs/recovery.md "The fault matrix" says the matrix has %s cases; it has %d`, m[1], n)
	}
}

func formatMatrix(cases []faultCase) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %-30s %-6s %-6s %-6s %-6s %-6s %-6s %-6s %-7s %s\n", "scenario", "point @ command", "1.head", "2.once", "3.same", "4.gate", "5.exp", "6.redo", "7.time", "redone", "recover ms")
	short := func(s string) string {
		switch {
		case s == "":
			return "-"
		case strings.HasPrefix(s, "pass"):
			return "pass"
		case strings.HasPrefix(s, "FAIL"):
			return "FAIL"
		}
		return s
	}
	for _, c := range cases {
		cmd := scenarios[slices.IndexFunc(scenarios, func(s scenario) bool { return s.name == c.scenario })].steps[c.step][0]
		cost := fmt.Sprintf("%d+%d", c.redone, c.interrupted)
		fmt.Fprintf(&b, "%-8s %-30s %-6s %-6s %-6s %-6s %-6s %-6s %-6s %-7s %d\n", c.scenario, c.point+" @ "+cmd+fmt.Sprint(c.step+1),
			short(c.checks[0]), short(c.checks[1]), short(c.checks[2]), short(c.checks[3]), short(c.checks[4]), short(c.checks[5]), short(c.checks[6]), cost, c.recoveryMS)
	}
	fmt.Fprintf(&b, "%d cases, %d failed checks. redone = finished steps the recovery ran again + steps the kill cut (the recovering command's \"recovery\"); recover ms = its recovery_ms, at most %d when the cases run one at a time (7.time).\n", len(cases), failedChecks(cases), faultRecoveryLimit.Milliseconds())
	return b.String()
}

// chaosAttempts lifts the attempt bound for the chaos test: its kills may
// land on the same node many times in a row (a slow machine, -race), which
// is what --max-attempts ends on purpose (TestAttemptsAreBounded); here the
// invariants under any number of kills are checked.
const chaosAttempts = "--max-attempts=1000000"

// TestChaos kills processes with SIGKILL at random moments, CHAOS_KILLS
// times (default 30): half during a batch (or its recovery), half during
// concurrent approvals of parked tasks. Then it recovers and checks the
// invariants: one task and one draft per row, one application per approved
// task, nothing running, both files pass integrity_check.
//
//	CHAOS_KILLS=1000 go test -run TestChaos -timeout 60m .
func TestChaos(t *testing.T) {
	t.Parallel()
	kills := 30
	if s := os.Getenv("CHAOS_KILLS"); s != "" {
		kills = atoi(s)
	}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	t.Logf("%d kills, seed %d", kills, seed)
	dir := t.TempDir()
	rows := batchFile(t, dir, 300)
	// The approvals use orders of their own (one open application per
	// order), imported as a shop would export them.
	const parked = 10
	var shop strings.Builder
	shop.WriteString("order_id,user,item,delivered_at,final_sale\n")
	for i := range parked {
		fmt.Fprintf(&shop, "C%03d,demo-user,Chaos item %d,%s,false\n", i, i, time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339))
	}
	shopFile := filepath.Join(t.TempDir(), "shop.csv")
	if err := os.WriteFile(shopFile, []byte(shop.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := mustRun(t, dir, "orders", "import", shopFile); fmt.Sprint(got["added"]) != fmt.Sprint(parked) {
		t.Fatalf("orders import: %v", got)
	}
	for i := range parked {
		mustRun(t, dir, "start", fmt.Sprintf("appr-%d", i), fmt.Sprintf("C%03d", i), "--reason", "chaos")
	}
	for k := range kills {
		var procs []*exec.Cmd
		if k%2 == 0 {
			args := []string{"--data", dir, chaosAttempts, "recover"}
			if _, _, code := run(t, dir, "show", "b1"); code == 4 {
				args = []string{"--data", dir, chaosAttempts, "batch", "b1", rows}
			}
			procs = append(procs, exec.Command(assistantBin(), args...))
		} else {
			for i := range parked {
				procs = append(procs, exec.Command(assistantBin(), "--data", dir, chaosAttempts, "resume", fmt.Sprintf("appr-%d", i), "--action", "approve"))
			}
		}
		for _, p := range procs {
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		victim := procs[rng.IntN(len(procs))]
		_ = victim.Process.Signal(syscall.SIGKILL) // a crash: no cleanup
		for _, p := range procs {
			_ = p.Wait()
		}
	}
	for range 3 {
		mustRun(t, dir, chaosAttempts, "recover")
	}
	if _, _, code := run(t, dir, "show", "b1"); code == 4 {
		mustRun(t, dir, chaosAttempts, "batch", "b1", rows)
	}
	for i := range parked {
		mustRun(t, dir, chaosAttempts, "resume", fmt.Sprintf("appr-%d", i), "--action", "approve")
	}
	for i := range parked {
		task := fmt.Sprintf("appr-%d", i)
		if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM applications a JOIN drafts d USING (draft_id) WHERE d.task_id = ?`, task); got != "1" {
			t.Errorf("%s: %s applications, want 1", task, got)
		}
	}
	v := mustRun(t, dir, "show", "b1")
	if v["status"] != "done" {
		t.Fatalf("batch status %v after recovery", v["status"])
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id LIKE 'row-%'`); got != "300" {
		t.Errorf("row tasks = %s, want 300", got)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM drafts WHERE task_id LIKE 'row-%'`); got != "300" {
		t.Errorf("row drafts = %s, want 300", got)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE status IN ('running', 'interrupted')`); got != "0" {
		t.Errorf("%s tasks left running after recover", got)
	}
	for _, f := range []string{"business.sqlite", "checkpoints.sqlite"} {
		if got := query(t, dir, f, `PRAGMA integrity_check`); got != "ok" {
			t.Errorf("%s integrity_check: %s", f, got)
		}
	}
	verifyClean(t, dir)
}

// TestBatchFaultPoints kills a batch at each fault point of its row step
// (the chunk node "rows" and the point after each row) in its first chunk
// of 50 rows (list and show then tell each task alike) and recovers it: one task and one draft per row, nothing left
// running, and the recovery's figures count the rows of that chunk as they
// were (docs/recovery.md "Recovery figures"): kept when a checkpoint held
// them or their own runs were stored (looked up), redone when their
// records and drafts were stored without their runs (killed between the
// chunk's two commits: they run again), neither when the kill rolled the
// chunk back (after the first row, inside its transaction).
func TestBatchFaultPoints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		point        string
		kept, redone int
		ratio        float64
	}{
		{"before:rows", 0, 0, 0},
		{"after:rows", 50, 0, 0},
		{"after-checkpoint:rows", 50, 0, 0},
		{"batch:after-row", 0, 0, 0},
		{"batch:between-commits", 0, 50, 1},
		{"batch:before-release", 50, 0, 0},
	}
	for _, tc := range tests {
		point := tc.point
		t.Run(strings.ReplaceAll(point, ":", "_"), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rows := batchFile(t, dir, 120)
			c := exec.Command(assistantBin(), "--data", dir, "batch", "b1", rows, "--chunk", "50")
			c.Env = append(os.Environ(), "ASSISTANT_FAULT="+point)
			if code := exitOf(t, c.Run()); code != 137 {
				t.Fatalf("batch with %s exited %d, want 137 (killed at the point)", point, code)
			}
			listAgreesWithShow(t, dir, []string{"row-0000", "row-0049", "row-0050"})
			if point != "before:rows" && point != "batch:after-row" { // rows 0 and 49 exist
				historyAgreesWithShow(t, place{flags: []string{"--data", dir}, dir: dir}, "demo-user", []string{"row-0000", "row-0049"})
			}
			stdout, stderr, code := run(t, dir, "recover")
			var rep struct {
				Recovered []struct {
					Task     string
					Recovery *struct {
						RowsKept   *int    `json:"rows_kept"`
						RowsRedone *int    `json:"rows_redone"`
						RedoRatio  float64 `json:"redo_ratio"`
					}
				}
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 0 || len(rep.Recovered) != 1 || rep.Recovered[0].Recovery == nil {
				t.Fatalf("recover: exit %d (%s), %s; want the batch recovered with its figures", code, stderr, stdout)
			}
			fig := rep.Recovered[0].Recovery
			if fig.RowsKept == nil || fig.RowsRedone == nil || *fig.RowsKept != tc.kept || *fig.RowsRedone != tc.redone || fig.RedoRatio != tc.ratio {
				t.Errorf("recovery figures %s; want rows_kept %d, rows_redone %d, redo_ratio %v", stdout, tc.kept, tc.redone, tc.ratio)
			}
			checkBatchDone(t, dir, "b1", 120)
			if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE status IN ('running', 'interrupted')`); got != "0" {
				t.Errorf("%s tasks left running", got)
			}
		})
	}
}

// TestAnswerAfterKillBetweenCommits answers row tasks whose records a batch
// committed (running under its lease, with their drafts) before it was
// killed between a chunk's two commits, so that their runs are missing: the
// answer must be applied to the question the run asks again, not dropped.
func TestAnswerAfterKillBetweenCommits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := exec.Command(assistantBin(), "--data", dir, "batch", "b1", batchFile(t, dir, 120), "--chunk", "50")
	c.Env = append(os.Environ(), "ASSISTANT_FAULT=batch:between-commits")
	if code := exitOf(t, c.Run()); code != 137 {
		t.Fatalf("batch exited %d, want 137 (killed at the point)", code)
	}
	draft := query(t, dir, "business.sqlite", `SELECT draft_id FROM drafts WHERE task_id = 'row-0001'`)
	if got := query(t, dir, "checkpoints.sqlite", `SELECT count(*) FROM threads WHERE thread_id = 'row-0001'`); draft == "" || got != "0" {
		t.Fatalf("row-0001: draft %q, %s runs; want a draft and no run (the case under test)", draft, got)
	}
	// The rows keep the batch's lease until their runs are stored: while the
	// batch lives, an answer from another process waits (exit 3); once it is
	// dead, the lease is taken over.
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id LIKE 'row-%' AND lease_owner IS NULL`); got != "0" {
		t.Errorf("%s rows recorded without a lease before their runs were stored", got)
	}
	// While the batch that holds a row lives (here: the lease names this
	// test process), an answer waits: exit 3, saying why.
	if err := setLease(dir, "row-0005", os.Getpid(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, dir, "resume", "row-0005", "--action", "approve"); code != 3 || !strings.Contains(stderr, "that process is running the task now") {
		t.Errorf("answer to a row held by a live batch: exit %d, %q; want 3 and why", code, stderr)
	}
	// The batch that held it dies (a pid above Linux's pid_max is never
	// alive), so recover below can continue it.
	if err := setLease(dir, "row-0005", 1<<30, time.Hour); err != nil {
		t.Fatal(err)
	}
	// Wrong answers change nothing: the row stays without its run.
	for _, args := range [][]string{
		{"resume", "row-0003", "--action", "approve", "--draft", "d_not-this-one"},
		{"resume", "row-0003", "--reason", "another reason"},
	} {
		if _, _, code := run(t, dir, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if got := query(t, dir, "checkpoints.sqlite", `SELECT count(*) FROM threads WHERE thread_id = 'row-0003'`); got != "0" {
		t.Errorf("row-0003 after wrong answers: %s runs, want 0 (nothing changed)", got)
	}
	tests := []struct {
		task, action, draft string
		wantStage           string
	}{
		{"row-0001", "approve", draft, "submitted"},
		{"row-0002", "cancel", "", "cancelled"},
	}
	for _, tc := range tests {
		args := []string{"resume", tc.task, "--action", tc.action}
		if tc.draft != "" {
			args = append(args, "--draft", tc.draft)
		}
		if v := mustRun(t, dir, args...); v["stage"] != tc.wantStage {
			t.Errorf("%s --action %s: stage %v, want %s", tc.task, tc.action, v["stage"], tc.wantStage)
		}
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM applications WHERE draft_id = ?`, draft); got != "1" {
		t.Errorf("applications of row-0001's draft = %s, want 1", got)
	}
	// The batch, recovered, keeps the answered rows as they are.
	mustRun(t, dir, "recover")
	if v := mustRun(t, dir, "show", "row-0001"); v["stage"] != "submitted" {
		t.Errorf("row-0001 after recover: stage %v, want submitted", v["stage"])
	}
}

// decideFaultPoints are the points a decide run passes: its graph's node
// (rows), the points of its chunk, and those of the return flow its rows
// run (review, submit).
var decideFaultPoints = []string{
	"before:rows", "after:rows", "after-checkpoint:rows",
	"decide:after-row", "decide:between-commits", "decide:before-release",
	"after:review", "after-checkpoint:review", "before:submit", "submit:after-business-commit",
}

// TestDecideKilledAtFaultPoints kills a decide run of 120 approvals with
// SIGKILL at each of its fault points (list and show then tell each task
// alike), then finishes it with recover (or with the same decide command
// again): every task is submitted with one application and one recorded
// decision, and the run's report says so.
func TestDecideKilledAtFaultPoints(t *testing.T) {
	t.Parallel()
	const n = 120
	tmpl := t.TempDir()
	file := parked(t, tmpl, n)
	for i, point := range decideFaultPoints {
		t.Run(strings.NewReplacer(":", "_", "-", "_").Replace(point), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			copyTo(t, tmpl, dir, "business.sqlite", "checkpoints.sqlite")
			_, _, code := decide(t, dir, file, []string{"ASSISTANT_FAULT=" + point}, "-", "--chunk", "50")
			if code != 137 {
				t.Fatalf("decide with %s exited %d, want 137 (killed at the point)", point, code)
			}
			listAgreesWithShow(t, dir, []string{"row-0000", "row-0049", "row-0050"})
			if i%2 == 0 {
				got := mustRun(t, dir, "recover")
				recovered, _ := got["recovered"].([]any)
				if len(recovered) == 0 {
					t.Fatalf("recover found nothing to recover: %v", got)
				}
				// Killed between its first chunk's two commits, the run's
				// 50 decisions are in the trail without the runs that
				// carry them: each is answered again, and counted so.
				// (The 50 rows' tasks, recorded running until the chunk
				// let go, are recovered too, each ending as its
				// application says.)
				if point == "decide:between-commits" {
					var fig map[string]any
					for _, r := range recovered {
						if r := r.(map[string]any); strings.HasPrefix(r["task"].(string), "decide-") {
							fig, _ = r["recovery"].(map[string]any)
						}
					}
					if fig["rows_redone"] != 50.0 || fig["redo_ratio"] != 1.0 {
						t.Errorf("recovery figures %v of %v; want the decide run's rows_redone 50, redo_ratio 1", fig, recovered)
					}
				}
			}
			rep, stderr, code := decide(t, dir, file, nil, "-")
			if code != 0 || rep.Status != "done" || rep.Batch.Counts["submitted"] != n {
				t.Fatalf("decide after the kill: exit %d (%s), status %s, counts %v; want done, %d submitted", code, stderr, rep.Status, rep.Batch.Counts, n)
			}
			for _, r := range rep.Rows {
				if r.Outcome != "submitted" || r.ErrorCode != "" {
					t.Errorf("line %d (%s): %s %s %s after recovery, want submitted", r.Line, r.Task, r.Outcome, r.ErrorCode, r.Error)
				}
			}
			checkAppliedOnce(t, dir, n)
			if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE status IN ('running', 'interrupted')`); got != "0" {
				t.Errorf("%s tasks left running", got)
			}
			verifyClean(t, dir)
		})
	}
}
