package pgdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// This file opens every connection the program makes on a server so that
// a server with no free connection slot, or one still starting up, is
// waited for within the connect timeout and then reported busy
// (docs/postgres.md "Busy"): Connect for one connection, the connector of
// Open's database/sql pool, and NewPool for a pgxpool.

// Backoff between two tries to connect to a busy server: the first wait,
// and the most any wait grows to by doubling. Each wait is jittered
// (between half and the whole of it), so processes that met the same
// shortage do not all try again at the same moment.
const (
	BusyFirstWait = 10 * time.Millisecond
	BusyMaxWait   = 250 * time.Millisecond
)

// HeldBusyWait is how long a process that already holds a connection
// waits for a busy server to take one more, when it opens another store
// (OpenBusyWait of Spec, the wait argument of NewPool), before it gives up
// with ErrServerBusy, so that its caller closes what it holds and tries the
// whole again (docs/postgres.md "Busy"). Waiting the whole connect timeout
// instead, processes that each hold one slot of a full server would wait
// for each other until every one of them failed.
const HeldBusyWait = 500 * time.Millisecond

// ErrServerBusy marks a connection the server refused for the whole wait
// (the connect timeout, or a shorter wait the caller gave) because it had
// no free connection slot
// (too_many_connections, 53300) or was starting up (cannot_connect_now,
// 57P03). IsBusy reports it.
var ErrServerBusy = errors.New("PostgreSQL server busy")

// serverBusyError is the last refusal of a busy server, after waiting.
type serverBusyError struct {
	err    error
	waited time.Duration
}

func (e *serverBusyError) Error() string {
	return fmt.Sprintf("%v: no connection slot free for %s: %v", ErrServerBusy, e.waited.Round(time.Millisecond), e.err)
}

func (e *serverBusyError) Unwrap() error { return e.err }

// Is makes errors.Is match ErrServerBusy.
func (e *serverBusyError) Is(target error) bool { return target == ErrServerBusy }

// IsServerBusy reports whether err is a server's refusal of a connection
// that a later try may not meet: SQLSTATE too_many_connections (53300: the
// server's max_connections, or a database's or role's CONNECTION LIMIT)
// or cannot_connect_now (57P03: starting up), or the texts "too many
// connections" and "sorry, too many clients already" of a server or a
// proxy that sends no SQLSTATE.
func IsServerBusy(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "53300" || pe.Code == "57P03") {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "too many connections") || strings.Contains(msg, "sorry, too many clients already")
}

// retryBusy calls connect until it succeeds, fails with an error
// IsServerBusy does not report, or timeout has passed since the first try;
// between tries it waits BusyFirstWait doubling up to BusyMaxWait,
// jittered. A server still busy at the end is a *serverBusyError
// (ErrServerBusy) wrapping its last refusal. ctx ends the waits early,
// with ctx's error.
func retryBusy[T any](ctx context.Context, timeout time.Duration, connect func(context.Context) (T, error)) (T, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	wait := BusyFirstWait
	for {
		v, err := connect(ctx)
		if err == nil || !IsServerBusy(err) {
			return v, err
		}
		sleep := wait/2 + rand.N(wait/2+1)
		if time.Now().Add(sleep).After(deadline) {
			var zero T
			return zero, &serverBusyError{err: err, waited: time.Since(start)}
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			var zero T
			return zero, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, BusyMaxWait)
	}
}

// Connect opens one connection with cfg (made by ParseConfig), waiting
// for a busy server for wait (0 or less: cfg's connect timeout; each try
// has the connect timeout of its own). Errors: pgx's, or ErrServerBusy for
// a server busy all that time.
func Connect(ctx context.Context, cfg *pgx.ConnConfig, wait time.Duration) (*pgx.Conn, error) {
	if wait <= 0 {
		wait = cfg.ConnectTimeout
	}
	return retryBusy(ctx, wait, func(ctx context.Context) (*pgx.Conn, error) {
		return pgx.ConnectConfig(ctx, cfg)
	})
}

// busyConnector is a database/sql connector whose connections wait for a
// busy server (retryBusy), for wait.
//
// A pool that holds connections already does not wait for one more: a
// server with no free slot for it is one whose slots the pool's own idle
// sessions may be holding, which a waiting open never gets. It caps the
// pool at the connections it holds (SetMaxOpenConns: the server's limit,
// learnt), keeps no more than fullServerIdleConns of them idle (the
// others are the other processes' slots), and returns driver.ErrBadConn,
// on which database/sql tries the statement again on a connection the
// pool hands back.
type busyConnector struct {
	driver.Connector
	wait *atomic.Int64
	pool *atomic.Pointer[sql.DB] // the pool it opens for, once Open made it
}

func (c busyConnector) Connect(ctx context.Context) (driver.Conn, error) {
	if db := c.pool.Load(); db != nil {
		conn, err := c.Connector.Connect(ctx)
		if !IsServerBusy(err) {
			return conn, err
		}
		// OpenConnections counts this open too (database/sql counts it
		// before it connects).
		if held := db.Stats().OpenConnections - 1; held > 0 {
			db.SetMaxOpenConns(held)
			// The server is full: what the pool does not use now goes
			// back to it, for the other processes (database/sql's
			// default of idle sessions).
			db.SetMaxIdleConns(fullServerIdleConns)
			return nil, fmt.Errorf("%w: %w", driver.ErrBadConn, err)
		}
	}
	return retryBusy(ctx, time.Duration(c.wait.Load()), c.Connector.Connect)
}

// fullServerIdleConns is how many idle sessions a pool that met a full
// server keeps (busyConnector).
const fullServerIdleConns = 2

// newBusyConnector is the database/sql connector of cfg whose every
// connection waits for a busy server for wait (Connect).
func newBusyConnector(cfg pgx.ConnConfig, wait time.Duration) busyConnector {
	c := busyConnector{Connector: stdlib.GetConnector(cfg), wait: new(atomic.Int64), pool: new(atomic.Pointer[sql.DB])}
	c.wait.Store(int64(wait))
	return c
}

// NewPool makes a pgxpool with cfg and opens its first connection, waiting
// for a busy server for wait (0 or less: cfg's connect timeout; a caller
// that holds other connections passes HeldBusyWait); the connection stays
// in the pool, so the pool's later work reuses it rather than meet the
// shortage again. pgxpool has no hook around the connections it opens
// itself, so one it opens later (work on more than one connection at a
// time) does not wait. Errors: as Connect's.
func NewPool(ctx context.Context, cfg *pgxpool.Config, wait time.Duration) (*pgxpool.Pool, error) {
	if wait <= 0 {
		wait = cfg.ConnConfig.ConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	conn, err := retryBusy(ctx, wait, pool.Acquire)
	if err != nil {
		pool.Close()
		return nil, err
	}
	conn.Release()
	return pool, nil
}
