package e2e

// The server under crashes and beside another server (docs/server.md
// "Shutdown", "Idempotency", "Start-up and readiness", "Concurrency"):
// `assistant serve` killed with SIGKILL while many clients post
// decisions, again and again on one data dir, and two servers on one
// PostgreSQL database deciding the same tasks. Everything is checked
// through the HTTP contract and in the stores themselves.

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"assistant/flow/returns"
)

// TestServeSIGKILLLosesNothingAcknowledged (docs/server.md "Shutdown",
// "Idempotency", "Start-up and readiness"): the server is killed with
// SIGKILL while 64 clients post decisions, each with its own
// Idempotency-Key (three approvals and one cancel for each task of the
// kill), 20 times on one data dir, each time after a different number of
// replies. After each kill:
//   - the restarted server is not ready (/readyz 503, the API 503
//     not_ready) while its recovery scan waits at recover:before-lease
//     (held there, the rest of the process serving), once for every run
//     the killed server left running; /readyz turns 200 only after the
//     scan took each of them over;
//   - every client retries with its key and gets the truth: the reply it
//     was sent before the kill again (replayed, byte for byte), or the
//     outcome the task has (200 for the answer that decided it or the
//     same answer again, 409 for the other one), never a second decision;
//   - each task has one decision in its trail, the one every 2xx
//     acknowledged, and one application if it was approved, none if not
//     (read in the business file itself).
func TestServeSIGKILLLosesNothingAcknowledged(t *testing.T) {
	t.Parallel()
	for _, p := range places(t) {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			killUnderLoad(t, p)
		})
	}
}

// killUnderLoad is TestServeSIGKILLLosesNothingAcknowledged on p.
func killUnderLoad(t *testing.T, p place) {
	const kills, tasksPerKill = 20, 16
	ids := []string{"kill-first"}
	for k := range kills {
		for j := range tasksPerKill {
			ids = append(ids, killTask(k, j))
		}
	}
	token := waitingTasks(t, p, "ops", ids)
	// A run its process left running before the first start: the first
	// server's scan has one to take over, whatever the kills leave.
	env := []string{returns.FaultEnv + "=submit:after-business-commit"}
	if _, errOut, code := p.cli(t, env, "--user", "ops", "resume", "kill-first", "--action", "approve"); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("approve at submit:after-business-commit: exit %d %s; want SIGKILL", code, errOut)
	}
	s, held := serveAfterScan(t, p, token)
	if done := tasksWith(t, p, "done"); held != 1 || len(done) != 2 { // the batch and kill-first
		t.Fatalf("the first start: the scan waited %d times, done are %v; want 1 and kill-first done", held, done)
	}
	leftRunning := 0
	for k := range kills {
		ds := killDecisions(k, tasksPerKill)
		// After how many replies the kill comes: from 1 to 40 of 64.
		before := decideUntilKilled(t, s, token, ds, 1+(k*13)%40)
		running := tasksWith(t, p, "running")
		leftRunning += len(running)
		s, held = serveAfterScan(t, p, token)
		if held != len(running) {
			t.Errorf("kill %d: the scan waited %d times at recover:before-lease; the killed server left %d runs running (%v)", k, held, len(running), running)
		}
		if now := tasksWith(t, p, "running"); len(now) > 0 {
			t.Errorf("kill %d: once ready, tasks still running: %v", k, now)
		}
		log := s.log(t)
		for _, task := range running {
			if rec, ready := strings.Index(log, `"msg":"recovered","task":"`+task+`"`), strings.Index(log, `"msg":"ready"`); rec < 0 || ready < rec {
				t.Errorf("kill %d: %s was left running; the restarted server's log does not recover it before ready:\n%s", k, task, log)
			}
		}
		after := retryAll(t, s, token, ds)
		checkOutcomes(t, p, fmt.Sprintf("kill %d", k), ds, before, after)
		if t.Failed() {
			t.FailNow() // the next kills would tell the same story less clearly
		}
	}
	t.Logf("%d kills left %d runs running", kills, leftRunning)
	if code := s.stop(t); code != 0 {
		t.Errorf("SIGTERM: exit %d\n%s", code, s.log(t))
	}
	twice := p.sql(t, `SELECT count(*) FROM (SELECT d.task_id FROM applications a JOIN drafts d USING (draft_id) GROUP BY d.task_id HAVING count(*) > 1)`,
		`SELECT count(*) FROM (SELECT d.task_id FROM business.applications a JOIN business.drafts d ON d.draft_id = a.draft_id GROUP BY d.task_id HAVING count(*) > 1) twice`)
	if twice != "0" {
		t.Errorf("tasks with more than one application: %s, want 0", twice)
	}
	if out, errOut, code := p.cli(t, nil, "verify"); code != 0 {
		t.Errorf("verify: exit %d\n%s%s", code, out, errOut)
	}
}

