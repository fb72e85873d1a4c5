package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"assistant/checkpoints"
	"assistant/flow/returns"
)

// openService opens a Service over a fresh data dir in tb's temporary
// directory, with n orders O1…On of alice delivered a day ago.
func openService(tb testing.TB, n int) *returns.Service {
	tb.Helper()
	return openServiceAt(tb, n, nil)
}

// openServiceAt is openService with the service's clock now (nil: the
// wall clock).
func openServiceAt(tb testing.TB, n int, now func() time.Time) *returns.Service {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	cps, err := checkpoints.OpenSQLite(ctx, filepath.Join(dir, returns.CheckpointsFile), checkpoints.SQLiteOptions{Create: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cps.Close() })
	id, err := cps.DataDirID(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	svc, err := returns.Open(ctx, returns.Config{Business: returns.DataDir{Dir: dir, Mode: returns.CreateIfMissing, ID: id}, Checkpoints: cps, Wording: APIWords, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { svc.Close() })
	var b strings.Builder
	b.WriteString("order_id,user,item,delivered_at,final_sale\n")
	day := time.Now().UTC().Add(-24 * time.Hour).Format(time.RFC3339)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "O%d,alice,Kettle,%s,false\n", i, day)
	}
	if _, err := svc.ImportOrders(ctx, strings.NewReader(b.String())); err != nil {
		tb.Fatal(err)
	}
	return svc
}

// apiServer serves svc, ready, on a loopback port until tb ends, and
// makes alice's token for it.
func apiServer(tb testing.TB, svc *returns.Service) (*httptest.Server, *returns.NewToken) {
	tb.Helper()
	made, err := svc.MakeToken(context.Background(), returns.TokenOptions{User: "alice", By: "test"})
	if err != nil {
		tb.Fatal(err)
	}
	s := New(Config{Service: svc, Encode: encodeJSON})
	s.SetReady()
	ts := httptest.NewServer(s.Handler())
	tb.Cleanup(ts.Close)
	return ts, made
}

// TestConcurrentDecisionsEachOnce: clients that start and approve tasks
// at the same time through one server each get their task done, with
// one application per task (run with -race: the Service is shared by
// every request).
func TestConcurrentDecisionsEachOnce(t *testing.T) {
	t.Parallel()
	const clients = 8
	svc := openService(t, clients)
	ts, made := apiServer(t, svc)
	post := func(path, key, body string) (int, string) {
		req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+made.Token)
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, resp.Header.Get("Idempotent-Replayed"))
		return resp.StatusCode, b.String()
	}
	var wg sync.WaitGroup
	errs := make(chan string, clients*3)
	for i := 1; i <= clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task := fmt.Sprintf("c%d", i)
			if code, msg := post("/api/v1/tasks", "start-"+task, fmt.Sprintf(`{"task":%q,"order":"O%d","reason":"broken"}`, task, i)); code != http.StatusCreated {
				errs <- fmt.Sprintf("start %s: %d %s", task, code, msg)
				return
			}
			for try := range 2 {
				if code, msg := post("/api/v1/tasks/"+task+"/answers", "approve-"+task, `{"action":"approve","version":1}`); code != http.StatusOK {
					errs <- fmt.Sprintf("approve %s (try %d): %d %s", task, try, code, msg)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for i := 1; i <= clients; i++ {
		task := fmt.Sprintf("c%d", i)
		v, err := svc.Show(context.Background(), task, "alice")
		if err != nil || v.Status != returns.StatusDone || v.Result == nil || v.Result.Reused {
			t.Errorf("%s: %+v, %v; want done with its first application", task, v, err)
		}
	}
}
