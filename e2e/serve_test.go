package e2e

// The server (docs/server.md): `assistant serve` in a process of its
// own on a data dir and on PostgreSQL, driven over HTTP as a client
// would, with the command line beside it on the same stores.

import (
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
)

// TestServeSignIn (docs/server.md "Access tokens"): an API request
// without a token, with one that is not a token, revoked, or expired by
// the server's clock is 401 with WWW-Authenticate: Bearer and the error
// object; a live token signs in as its person, whatever --user says.
func TestServeSignIn(t *testing.T) {
	t.Parallel()
	for _, p := range places(t) {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			_, live := p.token(t, "demo-user")
			revokedID, revoked := p.token(t, "demo-user")
			_, expired := p.token(t, "demo-user", "--expires", "1h")
			if _, errOut, code := p.cli(t, nil, "approvers", "token", "--revoke", revokedID); code != 0 {
				t.Fatalf("revoke: exit %d %s", code, errOut)
			}
			// The server reads the time two hours ahead: the 1h token
			// has expired for it, the 90-day ones have not.
			s := serve(t, p, []string{"ASSISTANT_CLOCK=2h", "ASSISTANT_USER=bob"})
			s.ready(t)
			for _, tc := range []struct{ name, token string }{
				{"NoToken", ""},
				{"NotAToken", "hello"},
				{"Revoked", revoked},
				{"Expired", expired},
			} {
				r := s.call(t, "GET", "/api/v1/tasks", tc.token, "", "")
				if r.status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") || r.errorCode() != "unauthenticated" {
					t.Errorf("%s: %d %q\n%s; want 401, WWW-Authenticate: Bearer, code unauthenticated", tc.name, r.status, r.header.Get("WWW-Authenticate"), r.raw)
				}
				if tc.token != "" && strings.Contains(s.log(t), tc.token) {
					t.Errorf("%s: the token is in the server's log", tc.name)
				}
			}
			r := s.call(t, "POST", "/api/v1/tasks", live, "", `{"task":"s1","order":"A3003","reason":"too small"}`).want(t, "start as the token's person", http.StatusCreated)
			if r.body["user"] != "demo-user" {
				t.Errorf("started as %v, want demo-user (the token's, not ASSISTANT_USER's)", r.body["user"])
			}
			if strings.Contains(s.log(t), live) {
				t.Error("the live token is in the server's log")
			}
			list, _, _ := p.cli(t, nil, "approvers", "tokens")
			if strings.Contains(list, live) || !strings.Contains(list, `"last_used_at": "20`) {
				t.Errorf("approvers tokens: want the last use and never a token:\n%s", list)
			}
		})
	}
}

// TestServeTheRulesOfTheCommands (docs/server.md "Status codes"): another
// person's task is 404 as unknown; bad JSON and unknown fields 400 with
// the error object; an approval of an older draft version 409; the same
// start again 200.
func TestServeTheRulesOfTheCommands(t *testing.T) {
	t.Parallel()
	for _, p := range places(t) {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			_, owner := p.token(t, "demo-user")
			_, other := p.token(t, "bob")
			s := serve(t, p, nil)
			s.ready(t)
			start := `{"task":"s2","order":"A3003","reason":"too small"}`
			s.call(t, "POST", "/api/v1/tasks", owner, "", start).want(t, "start", http.StatusCreated)
			s.call(t, "POST", "/api/v1/tasks", owner, "", start).want(t, "the same start again", http.StatusOK)
			for _, path := range []string{"/api/v1/tasks/s2", "/api/v1/tasks/s2/history", "/api/v1/tasks/nobody-has-this"} {
				if r := s.call(t, "GET", path, other, "", ""); r.status != http.StatusNotFound || r.errorCode() != "not_found" {
					t.Errorf("bob GET %s: %d\n%s; want 404 not_found", path, r.status, r.raw)
				}
			}
			s.call(t, "POST", "/api/v1/tasks/s2/answers", other, "", `{"action":"approve"}`).want(t, "bob's approve", http.StatusNotFound)
			for _, body := range []string{`{"action":`, `{"action":"approve","bogus":1}`, `{"action":"approve"} {}`, ``} {
				r := s.call(t, "POST", "/api/v1/tasks/s2/answers", owner, "", body)
				if r.status != http.StatusBadRequest || r.errorCode() != "invalid_input" || r.body["schema_version"] == nil {
					t.Errorf("body %q: %d\n%s; want 400 with the error object", body, r.status, r.raw)
				}
			}
			s.call(t, "POST", "/api/v1/tasks/s2/answers", owner, "", `{"action":"edit","reason":"wrong colour"}`).want(t, "edit", http.StatusOK)
			r := s.call(t, "POST", "/api/v1/tasks/s2/answers", owner, "", `{"action":"approve","version":1}`)
			if r.status != http.StatusConflict || r.errorCode() != "conflict" {
				t.Errorf("approve version 1 after an edit: %d\n%s; want 409 conflict", r.status, r.raw)
			}
			done := s.call(t, "POST", "/api/v1/tasks/s2/answers", owner, "", `{"action":"approve","version":2}`).want(t, "approve version 2", http.StatusOK)
			if done.body["status"] != "done" {
				t.Errorf("approve version 2: status %v, want done", done.body["status"])
			}
			if got := p.apps(t, "s2"); got != "1" {
				t.Errorf("applications of s2: %s, want 1", got)
			}
			if code := s.stop(t); code != 0 {
				t.Errorf("SIGTERM: exit %d, want 0\n%s", code, s.log(t))
			}
		})
	}
}