// killTask is the id of task j of kill k.
func killTask(k, j int) string { return fmt.Sprintf("kill%02d-%02d", k, j) }

// decision is one client's answer: the task, the action, the body and
// the client's own Idempotency-Key.
type decision struct {
	task, action, key, body string
}

// path is the route the decision is posted to.
func (d decision) path() string { return "/api/v1/tasks/" + d.task + "/answers" }

// killDecisions are the 64 decisions of kill k: four clients for each of
// its tasks, three approving and one cancelling, in an order that mixes
// the tasks.
func killDecisions(k, tasks int) []decision {
	var ds []decision
	for c := range 64 {
		d := decision{task: killTask(k, c%tasks), action: returns.ActionApprove, body: `{"action":"approve","version":1}`}
		if c/tasks%4 == 3 {
			d.action, d.body = returns.ActionCancel, `{"action":"cancel"}`
		}
		d.key = fmt.Sprintf("%s-client-%d", d.task, c)
		ds = append(ds, d)
	}
	return ds
}

// waitingTasks makes a task of user on p for each id, each waiting for
// approval of its draft (version 1, valid for an hour) for an order of
// its own delivered yesterday (one orders import, one batch), and
// returns a token of user.
func waitingTasks(t *testing.T, p place, user string, ids []string) string {
	t.Helper()
	var orders, rows strings.Builder
	orders.WriteString("order_id,user,item,delivered_at,final_sale\n")
	rows.WriteString("task,order,reason\n")
	day := time.Now().UTC().AddDate(0, 0, -1).Format(time.RFC3339)
	for i, id := range ids {
		fmt.Fprintf(&orders, "W%d,%s,Kettle,%s,false\n", i, user, day)
		fmt.Fprintf(&rows, "%s,W%d,broken\n", id, i)
	}
	files := t.TempDir()
	for name, b := range map[string]string{"orders.csv": orders.String(), "tasks.csv": rows.String()} {
		if err := os.WriteFile(filepath.Join(files, name), []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, token := p.token(t, user)
	if _, errOut, code := p.cli(t, nil, "--user", user, "orders", "import", filepath.Join(files, "orders.csv")); code != 0 {
		t.Fatalf("orders import: exit %d %s", code, errOut)
	}
	if _, errOut, code := p.cli(t, nil, "--user", user, "batch", "tasks", filepath.Join(files, "tasks.csv"), "--draft-ttl", "1h"); code != 0 {
		t.Fatalf("batch: exit %d %s", code, errOut)
	}
	if waiting := p.sql(t, `SELECT count(*) FROM tasks WHERE status = 'waiting'`, `SELECT count(*) FROM business.tasks WHERE status = 'waiting'`); waiting != fmt.Sprint(len(ids)) {
		t.Fatalf("tasks waiting after the batch: %s, want %d", waiting, len(ids))
	}
	return token
}

// tasksWith are the ids of p's tasks whose status is status, as the
// business store records them.
func tasksWith(t *testing.T, p place, status string) []string {
	t.Helper()
	ids := p.sql(t, fmt.Sprintf(`SELECT coalesce(group_concat(task_id, ' '), '') FROM tasks WHERE status = '%s'`, status),
		fmt.Sprintf(`SELECT coalesce(string_agg(task_id, ' '), '') FROM business.tasks WHERE status = '%s'`, status))
	return strings.Fields(ids)
}

// decideUntilKilled posts every decision of ds to s at once, each from a
// client of its own, and kills s with SIGKILL once after replies have
// come; it returns the reply each client got (by its index in ds), if
// it got one. A reply that came after the signal was sent, before the
// process died, was acknowledged all the same.
func decideUntilKilled(t *testing.T, s *server, token string, ds []decision, after int) map[int]reply {
	t.Helper()
	var mu sync.Mutex
	got := map[int]reply{}
	replied := make(chan struct{}, len(ds))
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.try("POST", d.path(), token, d.key, d.body)
			if err != nil {
				return // cut by the kill: not acknowledged
			}
			mu.Lock()
			got[i] = r
			mu.Unlock()
			replied <- struct{}{}
		}()
	}
	for range after {
		select {
		case <-replied:
		case code := <-s.done:
			t.Fatalf("the server exited (%d) under the clients' decisions\n%s", code, s.log(t))
		}
	}
	// SIGKILL, not SIGTERM: nothing in flight is let finish.
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := <-s.done; code != 128+int(syscall.SIGKILL) {
		t.Fatalf("the killed server: exit %d, want SIGKILL", code)
	}
	wg.Wait()
	return got
}

