package pgdb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
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

// ErrServerBusy marks a connection the server refused for the whole
// connect timeout because it had no free connection slot
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
// for a busy server within cfg's connect timeout. Errors: pgx's, or
// ErrServerBusy for a server busy all that time.
func Connect(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	return retryBusy(ctx, cfg.ConnectTimeout, func(ctx context.Context) (*pgx.Conn, error) {
		return pgx.ConnectConfig(ctx, cfg)
	})
}

// busyConnector is a database/sql connector whose connections wait for a
// busy server within the connect timeout.
type busyConnector struct {
	driver.Connector
	timeout time.Duration
}

func (c busyConnector) Connect(ctx context.Context) (driver.Conn, error) {
	return retryBusy(ctx, c.timeout, c.Connector.Connect)
}

// newBusyConnector is the database/sql connector of cfg whose every
// connection waits for a busy server (Connect).
func newBusyConnector(cfg pgx.ConnConfig) driver.Connector {
	return busyConnector{Connector: stdlib.GetConnector(cfg), timeout: cfg.ConnectTimeout}
}

// NewPool makes a pgxpool with cfg and opens its first connection, waiting
// for a busy server within the connect timeout; the connection stays in
// the pool, so the pool's later work reuses it rather than meet the
// shortage again. pgxpool has no hook around the connections it opens
// itself, so one it opens later (work on more than one connection at a
// time) does not wait. Errors: as Connect's.
func NewPool(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	conn, err := retryBusy(ctx, cfg.ConnConfig.ConnectTimeout, pool.Acquire)
	if err != nil {
		pool.Close()
		return nil, err
	}
	conn.Release()
	return pool, nil
}
