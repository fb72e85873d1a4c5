package business

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// exportsDir holds the shop exports of docs/orders.md "Shop exports".
const exportsDir = "../testdata/exports"

// exportsNow is the time the exports' imports run at: after their last
// delivery, so that none is in the future.
var exportsNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// mustMapping is NewExportMapping that fails the test on an error.
func mustMapping(tb testing.TB, columns, defaults []string, dateFormat string, loc *time.Location) *ExportMapping {
	tb.Helper()
	m, err := NewExportMapping(columns, defaults, dateFormat, loc)
	if err != nil {
		tb.Fatalf("NewExportMapping: %v", err)
	}
	return m
}

// mustLocation loads an IANA zone or fails the test.
func mustLocation(tb testing.TB, name string) *time.Location {
	tb.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		tb.Fatal(err)
	}
	return loc
}

// at is the time s (RFC 3339), for an expected order.
func at(tb testing.TB, s string) *time.Time {
	tb.Helper()
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		tb.Fatal(err)
	}
	t = t.UTC()
	return &t
}

// parseFile parses the export name of exportsDir as the operator, as
// opts say, and returns its orders in file order (parsed).
func parseFile(tb testing.TB, name string, opts ParseOptions) ([]Order, error) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(exportsDir, name))
	if err != nil {
		tb.Fatal(err)
	}
	return parsed(tb, string(b), opts)
}