// serveAfterScan starts a server on p whose recovery scan waits at
// recover:before-lease (FaultHold) for each task it takes over, and lets
// it go on one task at a time once it has checked that, the scan
// waiting, /readyz is 503 starting and the API 503 not_ready (signed in
// with token). It returns the server once ready, and how many times the
// scan waited.
func serveAfterScan(t *testing.T, p place, token string) (*server, int) {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "points")
	s := serve(t, p, []string{returns.FaultEnv + "=recover:before-lease" + returns.FaultHold + "," + returns.FaultTrace + trace})
	held := 0
	for {
		ready, waiting := false, 0
		eventually(t, "the recovery scan to wait at recover:before-lease, or the server to be ready", func() bool {
			// The trace first: a scan that is done passed every point
			// it will pass before /readyz turned 200.
			waiting = pointsPassed(t, trace, "recover:before-lease")
			if waiting > held {
				return true
			}
			resp, err := http.Get(s.url + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			ready = resp.StatusCode == http.StatusOK
			return ready
		})
		if ready {
			return s, held
		}
		r := s.call(t, "GET", "/readyz", "", "", "")
		if r.status != http.StatusServiceUnavailable || r.body["status"] != "starting" {
			t.Errorf("/readyz while the recovery scan waits: %d %s; want 503 starting", r.status, r.raw)
		}
		if r := s.call(t, "GET", "/api/v1/tasks", token, "", ""); r.status != http.StatusServiceUnavailable || r.errorCode() != "not_ready" {
			t.Errorf("the API while the recovery scan waits: %d %s; want 503 not_ready", r.status, r.raw)
		}
		held++
		if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
}

// pointsPassed counts the lines point in the FaultTrace file at path (0
// while there is none).
func pointsPassed(t *testing.T, path, point string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if line == point {
			n++
		}
	}
	return n
}

// retryAll posts every decision of ds to s again with its key, at once,
// each until it gets a reply that is not 5xx (a 5xx is not kept for the
// key: the retry runs again); the replies by index.
func retryAll(t *testing.T, s *server, token string, ds []decision) map[int]reply {
	t.Helper()
	var mu sync.Mutex
	got := map[int]reply{}
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := answerUntilKept(t, s, token, d)
			mu.Lock()
			got[i] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	return got
}

// answerUntilKept posts d to s with its key until the reply is not 5xx,
// at most ten times.
func answerUntilKept(t *testing.T, s *server, token string, d decision) reply {
	t.Helper()
	var r reply
	var err error
	for range 10 {
		if r, err = s.try("POST", d.path(), token, d.key, d.body); err != nil {
			t.Errorf("%s (%s): %v", d.key, d.action, err)
			return r
		}
		if r.status < 500 {
			return r
		}
		if r.header.Get("Retry-After") != "" {
			time.Sleep(100 * time.Millisecond) // a busy store: a moment before the next try
		}
	}
	t.Errorf("%s (%s): still %d after ten tries\n%s", d.key, d.action, r.status, r.raw)
	return r
}