// TestServeIdempotencyKey (docs/server.md "Idempotency"): the same
// approve posted twice with one key makes one decision and one
// application, and the second reply is the first (status and body);
// the key with another body is 422; a key is its person's own.
func TestServeIdempotencyKey(t *testing.T) {
	t.Parallel()
	servedOnEachPlace(t, nil, func(t *testing.T, p place, s *server, owner string) {
		s.call(t, "POST", "/api/v1/tasks", owner, "start-1", `{"task":"s3","order":"A3003","reason":"too small"}`).want(t, "start", http.StatusCreated)
		again := s.call(t, "POST", "/api/v1/tasks", owner, "start-1", `{"task":"s3","order":"A3003","reason":"too small"}`).want(t, "start again with its key", http.StatusCreated)
		if again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("start again with its key: not replayed: %v", again.header)
		}
		approve := `{"action":"approve","version":1}`
		first := s.call(t, "POST", "/api/v1/tasks/s3/answers", owner, "k-approve", approve).want(t, "approve", http.StatusOK)
		second := s.call(t, "POST", "/api/v1/tasks/s3/answers", owner, "k-approve", approve).want(t, "approve again with its key", http.StatusOK)
		if first.raw != second.raw || second.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("the second reply is not the first:\n%s\n%s", first.raw, second.raw)
		}
		if got := p.apps(t, "s3"); got != "1" {
			t.Errorf("applications of s3: %s, want 1", got)
		}
		decisions := p.sql(t, `SELECT count(*) FROM decisions WHERE task_id = 's3' AND action = 'approve'`,
			`SELECT count(*) FROM business.decisions WHERE task_id = 's3' AND action = 'approve'`)
		if decisions != "1" {
			t.Errorf("approve decisions of s3: %s, want 1", decisions)
		}
		r := s.call(t, "POST", "/api/v1/tasks/s3/answers", owner, "k-approve", `{"action":"cancel"}`)
		if r.status != http.StatusUnprocessableEntity || r.errorCode() != "idempotency_key_reused" {
			t.Errorf("the key with another body: %d\n%s; want 422", r.status, r.raw)
		}
	})
}

// TestServeBesideTheCommandLine (docs/server.md "Beside the command
// line"): while the server runs, an operator's show, stop, resume and
// approvers token work on the same stores, and the server sees what they did; a
// long-poll in flight at SIGTERM ends with the task as it is, the
// server exits 0 and holds no lease.
func TestServeBesideTheCommandLine(t *testing.T) {
	t.Parallel()
	servedOnEachPlace(t, nil, func(t *testing.T, p place, s *server, owner string) {
		s.call(t, "POST", "/api/v1/tasks", owner, "", `{"task":"s4","order":"A3003","reason":"too small"}`).want(t, "start", http.StatusCreated)
		s.call(t, "POST", "/api/v1/tasks", owner, "", `{"task":"s5","order":"A3004","reason":"wrong colour"}`).want(t, "start", http.StatusCreated)
		if out, errOut, code := p.cli(t, nil, "show", "s4"); code != 0 || !strings.Contains(out, `"status": "waiting"`) {
			t.Errorf("show beside the server: exit %d %s%s", code, out, errOut)
		}
		// A waiting task runs nowhere, the server neither: stop says so
		// as it does without a server.
		if _, errOut, code := p.cli(t, nil, "stop", "s5"); code != 3 || !strings.Contains(errOut, "it is not running: it waits for a person's answer") {
			t.Errorf("stop beside the server: exit %d %s; want 3, not running", code, errOut)
		}
		if out, errOut, code := p.cli(t, nil, "resume", "s5", "--action", "cancel"); code != 0 || !strings.Contains(out, `"status": "cancelled"`) {
			t.Errorf("resume beside the server: exit %d %s%s", code, out, errOut)
		}
		if r := s.call(t, "GET", "/api/v1/tasks/s5", owner, "", ""); r.body["status"] != "cancelled" {
			t.Errorf("the server's view of the task the command line cancelled: %v, want cancelled", r.body["status"])
		}
		_, late := p.token(t, "demo-user")
		s.call(t, "GET", "/api/v1/tasks", late, "", "").want(t, "a token made while the server runs", http.StatusOK)

		polled := make(chan reply, 1)
		go func() { polled <- s.call(t, "GET", "/api/v1/tasks/s4?wait=10m", owner, "", "") }()
		eventually(t, "the long-poll to be in flight", func() bool {
			return strings.Contains(metricsOf(t, s), "assistant_long_polls 1")
		})
		if code := s.stop(t); code != 0 {
			t.Errorf("SIGTERM: exit %d, want 0\n%s", code, s.log(t))
		}
		if r := <-polled; r.status != http.StatusOK || r.body["status"] != "waiting" {
			t.Errorf("the long-poll at SIGTERM: %d %v, want 200 and the task waiting\n%s", r.status, r.body["status"], r.raw)
		}
		held := p.sql(t, `SELECT count(*) FROM tasks WHERE lease_owner IS NOT NULL`, `SELECT count(*) FROM business.tasks WHERE lease_owner IS NOT NULL`)
		if held != "0" {
			t.Errorf("leases held after the server stopped: %s, want 0", held)
		}
	})
}

