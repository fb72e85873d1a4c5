package e2e

// Group commit (docs/server.md "Group commit"): decisions posted to one
// server at the same time share its durable commits, each judged alone.

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// groupTasks imports n orders of user G0…Gn-1 on p (delivered a day ago)
// and starts task "PREFIXi" for each through s, signed in with token.
// It returns the tasks' ids.
func groupTasks(t *testing.T, p place, s *server, user, token, prefix string, n int) []string {
	t.Helper()
	var rows strings.Builder
	rows.WriteString("order_id,user,item,delivered_at,final_sale\n")
	day := time.Now().UTC().AddDate(0, 0, -1).Format(time.RFC3339)
	for i := range n {
		fmt.Fprintf(&rows, "G%d,%s,Kettle,%s,false\n", i, user, day)
	}
	shop := filepath.Join(t.TempDir(), "shop.csv")
	if err := os.WriteFile(shop, []byte(rows.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := p.cli(t, nil, "--user", user, "orders", "import", shop); code != 0 {
		t.Fatalf("orders import: exit %d %s", code, errOut)
	}
	tasks := make([]string, n)
	for i := range n {
		tasks[i] = fmt.Sprintf("%s%d", prefix, i)
		body := fmt.Sprintf(`{"task":%q,"order":"G%d","reason":"broken"}`, tasks[i], i)
		s.call(t, "POST", "/api/v1/tasks", token, "", body).want(t, "start "+tasks[i], http.StatusCreated)
	}
	return tasks
}

// post sends an answer body to task on s with key; the status, 0 when the
// request got no reply (the server was killed).
func (s *server) post(token, key, task, body string) int {
	req, err := http.NewRequest("POST", s.url+"/api/v1/tasks/"+task+"/answers", strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// groupedDecisions is the count and the sum of the server's
// assistant_group_commit_decisions histogram: groups committed and the
// decisions they held.
func (s *server) groupedDecisions(t *testing.T) (groups, decisions int) {
	t.Helper()
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) int {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("/metrics has no %s:\n%s", name, b)
		}
		v, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			t.Fatal(err)
		}
		return int(v)
	}
	return read("assistant_group_commit_decisions_count"), read("assistant_group_commit_decisions_sum")
}

// TestServeGroupCommit (docs/server.md "Group commit"): approvals posted
// at the same time, among them approvals of a superseded version, each
// get exactly one outcome: the good ones done with one application and
// one approval each, the stale ones 409 with nothing written; every
// decision is counted in exactly one group.
func TestServeGroupCommit(t *testing.T) {
	t.Parallel()
	const n = 24
	for _, p := range places(t) {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			_, token := p.token(t, "ops")
			s := serve(t, p, nil)
			s.ready(t)
			tasks := groupTasks(t, p, s, "ops", token, "gc", n)
			stale := func(i int) bool { return i%4 == 1 }
			for i, task := range tasks {
				if stale(i) {
					s.call(t, "POST", "/api/v1/tasks/"+task+"/answers", token, "", `{"action":"edit","reason":"cracked lid"}`).want(t, "edit "+task, http.StatusOK)
				}
			}
			statuses := make([]int, n)
			var wg sync.WaitGroup
			for i, task := range tasks {
				wg.Go(func() { statuses[i] = s.post(token, "approve-"+task, task, `{"action":"approve","version":1}`) })
			}
			wg.Wait()
			for i, task := range tasks {
				want, wantApps, wantApprovals := http.StatusOK, "1", "1"
				if stale(i) {
					want, wantApps, wantApprovals = http.StatusConflict, "0", "0"
				}
				if statuses[i] != want {
					t.Errorf("approve %s: %d, want %d", task, statuses[i], want)
				}
				approvals := p.sql(t, fmt.Sprintf(`SELECT count(*) FROM decisions WHERE task_id = '%s' AND action = 'approve'`, task),
					fmt.Sprintf(`SELECT count(*) FROM business.decisions WHERE task_id = '%s' AND action = 'approve'`, task))
				if apps := p.apps(t, task); apps != wantApps || approvals != wantApprovals {
					t.Errorf("%s: %s applications and %s approvals; want %s and %s", task, apps, approvals, wantApps, wantApprovals)
				}
			}
			groups, decisions := s.groupedDecisions(t)
			if decisions != n+n/4 { // the edits, and the approvals
				t.Errorf("groups held %d decisions; want %d, each once", decisions, n+n/4)
			}
			t.Logf("%d decisions in %d groups", decisions, groups)
			if code := s.stop(t); code != 0 {
				t.Errorf("SIGTERM: exit %d", code)
			}
			if p.dir != "" {
				if _, errOut, code := p.cli(t, nil, "verify"); code != 0 {
					t.Errorf("verify: exit %d %s", code, errOut)
				}
			}
		})
	}
}

