// Package pgtest gives tests a throw-away PostgreSQL database. Only tests
// import it.
//
// A package whose tests need PostgreSQL runs them through Main and asks
// each test for its own empty database:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		url := pgtest.Database(t) // a fresh database, dropped when t ends
//		…
//	}
//
// The server comes from, in this order:
//
//   - env ASSISTANT_TEST_PG, a connection URL (postgres://…) or a
//     keyword/value string of a server the tests may create databases on
//     (CI sets it: .ci/run starts one server for every package);
//   - else a cluster this package makes in a temporary directory with the
//     machine's initdb and pg_ctl (found on PATH or in
//     /usr/lib/postgresql/*/bin), listening only on a Unix socket in that
//     directory, with fsync off (its data is thrown away), one per test
//     process, stopped and removed by Main. Running as root, the cluster
//     runs as the user postgres (Debian's package makes it) or else nobody:
//     initdb refuses root.
//
// Without either, Database skips the test with a message saying what to
// install, except when env CI or ASSISTANT_REQUIRE_PG is set: then it
// fails the test, so CI never passes by skipping.
//
// Each test gets its own database (UTF8, collation C, from template0), so
// tests run in parallel; it is dropped in the test's Cleanup, after the
// cleanups the test registered later (closing its pools).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Environment variables the package reads.
const (
	// EnvURL names a server to use instead of starting one: a connection
	// URL or keyword/value string whose user may create databases.
	EnvURL = "ASSISTANT_TEST_PG"
	// EnvRequire, when set to anything, makes a missing server fail the
	// test instead of skipping it. EnvCI does the same (CI sets CI=true).
	EnvRequire = "ASSISTANT_REQUIRE_PG"
	// EnvCI is set by CI runners.
	EnvCI = "CI"
)

// Defaults of the package.
const (
	// DefaultSetupTimeout bounds starting a cluster, creating a database
	// and dropping it.
	DefaultSetupTimeout = 2 * time.Minute
)

// ErrNoServer is returned (wrapped) by Start when the machine has no
// initdb and pg_ctl: PostgreSQL is not installed.
var ErrNoServer = errors.New("no PostgreSQL server programs (initdb, pg_ctl) on this machine")

// state is the server of this test process, set up on first use.
var state struct {
	mu      sync.Mutex
	main    bool          // Main is running the tests
	tried   bool          // setup was tried; err or admin is set
	err     error         // why there is no server
	local   *Server       // the cluster this process started, if any
	baseURL string        // the server's URL, to the admin database
	admin   *pgxpool.Pool // for CREATE and DROP DATABASE
	version int           // the server's server_version_num
}

