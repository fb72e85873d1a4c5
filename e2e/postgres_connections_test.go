package e2e

// The limits of every PostgreSQL connection (docs/postgres.md "Busy",
// "A frozen holder"): a lock another session holds ends a command
// busy instead of hanging it; a server with no free connection slot is
// waited for within the connect timeout, then busy; a server that never
// answers ends it with exit 1; a --store URL that is refused never
// repeats itself.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"assistant/internal/pgtest"
)

// hangCap is how long a command may run in these tests before it is
// killed and the test fails as hung: far past every limit it should hit
// (a connect timeout of 10 s, a busy timeout of 5 s, perhaps twice).
const hangCap = 90 * time.Second

// runCapped runs the binary with args (and env added) and returns its
// stderr and exit code; a run still going after hangCap is killed and
// fails t (Errorf: it may run on a goroutine of the test), with code -1.
func runCapped(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangCap)
	defer cancel()
	c := exec.CommandContext(ctx, assistantBin(), withDefaults(args, "--output", "json")...)
	c.Env = append(os.Environ(), env...)
	c.Dir = t.TempDir()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	if ctx.Err() != nil {
		t.Errorf("%v: still running after %s: it hangs (stderr so far %q)", args[2:], hangCap, errb.String())
		return errb.String(), -1
	}
	wantOneContext(t, args, errb.String())
	return errb.String(), exitOf(t, err)
}