// checkOutcomes checks what the clients of ds were told (before: the
// replies they got before a kill, if any; after: the replies of their
// retries) against p's stores: each task has one decision in its trail;
// every 2xx acknowledged it (200 for the answer that decided, 409
// conflict for the other); a reply sent before the kill is the retry's,
// replayed; an approved task has one application, a cancelled one none.
func checkOutcomes(t *testing.T, p place, what string, ds []decision, before, after map[int]reply) {
	t.Helper()
	trail, apps, status := storedOutcomes(t, p, ds)
	want := map[string]string{returns.ActionApprove: "done", returns.ActionCancel: "cancelled"}
	decided := map[string]bool{}
	for i, d := range ds {
		actions := trail[d.task]
		if len(actions) != 1 {
			t.Errorf("%s: %s has the decisions %v in its trail; want one", what, d.task, actions)
			continue
		}
		outcome := actions[0]
		r := after[i]
		if b, ok := before[i]; ok && b.status < 500 {
			if b.status == http.StatusOK && d.action != outcome {
				t.Errorf("%s: %s was acknowledged (200) for %s; the trail holds %s", what, d.key, d.action, outcome)
			}
			if r.status != b.status || r.raw != b.raw || r.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("%s: %s was sent %d before the kill, its retry %d (replayed %q):\n%s\n%s", what, d.key, b.status, r.status, r.header.Get("Idempotent-Replayed"), b.raw, r.raw)
			}
		}
		switch {
		case r.status == http.StatusOK && d.action == outcome && r.body["status"] == want[outcome]:
			decided[d.task] = true
		case r.status == http.StatusConflict && d.action != outcome && r.errorCode() == "conflict":
		default:
			t.Errorf("%s: %s (%s) learned %d %v; the task's trail holds %s\n%s", what, d.key, d.action, r.status, r.body["status"], outcome, r.raw)
		}
		if n := apps[d.task]; (outcome == returns.ActionApprove) != (n == 1) || n > 1 {
			t.Errorf("%s: %s, decided %s, has %d applications", what, d.task, outcome, n)
		}
		if status[d.task] != want[outcome] {
			t.Errorf("%s: %s, decided %s, is recorded %s", what, d.task, outcome, status[d.task])
		}
	}
	for _, d := range ds {
		if len(trail[d.task]) == 1 && !decided[d.task] {
			t.Errorf("%s: no client of %s was told 200 for its decision %s", what, d.task, trail[d.task][0])
		}
	}
}

// storedOutcomes reads the tasks of ds in p's business store: each
// task's decisions (actions, in no order), its number of applications
// and its status.
func storedOutcomes(t *testing.T, p place, ds []decision) (trail map[string][]string, apps map[string]int, status map[string]string) {
	t.Helper()
	var in []string
	for _, d := range ds {
		in = append(in, "'"+d.task+"'")
	}
	set := strings.Join(in, ",")
	pairs := func(q, pgq string) [][2]string {
		var out [][2]string
		for _, f := range strings.Fields(p.sql(t, q, pgq)) {
			k, v, _ := strings.Cut(f, "=")
			out = append(out, [2]string{k, v})
		}
		return out
	}
	trail, apps, status = map[string][]string{}, map[string]int{}, map[string]string{}
	for _, kv := range pairs(`SELECT coalesce(group_concat(task_id || '=' || action, ' '), '') FROM decisions WHERE task_id IN (`+set+`)`,
		`SELECT coalesce(string_agg(task_id || '=' || action, ' '), '') FROM business.decisions WHERE task_id IN (`+set+`)`) {
		trail[kv[0]] = append(trail[kv[0]], kv[1])
	}
	for _, kv := range pairs(`SELECT coalesce(group_concat(d.task_id || '=', ' '), '') FROM applications a JOIN drafts d USING (draft_id) WHERE d.task_id IN (`+set+`)`,
		`SELECT coalesce(string_agg(d.task_id || '=', ' '), '') FROM business.applications a JOIN business.drafts d ON d.draft_id = a.draft_id WHERE d.task_id IN (`+set+`)`) {
		apps[kv[0]]++
	}
	for _, kv := range pairs(`SELECT coalesce(group_concat(task_id || '=' || status, ' '), '') FROM tasks WHERE task_id IN (`+set+`)`,
		`SELECT coalesce(string_agg(task_id || '=' || status, ' '), '') FROM business.tasks WHERE task_id IN (`+set+`)`) {
		status[kv[0]] = kv[1]
	}
	return trail, apps, status
}