// Main runs the tests of a package (m.Run), then stops the cluster that
// Database started, if any, and exits the process with the tests' code.
// Call it from TestMain; Database fails a test of a package that does not.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main without the exit: it runs the tests and stops the cluster,
// and returns the exit code, for a TestMain that has its own cleanup to do
// before it exits.
func Run(m *testing.M) int {
	// The tests of a package that runs them wait on the server (a new
	// database, a lock timeout) or on the processes they start far more
	// than they compute: let more of its parallel tests run at once than
	// go test's one per CPU, unless -parallel says.
	flag.Parse()
	if !flagSet("test.parallel") {
		_ = flag.Set("test.parallel", strconv.Itoa(min(maxParallel, parallelPerCPU*runtime.GOMAXPROCS(0))))
	}
	state.mu.Lock()
	state.main = true
	state.mu.Unlock()
	code := m.Run()
	if err := shutdown(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// How many parallel tests Run lets run at once by default: parallelPerCPU
// a CPU, at most maxParallel (each holds a database or two of the
// cluster's connections).
const (
	parallelPerCPU = 4
	maxParallel    = 16
)

// flagSet reports whether the command line set the flag name.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// shutdown closes the admin pool and stops the local cluster.
func shutdown() error {
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.admin != nil {
		state.admin.Close()
		state.admin = nil
	}
	if state.local == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultSetupTimeout)
	defer cancel()
	err := state.local.Stop(ctx)
	state.local = nil
	return err
}

// Required reports whether a missing server must fail tests rather than
// skip them: env CI or ASSISTANT_REQUIRE_PG is set (to anything but "" or
// "false"/"0").
func Required() bool {
	for _, name := range []string{EnvCI, EnvRequire} {
		switch strings.ToLower(os.Getenv(name)) {
		case "", "0", "false":
		default:
			return true
		}
	}
	return false
}

// Database returns a connection string to a new, empty database on the
// test server, made for tb alone and dropped (with any connection still
// open to it) in tb's Cleanup. It skips tb when there is no server, or
// fails it when Required; any other failure to set up fails tb.
func Database(tb testing.TB) string {
	tb.Helper()
	base, admin, err := server()
	if errors.Is(err, ErrNoServer) && !Required() {
		tb.Skipf("pgtest: skipped, no PostgreSQL: %v. Install it (apt-get install postgresql) or set %s to a server's URL; %s=1 or CI makes this a failure.",
			err, EnvURL, EnvRequire)
	}
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	name, err := newDatabaseName()
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultSetupTimeout)
	defer cancel()
	ident := pgx.Identifier{name}.Sanitize()
	// Identifiers cannot be parameters; name is made by newDatabaseName
	// from hex digits and quoted besides.
	if _, err := admin.Exec(ctx, CreateFrom(name, "template0")+` ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultSetupTimeout)
		defer cancel()
		// FORCE ends connections a test left open (PostgreSQL 13 and later).
		if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+ident+` WITH (FORCE)`); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := WithDatabase(base, name)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return u
}

// server returns the URL of this process's test server and a pool on it,
// setting them up on first use: env ASSISTANT_TEST_PG, else a local
// cluster. Errors: ErrNoServer (wrapped) when there is none, or why setup
// failed; the first error is kept and returned to every later caller.
func server() (string, *pgxpool.Pool, error) {
	state.mu.Lock()
	defer state.mu.Unlock()
	if !state.main {
		return "", nil, errors.New("the package's tests must run through pgtest.Main: add func TestMain(m *testing.M) { pgtest.Main(m) }")
	}
	if state.tried {
		return state.baseURL, state.admin, state.err
	}
	state.tried = true
	state.err = setup()
	return state.baseURL, state.admin, state.err
}

// setup fills state with a server and an admin pool on it. state.mu is held.
func setup() error {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultSetupTimeout)
	defer cancel()
	base := os.Getenv(EnvURL)
	if base == "" {
		srv, err := Start(ctx)
		if err != nil {
			return err
		}
		state.local = srv
		base = srv.URL
	}
	cfg, err := pgxpool.ParseConfig(base)
	if err != nil {
		return fmt.Errorf("%s: %w", EnvURL, err)
	}
	cfg.MaxConns = 4
	admin, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		if admin != nil {
			admin.Close()
		}
		return fmt.Errorf("connect to the test server: %w", err)
	}
	if err := admin.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&state.version); err != nil {
		admin.Close()
		return fmt.Errorf("the test server's version: %w", err)
	}
	state.baseURL, state.admin = base, admin
	return nil
}

// fileCopyVersion is the first server_version_num whose CREATE DATABASE
// takes a STRATEGY (PostgreSQL 15).
const fileCopyVersion = 150000

// CreateFrom returns the statement that makes database name a copy of
// database template on the test server (CREATE DATABASE … TEMPLATE …,
// both names quoted), to which a caller may add options. On PostgreSQL 15
// and later it copies the files (STRATEGY FILE_COPY): the default writes
// every page of the copy to the WAL, which costs a test server several
// times the CPU for no use, its data being thrown away. Before Database
// has set up the server it names no strategy.
func CreateFrom(name, template string) string {
	state.mu.Lock()
	version := state.version
	state.mu.Unlock()
	sql := `CREATE DATABASE ` + pgx.Identifier{name}.Sanitize() + ` TEMPLATE ` + pgx.Identifier{template}.Sanitize()
	if version >= fileCopyVersion {
		sql += ` STRATEGY FILE_COPY`
	}
	return sql
}

// newDatabaseName returns a database name no other test uses: "test_",
// the process id and random hex digits.
func newDatabaseName() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random database name: %w", err)
	}
	return fmt.Sprintf("test_%d_%s", os.Getpid(), hex.EncodeToString(b[:])), nil
}

// WithDatabase returns the connection string base with its database set to
// name: the path of a URL (postgres:// or postgresql://), or a dbname
// keyword appended to a keyword/value string (the last one wins). Errors:
// a URL that does not parse.
func WithDatabase(base, name string) (string, error) {
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			// Not the error itself: it repeats the URL, password and all.
			return "", errors.New("the server's connection URL does not parse")
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	return strings.TrimSpace(base) + " dbname=" + name, nil
}
