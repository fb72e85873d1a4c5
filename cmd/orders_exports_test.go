package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// shopCommands are the commands of docs/orders.md "Shop exports" that
// import each shop's export, as a person pastes them at the repository's
// root.
var shopCommands = []struct {
	name    string
	command string
	// user and orders: what `orders list` shows one of the export's
	// customers afterwards (id, item, delivered_at, final_sale).
	user   string
	orders [][4]string
}{
	{
		name:    "Shopify",
		command: `assistant orders import --operator --default final_sale=false testdata/exports/shopify_orders.csv`,
		user:    "anna.schmidt@example.com",
		orders: [][4]string{
			{"#1041", "Trail running shoes - 42; Running socks (3 pack)", "2026-11-24T15:20:05Z", "false"},
			{"#1044", "Rain jacket - S", "2026-11-02T09:30:00Z", "false"},
		},
	},
	{
		name:    "WooCommerce",
		command: `assistant orders import --operator --column user="Billing Email" --default final_sale=false --timezone America/New_York testdata/exports/woocommerce_orders.csv`,
		user:    "maria.lopez@example.com",
		orders:  [][4]string{{"4711", "Hoodie - Navy, M; Beanie", "2026-11-23T21:40:03Z", "false"}},
	},
	{
		name: "European",
		command: `assistant orders import --operator --column order_id=Bestellnummer --column user=E-Mail --column item=Artikel --column delivered_at=Lieferdatum ` +
			`--column final_sale="Vom Umtausch ausgeschlossen" --date-format DD.MM.YYYY --timezone Europe/Berlin testdata/exports/european_orders.csv`,
		user:   "f.wagner@example.de",
		orders: [][4]string{{"10232", "Wollschal anthrazit (Sale)", "2026-11-26T23:00:00Z", "true"}},
	},
}

// shellWords splits a command line as a shell does for these commands:
// at spaces, "…" one word without its quotes.
func shellWords(line string) []string {
	var words []string
	for _, m := range regexp.MustCompile(`(?:[^\s"]+|"[^"]*")+`).FindAllString(line, -1) {
		words = append(words, strings.ReplaceAll(m, `"`, ""))
	}
	return words
}

// docsOrders is docs/orders.md with its code blocks' continued lines
// (a '\' at the end) joined.
func docsOrders(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile("../docs/orders.md")
	if err != nil {
		tb.Fatal(err)
	}
	return regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(b), "")
}

// A Shopify, a WooCommerce and a European export each import with the
// one command docs/orders.md gives for it; what the customer's orders
// list shows afterwards is what the export says.
func TestOrdersImportShopExports(t *testing.T) {
	doc := docsOrders(t)
	for _, tc := range shopCommands {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(doc, "$ "+tc.command+"\n") {
				t.Errorf("docs/orders.md does not give the command\n%s", tc.command)
			}
			words := shellWords(tc.command)
			file := words[len(words)-1]
			path, err := filepath.Abs(filepath.Join("..", file))
			if err != nil {
				t.Fatal(err)
			}
			c := newCLI(t)
			r := c.mustRun(append(append([]string{"--teaching-orders=false"}, words[1:len(words)-1]...), path, "--output", "json")...)
			var rep struct{ Rows, Orders, Added int }
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Added == 0 || rep.Added != rep.Orders {
				t.Fatalf("report %s (%v): want every order added", r.stdout, err)
			}
			var list struct {
				Orders []struct {
					ID          string  `json:"order_id"`
					Item        string  `json:"item"`
					DeliveredAt *string `json:"delivered_at"`
					FinalSale   bool    `json:"final_sale"`
				} `json:"orders"`
			}
			out := c.mustRun("--user", tc.user, "orders", "list", "--output", "json")
			if err := json.Unmarshal([]byte(out.stdout), &list); err != nil {
				t.Fatal(err)
			}
			if len(list.Orders) != len(tc.orders) {
				t.Fatalf("%s's orders:\n%s\nwant %d", tc.user, out.stdout, len(tc.orders))
			}
			for i, w := range tc.orders {
				o := list.Orders[i]
				at := ""
				if o.DeliveredAt != nil {
					at = *o.DeliveredAt
				}
				if o.ID != w[0] || o.Item != w[1] || at != w[2] || (map[bool]string{true: "true", false: "false"})[o.FinalSale] != w[3] {
					t.Errorf("order %d = %+v (delivered %s), want %q", i, o, at, w)
				}
			}
		})
	}
}

