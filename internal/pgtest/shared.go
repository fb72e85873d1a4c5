package pgtest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// shared is the database the subtests of one test that called Share use:
// made once, and emptied (its schemas dropped) for each new store when no
// store is open on it, which costs a tenth of a new database.
type shared struct {
	mu   sync.Mutex
	url  string
	open int  // stores open on it
	used bool // a store was opened on it: drop its schemas first
}

// sharedByTest maps the name of a test that called Share to its database.
var sharedByTest sync.Map

// Share gives test t a database (Database) that SharedDatabase hands to
// the stores t and its subtests open, until t ends.
func Share(t *testing.T) {
	t.Helper()
	sharedByTest.Store(t.Name(), &shared{url: Database(t)})
	t.Cleanup(func() { sharedByTest.Delete(t.Name()) })
}

// SharedDatabase returns the URL of an empty database for a new store of
// tb: the one tb or its nearest parent test shares (Share), emptied of the
// schemas business and checkpoints, when no store is open on it (sibling
// subtests one after the other); else a new one (Database). The store
// must be closed by a Cleanup tb registers after this call. A failure to
// empty the database fails tb.
func SharedDatabase(tb testing.TB) string {
	tb.Helper()
	var sh *shared
	for name := tb.Name(); name != "" && sh == nil; {
		if v, ok := sharedByTest.Load(name); ok {
			sh = v.(*shared)
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			break
		}
		name = name[:i]
	}
	if sh == nil {
		return Database(tb)
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.open > 0 {
		return Database(tb)
	}
	if sh.used {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, sh.url)
		if err != nil {
			tb.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS business, checkpoints CASCADE`); err != nil {
			tb.Fatal(err)
		}
	}
	sh.used = true
	sh.open++
	// Registered before the store's Close, so it runs after it.
	tb.Cleanup(func() {
		sh.mu.Lock()
		sh.open--
		sh.mu.Unlock()
	})
	return sh.url
}
