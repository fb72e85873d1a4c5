package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server is a PostgreSQL cluster that Start made in a temporary directory:
// it listens only on a Unix socket there, trusts every local connection and
// does not fsync. Stop stops it and removes the directory.
type Server struct {
	// URL connects to its database postgres as the superuser postgres.
	URL string
	// Dir holds the cluster (data/), its socket and its log (server.log).
	Dir string

	bin      string              // the directory of initdb and pg_ctl
	cred     *syscall.Credential // whom the cluster runs as; nil: this process's user
	settings Settings
}

// Settings are the server settings of a cluster StartWith makes that differ
// from Start's.
type Settings struct {
	// MaxConnections is the server's max_connections: how many sessions
	// it takes at once, the superuser's included (its
	// superuser_reserved_connections is 0, so a test's superuser sessions
	// can take every slot). 0 means 300, enough for every test of a
	// package running in parallel.
	MaxConnections int
}

// DefaultMaxConnections is the max_connections of a cluster Start makes.
const DefaultMaxConnections = 300

// dirPrefix starts the name of every directory Start makes; the process id
// follows, so that a later Start can tell a cluster whose process is gone.
const dirPrefix = "assistant-pgtest-"

// maxSocketPath is the longest Unix socket path Linux takes (sun_path is
// 108 bytes with its NUL).
const maxSocketPath = 107

// Start makes and starts a throw-away cluster with the machine's initdb and
// pg_ctl (see the package documentation for where they are looked for and
// whom the cluster runs as). It first stops and removes the clusters of
// earlier test processes that are gone (killed before Main could stop
// them). The caller must Stop the server. Errors: ErrNoServer (wrapped)
// when PostgreSQL is not installed; else what initdb or pg_ctl said.
func Start(ctx context.Context) (*Server, error) { return StartWith(ctx, Settings{}) }

// StartWith is Start with settings: a cluster of its own for a test about
// the server's limits (a few connection slots), beside the shared one of
// Database. Errors: as Start's.
func StartWith(ctx context.Context, settings Settings) (*Server, error) {
	if settings.MaxConnections <= 0 {
		settings.MaxConnections = DefaultMaxConnections
	}
	bin, err := findBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := clusterUser()
	if err != nil {
		return nil, err
	}
	sweepStale(ctx, bin, cred)
	dir, err := os.MkdirTemp(tempRoot(), fmt.Sprintf("%s%d-", dirPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("start a test cluster: %w", err)
	}
	s := &Server{Dir: dir, bin: bin, cred: cred, settings: settings}
	if err := s.start(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("start a test cluster in %s: %w", dir, err), s.Stop(ctx))
	}
	q := url.Values{"host": {dir}, "user": {"postgres"}}
	s.URL = "postgres:///postgres?" + q.Encode()
	return s, nil
}

// start runs initdb, writes the settings and starts the server.
func (s *Server) start(ctx context.Context) error {
	if s.cred != nil {
		if err := os.Chown(s.Dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return err
		}
	}
	data := filepath.Join(s.Dir, "data")
	// -N: initdb skips its fsyncs, as the server does (fsync = off).
	if err := s.run(ctx, "initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "-N"); err != nil {
		return err
	}
	conf := fmt.Sprintf(`
# pgtest: a throw-away cluster for tests (internal/pgtest).
listen_addresses = ''
unix_socket_directories = '%s'
port = 5432
fsync = off
full_page_writes = off
synchronous_commit = on
max_connections = %d
superuser_reserved_connections = 0
`, s.Dir, s.settings.MaxConnections)
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(conf); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := s.run(ctx, "pg_ctl", "start", "-w", "-t", "60", "-s", "-D", data, "-l", filepath.Join(s.Dir, "server.log")); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "server.log"))
		return fmt.Errorf("%w; server.log: %s", err, strings.TrimSpace(string(log)))
	}
	return nil
}

// Stop stops the server at once (its data is thrown away) and removes its
// directory. Stopping a server that never started only removes the
// directory.
func (s *Server) Stop(ctx context.Context) error {
	var err error
	data := filepath.Join(s.Dir, "data")
	if _, statErr := os.Stat(filepath.Join(data, "postmaster.pid")); statErr == nil {
		err = s.run(ctx, "pg_ctl", "stop", "-w", "-s", "-m", "immediate", "-D", data)
	}
	return errors.Join(err, os.RemoveAll(s.Dir))
}

// run runs the program name of s.bin with args, as the cluster's user, in
// s.Dir, and returns an error with its output when it fails.
func (s *Server) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.Dir
	cmd.Env = append(cleanEnv(), "LC_ALL=C", "LANG=C")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	// pg_ctl start leaves the server running with its output in the log;
	// should anything still hold the pipes, do not wait for it forever.
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// cleanEnv returns this process's environment without the PG* variables,
// which would point initdb and pg_ctl elsewhere.
func cleanEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PG") })
}

// findBinDir returns the directory of initdb and pg_ctl: that of initdb on
// PATH (symbolic links followed), else the newest /usr/lib/postgresql/N/bin
// (Debian's layout, which keeps them off PATH). Errors: ErrNoServer.
func findBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && hasPgCtl(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	version := func(p string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
		return n
	}
	slices.SortFunc(matches, func(a, b string) int { return version(b) - version(a) })
	for _, m := range matches {
		if hasPgCtl(filepath.Dir(m)) {
			return filepath.Dir(m), nil
		}
	}
	return "", fmt.Errorf("%w: looked on PATH and in /usr/lib/postgresql/*/bin", ErrNoServer)
}

// hasPgCtl reports whether dir holds pg_ctl.
func hasPgCtl(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "pg_ctl"))
	return err == nil
}

// clusterUser returns whom the cluster runs as: nil (this process's user)
// unless this process is root, which initdb refuses; then the user
// postgres, or nobody.
func clusterUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and neither user postgres nor nobody exists to run the test cluster as (initdb refuses root)")
}

// tempRoot returns where Start makes its directory: the system's temporary
// directory, or /tmp when that is too long a path for the server's socket.
func tempRoot() string {
	root := os.TempDir()
	// root/assistant-pgtest-PID-RANDOM/.s.PGSQL.5432
	if len(root)+len(dirPrefix)+40+len("/.s.PGSQL.5432") > maxSocketPath {
		return "/tmp"
	}
	return root
}

// sweepStale stops and removes the clusters that Start made for test
// processes that are gone: a test binary killed (a timeout, a kill -9)
// never ran Main's Stop, and its server would run on. Best effort: what
// fails is left as it was.
func sweepStale(ctx context.Context, bin string, cred *syscall.Credential) {
	dirs, _ := filepath.Glob(filepath.Join(tempRoot(), dirPrefix+"*-*"))
	for _, dir := range dirs {
		pidText, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(dir), dirPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		old := &Server{Dir: dir, bin: bin, cred: cred}
		_ = old.Stop(ctx)
	}
}

// processAlive reports whether a process with id pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