// TestServeGroupCommitKilled (docs/recovery.md "Verification points"):
// the server is killed inside a group (after a decision, in its business
// transaction), between the group's business and checkpoint commits,
// and after both before its tasks are let go. No decision of that group
// was acknowledged (a reply waits for both commits); before the restart,
// verify tells each task's run as show does; once the server is restarted, every client's retry
// with its key gets its task done, with one application and one
// approval each, and the data dir verifies clean.
func TestServeGroupCommitKilled(t *testing.T) {
	t.Parallel()
	const n = 8
	for _, point := range []string{"group:after-decision", "group:between-commits", "group:before-release"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			p := places(t)[0] // SQLite
			_, token := p.token(t, "ops")
			first := serve(t, p, nil)
			first.ready(t)
			tasks := groupTasks(t, p, first, "ops", token, "gk", n)
			if code := first.stop(t); code != 0 {
				t.Fatalf("SIGTERM: exit %d", code)
			}
			killed := serve(t, p, []string{"ASSISTANT_FAULT=" + point})
			killed.ready(t)
			statuses := make([]int, n)
			var wg sync.WaitGroup
			for i, task := range tasks {
				wg.Go(func() { statuses[i] = killed.post(token, "approve-"+task, task, `{"action":"approve","version":1}`) })
			}
			wg.Wait()
			acked := 0
			for _, st := range statuses {
				if st == http.StatusOK {
					acked++
				}
			}
			if acked != 0 {
				// Every decision of the killed group waits for both of
				// its commits and for its tasks to be let go.
				t.Fatalf("%d decisions acknowledged by a server that was to be killed at %s in their group", acked, point)
			}
			if code := <-killed.done; code != 128+int(syscall.SIGKILL) {
				t.Fatalf("the server reaching %s exited %d; want it killed", point, code)
			}
			verifyAgreesWithShow(t, p, "ops", tasks)
			historyAgreesWithShow(t, p, "ops", tasks)
			again := serve(t, p, nil)
			again.ready(t)
			for _, task := range tasks {
				r := again.call(t, "POST", "/api/v1/tasks/"+task+"/answers", token, "approve-"+task, `{"action":"approve","version":1}`)
				if r.status != http.StatusOK || r.body["status"] != "done" {
					t.Errorf("the retry of %s: %d %v\n%s", task, r.status, r.body["status"], r.raw)
				}
				approvals := query(t, p.dir, "business.sqlite", fmt.Sprintf(`SELECT count(*) FROM decisions WHERE task_id = '%s' AND action = 'approve'`, task))
				if apps := p.apps(t, task); apps != "1" || approvals != "1" {
					t.Errorf("%s: %s applications and %s approvals; want 1 and 1 (%d acknowledged before the kill)", task, apps, approvals, acked)
				}
			}
			if code := again.stop(t); code != 0 {
				t.Errorf("SIGTERM: exit %d", code)
			}
			if out, errOut, code := p.cli(t, nil, "verify"); code != 0 {
				t.Errorf("verify: exit %d %s %s", code, out, errOut)
			}
		})
	}
}
