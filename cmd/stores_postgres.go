package cmd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"assistant/business"
	"assistant/checkpoints/postgres"
	"assistant/flow/returns"
)

// This file opens the two stores on a PostgreSQL server (--store URL): the
// schemas checkpoints and business of one database (docs/postgres.md). A
// message never repeats the URL: it may hold a password.

// server is a --store URL parsed, and one connection to it for the looks
// the command takes besides its stores (which schemas exist; Wait's check
// that they still do).
type server struct {
	url   string
	where string // the database for a person, without a password
	conn  *pgx.Conn
	// now is the clock of every time the command stamps on the server:
	// the server's, as measured by connectServer (serverClock).
	now func() time.Time
	// connectTimeout is the URL's connect_timeout, else the program's.
	connectTimeout time.Duration
}

// connectServer parses the URL and connects to it, within the URL's
// connect_timeout or the program's connect timeout (the connection and its
// first query); its session has the lock_timeout of every session
// (business.ParsePGConfig). A server with no free connection slot is
// waited for for wait (0: the connect timeout), then busy
// (business.ErrPGServerBusy). Errors: ErrInvalid for a URL that does not
// parse or names an unknown sslmode, without the URL; an unreachable or
// silent server is one line naming its host, port, database and user,
// never the password.
func connectServer(ctx context.Context, rawURL string, wait time.Duration) (*server, error) {
	// Its errors never repeat the URL; it sets the connect timeout and
	// the lock_timeout every connection of the program has.
	cfg, err := business.ParsePGConfig(rawURL)
	if err != nil {
		return nil, usageErr("--store: %v", scrub(strings.TrimPrefix(err.Error(), business.ErrPGURL.Error()+": "), rawURL))
	}
	where := fmt.Sprintf("database %s on %s", cfg.Database, hostPort(cfg.Host, cfg.Port))
	began := time.Now()
	conn, err := business.ConnectPG(ctx, cfg, wait)
	if errors.Is(err, business.ErrPGServerBusy) {
		return nil, serverBusy(cfg, time.Since(began), err)
	}
	if err != nil {
		// scrubbed keeps err's chain: a signal while connecting is still
		// context.Canceled (exit 130), not a storage failure.
		cause := connectCause(err)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			cause = fmt.Sprintf("no answer within %s (connect_timeout)", cfg.ConnectTimeout)
		}
		return nil, &scrubbed{err: err, msg: fmt.Sprintf("cannot reach the PostgreSQL server for %s as user %s: %s", where, cfg.User, scrub(cause, rawURL))}
	}
	srv := &server{url: rawURL, where: where, conn: conn, connectTimeout: cfg.ConnectTimeout}
	// The first query has the connect timeout too: a server that took
	// the handshake and then goes silent does not hang the command.
	qctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	srv.now, err = serverClock(qctx, conn, returns.WallClock)
	cancel()
	if err != nil {
		conn.Close(context.Background())
		cause := connectCause(err)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			cause = fmt.Sprintf("the server took the connection but did not answer a query within %s (connect_timeout)", cfg.ConnectTimeout)
		}
		return nil, &scrubbed{err: err, msg: fmt.Sprintf("read the clock of %s: %s", where, scrub(cause, rawURL))}
	}
	return srv, nil
}

// serverClock returns the server's clock as this process can keep it:
// local (the process's wall clock) moved by its offset from the server's
// clock_timestamp(), measured once over conn, at the midpoint of the
// query's round trip (so within half a round trip, well under a
// millisecond on a local network). Every time a command stamps on the
// server comes from it: leases are written and their expiry compared in
// the server's time, and machines whose clocks disagree still agree on
// when a lease lapsed (docs/postgres.md "Many machines"). The times are
// UTC to the millisecond, as returns.Open's. Errors: the query's.
func serverClock(ctx context.Context, conn *pgx.Conn, local func() time.Time) (func() time.Time, error) {
	sent := local()
	var at time.Time
	if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&at); err != nil {
		return nil, err
	}
	back := local()
	offset := at.Sub(sent.Add(back.Sub(sent) / 2))
	return func() time.Time { return local().Add(offset).UTC().Truncate(time.Millisecond) }, nil
}

// serverBusy is err, a server's refusal of a connection for lack of a free
// slot or while starting up (business.ErrPGServerBusy) that lasted
// waited, as one message naming the database and user once and the
// server's own words (its refusal and SQLSTATE), without the address
// again or the password; it matches what err matches.
func serverBusy(cfg *pgx.ConnConfig, waited time.Duration, err error) error {
	state := "had no free connection slot"
	refusal := connectCause(err)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		refusal = pe.Error()
		if pe.Code == "57P03" {
			state = "was starting up"
		}
	}
	return &scrubbed{err: err, msg: fmt.Sprintf("the PostgreSQL server of database %s on %s, as user %s, %s for %s: %s",
		cfg.Database, hostPort(cfg.Host, cfg.Port), cfg.User, state, waited.Round(10*time.Millisecond), refusal)}
}

