package cmd

import (
	"testing"

	"assistant/checkpoints/postgres"
	"assistant/flow/returns"
	"assistant/internal/sqlitedb"
)

// TestIdleInTxTimeoutsFollowTheLease: the server ends a transaction whose
// client went silent after the lease TTL on the business store (a frozen
// writer releases the write lock once its leases could be taken over),
// and sooner on the checkpoint store, so a takeover whose business
// transaction waits in Fence for a frozen checkpoint writer is not ended
// for that wait (docs/postgres.md "A frozen holder").
func TestIdleInTxTimeoutsFollowTheLease(t *testing.T) {
	if sqlitedb.PGIdleInTxTimeout != returns.DefaultLeaseTTL {
		t.Errorf("business sessions' idle_in_transaction_session_timeout = %v, want the lease TTL %v", sqlitedb.PGIdleInTxTimeout, returns.DefaultLeaseTTL)
	}
	if postgres.IdleInTxTimeout <= 0 || postgres.IdleInTxTimeout >= sqlitedb.PGIdleInTxTimeout {
		t.Errorf("checkpoint sessions' idle_in_transaction_session_timeout = %v, want above 0 and under the business store's %v", postgres.IdleInTxTimeout, sqlitedb.PGIdleInTxTimeout)
	}
}
