package sqlitedb_test

import (
	"testing"

	"assistant/internal/sqlitedb"
)

// TestRewrite checks how store SQL becomes PostgreSQL's: parameters
// numbered as SQLite numbers them, the column name user quoted, and
// literals, quoted identifiers and comments left alone.
func TestRewrite(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"NoParameters", `SELECT count(*) FROM tasks`, `SELECT count(*) FROM tasks`},
		{"Positional", `UPDATE t SET a = ?, b = ? WHERE c = ?`, `UPDATE t SET a = $1, b = $2 WHERE c = $3`},
		{"Numbered", `SELECT ?1, ?2 WHERE x = ?1`, `SELECT $1, $2 WHERE x = $1`},
		{"PositionalAfterNumbered", `SELECT ?2, ?, ?1`, `SELECT $2, $3, $1`},
		{"InString", `SELECT '?' || ?, 'it''s ?' FROM t WHERE a = ?`, `SELECT '?' || $1, 'it''s ?' FROM t WHERE a = $2`},
		{"InQuotedIdentifier", `SELECT "a?b", ? FROM t`, `SELECT "a?b", $1 FROM t`},
		{"InLineComment", "SELECT ? -- why ?\nFROM t WHERE a = ?", "SELECT $1 -- why ?\nFROM t WHERE a = $2"},
		{"InBlockComment", `SELECT /* ? user */ ? FROM t`, `SELECT /* ? user */ $1 FROM t`},
		{"UserQuoted", `SELECT user, o.user FROM orders o WHERE user = ?`, `SELECT "user", o."user" FROM orders o WHERE "user" = $1`},
		{"UserAnyCase", `SELECT USER FROM t`, `SELECT "user" FROM t`},
		{"UserInsideWordsKept", `SELECT by_user, users, user_id, "user" FROM t`, `SELECT by_user, users, user_id, "user" FROM t`},
		{"UserInStringKept", `SELECT 'demo-user', 'user' FROM t`, `SELECT 'demo-user', 'user' FROM t`},
		{"UnterminatedString", `SELECT 'abc ?`, `SELECT 'abc ?`},
		{"Idempotent", `SELECT "user" FROM t WHERE a = $1`, `SELECT "user" FROM t WHERE a = $1`},
		{"InsertOrFail", `INSERT OR FAIL INTO orders (user) VALUES (?)`, `INSERT INTO orders ("user") VALUES ($1)`},
		{"InsertOrFailAnyCaseAndBlanks", "WITH v AS (SELECT 1) insert  or\n\tfail into t SELECT * FROM v", "WITH v AS (SELECT 1) insert into t SELECT * FROM v"},
		{"InsertOrOtherKept", `INSERT OR REPLACE INTO t VALUES (1)`, `INSERT OR REPLACE INTO t VALUES (1)`},
		{"InsertOrFailureKept", `INSERT OR failure`, `INSERT OR failure`},
		{"OrFailAloneKept", `SELECT a OR fail FROM t`, `SELECT a OR fail FROM t`},
		{"PlainInsertKept", `INSERT INTO t VALUES (?)`, `INSERT INTO t VALUES ($1)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sqlitedb.Rewrite(tc.in); got != tc.want {
				t.Errorf("Rewrite(%q)\n got  %q\n want %q", tc.in, got, tc.want)
			}
		})
	}
}
