package pgdb_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"assistant/internal/pgdb"
)

// TestParseConfigLimits: every config ParseConfig gives has a connect
// timeout (the URL's when above 0, else pgdb.ConnectTimeout) and the
// sessions' lock_timeout LockTimeout, so that neither a silent server nor
// a locked table makes the caller wait for ever.
func TestParseConfigLimits(t *testing.T) {
	t.Setenv("PGCONNECT_TIMEOUT", "")
	for _, tc := range []struct {
		url     string
		connect time.Duration
	}{
		{"postgres://u:pw@db.example/app", pgdb.ConnectTimeout},
		{"postgres://u:pw@db.example/app?connect_timeout=2", 2 * time.Second},
		{"postgres://u:pw@db.example/app?connect_timeout=0", pgdb.ConnectTimeout},
		{"postgres:///app?host=/run/postgresql&user=u", pgdb.ConnectTimeout},
		{"postgres://u@db.example/app?lock_timeout=0", pgdb.ConnectTimeout},
		{"host=db.example user=u dbname=app connect_timeout=3", 3 * time.Second},
	} {
		t.Run(tc.url, func(t *testing.T) {
			cfg, err := pgdb.ParseConfig(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ConnectTimeout != tc.connect {
				t.Errorf("ConnectTimeout = %s, want %s", cfg.ConnectTimeout, tc.connect)
			}
			if got := cfg.RuntimeParams["lock_timeout"]; got != "5000" {
				t.Errorf("lock_timeout = %q, want 5000 (ms)", got)
			}
		})
	}
}

// TestParseConfigRefusals: a URL that does not parse, or names an
// sslmode the driver does not know (pgx lets one pass on a Unix socket),
// is pgdb.ErrURL with a reason that never repeats the URL.
func TestParseConfigRefusals(t *testing.T) {
	const secret = "s3cret-Pa55"
	for _, tc := range []struct {
		name, url, env, want string
	}{
		{"BadPort", "postgres://someone:" + secret + "@dbhost:99999/db", "", "invalid port"},
		{"BadURL", "postgres://someone:" + secret + "@[::1/db", "", "failed to parse as URL"},
		{"BadConnectTimeout", "postgres://someone:" + secret + "@dbhost/db?connect_timeout=soon", "", "invalid connect_timeout"},
		{"SSLModeUnixSocket", "postgres:///db?host=/run/somewhere&user=someone&password=" + secret + "&sslmode=bogus", "", `sslmode "bogus"`},
		{"SSLModeTCP", "postgres://someone:" + secret + "@dbhost/db?sslmode=Require", "", `sslmode "Require"`},
		{"SSLModeKeywords", "host=/run/somewhere user=someone password=" + secret + " sslmode=bogus", "", `sslmode "bogus"`},
		{"PGSSLMODE", "postgres:///db?host=/run/somewhere&user=someone&password=" + secret, "bogus", `sslmode "bogus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PGSSLMODE", tc.env)
			_, err := pgdb.ParseConfig(tc.url)
			if !errors.Is(err, pgdb.ErrURL) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want pgdb.ErrURL saying %q", err, tc.want)
			}
			for _, leak := range []string{secret, "xxxxx", "someone", "dbhost", "/run/somewhere"} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("the URL is repeated (%q): %v", leak, err)
				}
			}
		})
	}
}