// A bad export is refused with every problem it has in one line, grouped
// by kind with their lines, exit 2, no data dir made.
func TestOrdersImportNamesEveryProblem(t *testing.T) {
	words := shellWords(strings.Replace(shopCommands[2].command, "european_orders.csv", "european_orders_bad.csv", 1))
	path, err := filepath.Abs(filepath.Join("..", words[len(words)-1]))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		flags []string
	}{
		{"Mapped", words[3 : len(words)-1]},
		// Without the mapping, the missing columns beside the stray quote.
		{"Unmapped", []string{"--operator"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			args := append([]string{"orders", "import", path, "--output", "text"}, tc.flags...)
			r := c.run(context.Background(), args...)
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, ExitUsage, r.stderr)
			}
			checkFailure(t, args, r, "nothing was imported")
			if _, err := os.Stat(c.data); !os.IsNotExist(err) {
				t.Errorf("a refused import made the data dir (%v)", err)
			}
			checkGolden(t, "exports_european_orders_bad_"+strings.ToLower(tc.name)+"_err", strings.ReplaceAll(r.stderr, path, "$FILE"))
		})
	}
}

// Each bad value of --column, --default or --date-format is exit 2 with
// one line naming the flag, before the file is read: nothing is made.
func TestOrdersImportMappingFlags(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		want  string
	}{
		{"UnknownField", []string{"--column", "shipped=Fulfilled at"}, `--column "shipped=Fulfilled at": unknown field "shipped"; the fields are order_id, user, item, delivered_at, final_sale, delivered_days_ago`},
		{"Malformed", []string{"--column", "delivered_at"}, `--column "delivered_at": want FIELD=HEADER, such as delivered_at="Fulfilled at"`},
		{"MalformedDefault", []string{"--default", "final_sale"}, `--default "final_sale": want FIELD=VALUE, such as final_sale=false`},
		{"TwoHeaders", []string{"--column", "delivered_at=Fulfilled at", "--column", "delivered_at=Created at"}, `--column "delivered_at=Created at": delivered_at is mapped twice, to "Fulfilled at" and "Created at"; give it once`},
		{"TwoDefaults", []string{"--default", "final_sale=no", "--default", "final_sale=ja"}, `--default "final_sale=ja": final_sale has the default "no" already; give it once`},
		{"BadBoolean", []string{"--default", "final_sale=vielleicht"}, `--default "final_sale=vielleicht": final_sale "vielleicht" must be true or false`},
		{"BadPattern", []string{"--date-format", "DD.MM.YYY"}, `--date-format "DD.MM.YYY": YYY: write YYYY (or YY for 20YY)`},
		{"MinutesForMonth", []string{"--date-format", "dd.mm.yyyy"}, `--date-format "dd.mm.yyyy": mm is the minutes; the month is MM`},
		{"EmptyColumn", []string{"--column", ""}, "--column must not be empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			args := append([]string{"orders", "import", filepath.Join(c.root, "no-such-file.csv"), "--output", "text"}, tc.flags...)
			r := c.run(context.Background(), args...)
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, ExitUsage, r.stderr)
			}
			checkFailure(t, args, r, tc.want)
			if _, err := os.Stat(c.data); !os.IsNotExist(err) {
				t.Errorf("a refused import made the data dir (%v)", err)
			}
		})
	}
}