// The three shop exports of docs/orders.md "Shop exports" import with the
// options of their documented command: parsed as the orders listed, then
// imported into a new store, where each order reads back as parsed.
func TestShopExportsImport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		opts func(t *testing.T) ParseOptions
		want []Order
	}{
		{
			// Shopify writes the order's own columns (Fulfilled at) on
			// its first row only, and has no final-sale column.
			name: "Shopify",
			file: "shopify_orders.csv",
			opts: func(t *testing.T) ParseOptions {
				return ParseOptions{Operator: true, Mapping: mustMapping(t, nil, []string{"final_sale=false"}, "", nil)}
			},
			want: []Order{
				{ID: "#1041", User: "anna.schmidt@example.com", Item: "Trail running shoes - 42; Running socks (3 pack)", DeliveredAt: at(t, "2026-11-24T16:20:05+01:00")},
				{ID: "#1042", User: "t.nguyen@example.com", Item: "Espresso machine"},
				{ID: "#1043", User: "j.martin@example.fr", Item: "Linen shirt - M; Linen shirt - L; Canvas tote", DeliveredAt: at(t, "2026-11-27T14:03:11+01:00")},
				{ID: "#1044", User: "anna.schmidt@example.com", Item: "Rain jacket - S", DeliveredAt: at(t, "2026-11-02T10:30:00+01:00")},
			},
		},
		{
			// Every field quoted, times in the shop's zone, the
			// customer's e-mail in "Billing Email".
			name: "WooCommerce",
			file: "woocommerce_orders.csv",
			opts: func(t *testing.T) ParseOptions {
				loc := mustLocation(t, "America/New_York")
				return ParseOptions{Operator: true, Location: loc,
					Mapping: mustMapping(t, []string{"user=Billing Email"}, []string{"final_sale=false"}, "", loc)}
			},
			want: []Order{
				{ID: "4711", User: "maria.lopez@example.com", Item: "Hoodie - Navy, M; Beanie", DeliveredAt: at(t, "2026-11-23T16:40:03-05:00")},
				{ID: "4712", User: "sam.carter@example.net", Item: "Travel mug 12 oz"},
				{ID: "4713", User: "priya.raman@example.org", Item: "Desk lamp, walnut", DeliveredAt: at(t, "2026-11-28T10:05:00-05:00")},
			},
		},
		{
			// ';', a BOM, CRLF, German names, DD.MM.YYYY, ja/nein and
			// Nein, decimal commas, a quoted item holding '"' and ';'.
			name: "European",
			file: "european_orders.csv",
			opts: func(t *testing.T) ParseOptions {
				loc := mustLocation(t, "Europe/Berlin")
				return ParseOptions{Operator: true, Location: loc, Mapping: mustMapping(t, europeanColumns, nil, "DD.MM.YYYY", loc)}
			},
			want: []Order{
				{ID: "10231", User: "lena.mueller@example.de", Item: `Becher "Guten Morgen"; 0,3 l; Geschirrtuch Leinen`, DeliveredAt: at(t, "2026-11-26T00:00:00+01:00")},
				{ID: "10232", User: "f.wagner@example.de", Item: "Wollschal anthrazit (Sale)", DeliveredAt: at(t, "2026-11-27T00:00:00+01:00"), FinalSale: true},
				{ID: "10233", User: "m.keller@example.at", Item: "Kerze Bienenwachs"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts(t)
			opts.Now = exportsNow
			got, err := parseFile(t, tt.file, opts)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d orders %+v, want %d", len(got), got, len(tt.want))
			}
			for i, w := range tt.want {
				if g := got[i]; g.ID != w.ID || g.User != w.User || g.Item != w.Item || !sameTime(g.DeliveredAt, w.DeliveredAt) || g.FinalSale != w.FinalSale {
					t.Errorf("order %d = %+v (delivered %s), want %+v (delivered %s)", i, g, timeText(g.DeliveredAt), w, timeText(w.DeliveredAt))
				}
			}

			s, _ := openStore(t, sqliteStore, Options{Now: fixedClock(exportsNow)})
			in, err := os.Open(filepath.Join(exportsDir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			res, err := s.ImportOrders(context.Background(), in, opts)
			if err != nil || res.Added != len(tt.want) || res.Orders != len(tt.want) {
				t.Fatalf("import: %+v, %v; want %d orders added", res, err, len(tt.want))
			}
			for _, w := range tt.want {
				o, err := s.Order(context.Background(), w.ID, w.User)
				if err != nil || o.Item != w.Item || !sameTime(o.DeliveredAt, w.DeliveredAt) || o.FinalSale != w.FinalSale {
					t.Errorf("stored %s = %+v, %v; want %+v", w.ID, o, err, w)
				}
			}
		})
	}
}

// europeanColumns map the German export's names (european_orders.csv).
var europeanColumns = []string{"order_id=Bestellnummer", "user=E-Mail", "item=Artikel", "delivered_at=Lieferdatum", "final_sale=Vom Umtausch ausgeschlossen"}

// One read of a file names every problem it has, grouped by kind with
// their lines: the European export with a stray '"', dates in other
// formats and words that are neither yes nor no, all in one refusal.
func TestRefusalGroupsEveryProblem(t *testing.T) {
	t.Parallel()
	loc := mustLocation(t, "Europe/Berlin")
	opts := ParseOptions{Operator: true, Location: loc, Now: exportsNow, Mapping: mustMapping(t, europeanColumns, nil, "DD.MM.YYYY", loc)}
	_, err := parseFile(t, "european_orders_bad.csv", opts)
	var ie *ImportError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want an *ImportError", err)
	}
	want := []struct {
		kind  string
		lines []int
	}{{"csv_quote", []int{2}}, {"delivered_at", []int{3, 5, 6}}, {"final_sale", []int{4, 6}}}
	if len(ie.Groups) != len(want) {
		t.Fatalf("groups %+v, want %d", ie.Groups, len(want))
	}
	for i, w := range want {
		if g := ie.Groups[i]; g.Kind != w.kind || g.Count != len(w.lines) || !equalInts(g.Lines, w.lines) {
			t.Errorf("group %d = %s %d rows %v, want %s %v", i, g.Kind, g.Count, g.Lines, w.kind, w.lines)
		}
	}
	const msg = `orders file has bad rows, nothing was imported: line 2: bare " in non-quoted-field; ` +
		`3 rows with a delivered_at that is not a date in the format DD.MM.YYYY: lines 3, 5, 6 (line 3: delivered_at "2026-11-30" does not match the date format DD.MM.YYYY); ` +
		`2 rows with a final_sale that is not a yes or no word: lines 4, 6 (line 4: final_sale "vielleicht" must be true or false (or yes/no, y/n, 1/0, ja/nein, oui/non, sí/no, 是/否))`
	if err.Error() != msg {
		t.Errorf("message\n%s\nwant\n%s", err, msg)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Every field of a row is checked, and rows of one kind are reported
// together: a header without a column is named beside the rows' own
// problems; more than ten rows of a kind list ten and count the rest.
func TestRefusalKinds(t *testing.T) {
	t.Parallel()
	const h = "order_id,user,item,delivered_at,final_sale\n"
	tests := []struct {
		name string
		file string
		opts ParseOptions
		want string // the whole message after "nothing was imported: "
		// needs are the options the refusal names for its hint: what the
		// message leaves out.
		needs []Need
	}{
		{"OneRowTwoProblems", h + "C1,u,Pen,27.11.2026,nein\nC2,u,Cup,28.11.2026,vielleicht\n", ParseOptions{Location: time.UTC},
			`2 rows with a delivered_at that is not a date YYYY-MM-DD, an RFC 3339 time or YYYY-MM-DD HH:MM:SS [±hhmm]: lines 2, 3 (line 2: delivered_at "27.11.2026" is not a date YYYY-MM-DD, an RFC 3339 time or YYYY-MM-DD HH:MM:SS [±hhmm]); ` +
				`line 3: final_sale "vielleicht" must be true or false (or yes/no, y/n, 1/0, ja/nein, oui/non, sí/no, 是/否)`, []Need{NeedDateFormat}},
		{"NoZoneGrouped", h + "C1,u,Pen,2026-11-27,false\nC2,u,Cup,2026-11-28 10:00,false\n", ParseOptions{},
			`2 rows with a delivered_at without a time zone: lines 2, 3 (line 2: delivered_at "2026-11-27" has no time zone)`, []Need{NeedTimezone}},
		{"EachOwnMessage", h + ",u,Pen,,false\nC2,,Cup,,false\nC3,,Mug,,false\n", ParseOptions{},
			`line 2: order id must not be empty; 2 rows with a user that breaks the user name rule: line 3: user must not be empty; line 4: user must not be empty`, nil},
		{"MissingColumnAndBadRows", "order_id,user,item,delivered_at\nC1,u,Pen,soon\nC2,u,\"Cup\"x\"\n", ParseOptions{Location: time.UTC},
			`line 1: missing column final_sale; found order_id, user, item, delivered_at; delimiter looks like ','; ` +
				`line 2: delivered_at "soon" is not a date YYYY-MM-DD, an RFC 3339 time or YYYY-MM-DD HH:MM:SS [±hhmm]; line 3: extraneous or missing " in quoted-field`, []Need{NeedMapping, NeedDateFormat}},
		{"DefaultBesideColumn", h + "C1,u,Pen,,false\n", ParseOptions{Mapping: mustMapping(t, nil, []string{"final_sale=ja"}, "", nil)},
			`line 1: final_sale is both the column "final_sale" and the default "ja"; keep one`, nil},
		{"ManyOfAKind", h + strings.Repeat("C1,u,x,,perhaps\n", 12), ParseOptions{},
			`12 rows with a final_sale that is not a yes or no word: lines 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 (and 2 more) (line 2: final_sale "perhaps" must be true or false (or yes/no, y/n, 1/0, ja/nein, oui/non, sí/no, 是/否))`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Operator = true
			_, err := ParseOrders(context.Background(), strings.NewReader(tt.file), tt.opts)
			if err == nil {
				t.Fatal("no error")
			}
			if got := strings.TrimPrefix(err.Error(), "orders file has bad rows, nothing was imported: "); got != tt.want {
				t.Errorf("message\n%s\nwant\n%s", got, tt.want)
			}
			var ie *ImportError
			if errors.As(err, &ie) && !slices.Equal(ie.Needs, tt.needs) {
				t.Errorf("needs %v, want %v", ie.Needs, tt.needs)
			}
		})
	}
	t.Run("MissingColumnAloneIsAHeaderError", func(t *testing.T) {
		_, err := ParseOrders(context.Background(), strings.NewReader("order_id,user,item,delivered_at\nC1,u,Pen,\n"), ParseOptions{Operator: true})
		var he *HeaderError
		var ie *ImportError
		if !errors.As(err, &he) || errors.As(err, &ie) || he.Missing[0] != "final_sale" {
			t.Fatalf("err = %v, want a *HeaderError alone naming final_sale", err)
		}
		if !slices.Equal(he.Needs, []Need{NeedMapping}) || strings.Contains(err.Error(), "--") {
			t.Errorf("err = %v, needs %v: want NeedMapping, and no option in the message", err, he.Needs)
		}
	})
	t.Run("OtherUserNeedsOperator", func(t *testing.T) {
		_, err := ParseOrders(context.Background(), strings.NewReader(h+"C1,bob,Pen,2026-11-27T10:00:00Z,false\n"), ParseOptions{User: "ann"})
		var ie *ImportError
		if !errors.As(err, &ie) || !slices.Equal(ie.Needs, []Need{NeedOperator}) {
			t.Fatalf("err = %v, want an *ImportError that needs the operator option", err)
		}
		const want = `line 2: order C1 is of user "bob", not of the importing user "ann"`
		if got := strings.TrimPrefix(err.Error(), "orders file has bad rows, nothing was imported: "); got != want {
			t.Errorf("message\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("MissingColumnBesideRowsIsFound", func(t *testing.T) {
		_, err := ParseOrders(context.Background(), strings.NewReader("order_id,user,item,delivered_at\nC1,u,,\n"), ParseOptions{Operator: true})
		var he *HeaderError
		var ie *ImportError
		if !errors.As(err, &ie) || !errors.As(err, &he) || he.Missing[0] != "final_sale" {
			t.Fatalf("err = %v, want an *ImportError whose header error names final_sale", err)
		}
	})
}

// A later row of an order that leaves every value of the whole order
// empty is a line item of the order above (Shopify's export); one that
// gives another value, or gives one where the first row has none, still
// disagrees.
func TestLineItemRowsLeaveTheOrderToTheFirst(t *testing.T) {
	t.Parallel()
	const h = "Name,Email,Fulfilled at,Lineitem name\n"
	opts := ParseOptions{Operator: true, Now: exportsNow, Mapping: mustMapping(t, nil, []string{"final_sale=false"}, "", nil)}
	t.Run("BlankTakesTheFirst", func(t *testing.T) {
		got, err := parsed(t, h+"#1,a@x,2026-11-24 16:20:05 +0100,Shoes\n#1,a@x,,Socks\n", opts)
		if err != nil || len(got) != 1 || got[0].DeliveredAt == nil || got[0].Item != "Shoes; Socks" {
			t.Fatalf("orders %+v, %v; want #1 delivered, Shoes; Socks", got, err)
		}
	})
	for name, file := range map[string]string{
		"AnotherTime":      h + "#1,a@x,2026-11-24 16:20:05 +0100,Shoes\n#1,a@x,2026-11-25 16:20:05 +0100,Socks\n",
		"TimeAfterNone":    h + "#1,a@x,,Shoes\n#1,a@x,2026-11-24 16:20:05 +0100,Socks\n",
		"FinalSaleColumn":  "Name,Email,Fulfilled at,Lineitem name,Final sale\n#1,a@x,2026-11-24 16:20:05 +0100,Shoes,false\n#1,a@x,,Socks,false\n",
		"FinalSaleDiffers": "Name,Email,Fulfilled at,Lineitem name,Final sale\n#1,a@x,2026-11-24 16:20:05 +0100,Shoes,true\n#1,a@x,2026-11-24 16:20:05 +0100,Socks,\n",
	} {
		t.Run(name, func(t *testing.T) {
			o := opts
			if strings.Contains(file, "Final sale") {
				o.Mapping = nil
			}
			_, err := parsed(t, file, o)
			if err == nil || !strings.Contains(err.Error(), "line 3: order #1: ") || !strings.Contains(err.Error(), "the rows of one order must agree") {
				t.Fatalf("err = %v, want line 3 to disagree with line 2", err)
			}
		})
	}
}

// The mapping's values are checked before anything is read: each bad
// one is a *MappingError naming what it was given for.
func TestNewExportMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		columns, defaults  []string
		dateFormat, option string
		reason             string // "" : no error
	}{
		{name: "Shopify", defaults: []string{"final_sale=false"}},
		{name: "SameTwice", columns: []string{"delivered_at=Fulfilled at", "Delivered At=fulfilled_at"}},
		{name: "SameDefaultTwice", defaults: []string{"final_sale=no", "final_sale=no"}},
		{name: "UnknownField", columns: []string{"shipped=Fulfilled at"}, option: "column", reason: `unknown field "shipped"; the fields are order_id, user, item, delivered_at, final_sale, delivered_days_ago`},
		{name: "NoEquals", columns: []string{"delivered_at"}, option: "column", reason: `want FIELD=HEADER, such as delivered_at="Fulfilled at"`},
		{name: "NoHeader", columns: []string{"delivered_at= "}, option: "column", reason: "want FIELD=HEADER"},
		{name: "NoField", defaults: []string{"=false"}, option: "default", reason: "want FIELD=VALUE, such as final_sale=false"},
		{name: "TwoHeaders", columns: []string{"delivered_at=Fulfilled at", "delivered_at=Created at"}, option: "column", reason: `delivered_at is mapped twice, to "Fulfilled at" and "Created at"; give it once`},
		{name: "OneHeaderTwoFields", columns: []string{"order_id=Name", "item=name"}, option: "column", reason: `the header "name" is mapped to order_id too`},
		{name: "TwoDefaults", defaults: []string{"final_sale=false", "final_sale=true"}, option: "default", reason: `final_sale has the default "false" already; give it once`},
		{name: "ColumnAndDefault", columns: []string{"final_sale=Sale"}, defaults: []string{"final_sale=false"}, option: "default", reason: `final_sale is mapped to the column "Sale" too; give one`},
		{name: "OrderIDDefault", defaults: []string{"order_id=1"}, option: "default", reason: "order_id has no default"},
		{name: "BadBoolean", defaults: []string{"final_sale=maybe"}, option: "default", reason: `final_sale "maybe" must be true or false`},
		{name: "DefaultDateFormat", defaults: []string{"delivered_at=2026-11-27"}, dateFormat: "DD.MM.YYYY", option: "default", reason: `does not match the date format DD.MM.YYYY`},
		{name: "LongItem", defaults: []string{"item=" + strings.Repeat("x", MaxItemBytes+1)}, option: "default", reason: "item is 201 bytes"},
		{name: "BothDeliveries", defaults: []string{"delivered_at=2026-11-27T00:00:00Z", "delivered_days_ago=3"}, option: "default", reason: "keep one"},
		{name: "BadPattern", dateFormat: "DD.MM.YYY", option: "date-format", reason: "YYY: write YYYY (or YY for 20YY)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewExportMapping(tt.columns, tt.defaults, tt.dateFormat, nil)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			var me *MappingError
			if !errors.As(err, &me) || me.Option != tt.option || !strings.Contains(me.Reason, tt.reason) {
				t.Fatalf("err = %#v, want a *MappingError of %s saying %q", err, tt.option, tt.reason)
			}
		})
	}
}

