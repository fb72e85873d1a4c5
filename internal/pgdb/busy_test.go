package pgdb_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"assistant/business"
	"assistant/checkpoints/postgres"
	"assistant/flow/returns"
	"assistant/internal/pgdb"
	"assistant/internal/pgtest"
)

func TestIsServerBusy(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "53300", Message: "too many connections for role \"r\""}, true},
		{&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, true},
		{errors.New("FATAL: sorry, too many clients already"), true},
		{errors.New("proxy: too many connections"), true},
		{&pgconn.PgError{Code: "28P01", Message: "password authentication failed"}, false},
		{&pgconn.PgError{Code: "55P03", Message: "lock timeout"}, false},
		{errors.New("connection refused"), false},
		{nil, false},
	}
	for _, c := range cases {
		if got := pgdb.IsServerBusy(c.err); got != c.want {
			t.Errorf("IsServerBusy(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// limitedRole makes a login role of the database at dbURL that may hold
// at most limit sessions (CONNECTION LIMIT: a superuser has none) and
// returns dbURL as that role, with extra keywords appended.
func limitedRole(t *testing.T, dbURL string, limit int, extra string) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	role := "busy_" + hex.EncodeToString(b[:])
	admin := pgtest.Connect(t, dbURL)
	pgtest.Exec(t, admin, `CREATE ROLE `+role+` LOGIN CONNECTION LIMIT `+itoa(limit))
	t.Cleanup(func() {
		ctx := context.Background()
		admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, role)
		admin.Exec(ctx, `DROP ROLE IF EXISTS `+role)
	})
	if strings.HasPrefix(dbURL, "postgres://") || strings.HasPrefix(dbURL, "postgresql://") {
		u, err := url.Parse(dbURL)
		if err != nil {
			t.Fatal("the test database's URL does not parse")
		}
		u.User = url.User(role)
		q := u.Query()
		q.Set("user", role)
		for _, kv := range strings.Fields(extra) {
			k, v, _ := strings.Cut(kv, "=")
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dbURL + " user=" + role + " " + extra
}

func itoa(n int) string {
	var b []byte
	for ; n > 0 || len(b) == 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// takeSlots opens n sessions as the role of roleURL, so the role has no
// slot left, and closes them after hold (never, for hold 0).
func takeSlots(t *testing.T, roleURL string, n int, hold time.Duration) {
	t.Helper()
	conns := make([]*pgx.Conn, n)
	for i := range conns {
		conns[i] = pgtest.Connect(t, roleURL)
	}
	if _, err := pgx.Connect(context.Background(), roleURL); !pgdb.IsServerBusy(err) {
		t.Fatalf("a session past the role's limit: %v, want too_many_connections", err)
	}
	if hold > 0 {
		time.AfterFunc(hold, func() {
			for _, c := range conns {
				c.Close(context.Background())
			}
		})
	}
}

// With every slot taken for 2 s, 24 concurrent opens (one connection, a
// database/sql pool's, a pgxpool's) all wait for a slot and succeed.
func TestBusyServerShortShortageIsWaitedFor(t *testing.T) {
	const n = 24
	roleURL := limitedRole(t, pgtest.Database(t), n, "")
	takeSlots(t, roleURL, n, 2*time.Second)
	ctx := context.Background()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	var mu sync.Mutex
	var closers []func()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			var closer func()
			switch i % 2 {
			case 0:
				cfg, perr := pgdb.ParseConfig(roleURL)
				if perr != nil {
					errs <- perr
					return
				}
				var conn *pgx.Conn
				conn, err = pgdb.Connect(ctx, cfg, 0)
				if err == nil {
					closer = func() { conn.Close(ctx) }
				}
			case 1:
				cfg, perr := pgxpool.ParseConfig(roleURL)
				if perr != nil {
					errs <- perr
					return
				}
				pgdb.SetLimits(cfg.ConnConfig)
				cfg.MaxConns = 1
				var pool *pgxpool.Pool
				pool, err = pgdb.NewPool(ctx, cfg, 0)
				if err == nil {
					closer = pool.Close
				}
			}
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			closers = append(closers, closer)
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for _, c := range closers {
		c()
	}
	failed := 0
	for err := range errs {
		failed++
		t.Errorf("open: %v", err)
	}
	if took := time.Since(start); failed == 0 && took < 2*time.Second {
		t.Errorf("the opens took %s, less than the shortage lasted: were the slots taken?", took)
	}
}

// A shortage longer than the connect timeout ends busy: ErrServerBusy,
// which IsBusy reports and the application layer marks ErrBusy (exit 3).
func TestBusyServerLongShortageIsBusy(t *testing.T) {
	roleURL := limitedRole(t, pgtest.Database(t), 1, "connect_timeout=1")
	takeSlots(t, roleURL, 1, 0)
	cfg, err := pgdb.ParseConfig(roleURL)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	conn, err := pgdb.Connect(context.Background(), cfg, 0)
	took := time.Since(start)
	if err == nil {
		conn.Close(context.Background())
		t.Fatal("Connect succeeded with no slot free")
	}
	if !errors.Is(err, pgdb.ErrServerBusy) || !pgdb.IsBusy(err) {
		t.Fatalf("Connect: %v, want ErrServerBusy", err)
	}
	if took < 700*time.Millisecond || took > 3*time.Second {
		t.Errorf("Connect gave up after %s, want about the connect timeout (1s)", took)
	}
	if kind := returns.KindOf(returns.Classify(err)); kind != returns.ErrBusy {
		t.Errorf("the application layer's kind: %v, want ErrBusy", kind)
	}
	if h, ok := returns.HintOf(returns.Classify(err)); !ok || h.IsZero() {
		t.Error("a busy server has no hint")
	}
}

// A caller that holds other connections of the server gives a short wait
// (HeldBusyWait): the opening of either store, and one connection, gives
// up busy after it, well before the connect timeout, so the caller can
// give back what it holds (docs/postgres.md "Busy").
func TestBusyServerHeldWaitGivesUpEarly(t *testing.T) {
	roleURL := limitedRole(t, pgtest.Database(t), 1, "")
	takeSlots(t, roleURL, 1, 0)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		open func() error
	}{
		{"Connect", func() error {
			cfg, err := pgdb.ParseConfig(roleURL)
			if err != nil {
				return err
			}
			conn, err := pgdb.Connect(ctx, cfg, pgdb.HeldBusyWait)
			if err == nil {
				conn.Close(ctx)
			}
			return err
		}},
		{"BusinessStore", func() error {
			s, err := business.OpenPostgres(ctx, roleURL, business.Options{PGOpenBusyWait: business.PGHeldBusyWait})
			if err == nil {
				s.Close()
			}
			return err
		}},
		{"CheckpointStore", func() error {
			s, err := postgres.Open(ctx, roleURL, postgres.Options{OpenBusyWait: postgres.HeldBusyWait})
			if err == nil {
				s.Close()
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := tc.open()
			took := time.Since(start)
			if !errors.Is(err, pgdb.ErrServerBusy) {
				t.Fatalf("open with no slot free: %v, want ErrServerBusy", err)
			}
			if took >= pgdb.ConnectTimeout {
				t.Errorf("gave up after %s: the whole connect timeout (%s), not the wait given (%s)", took, pgdb.ConnectTimeout, pgdb.HeldBusyWait)
			}
		})
	}
}