// TestServeTwoServersDecideTheSameTasks (docs/server.md "Concurrency",
// "Idempotency"): two servers on one PostgreSQL database, 32 clients on
// each, every client deciding every one of the same tasks (three of four
// approve, one cancels) with a key of its own, retrying a 5xx with it:
// each task ends with one decision in its trail, one application if
// approved and none if cancelled, every 200 acknowledged that decision;
// each client's key posted again to the other server gets its reply
// again, and both servers show each task the same, byte for byte.
func TestServeTwoServersDecideTheSameTasks(t *testing.T) {
	t.Parallel()
	var p place
	for _, pl := range places(t) {
		if pl.pg != nil {
			p = pl
		}
	}
	if p.pg == nil {
		t.Skip("needs ASSISTANT_TEST_PG")
	}
	const tasks, clientsEach = 8, 32
	var ids []string
	for j := range tasks {
		ids = append(ids, fmt.Sprintf("shared-%d", j))
	}
	token := waitingTasks(t, p, "ops", ids)
	servers := []*server{serve(t, p, []string{"ASSISTANT_HOST=machine-a"}), serve(t, p, []string{"ASSISTANT_HOST=machine-b"})}
	for _, s := range servers {
		s.ready(t)
	}
	var ds []decision
	for si := range servers {
		for c := range clientsEach {
			for j := range tasks {
				// Each client takes the tasks in an order of its own.
				d := decision{task: ids[(j+c)%tasks], action: returns.ActionApprove, body: `{"action":"approve","version":1}`}
				if c%4 == 3 {
					d.action, d.body = returns.ActionCancel, `{"action":"cancel"}`
				}
				d.key = fmt.Sprintf("%s-server-%d-client-%d", d.task, si, c)
				ds = append(ds, d)
			}
		}
	}
	got := make(map[int]reply, len(ds))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for si, s := range servers {
		for c := range clientsEach {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range tasks {
					i := (si*clientsEach+c)*tasks + j
					r := answerUntilKept(t, s, token, ds[i])
					mu.Lock()
					got[i] = r
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	statuses := map[int]int{}
	for _, r := range got {
		statuses[r.status]++
	}
	t.Logf("replies by status: %v", statuses)
	checkOutcomes(t, p, "two servers", ds, nil, got)
	// A key is its person's on every server: the other server replays
	// the reply each client got.
	for si := range servers {
		other := servers[1-si]
		for c := range clientsEach {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range tasks {
					i := (si*clientsEach+c)*tasks + j
					r, err := other.try("POST", ds[i].path(), token, ds[i].key, ds[i].body)
					if err != nil {
						t.Error(err)
						continue
					}
					if r.status != got[i].status || r.raw != got[i].raw || r.header.Get("Idempotent-Replayed") != "true" {
						t.Errorf("%s on the other server: %d (replayed %q), first %d:\n%s\n%s", ds[i].key, r.status, r.header.Get("Idempotent-Replayed"), got[i].status, got[i].raw, r.raw)
					}
				}
			}()
		}
	}
	wg.Wait()
	for _, task := range ids {
		va := servers[0].call(t, "GET", "/api/v1/tasks/"+task, token, "", "").want(t, "GET "+task+" on machine-a", http.StatusOK)
		vb := servers[1].call(t, "GET", "/api/v1/tasks/"+task, token, "", "").want(t, "GET "+task+" on machine-b", http.StatusOK)
		if va.raw != vb.raw {
			t.Errorf("%s: the servers' views differ:\n%s\n%s", task, va.raw, vb.raw)
		}
	}
}