// A date format reads what it says, and nothing else; a bad format is
// refused with what to write.
func TestDateFormats(t *testing.T) {
	t.Parallel()
	berlin := mustLocation(t, "Europe/Berlin")
	tests := []struct {
		pattern, value string
		loc            *time.Location
		want           string // RFC 3339, or the error's text
	}{
		{"DD.MM.YYYY", "27.11.2026", berlin, "2026-11-26T23:00:00Z"},
		{"D.M.YYYY", "7.1.2026", berlin, "2026-01-06T23:00:00Z"},
		{"D.M.YYYY", "07.01.2026", berlin, "2026-01-06T23:00:00Z"},
		{"DD.MM.YY", "27.11.26", berlin, "2026-11-26T23:00:00Z"},
		{"MM/DD/YYYY hh:mm A", "11/27/2026 02:03 PM", time.UTC, "2026-11-27T14:03:00Z"},
		{"MM/DD/YYYY hh:mm A", "11/27/2026 12:10 am", time.UTC, "2026-11-27T00:10:00Z"},
		{"MM/DD/YYYY hh:mm", "11/27/2026 14:03", time.UTC, "2026-11-27T14:03:00Z"},
		{"M/D/YYYY H:mm:ss", "9/6/2026  6:29:00", time.UTC, "2026-09-06T06:29:00Z"},
		{"YYYY-MM-DD HH:mm", "2026-11-27 14:03", berlin, "2026-11-27T13:03:00Z"},
		{"YYYY-MM-DD HH:mm:ss Z", "2026-11-27 14:03:11 +0100", nil, "2026-11-27T13:03:11Z"},
		{"YYYY-MM-DDTHH:mm:ss.SSSZ", "2026-11-27T14:03:11.250+01:00", nil, "2026-11-27T13:03:11.25Z"},
		{"YYYYMMDD", "20261127", time.UTC, "2026-11-27T00:00:00Z"},
		{"dd.MM.yyyy", "27.11.2026", time.UTC, "2026-11-27T00:00:00Z"},
		{"DD.MM.YYYY", "2026-11-27", berlin, `delivered_at "2026-11-27" does not match the date format DD.MM.YYYY`},
		{"DD.MM.YYYY", "27.11.2026 10:00", berlin, "does not match the date format"},
		{"DD.MM.YYYY", "31.11.2026", berlin, `delivered_at "31.11.2026" is not a date in the format DD.MM.YYYY (day 31 of month 11)`},
		{"DD.MM.YYYY", "27.13.2026", berlin, "(month 13)"},
		{"MM/DD/YYYY hh:mm A", "11/27/2026 13:03 PM", time.UTC, "(hour 13 on the 12-hour clock)"},
		{"DD.MM.YYYY", "27.11.2026", nil, "has no time zone"},
		{"DD.MM.YYYY HH:mm", "29.03.2026 02:30", berlin, "does not exist in Europe/Berlin"},
		{"YYYY-MM-DD HH:mm Z", "2026-11-27 14:03 +1500", nil, "has an offset beyond ±14:00"},
		// Formats refused as they are read.
		{"DD.MM.YYY", "", nil, "YYY: write YYYY"},
		{"DD.MMM.YYYY", "", nil, "month names are not read"},
		{"dd.mm.yyyy", "", nil, "mm is the minutes; the month is MM"},
		{"HH:mm", "", nil, "needs a year (YYYY), a month (MM) and a day (DD)"},
		{"DD.MM.YYYY DD", "", nil, "the day (DD) appears twice"},
		{"DMYYYY", "", nil, "needs a separator after it"},
		{"DD.MM.YYYY HH:mm A", "", nil, "the AM/PM letter A goes with the 12-hour clock's hh"},
		{"DD.MM.YYYY ss", "", nil, "seconds (ss) need minutes"},
		{"DD.MM.YYYY Q", "", nil, `"Q" is not a letter of a date format`},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.value, func(t *testing.T) {
			p, err := compileDatePattern(tt.pattern)
			if tt.value == "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("compile: %v, want an error with %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.read(tt.value, tt.loc)
			if strings.Contains(tt.want, " ") {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("read = %v, %v; want an error with %q", got, err, tt.want)
				}
				return
			}
			if err != nil || got.Format(time.RFC3339Nano) != tt.want {
				t.Fatalf("read = %s, %v; want %s", got.Format(time.RFC3339Nano), err, tt.want)
			}
		})
	}
}

// The yes-or-no words of shop exports' languages, in any case.
func TestYesNoWords(t *testing.T) {
	t.Parallel()
	for _, w := range []string{"true", "TRUE", "yes", "Yes", "y", "Y", "1", "ja", "JA", "oui", "Oui", "sí", "SÍ", "si", "si\u0301", "是", "wahr", "WAHR", "vrai", "verdadero"} {
		if b, err := parseFlag("final_sale", w); err != nil || !b {
			t.Errorf("%q = %v, %v; want true", w, b, err)
		}
	}
	for _, w := range []string{"", "false", "FALSE", "no", "No", "n", "N", "0", "nein", "Nein", "non", "NON", "否", "falsch", "FALSCH", "faux", "falso"} {
		if b, err := parseFlag("final_sale", w); err != nil || b {
			t.Errorf("%q = %v, %v; want false", w, b, err)
		}
	}
	for _, w := range []string{"perhaps", "vielleicht", "2", "-1", "t", "f", "yes!", "是的"} {
		if _, err := parseFlag("final_sale", w); err == nil {
			t.Errorf("%q read as a yes or no", w)
		}
	}
}