// hostPort names a server's address: host:port, or the Unix socket.
func hostPort(host string, port uint16) string {
	if strings.HasPrefix(host, "/") {
		return fmt.Sprintf("%s/.s.PGSQL.%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}

// connectCause is why a connection failed, on one line, without pgx's
// prefix (which connectServer says in its own words).
func connectCause(err error) string {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) && errors.Unwrap(ce) != nil {
		err = errors.Unwrap(ce)
	}
	// One error per address tried (sslmode=prefer tries twice), joined,
	// perhaps inside a wrap ("hostname resolving error: " and the same
	// lookup error twice): the last says most ("database … does not
	// exist" after "server refused TLS"), and is said once.
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			if errs := j.Unwrap(); len(errs) > 0 {
				msg = strings.Replace(msg, e.Error(), errs[len(errs)-1].Error(), 1)
			}
			break
		}
	}
	return strings.Join(strings.Fields(msg), " ")
}

// scrub removes the URL's password from msg, should a driver ever repeat
// it.
func scrub(msg, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return msg
	}
	for _, pw := range []string{passwordOf(u), u.Query().Get("password")} {
		if pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}

func passwordOf(u *url.URL) string {
	pw, _ := u.User.Password()
	return pw
}

// redactURL is the URL without its password (in the user part, or the
// query's password and sslpassword), to print in a next command
// or a report. A URL that does not parse is "the --store URL".
func redactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "the --store URL"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	if q := u.Query(); q.Has("password") || q.Has("sslpassword") {
		q.Del("password")
		q.Del("sslpassword")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func (s *server) close() { s.conn.Close(context.Background()) }

// serverStores opens both stores on the server of --store. Under
// returns.OpenExisting a database without them is ErrNotFound, and nothing
// is made. close closes what it opened.
//
// A server with no free connection slot (or starting up) is waited for
// within the connect timeout as a whole (docs/postgres.md "Busy"): the
// first connection waits for a slot while the command holds none; a store
// that then finds no slot within business.PGHeldBusyWait makes the command
// close what it holds, pause (jittered) and open all three again, so
// processes that each hold a slot of a full server do not wait for each
// other until all fail. Once the connect timeout has passed since the first
// try the error is the server's busy refusal (business.ErrPGServerBusy).
func (a *app) serverStores(ctx context.Context, mode returns.OpenMode) (*server, *postgres.Store, *business.Store, error) {
	var (
		srv  *server
		cps  *postgres.Store
		desk *business.Store
	)
	err := a.withinConnectTimeout(ctx, func(deadline time.Time) (held bool, err error) {
		srv, cps, desk, held, err = a.openServerStores(ctx, mode, deadline)
		return held, err
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return srv, cps, desk, nil
}

// withinConnectTimeout calls try until it succeeds, or fails with held
// false, or the connect timeout of the --store URL has passed since the
// first call: the opening of serverStores and verifyServer. try opens what
// it needs, waiting for a free slot until deadline for its first
// connection and at most business.PGHeldBusyWait for each later one
// (waitUntil); held reports that a later one found no slot, so try closed
// what it held and a pause (jittered) and a try again may succeed. A
// server busy at the end is one message for the whole wait (serverBusy).
func (a *app) withinConnectTimeout(ctx context.Context, try func(deadline time.Time) (held bool, err error)) error {
	cfg, err := business.ParsePGConfig(a.store)
	if err != nil {
		_, err := connectServer(ctx, a.store, 0) // its refusal of the URL
		return err
	}
	began := time.Now()
	deadline := began.Add(cfg.ConnectTimeout)
	pause := storesRetryFirstPause
	for {
		held, err := try(deadline)
		if errors.Is(err, business.ErrPGServerBusy) {
			// Said once, for the whole wait.
			err = serverBusy(cfg, time.Since(began), err)
		}
		if !held {
			return err
		}
		sleep := pause/2 + rand.N(pause/2+1)
		if time.Now().Add(sleep).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(sleep):
		}
		pause = min(2*pause, storesRetryMaxPause)
	}
}

// waitUntil is how long a connection opened now may wait for a free slot:
// most, but not past deadline, and at least one try (a wait of 0 would be
// the whole connect timeout).
func waitUntil(deadline time.Time, most time.Duration) time.Duration {
	return max(min(most, time.Until(deadline)), time.Nanosecond)
}

// The pause of serverStores before it opens the stores again, after a store
// found no free connection slot: the first, and the most it grows to by
// doubling; each is jittered (between half and the whole of it).
const (
	storesRetryFirstPause = 50 * time.Millisecond
	storesRetryMaxPause   = 500 * time.Millisecond
)

// openServerStores is one try of serverStores: the server's first
// connection waits for a free slot until deadline, each store's for
// business.PGHeldBusyWait at most (and not past deadline); each connection
// is tried at least once. On an error it closes what it opened; held
// says the error is a store's busy server, met while the server's first
// connection was held (worth a try again once it is closed).
func (a *app) openServerStores(ctx context.Context, mode returns.OpenMode, deadline time.Time) (srv *server, cps *postgres.Store, desk *business.Store, held bool, err error) {
	srv, err = connectServer(ctx, a.store, waitUntil(deadline, time.Until(deadline)))
	if err != nil {
		return nil, nil, nil, false, err
	}
	opened, openedCps := srv, (*postgres.Store)(nil)
	defer func() {
		if err != nil {
			if openedCps != nil {
				openedCps.Close()
			}
			opened.close()
		}
	}()
	// The test clock moves the server's time as measured: every machine
	// then reads the same later time.
	srv.now = a.clock(srv.now)
	found, err := srv.schemas(ctx)
	if err == nil {
		err = found.Check(mode)
	}
	if err == nil && mode.Creates() && a.beforeCreate != nil && !found.Checkpoints && !found.Business {
		err = a.beforeCreate()
	}
	if err != nil {
		return nil, nil, nil, false, err
	}
	cps, err = postgres.Open(ctx, a.store, postgres.Options{OpenBusyWait: waitUntil(deadline, postgres.HeldBusyWait)})
	if err != nil {
		return nil, nil, nil, errors.Is(err, business.ErrPGServerBusy), a.storeErr(srv, err)
	}
	openedCps = cps
	// The business schema must carry the checkpoint schema's identity,
	// as the two files of a data dir do: a pair that does not belong
	// together (one schema restored from another database) is refused
	// before anything is written.
	id, err := cps.DataDirID(ctx)
	if err != nil {
		return nil, nil, nil, false, a.storeErr(srv, err)
	}
	desk, err = business.OpenPostgres(ctx, a.store, business.Options{Create: mode.Creates(), Seed: a.seed, Now: srv.now, DataDirID: id,
		PGOpenBusyWait: waitUntil(deadline, business.PGHeldBusyWait)})
	if err != nil {
		return nil, nil, nil, errors.Is(err, business.ErrPGServerBusy), a.storeErr(srv, err)
	}
	return srv, cps, desk, false, nil
}

// storeErr is err of opening a store on srv, naming the database and
// matching what err matches (a newer or foreign schema), without the
// password.
func (a *app) storeErr(srv *server, err error) error {
	if errors.Is(err, business.ErrPairMismatch) {
		// The stores' own hint speaks of files and `assistant backup`,
		// which a server has neither of.
		return &scrubbed{err: err, schema: true, msg: fmt.Sprintf("%s: the schemas checkpoints and business carry different identities, so they are not one pair "+
			"(one was restored from elsewhere?); nothing was changed", srv.where)}
	}
	return &scrubbed{msg: srv.where + ": " + scrub(err.Error(), a.store), err: err}
}

// scrubbed is an error whose message was scrubbed of a password; it still
// matches what the error it stands for matches, and with schema set
// business.ErrPGSchemaRefused too (a refusal of the server's schemas,
// whose hint speaks of pg_restore rather than files).
type scrubbed struct {
	msg    string
	err    error
	schema bool
}

func (e *scrubbed) Error() string { return e.msg }

func (e *scrubbed) Unwrap() []error {
	if e.schema {
		return []error{e.err, business.ErrPGSchemaRefused}
	}
	return []error{e.err}
}

// serverService is service on the server of --store.
func (a *app) serverService(ctx context.Context, mode returns.OpenMode) (*returns.Service, error) {
	srv, cps, desk, err := a.serverStores(ctx, mode)
	if err != nil {
		return nil, err
	}
	svc, err := returns.Open(ctx, returns.Config{Checkpoints: cps, MaxAttempts: a.maxAttempts, Host: a.host, Now: srv.now, Wording: a.wording(),
		Business: &returns.ServerStore{Desk: desk, Gone: srv.gone}})
	if err != nil {
		desk.Close()
		cps.Close()
		srv.close()
		return nil, err
	}
	a.closers = append(a.closers, func() { svc.Close(); cps.Close(); srv.close() })
	return svc, nil
}
