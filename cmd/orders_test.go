package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exportsDir holds the anonymised shop exports of docs/orders.md.
const exportsDir = "../testdata/exports"

// TestOrdersExports imports each export of testdata/exports into a fresh
// data dir and compares the report (text and JSON), or the refusal's one
// line on stderr, with a golden file: each imports or is refused with the
// documented message.
func TestOrdersExports(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		flags []string
		code  int
	}{
		{name: "shopify_line_items", file: "shopify_line_items.csv", flags: []string{"--operator"}},
		{name: "shopify_line_items_without_operator", file: "shopify_line_items.csv", code: ExitUsage},
		{name: "reordered", file: "reordered.csv", flags: []string{"--timezone", "UTC"}},
		{name: "reordered_no_zone", file: "reordered.csv", code: ExitUsage},
		{name: "extra_columns", file: "extra_columns.csv"},
		{name: "semicolon", file: "semicolon.csv"},
		{name: "utf16_tabs", file: "utf16_tabs.csv", flags: []string{"--timezone", "UTC"}},
		{name: "woocommerce_no_zone", file: "woocommerce_no_zone.csv", code: ExitUsage},
		{name: "woocommerce_timezone", file: "woocommerce_no_zone.csv", flags: []string{"--timezone", "Europe/Berlin"}},
		{name: "conflicting_line_items", file: "conflicting_line_items.csv", code: ExitUsage},
		{name: "header_only", file: "header_only.csv", code: ExitUsage},
		{name: "other_user", file: "other_user.csv", code: ExitUsage},
		{name: "other_user_operator", file: "other_user.csv", flags: []string{"--operator"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, err := filepath.Abs(filepath.Join(exportsDir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, output := range []string{"text", "json"} {
				c := newCLI(t)
				args := append([]string{"--teaching-orders=false", "orders", "import", path, "--output", output}, tc.flags...)
				r := c.run(context.Background(), args...)
				if r.code != tc.code {
					t.Fatalf("%s: exit %d, want %d; stderr %q", output, r.code, tc.code, r.stderr)
				}
				if tc.code != ExitOK {
					checkFailure(t, args, r, "")
					if _, err := os.Stat(c.data); !os.IsNotExist(err) {
						t.Errorf("a refused import made the data dir (%v)", err)
					}
					if output == "text" {
						checkGolden(t, "exports_"+tc.name+"_err", strings.ReplaceAll(r.stderr, path, "$FILE"))
					}
					continue
				}
				checkGolden(t, "exports_"+tc.name+"_"+output, strings.ReplaceAll(r.stdout, path, "$FILE"))
				if output == "text" {
					// What was stored: demo-user's orders, read back.
					list := c.mustRun("orders", "list", "--output", "text")
					checkGolden(t, "exports_"+tc.name+"_orders", c.mask(list.stdout))
				}
			}
		})
	}
}

// TestOrdersDayTwo through the command line: day 2's
// export updates C50 and adds C51, and --dry-run says so first without
// writing.
func TestOrdersDayTwo(t *testing.T) {
	c := newCLI(t)
	day1, _ := filepath.Abs(filepath.Join(exportsDir, "day1.csv"))
	day2, _ := filepath.Abs(filepath.Join(exportsDir, "day2.csv"))
	c.mustRun("orders", "import", day1)
	before := c.hashes()
	dry := c.mustRun("orders", "import", day2, "--dry-run", "--output", "text")
	if after := c.hashes(); !equalHashes(before, after) {
		t.Errorf("--dry-run changed the store files")
	}
	checkGolden(t, "orders_import_day2_dry_run_text", strings.ReplaceAll(dry.stdout, day2, "$FILE"))
	r := c.mustRun("orders", "import", day2, "--output", "text")
	checkGolden(t, "orders_import_day2_text", strings.ReplaceAll(r.stdout, day2, "$FILE"))
	again := c.mustRun("orders", "import", day2, "--output", "text")
	if !strings.Contains(again.stdout, "0 added, 0 updated, 2 unchanged, 0 refused") {
		t.Errorf("day 2 again: %q, want 2 unchanged", again.stdout)
	}
}

// TestOrdersTeachingAndReadOnly through the command
// line: orders list never makes a data dir (exit 4), and
// --teaching-orders=false or ASSISTANT_TEACHING_ORDERS=false makes one
// without the teaching orders.
func TestOrdersTeachingAndReadOnly(t *testing.T) {
	c := newCLI(t)
	r := c.run(context.Background(), "orders", "list")
	if r.code != ExitNotFound {
		t.Fatalf("orders list on a missing data dir: exit %d, want %d (%q)", r.code, ExitNotFound, r.stderr)
	}
	if _, err := os.Stat(c.data); !os.IsNotExist(err) {
		t.Fatalf("orders list made the data dir (%v)", err)
	}
	shop := c.write("shop.csv", "order_id,user,item,delivered_at,final_sale\nC1,demo-user,Kettle,2024-01-20T00:00:00Z,false\n")
	c.mustRun("--teaching-orders=false", "orders", "import", shop)
	list := c.mustRun("orders", "list", "--output", "text")
	if strings.Contains(list.stdout, "A3001") || !strings.Contains(list.stdout, "C1") {
		t.Errorf("--teaching-orders=false: orders list\n%s\nwant C1 and no teaching order", list.stdout)
	}

	t.Run("Env", func(t *testing.T) {
		c := newCLI(t)
		t.Setenv(EnvTeachingOrders, "false")
		c.mustRun("orders", "import", shop)
		if list := c.mustRun("orders", "list", "--output", "text"); strings.Contains(list.stdout, "A3001") {
			t.Errorf("%s=false: orders list\n%s\nwant no teaching order", EnvTeachingOrders, list.stdout)
		}
		// The flag wins over the variable.
		c2 := newCLI(t)
		c2.mustRun("--teaching-orders=true", "orders", "import", shop)
		if list := c2.mustRun("orders", "list", "--output", "text"); !strings.Contains(list.stdout, "A3001") {
			t.Errorf("--teaching-orders=true under %s=false: no teaching orders", EnvTeachingOrders)
		}
		t.Setenv(EnvTeachingOrders, "maybe")
		if r := newCLI(t).run(context.Background(), "orders", "import", shop); r.code != ExitUsage || !strings.Contains(r.stderr, EnvTeachingOrders) {
			t.Errorf("%s=maybe: exit %d, %q; want exit 2 naming the variable", EnvTeachingOrders, r.code, r.stderr)
		}
	})
}

// TestOrdersListEscapes: text output writes control
// and bidi characters of items as escapes.
func TestOrdersListEscapes(t *testing.T) {
	c := newCLI(t)
	shop := c.write("shop.csv", "order_id,user,item,delivered_at,final_sale\n"+
		"E1,demo-user,\"Lamp\x1b[2J\u202eexe.txt\nnext\",2024-01-20T00:00:00Z,false\n")
	c.mustRun("--teaching-orders=false", "orders", "import", shop)
	r := c.mustRun("orders", "list", "--output", "text")
	if strings.ContainsAny(r.stdout, "\x1b\u202e") || !strings.Contains(r.stdout, `Lamp\e[2J\u202eexe.txt\nnext`) {
		t.Errorf("orders list printed the item raw:\n%q", r.stdout)
	}
}