// metricsOf is the server's /metrics text.
func metricsOf(t *testing.T, s *server) string {
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
	return string(b)
}

// TestServeRecoversBeforeReady (docs/server.md "Start-up"): a server
// killed (SIGKILL) inside a decision, after the application was
// committed and before the run's checkpoint (between the business and the
// checkpoint commit of the decision's group: docs/server.md "Group
// commit"), is restarted: /readyz turns
// 200 only once the recovery scan has taken the crashed run over, so the
// first look after it shows the truth, done with one application; the
// client that retries with its key learns it.
func TestServeRecoversBeforeReady(t *testing.T) {
	t.Parallel()
	servedOnEachPlace(t, []string{"ASSISTANT_FAULT=group:between-commits"}, func(t *testing.T, p place, s *server, owner string) {
		s.call(t, "POST", "/api/v1/tasks", owner, "", `{"task":"s6","order":"A3003","reason":"too small"}`).want(t, "start", http.StatusCreated)
		req, _ := http.NewRequest("POST", s.url+"/api/v1/tasks/s6/answers", strings.NewReader(`{"action":"approve","version":1}`))
		req.Header.Set("Authorization", "Bearer "+owner)
		req.Header.Set("Idempotency-Key", "k-lost")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("the approve got a reply (%d) from a server killed inside it", resp.StatusCode)
		}
		if code := <-s.done; code != 128+int(syscall.SIGKILL) {
			t.Fatalf("the server at the fault point: exit %d, want SIGKILL", code)
		}
		if got := p.sql(t, `SELECT status FROM tasks WHERE task_id = 's6'`, `SELECT status FROM business.tasks WHERE task_id = 's6'`); got != "running" {
			t.Fatalf("s6 after the kill: %s, want running (its holder gone)", got)
		}
		again := serve(t, p, nil)
		again.ready(t)
		log := again.log(t)
		if rec, ready := strings.Index(log, `"msg":"recovered","task":"s6"`), strings.Index(log, `"msg":"ready"`); rec < 0 || ready < rec {
			t.Errorf("the restarted server's log: want s6 recovered before ready\n%s", log)
		}
		if r := again.call(t, "GET", "/api/v1/tasks/s6", owner, "", ""); r.body["status"] != "done" {
			t.Errorf("s6 at the first look after ready: %v, want done\n%s", r.body["status"], r.raw)
		}
		retry := again.call(t, "POST", "/api/v1/tasks/s6/answers", owner, "k-lost", `{"action":"approve","version":1}`).want(t, "the retry with its key", http.StatusOK)
		if retry.body["status"] != "done" {
			t.Errorf("the retry: %v, want done", retry.body["status"])
		}
		if got := p.apps(t, "s6"); got != "1" {
			t.Errorf("applications of s6: %s, want 1", got)
		}
	})
}

// TestServeOnAnAddressInUse (docs/server.md "Starting it"): a second
// server on the address another already listens on fails (exit 1) with
// one line that says so once and how to pick another address, and the
// first one serves on.
func TestServeOnAnAddressInUse(t *testing.T) {
	t.Parallel()
	servedOnEachPlace(t, nil, func(t *testing.T, p place, s *server, owner string) {
		addr := strings.TrimPrefix(s.url, "http://")
		stdout, stderr, code := p.cli(t, nil, "serve", "--addr", addr)
		if code != 1 || strings.Count(stderr, "\n") != 1 || strings.Count(stderr, addr) != 2 ||
			!strings.Contains(stderr, "address already in use; another program listens on "+addr+"; give serve another address with --addr") {
			t.Errorf("serve on %s, where another listens: exit %d, stderr %q; want exit 1, one line naming it and --addr", addr, code, stderr)
		}
		if !strings.Contains(stdout, `"hint"`) {
			t.Errorf("the error object has no hint: %s", stdout)
		}
		s.call(t, "GET", "/api/v1/tasks", owner, "", "").want(t, "the first server", http.StatusOK)
	})
}
