package returns_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"assistant/business"
	"assistant/checkpoints"
	"assistant/flow/returns"
	"assistant/runs"
)

func TestServerSchemasCheck(t *testing.T) {
	var (
		ours    = returns.SchemaFound{Exists: true, Version: 2, Known: 2}
		foreign = returns.SchemaFound{Exists: true, Known: 2}
		newer   = returns.SchemaFound{Exists: true, Version: 3, Known: 2}
	)
	for _, tc := range []struct {
		name  string
		found returns.ServerSchemas
		mode  returns.OpenMode
		want  error // nil: passes
	}{
		{"EmptyDatabaseReadIsNotFound", returns.ServerSchemas{}, returns.OpenExisting, returns.ErrNotFound},
		{"EmptyDatabaseWritePasses", returns.ServerSchemas{}, returns.CreateIfMissing, nil},
		{"BothSchemasPass", returns.ServerSchemas{Checkpoints: true, Business: true, Threads: 3, Tasks: 3}, returns.OpenExisting, nil},
		{"OnlyEmptyCheckpointsReadIsNotFound", returns.ServerSchemas{Checkpoints: true}, returns.OpenExisting, returns.ErrNotFound},
		{"OnlyEmptyCheckpointsWritePasses", returns.ServerSchemas{Checkpoints: true}, returns.CreateIfMissing, nil},
		{"CheckpointsLostRead", returns.ServerSchemas{Business: true, Tasks: 2}, returns.OpenExisting, runs.ErrLostCheckpoints},
		{"CheckpointsLostWrite", returns.ServerSchemas{Business: true, Tasks: 2}, returns.CreateIfMissing, runs.ErrLostCheckpoints},
		{"BusinessLostWrite", returns.ServerSchemas{Checkpoints: true, Threads: 1}, returns.CreateIfMissing, returns.ErrLostBusiness},
		{"ForeignBusinessRefusedFirst", returns.ServerSchemas{BusinessFound: foreign}, returns.CreateIfMissing, business.ErrForeignFile},
		{"ForeignBusinessBesideCheckpoints", returns.ServerSchemas{Checkpoints: true, CheckpointsFound: ours, BusinessFound: foreign}, returns.CreateIfMissing, returns.ErrForeignSchema},
		{"ForeignCheckpointsBesideNoBusiness", returns.ServerSchemas{CheckpointsFound: foreign}, returns.CreateIfMissing, returns.ErrForeignSchema},
		{"ForeignCheckpointsRead", returns.ServerSchemas{CheckpointsFound: foreign}, returns.OpenExisting, returns.ErrForeignSchema},
		{"NewerBusiness", returns.ServerSchemas{Checkpoints: true, CheckpointsFound: ours, Business: true, BusinessFound: newer}, returns.CreateIfMissing, business.ErrNewerSchema},
		{"NewerCheckpointsBesideNoBusiness", returns.ServerSchemas{Checkpoints: true, CheckpointsFound: newer}, returns.CreateIfMissing, returns.ErrNewerSchema},
		{"OursAtTheKnownVersionPasses", returns.ServerSchemas{Checkpoints: true, CheckpointsFound: ours, Business: true, BusinessFound: ours}, returns.CreateIfMissing, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.found.Where = "database db on host:5432"
			err := tc.found.Check(tc.mode)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("Check: %v, want nil", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("Check: %v, want %v", err, tc.want)
			case err != nil && !strings.Contains(err.Error(), tc.found.Where):
				t.Fatalf("Check: %q does not name the database", err)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("Check: %q is more than one line", err)
			case err != nil && (strings.Contains(err.Error(), "file") || strings.Contains(err.Error(), ".sqlite")):
				t.Fatalf("Check: %q speaks of files; a server has schemas", err)
			case errors.Is(err, runs.ErrLostCheckpoints) || errors.Is(err, returns.ErrLostBusiness):
				if said := returns.Say(err, returns.PlainWords); !strings.Contains(said, "pg_restore") || !strings.Contains(said, "drop both schemas") {
					t.Fatalf("Check: %q does not say what to do on the server", err)
				}
			}
		})
	}
}

func TestHostIdentity(t *testing.T) {
	for _, tc := range []struct {
		name, given string
		valid       bool
	}{
		{"Empty", "", true},
		{"Name", "runner-1", true},
		{"Dotted", "ci.runner-2.example.com", true},
		{"Space", "runner 1", false},
		{"Control", "runner\x1b[31m", false},
		{"NonASCII", "rünner", false},
		{"TooLong", strings.Repeat("x", returns.MaxHostLen+1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := returns.HostIdentity(tc.given)
			if !tc.valid {
				if !errors.Is(err, returns.ErrInvalid) {
					t.Fatalf("HostIdentity(%q) = %q, %v; want ErrInvalid", tc.given, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.given == "" && got != returns.ThisHost():
				t.Fatalf("HostIdentity(\"\") = %q, want ThisHost() %q", got, returns.ThisHost())
			case tc.given != "" && got != tc.given && !strings.HasPrefix(got, tc.given+"/boot-"):
				t.Fatalf("HostIdentity(%q) = %q", tc.given, got)
			}
		})
	}
}

// TestHostIdentityDecidesLiveness: a lease whose holder's pid is alive on
// this machine is held whatever its expiry when it names this process's
// host; named by another host identity (Config.Host, ASSISTANT_HOST), the
// pid tells nothing and the lease's expiry decides.
func TestHostIdentityDecidesLiveness(t *testing.T) {
	for _, tc := range []struct {
		name, holderHost string
		recovered        bool
	}{
		{"SameHostLivePIDKeepsLease", "machine-b", false},
		{"OtherHostLeaseLapses", "machine-a", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b := &bundle{ctx: context.Background(), dir: dir, cps: checkpoints.NewMemory(),
				clock: &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, host: "machine-b"}
			svc, err := returns.Open(b.ctx, returns.Config{Business: returns.DataDir{Dir: dir, Mode: returns.CreateIfMissing, Seed: mustReadSeed(t)}, Checkpoints: b.cps, Now: b.clock.Now, Host: "machine-b"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { svc.Close() })
			// The parent process (go test) is alive for the whole test.
			holder := runs.Lease{Owner: "holder", PID: os.Getppid(), Host: tc.holderHost, Until: b.clock.Now().Add(returns.DefaultLeaseTTL)}
			b.leftRunning(t, svc, holder, "r1", "A3003", "size", returns.NodePrepare)
			b.clock.Advance(returns.DefaultLeaseTTL + time.Second)
			got, err := svc.Recover(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := map[bool]int{true: 1, false: 0}[tc.recovered]; len(got) != n {
				t.Fatalf("recover %+v, want %d task(s) recovered", got, n)
			}
		})
	}
}
