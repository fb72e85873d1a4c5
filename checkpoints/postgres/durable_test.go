package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"assistant/internal/pgtest"
)

// TestSessionsCommitDurably: the store's Sync does nothing because every
// session it opens commits with synchronous_commit = on, even on a
// database whose default is off.
func TestSessionsCommitDurably(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var db string
	if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` SET synchronous_commit = off`); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 3 { // more than one session of the pool
		var setting, name string
		if err := s.pool.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('application_name')`).Scan(&setting, &name); err != nil {
			t.Fatal(err)
		}
		if setting != "on" || name != DefaultApplicationName {
			t.Errorf("a session of the store has synchronous_commit = %s, application_name = %q; want on, %q", setting, name, DefaultApplicationName)
		}
	}
}