// TestPostgresLockedTableIsBusyNotAHang: another session holds an ACCESS
// EXCLUSIVE lock on a table of ours for as long as the command runs;
// every command that needs the table ends busy (exit 3, one line) in
// bounded time: the schema check, the checkpoint store and the business
// store all have a lock_timeout.
func TestPostgresLockedTableIsBusyNotAHang(t *testing.T) {
	t.Parallel()
	readers := [][]string{
		{"show", "l1"},
		{"resume", "l1", "--action", "approve"},
		{"history", "l1"},
		{"verify"},
	}
	for _, tc := range []struct {
		table    string
		commands [][]string
		// unaffected do not read the table: they end as without the lock.
		unaffected [][]string
	}{
		// Every command reads the task records.
		{table: "business.tasks", commands: append([][]string{{"list"}, {"recover"}, {"start", "l2", "A3004", "--reason", "x"}, {"orders", "list"}}, readers...)},
		// The runs' heads: read by the commands that run or show a run.
		// The schema check no longer counts them while both schemas are
		// there, so list, recover and history (which reads the
		// checkpoints themselves) do not wait for them.
		{table: "checkpoints.threads", commands: [][]string{{"start", "l2", "A3004", "--reason", "x"}, {"show", "l1"}, {"resume", "l1", "--action", "approve"}, {"verify"}},
			unaffected: [][]string{{"list"}, {"recover"}, {"history", "l1"}}},
		// Only the checkpoint store reads it.
		{table: "checkpoints.checkpoints", commands: readers},
	} {
		t.Run(tc.table, func(t *testing.T) {
			t.Parallel()
			pg := newPGStore(t)
			pg.must(t, nil, "start", "l1", "A3003", "--reason", "too small")
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, pg.url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `LOCK TABLE `+tc.table+` IN ACCESS EXCLUSIVE MODE`); err != nil {
				t.Fatal(err)
			}
			// Held until every command has ended.
			defer tx.Rollback(ctx)
			var wg sync.WaitGroup
			for _, args := range tc.commands {
				wg.Add(1)
				go func() {
					defer wg.Done()
					stderr, code := runCapped(t, nil, append([]string{"--store", pg.url}, args...)...)
					if code != 3 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "lock timeout") {
						t.Errorf("%v with %s locked: exit %d, %q; want 3 and one line saying lock timeout", args, tc.table, code, stderr)
					}
				}()
			}
			for _, args := range tc.unaffected {
				wg.Add(1)
				go func() {
					defer wg.Done()
					stderr, code := runCapped(t, nil, append([]string{"--store", pg.url}, args...)...)
					if code != 0 {
						t.Errorf("%v with %s locked: exit %d, %q; want 0: it does not read that table", args, tc.table, code, stderr)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// silentServer listens on 127.0.0.1 and takes every connection. With
// handshake false it never sends a byte; with it, it answers the startup
// handshake (no TLS, no password) as a server ready for queries, then
// never answers again. It returns the port; the listener closes with t.
func silentServer(t *testing.T, handshake bool) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if handshake {
				go answerStartup(c)
			}
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// answerStartup answers a client's startup on c (refusing TLS) as a
// server that trusts it and is ready for queries, and then reads and
// drops whatever comes.
func answerStartup(c net.Conn) {
	be := pgproto3.NewBackend(c, c)
	for {
		msg, err := be.ReceiveStartupMessage()
		if err != nil {
			return
		}
		if _, ok := msg.(*pgproto3.SSLRequest); ok {
			if _, err := c.Write([]byte("N")); err != nil {
				return
			}
			continue
		}
		if _, ok := msg.(*pgproto3.StartupMessage); ok {
			break
		}
		return
	}
	be.Send(&pgproto3.AuthenticationOk{})
	be.Send(&pgproto3.ParameterStatus{Name: "server_version", Value: "15.0"})
	be.Send(&pgproto3.ParameterStatus{Name: "client_encoding", Value: "UTF8"})
	be.Send(&pgproto3.ParameterStatus{Name: "standard_conforming_strings", Value: "on"})
	be.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
	be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if err := be.Flush(); err != nil {
		return
	}
	var buf [4096]byte
	for {
		if _, err := c.Read(buf[:]); err != nil {
			return
		}
	}
}

// TestPostgresSilentServerIsUnreachable: a server that takes the TCP
// connection and never answers, or answers the handshake and then no
// query, ends a command with exit 1 and one line naming the address,
// never the password: by default within the default connect timeout (10
// s), and within a URL's own connect_timeout; the first query has a
// deadline too.
func TestPostgresSilentServerIsUnreachable(t *testing.T) {
	t.Parallel()
	const password = "s3cret-Pa55"
	for _, tc := range []struct {
		name      string
		handshake bool
		params    string
		want      string
	}{
		{"NoAnswerDefaultTimeout", false, "", "no answer within 10s"},
		{"NoAnswerURLTimeout", false, "?connect_timeout=1", "no answer within 1s"},
		{"NoAnswerToAQuery", true, "?sslmode=disable", "did not answer a query within 10s"},
		{"NoAnswerToAQueryURLTimeout", true, "?sslmode=disable&connect_timeout=1", "did not answer a query within 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			port := silentServer(t, tc.handshake)
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			url := "postgres://someone:" + password + "@" + addr + "/db" + tc.params
			// The two commands wait out their timeouts side by side.
			commands := [][]string{{"show", "x"}, {"start", "x", "A3003", "--reason", "r"}}
			stderrs, codes := make([]string, len(commands)), make([]int, len(commands))
			var wg sync.WaitGroup
			for i, args := range commands {
				wg.Go(func() { stderrs[i], codes[i] = runCapped(t, nil, append([]string{"--store", url}, args...)...) })
			}
			wg.Wait()
			for i, args := range commands {
				stderr, code := stderrs[i], codes[i]
				if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, addr) || !strings.Contains(stderr, tc.want) {
					t.Errorf("%v: exit %d, %q; want 1 and one line naming %s, saying %q", args, code, stderr, addr, tc.want)
				}
				if strings.Contains(stderr, password) {
					t.Errorf("the password is echoed: %q", stderr)
				}
			}
		})
	}
}

// TestPostgresStoreURLRefusedWithoutRepeatingIt: a --store URL that does
// not parse, or names an sslmode the driver does not know (on a Unix
// socket too, which pgx lets pass), is exit 2 with one line that says why
// and never repeats the URL, password masked or not. No server is needed:
// nothing is reached.
func TestPostgresStoreURLRefusedWithoutRepeatingIt(t *testing.T) {
	t.Parallel()
	const password = "s3cret-Pa55"
	for _, tc := range []struct {
		name string
		env  []string
		url  string
		want string
	}{
		{"BadPort", nil, "postgres://someone:" + password + "@dbhost:99999/db", "invalid port"},
		{"BadIPv6", nil, "postgres://someone:" + password + "@[::1/db", "failed to parse as URL"},
		{"BadConnectTimeout", nil, "postgres://someone:" + password + "@dbhost/db?connect_timeout=soon", "invalid connect_timeout"},
		{"BogusSSLModeUnixSocket", nil, "postgres:///db?host=/nonexistent-socket-dir&user=someone&password=" + password + "&sslmode=bogus", `sslmode "bogus"`},
		{"BogusSSLModeTCP", nil, "postgres://someone:" + password + "@dbhost/db?sslmode=bogus", `sslmode "bogus"`},
		{"BogusPGSSLMODE", []string{"PGSSLMODE=bogus"}, "postgres:///db?host=/nonexistent-socket-dir&user=someone&password=" + password, `sslmode "bogus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stderr, code := runCapped(t, tc.env, "--store", tc.url, "show", "x")
			if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, %q; want 2 and one line holding %q", code, stderr, tc.want)
			}
			for _, leak := range []string{password, "xxxxx", "someone", "dbhost", "nonexistent-socket-dir"} {
				if strings.Contains(stderr, leak) {
					t.Errorf("the URL is repeated (%q): %q", leak, stderr)
				}
			}
		})
	}
}

// ownServer starts a throw-away cluster for t alone with maxConns
// connection slots, every one of which a superuser's session may take,
// and returns the URL of its database postgres; the cluster is stopped
// and removed with t. Without initdb the test is skipped, or fails when
// a server is required (CI, ASSISTANT_REQUIRE_PG), as pgtest.Database
// decides.
func ownServer(t *testing.T, maxConns int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pgtest.DefaultSetupTimeout)
	defer cancel()
	srv, err := pgtest.StartWith(ctx, pgtest.Settings{MaxConnections: maxConns})
	if errors.Is(err, pgtest.ErrNoServer) && !pgtest.Required() {
		t.Skipf("skipped, no PostgreSQL to start a cluster of %d connection slots: %v; %s=1 or CI makes this a failure", maxConns, err, pgtest.EnvRequire)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), pgtest.DefaultSetupTimeout)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop the test's cluster: %v", err)
		}
	})
	return srv.URL
}

// takeEverySlot opens plain sessions on url until the server refuses the
// next with too_many_connections (SQLSTATE 53300), so no slot is free,
// and returns release, which closes them all (once; later calls do
// nothing). A refusal of another kind fails t.
func takeEverySlot(t *testing.T, url string) (release func()) {
	t.Helper()
	ctx := context.Background()
	var conns []*pgx.Conn
	var once sync.Once
	release = func() {
		once.Do(func() {
			for _, c := range conns {
				c.Close(ctx)
			}
		})
	}
	t.Cleanup(release)
	for {
		c, err := pgx.Connect(ctx, url)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "53300" {
			break
		}
		if err != nil {
			t.Fatalf("after %d sessions: %v, want too_many_connections", len(conns), err)
		}
		conns = append(conns, c)
	}
	if len(conns) == 0 {
		t.Fatal("the server took no session at all")
	}
	return release
}

// slotSessions is the max_connections of the clusters of the slot tests:
// fewer than the concurrent starts, which so contend for the slots among
// themselves too once the test's sessions are gone.
const slotSessions = 20

// TestPostgresShortSlotShortageIsWaitedFor: every connection slot of the
// server is taken for 2 s, well inside the connect timeout (10 s), while
// 24 starts run at once: each waits for a slot and succeeds, one task and
// one draft each.
func TestPostgresShortSlotShortageIsWaitedFor(t *testing.T) {
	t.Parallel()
	pg := pgStore{url: ownServer(t, slotSessions)}
	// The schemas are made first: the test is about slots, not about 24
	// processes making the same schemas.
	pg.must(t, nil, "start", "first", "A3003", "--reason", "too small")
	release := takeEverySlot(t, pg.url)
	time.AfterFunc(2*time.Second, release)
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task := fmt.Sprintf("slot%02d", i)
			stderr, code := runCapped(t, nil, "--store", pg.url, "start", task, "A3003", "--reason", "too small")
			if code != 0 {
				t.Errorf("start %s while every slot was taken for 2 s: exit %d, %q; want 0: a shortage shorter than the connect timeout is waited for", task, code, stderr)
			}
		}()
	}
	wg.Wait()
	release()
	if t.Failed() {
		return
	}
	got := pg.query(t, `SELECT count(*) FROM business.tasks WHERE task_id LIKE 'slot%'`)
	drafts := pg.query(t, `SELECT count(*) FROM business.drafts WHERE task_id LIKE 'slot%'`)
	perTask := pg.query(t, `SELECT count(*) FROM (SELECT task_id FROM business.drafts WHERE task_id LIKE 'slot%' GROUP BY task_id HAVING count(*) <> 1) x`)
	if got != fmt.Sprint(n) || drafts != fmt.Sprint(n) || perTask != "0" {
		t.Errorf("after %d starts: %s tasks, %s drafts, %s tasks without exactly one draft; want %d, %d, 0", n, got, drafts, perTask, n, n)
	}
}

// TestPostgresLongSlotShortageIsBusy: every connection slot stays taken
// past the connect timeout (here the URL's connect_timeout, 1 s): a
// command ends busy, exit 3, one line naming the server once and giving
// its refusal, the JSON error code "busy" with a hint, and the database is
// as it was.
func TestPostgresLongSlotShortageIsBusy(t *testing.T) {
	t.Parallel()
	pg := pgStore{url: ownServer(t, slotSessions)}
	pg.must(t, nil, "start", "first", "A3003", "--reason", "too small")
	before := pg.contents(t)
	release := takeEverySlot(t, pg.url)
	short := pg.url + "&connect_timeout=1"
	for _, args := range [][]string{
		{"start", "second", "A3003", "--reason", "too small"},
		{"resume", "first", "--action", "approve"},
		{"show", "first"},
		{"verify"},
	} {
		c := exec.Command(assistantBin(), append([]string{"--store", short, "--output", "json"}, args...)...)
		out, stderr, code := runCmd(t, c, t.TempDir(), nil)
		wantOneContext(t, args, stderr)
		var e struct {
			Error struct{ Code, Message, Hint string }
		}
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Errorf("%v: stdout %q is not a JSON error object: %v", args, out, err)
		}
		if code != 3 || e.Error.Code != "busy" || e.Error.Hint == "" || strings.Count(strings.TrimSuffix(stderr, "\n"), "\n") != 0 {
			t.Errorf("%v with every slot taken past the connect timeout: exit %d, error %+v, stderr %q; want exit 3, code busy with a hint, one line", args, code, e.Error, stderr)
		}
		// What happened, the server named once, in its own words.
		if !strings.Contains(e.Error.Message, "had no free connection slot") || !strings.Contains(e.Error.Message, "SQLSTATE 53300") ||
			strings.Count(e.Error.Message, ".s.PGSQL.") != 1 {
			t.Errorf("%v: message %q; want it to say the server had no free connection slot, its SQLSTATE, and name the server once", args, e.Error.Message)
		}
	}
	release()
	if after := pg.contents(t); after != before {
		t.Errorf("a busy server was written to:\nbefore %s\nafter %s", before, after)
	}
}
