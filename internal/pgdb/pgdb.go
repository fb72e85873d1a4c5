// Package pgdb is the PostgreSQL side of the stores' plumbing: the
// connections every part of the program opens on a server (ParseConfig:
// a connect timeout, a lock_timeout, URL errors that never repeat the
// URL), a store's schema opened and migrated with the rules of the SQLite
// files (Open: a newer or foreign schema refused before any write, one
// transaction per migration under an advisory lock, the data dir
// identity), and the sqlstore.Handle of the stores over it (NewHandle, the
// PostgreSQL sqlstore.Engine):
//
//   - every write transaction first takes a transaction-level advisory
//     lock, the store's write lock, so writers of one database run one at
//     a time, as on SQLite, and under READ COMMITTED what a
//     read-then-write method read cannot change under it; a write
//     statement outside a transaction runs in a short one of its own that
//     takes it too;
//   - every session commits with synchronous_commit = on, so every commit
//     is durable when it returns: Sync and a durable commit add nothing;
//   - pgx prepares each SQL text once per connection itself, so the
//     statement caches run every text directly;
//   - a lock waited on past lock_timeout is IsBusy, as SQLite's busy
//     timeout is sqlite.IsBusy.
//
// The stores' SQL is their own, written for PostgreSQL ($n parameters);
// nothing here changes it.
//
//	db, err := pgdb.Open(ctx, url, pgdb.Spec{Schema: "business", Migrations: migs, MigrationLock: key})
//	h := pgdb.NewHandle(db, "postgres schema business", writeLock)
package pgdb

import (
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"assistant/internal/sqlite"
)

// Session settings of the pools Open opens.
const (
	// DefaultApplicationName is the application_name of the sessions
	// this package opens (pg_stat_activity shows it), unless the URL sets one.
	DefaultApplicationName = "assistant"
	// IdleInTxTimeout is every session's
	// idle_in_transaction_session_timeout: the server ends a session whose
	// transaction waited this long for the client's next statement, rolls
	// the transaction back and so releases the write lock it held. Without
	// it a writer frozen inside a transaction (SIGSTOP, a frozen VM, a lost
	// network whose TCP keepalive takes hours) blocks every writer of the
	// database on every machine for as long as its session lives. It is the
	// lease TTL of flow/returns (DefaultLeaseTTL, 5 s; the cmd tests check
	// the two agree): a client silent that long has lost any lease it held
	// anyway. A normal gap between two statements of one transaction is
	// under a few milliseconds, and a batch chunk's whole transaction ends
	// after 0.5 s of work (MaxChunkTime); the widest gap is a takeover's
	// Fence on the checkpoint store, which waits at most that store's own
	// idle timeout (half this). docs/postgres.md "A frozen holder".
	IdleInTxTimeout = 5 * time.Second
)

// Limits every connection the program opens on a PostgreSQL server has
// (ParseConfig), so no command waits for a server for ever.
const (
	// ConnectTimeout is the default connect timeout: how long opening
	// a connection (TCP, TLS, the startup handshake and authentication)
	// may take before it fails. A URL's own connect_timeout (seconds,
	// above 0) wins; libpq's default is to wait for ever.
	ConnectTimeout = 10 * time.Second
	// LockTimeout is every session's default lock_timeout: a statement
	// that waits longer for a lock (a table another session locked, the
	// write or migration advisory lock, a row) fails with
	// lock_not_available, which IsBusy reports. It is the busy timeout
	// of the SQLite files (sqlite.DefaultBusyTimeout), whatever the URL
	// says.
	LockTimeout = sqlite.DefaultBusyTimeout
)

// ErrURL marks a PostgreSQL URL ParseConfig refuses: one that does
// not parse, or whose sslmode the driver does not know.
var ErrURL = errors.New("bad PostgreSQL URL")

// sslModes are the sslmode values libpq and pgx know.
var sslModes = map[string]bool{"disable": true, "allow": true, "prefer": true, "require": true, "verify-ca": true, "verify-full": true}

// ParseConfig parses url (a postgres:// URL or a keyword/value string)
// as pgx.ParseConfig does and sets the limits of ConnectTimeout (unless
// the URL sets a connect_timeout above 0) and LockTimeout. Errors match
// ErrURL and never repeat the URL (so never its password): a URL that does not
// parse, and an sslmode (in the URL or PGSSLMODE) outside disable,
// allow, prefer, require, verify-ca and verify-full, which pgx checks
// only for a TCP address and lets pass on a Unix socket.
func ParseConfig(url string) (*pgx.ConnConfig, error) {
	if err := checkSSLMode(url); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrURL, parseCause(err))
	}
	SetLimits(cfg)
	return cfg, nil
}

// SetLimits sets cfg's connect timeout to ConnectTimeout when it has none,
// its sessions' lock_timeout to LockTimeout, and their application_name
// to DefaultApplicationName unless the URL names one: for a config parsed some
// other way (pgxpool's); ParseConfig calls it.
func SetLimits(cfg *pgx.ConnConfig) {
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = ConnectTimeout
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(LockTimeout.Milliseconds(), 10)
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = DefaultApplicationName
	}
}

// CheckURL refuses what ParseConfig refuses, without keeping the
// config: for a caller that parses url another way (pgxpool.ParseConfig).
func CheckURL(url string) error {
	_, err := ParseConfig(url)
	return err
}

// checkSSLMode refuses an sslmode the driver does not know, from the URL
// (?sslmode=, or sslmode= of a keyword/value string) or else PGSSLMODE.
func checkSSLMode(raw string) error {
	var modes []string
	if strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://") {
		if u, err := neturl.Parse(raw); err == nil {
			modes = u.Query()["sslmode"]
		}
	} else {
		for _, f := range strings.Fields(raw) {
			if k, v, ok := strings.Cut(f, "="); ok && strings.TrimSpace(k) == "sslmode" {
				modes = append(modes, strings.Trim(v, "'"))
			}
		}
	}
	if len(modes) == 0 {
		if env, ok := os.LookupEnv("PGSSLMODE"); ok && env != "" {
			modes = []string{env}
		}
	}
	for _, m := range modes {
		if !sslModes[m] {
			return fmt.Errorf("%w: sslmode %q is not one of disable, allow, prefer, require, verify-ca, verify-full", ErrURL, m)
		}
	}
	return nil
}

// parseCause is why pgx could not parse a URL, without the URL, which
// pgx's message repeats (with the password only masked).
func parseCause(err error) string {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return "it does not parse"
	}
	text := pe.Error()
	inner := pe.Unwrap()
	if inner != nil {
		text = strings.TrimSuffix(text, " ("+inner.Error()+")")
	}
	if i := strings.LastIndex(text, "`: "); i >= 0 {
		text = text[i+3:]
	} else {
		text = "it does not parse"
	}
	var ue *neturl.Error
	if errors.As(inner, &ue) {
		inner = ue.Err // url.Error repeats the URL
	}
	if inner != nil && !strings.Contains(inner.Error(), "://") {
		text += " (" + inner.Error() + ")"
	}
	return text
}
