package e2e

// orders import of shop exports (docs/orders.md "Shop exports"): a
// Shopify, a WooCommerce and a European export each imported by the
// built binary with the one command the docs give, and a bad export
// refused with every problem it has in one line.
//
// The exports are the repository's testdata/exports.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shopExport is the path of an export of testdata/exports.
func shopExport(tb testing.TB, name string) string {
	tb.Helper()
	path, err := filepath.Abs(filepath.Join("..", "testdata", "exports", name))
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// europeanFlags read the German export (european_orders.csv).
var europeanFlags = []string{"--operator",
	"--column", "order_id=Bestellnummer", "--column", "user=E-Mail", "--column", "item=Artikel",
	"--column", "delivered_at=Lieferdatum", "--column", "final_sale=Vom Umtausch ausgeschlossen",
	"--date-format", "DD.MM.YYYY", "--timezone", "Europe/Berlin"}

// TestOrdersImportShopExports: each export imports with its documented
// flags into a new data dir, every order added; one customer's orders
// list shows what the export says; the same import again changes
// nothing; verify is clean.
func TestOrdersImportShopExports(t *testing.T) {
	tests := []struct {
		name, file string
		flags      []string
		rows       int
		orders     int
		// user, and the first of the user's orders: id, item,
		// delivered_at, final_sale.
		user                string
		id, item, delivered string
		finalSale           bool
	}{
		{"Shopify", "shopify_orders.csv", []string{"--operator", "--default", "final_sale=false"}, 7, 4,
			"anna.schmidt@example.com", "#1041", "Trail running shoes - 42; Running socks (3 pack)", "2026-11-24T15:20:05Z", false},
		{"WooCommerce", "woocommerce_orders.csv", []string{"--operator", "--column", "user=Billing Email", "--default", "final_sale=false", "--timezone", "America/New_York"}, 4, 3,
			"maria.lopez@example.com", "4711", "Hoodie - Navy, M; Beanie", "2026-11-23T21:40:03Z", false},
		{"European", "european_orders.csv", europeanFlags, 4, 3,
			"f.wagner@example.de", "10232", "Wollschal anthrazit (Sale)", "2026-11-26T23:00:00Z", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			args := append(append([]string{"--teaching-orders=false", "orders", "import"}, tc.flags...), shopExport(t, tc.file))
			rep := mustRun(t, dir, args...)
			if rep["rows"] != float64(tc.rows) || rep["orders"] != float64(tc.orders) || rep["added"] != float64(tc.orders) {
				t.Fatalf("report %v: want %d rows, %d orders, all added", rep, tc.rows, tc.orders)
			}
			list := mustRun(t, dir, "--user", tc.user, "orders", "list")
			orders, _ := list["orders"].([]any)
			if len(orders) == 0 {
				t.Fatalf("%s's orders list: %v, want %s", tc.user, list, tc.id)
			}
			first, _ := orders[0].(map[string]any)
			if first["order_id"] != tc.id || first["item"] != tc.item || first["delivered_at"] != tc.delivered || first["final_sale"] != tc.finalSale {
				t.Errorf("%s's first order %v, want %s %q delivered %s, final sale %v", tc.user, first, tc.id, tc.item, tc.delivered, tc.finalSale)
			}
			again := mustRun(t, dir, args[1:]...)
			if again["unchanged"] != float64(tc.orders) {
				t.Errorf("the same import again: %v, want every order unchanged", again)
			}
			mustRun(t, dir, "verify")
		})
	}
}

// TestOrdersImportNamesEveryProblemAtOnce: the European export with a
// stray '"', dates in other forms and words that are neither yes nor no
// is refused in one run, exit 2, one line naming every kind with its
// lines; no data dir is made.
func TestOrdersImportNamesEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	args := append(append([]string{"orders", "import"}, europeanFlags...), shopExport(t, "european_orders_bad.csv"))
	_, errOut, code := run(t, dir, args...)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr %q", code, errOut)
	}
	for _, want := range []string{
		`nothing was imported: line 2: bare " in non-quoted-field; `,
		`3 rows with a delivered_at that is not a date in the format DD.MM.YYYY: lines 3, 5, 6 (line 3: delivered_at "2026-11-30" does not match the date format DD.MM.YYYY)`,
		`2 rows with a final_sale that is not a yes or no word: lines 4, 6 (line 4: final_sale "vielleicht" must be true or false`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	if strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr is not one line: %q", errOut)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a refused import made the data dir (%v)", err)
	}
}

// TestOrdersImportMappingFlagsRefused: a bad --column, --default or
// --date-format is exit 2 with one line naming it, before the file is
// read; the Shopify export without a default for final_sale says what
// is missing and how to give it.
func TestOrdersImportMappingFlagsRefused(t *testing.T) {
	t.Parallel()
	shopify := shopExport(t, "shopify_orders.csv")
	tests := []struct {
		flags []string
		want  string
	}{
		{[]string{"--column", "shipped=Fulfilled at"}, `--column "shipped=Fulfilled at": unknown field "shipped"`},
		{[]string{"--default", "final_sale"}, `--default "final_sale": want FIELD=VALUE`},
		{[]string{"--default", "final_sale=no", "--default", "final_sale=yes"}, `final_sale has the default "no" already; give it once`},
		{[]string{"--date-format", "DD.MM.YYY"}, `--date-format "DD.MM.YYY": YYY: write YYYY`},
		{nil, `missing column final_sale; found Name, Email, `},
	}
	for _, tc := range tests {
		dir := filepath.Join(t.TempDir(), "data")
		args := append(append([]string{"orders", "import", "--operator"}, tc.flags...), shopify)
		_, errOut, code := run(t, dir, args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.flags, code, errOut, tc.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%v: a refused import made the data dir (%v)", tc.flags, err)
		}
	}
}
