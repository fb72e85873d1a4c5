package business

import (
	"fmt"
	"strings"
	"time"

	"assistant/internal/termtext"
)

// ExportMapping says how the orders file of a shop whose export has other
// column names, lacks a column or writes dates its own way is read
// (docs/orders.md "Shop exports"): the header that holds a field, a value
// for every row of a field the file lacks, and the format of delivery
// dates. The zero value (or nil) reads a file by the column names and
// aliases alone, dates in the formats of ParseDeliveryTime.
type ExportMapping struct {
	headers  [numFields]string // the header that holds each field, "" when found by name
	defaults [numFields]string
	given    [numFields]bool // defaults holds a value
	pattern  *datePattern
}

// numFields is the number of fields of an orders file (ordersSpec.Columns).
const numFields = colDeliveredDaysAgo + 1

// OrderFields are the names of the fields of an orders file, which a
// mapping names: order_id, user, item, delivered_at, final_sale,
// delivered_days_ago.
func OrderFields() []string {
	out := make([]string, len(ordersSpec.Columns))
	for i, c := range ordersSpec.Columns {
		out[i] = c.Name
	}
	return out
}

// MappingError is a mapping that cannot be used: a malformed FIELD=VALUE,
// an unknown field, one field given two values, a bad date format or a
// default that its field's rule refuses. Nothing was read.
type MappingError struct {
	// Option is what the value was given for: "column", "default" or
	// "date-format".
	Option string
	// Value is the value as given ("delivered_at=Fulfilled at").
	Value string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements the error interface for *MappingError.
func (e *MappingError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Option, termtext.Quote(e.Value), e.Reason)
}

// NewExportMapping checks a mapping and returns it. columns are
// "FIELD=HEADER" (the file's column HEADER holds FIELD, compared as
// header names are: NormalizeHeader), defaults "FIELD=VALUE" (every row's
// value of a FIELD the file has no column for), dateFormat a date format
// ("" for none; docs/orders.md "Date formats"); loc reads a default
// delivery time without a zone (nil: such a default is refused). A field
// given twice with the same value is given once. Errors: *MappingError.
func NewExportMapping(columns, defaults []string, dateFormat string, loc *time.Location) (*ExportMapping, error) {
	m := &ExportMapping{}
	if dateFormat != "" {
		p, err := compileDatePattern(dateFormat)
		if err != nil {
			return nil, &MappingError{Option: "date-format", Value: dateFormat, Reason: err.Error()}
		}
		m.pattern = p
	}
	taken := map[string]int{} // normalised header: the field it holds
	for _, v := range columns {
		field, header, err := assignment(v, "HEADER", `delivered_at="Fulfilled at"`)
		if err != nil {
			return nil, &MappingError{Option: "column", Value: v, Reason: err.Error()}
		}
		if prev := m.headers[field]; prev != "" && NormalizeHeader(prev) != NormalizeHeader(header) {
			return nil, &MappingError{Option: "column", Value: v, Reason: fmt.Sprintf("%s is mapped twice, to %s and %s; give it once", fieldName(field), termtext.Quote(prev), termtext.Quote(header))}
		}
		if other, ok := taken[NormalizeHeader(header)]; ok && other != field {
			return nil, &MappingError{Option: "column", Value: v, Reason: fmt.Sprintf("the header %s is mapped to %s too; a column holds one field", termtext.Quote(header), fieldName(other))}
		}
		m.headers[field], taken[NormalizeHeader(header)] = header, field
	}
	for _, v := range defaults {
		field, value, err := assignment(v, "VALUE", "final_sale=false")
		if err == nil {
			err = m.setDefault(field, value, loc)
		}
		if err != nil {
			return nil, &MappingError{Option: "default", Value: v, Reason: err.Error()}
		}
	}
	if m.given[colDeliveredAt] && m.given[colDeliveredDaysAgo] {
		return nil, &MappingError{Option: "default", Value: "delivered_days_ago=" + m.defaults[colDeliveredDaysAgo],
			Reason: "delivered_at has a default too, and both say when an order was delivered; keep one"}
	}
	return m, nil
}

// assignment splits v, "FIELD=WHAT", at its first '=' and finds FIELD
// (compared as header names are, so "Delivered At" is delivered_at).
// example shows the form in the error of a malformed v.
func assignment(v, what, example string) (int, string, error) {
	name, value, ok := strings.Cut(v, "=")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || name == "" || value == "" {
		return 0, "", fmt.Errorf("want FIELD=%s, such as %s", what, example)
	}
	for i, c := range ordersSpec.Columns {
		if NormalizeHeader(c.Name) == NormalizeHeader(name) {
			return i, value, nil
		}
	}
	return 0, "", fmt.Errorf("unknown field %s; the fields are %s", termtext.Quote(name), strings.Join(OrderFields(), ", "))
}

// fieldName is the name of field i.
func fieldName(i int) string { return ordersSpec.Columns[i].Name }

