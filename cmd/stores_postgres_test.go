package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"assistant/business"
	"assistant/checkpoints/postgres"
	"assistant/flow/returns"
)

// TestIdleInTxTimeoutsFollowTheLease: the server ends a transaction whose
// client went silent after the lease TTL on the business store (a frozen
// writer releases the write lock once its leases could be taken over),
// and sooner on the checkpoint store, so a takeover whose business
// transaction waits in Fence for a frozen checkpoint writer is not ended
// for that wait (docs/postgres.md "A frozen holder").
func TestIdleInTxTimeoutsFollowTheLease(t *testing.T) {
	if business.PGIdleInTxTimeout != returns.DefaultLeaseTTL {
		t.Errorf("business sessions' idle_in_transaction_session_timeout = %v, want the lease TTL %v", business.PGIdleInTxTimeout, returns.DefaultLeaseTTL)
	}
	if postgres.IdleInTxTimeout <= 0 || postgres.IdleInTxTimeout >= business.PGIdleInTxTimeout {
		t.Errorf("checkpoint sessions' idle_in_transaction_session_timeout = %v, want above 0 and under the business store's %v", postgres.IdleInTxTimeout, business.PGIdleInTxTimeout)
	}
}

// TestConnectCauseOnce: the errors of the addresses tried, joined by the
// driver (inside a wrap or not), give one cause, the last, said once.
func TestConnectCauseOnce(t *testing.T) {
	lookup := errors.New("lookup db.invalid on 10.0.0.53:53: no such host")
	tls := errors.New("server refused TLS connection")
	missing := errors.New(`FATAL: database "x" does not exist (SQLSTATE 3D000)`)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"Plain", lookup, lookup.Error()},
		{"JoinedTwice", errors.Join(lookup, lookup), lookup.Error()},
		{"WrappedJoin", fmt.Errorf("hostname resolving error: %w", errors.Join(lookup, lookup)), "hostname resolving error: " + lookup.Error()},
		{"LastSaysMost", errors.Join(tls, missing), missing.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := connectCause(tc.err); got != tc.want {
				t.Errorf("connectCause = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestConnectServerUnknownHostOnce: a host name that does not resolve
// (.invalid never does) is one line that names the lookup once.
func TestConnectServerUnknownHostOnce(t *testing.T) {
	_, err := connectServer(context.Background(), "postgres://u@no-such-host.invalid/db?connect_timeout=5", 0)
	if err == nil {
		t.Fatal("connected to no-such-host.invalid")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || strings.Count(msg, "no-such-host.invalid") > 2 {
		t.Errorf("%q: want one line naming the host where it says where, and in the cause once", msg)
	}
	if i := strings.Index(msg, "lookup"); i >= 0 && strings.Count(msg, "lookup") != 1 {
		t.Errorf("%q repeats its cause", msg)
	}
}