// setDefault makes value every row's value of field, once the field's
// rule (that of a row's value) takes it.
func (m *ExportMapping) setDefault(field int, value string, loc *time.Location) error {
	if m.given[field] && m.defaults[field] != value {
		return fmt.Errorf("%s has the default %s already; give it once", fieldName(field), termtext.Quote(m.defaults[field]))
	}
	if m.headers[field] != "" {
		return fmt.Errorf("%s is mapped to the column %s too; give one", fieldName(field), termtext.Quote(m.headers[field]))
	}
	var err error
	switch field {
	case colOrderID:
		err = fmt.Errorf("order_id has no default: every order has its own")
	case colUser:
		err = checkLabel("user", value, MaxUserBytes)
	case colItem:
		if len(value) > MaxItemBytes {
			err = fmt.Errorf("item is %d bytes; at most %d are allowed", len(value), MaxItemBytes)
		}
	case colDeliveredAt:
		if m.pattern != nil {
			_, err = m.pattern.read(value, loc)
		} else {
			_, err = ParseDeliveryTime(value, loc)
		}
	case colFinalSale:
		_, err = parseFlag("final_sale", value)
	case colDeliveredDaysAgo:
		_, err = daysAgo(value)
	}
	if err != nil {
		return err
	}
	m.defaults[field], m.given[field] = value, true
	return nil
}

// fieldDefault is a field's value for every row (ExportMapping).
type fieldDefault struct {
	col   int
	value string
}

// applyMapping sets up f to read files as m says: the table spec (a
// mapped field found by its header alone, a field with a default not
// required) and the defaults.
func (f *OrdersFile) applyMapping(m *ExportMapping) {
	f.spec = ordersSpec
	f.spec.CheckRows = true
	f.spec.Columns = append([]Column(nil), ordersSpec.Columns...)
	if m == nil {
		return
	}
	for i := range f.spec.Columns {
		f.spec.Columns[i].Header = m.headers[i]
		if m.given[i] {
			f.spec.Columns[i].Required = false
			f.defaults = append(f.defaults, fieldDefault{col: i, value: m.defaults[i]})
		}
	}
	f.pattern = m.pattern
}

// readHeader notes which fields the file's header t holds and records
// what is wrong with it in bad: missing columns (no column and no
// default), a field that has both a column and a default, both
// delivered_at and delivered_days_ago.
func (f *OrdersFile) readHeader(t *Table, bad *rowProblems) {
	for i := range f.has {
		f.inFile[i] = t.Has(i)
		f.has[i] = t.Has(i)
	}
	for _, d := range f.defaults {
		if t.Has(d.col) {
			bad.add(kindHeader, 1, fmt.Errorf("%s is both the column %s and the default %s; keep one", fieldName(d.col), termtext.Quote(t.ColumnName(d.col)), termtext.Quote(d.value)))
		}
		f.has[d.col] = true
	}
	var missing, wanted []string
	for i, c := range f.spec.Columns {
		need := c.Required && !f.has[i]
		if i == colDeliveredAt {
			// Either says when an order was delivered: the first is
			// asked for.
			need = !f.has[colDeliveredAt] && !f.has[colDeliveredDaysAgo]
		}
		if need {
			missing, wanted = append(missing, c.Name), append(wanted, c.Header)
		}
	}
	if len(missing) > 0 {
		bad.missing = &HeaderError{What: f.spec.What, Missing: missing, Wanted: wanted, Found: t.Header, Delim: t.Delimiter(),
			Needs: []Need{NeedMapping}}
	}
	if f.has[colDeliveredAt] && f.has[colDeliveredDaysAgo] {
		bad.add(kindHeader, 1, fmt.Errorf("both %s and %s say when an order was delivered; keep one", f.source(t, colDeliveredAt), f.source(t, colDeliveredDaysAgo)))
	}
	f.keyed = t.Has(colOrderID)
}

// source names where field i's values come from: its column, or its
// default.
func (f *OrdersFile) source(t *Table, i int) string {
	if t.Has(i) {
		return t.ColumnName(i)
	}
	return "the default " + fieldName(i)
}

// blankOrder reports whether a row leaves every value that is the whole
// order's (delivered_at, delivered_days_ago, final_sale) empty in the
// file's columns: a later line item of a Shopify export, which writes
// them on an order's first row only.
func (f *OrdersFile) blankOrder(rec []string) bool {
	for _, c := range [...]int{colDeliveredAt, colDeliveredDaysAgo, colFinalSale} {
		if f.inFile[c] && rec[c] != "" {
			return false
		}
	}
	return true
}

// parseFlag reads a yes-or-no value (docs/orders.md "Yes and no"): the
// words of yesNo in any case; empty is false.
func parseFlag(name, v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	if b, ok := yesNo[v]; ok {
		return b, nil // the common case: the word as the table has it
	}
	if b, ok := yesNo[strings.ToLower(v)]; ok {
		return b, nil
	}
	return false, fmt.Errorf("%s %s must be true or false (or yes/no, y/n, 1/0, ja/nein, oui/non, sí/no, 是/否)", name, termtext.Quote(v))
}

// yesNo are the words a yes-or-no column may hold, in lower case: those
// of the languages shop exports are written in, and of spreadsheet
// programs' TRUE and FALSE in German, French and Spanish. "sí" and "sì"
// are there composed and decomposed, as macOS may write them.
var yesNo = map[string]bool{
	"true": true, "yes": true, "y": true, "1": true,
	"false": false, "no": false, "n": false, "0": false,
	"ja": true, "nein": false, "wahr": true, "falsch": false, "nee": false,
	"oui": true, "non": false, "vrai": true, "faux": false,
	"sí": true, "si\u0301": true, "si": true, "sì": true, "si\u0300": true,
	"verdadero": true, "falso": false, "vero": true,
	"是": true, "否": false,
}
