package business

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"assistant/internal/termtext"
)

// disagree says how order b (a later row of the same order) differs from a
// in what all rows of one order share, or "".
func disagree(a, b Order) string {
	switch {
	case a.User != b.User:
		return fmt.Sprintf("user %s here, %s", termtext.Quote(b.User), termtext.Quote(a.User))
	case !sameTime(a.DeliveredAt, b.DeliveredAt):
		return fmt.Sprintf("delivered_at %s here, %s", timeText(b.DeliveredAt), timeText(a.DeliveredAt))
	case a.FinalSale != b.FinalSale:
		return fmt.Sprintf("final_sale %v here, %v", b.FinalSale, a.FinalSale)
	}
	return ""
}

// timeText shows a delivery time in a message.
func timeText(t *time.Time) string {
	if t == nil {
		return "empty (not delivered)"
	}
	return t.UTC().Format(time.RFC3339)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// row checks one record of the file whole and returns its order
// (without the item) and its item; false when a value is bad, each
// problem in f.probs. A field the file has no column for is not checked
// (the header's missing columns are reported for it); a field with a
// default takes it first (rec is changed).
func (f *OrdersFile) row(rec []string) (Order, string, bool) {
	f.probs = f.probs[:0]
	for _, d := range f.defaults {
		rec[d.col] = d.value
	}
	o := Order{ID: rec[colOrderID], User: rec[colUser]}
	item := rec[colItem]
	if f.has[colOrderID] {
		if err := f.checkID(o.ID); err != nil {
			f.fail(kindOrderID, err)
		}
	}
	if f.has[colUser] {
		f.checkUser(o)
	}
	if f.has[colItem] {
		switch {
		case item == "":
			f.fail(kindItem, errors.New("item must not be empty"))
		case len(item) > MaxItemBytes:
			f.fail(kindItem, fmt.Errorf("item is %d bytes; at most %d are allowed", len(item), MaxItemBytes))
		}
	}
	if f.has[colDeliveredAt] || f.has[colDeliveredDaysAgo] {
		t, kind, err := f.delivered(rec[colDeliveredAt], rec[colDeliveredDaysAgo])
		if err != nil {
			f.fail(kind, err)
		}
		o.DeliveredAt = t
	}
	if f.has[colFinalSale] {
		b, err := parseFlag("final_sale", rec[colFinalSale])
		if err != nil {
			f.fail(kindFinalSale, err)
		}
		o.FinalSale = b
	}
	return o, item, len(f.probs) == 0
}

// fail records a problem of the row being checked.
func (f *OrdersFile) fail(k problemKind, err error) {
	f.probs = append(f.probs, problem{kind: k, err: err})
}

// checkID checks an order id (ParseOptions.CheckID).
func (f *OrdersFile) checkID(id string) error {
	if f.opts.CheckID != nil {
		return f.opts.CheckID(id)
	}
	if id == "" {
		return errors.New("order id must not be empty")
	}
	return nil
}

// checkUser checks the user of a row (ParseOptions.CheckUser), and that
// it is --user's unless the import is the operator's.
func (f *OrdersFile) checkUser(o Order) {
	if o.User != f.lastUser || !f.userChecked {
		checkUser := f.opts.CheckUser
		if checkUser == nil {
			checkUser = func(u string) error { return checkLabel("user", u, MaxUserBytes) }
		}
		if err := checkUser(o.User); err != nil {
			f.fail(kindUser, err)
			return
		}
		f.lastUser, f.userChecked = o.User, true
	}
	if !f.opts.Operator && o.User != f.opts.User {
		f.fail(kindOtherUser, fmt.Errorf("order %s is of user %s, not of the importing user %s", o.ID, termtext.Quote(o.User), termtext.Quote(f.opts.User)))
	}
}

// checkLabel refuses an empty name, one over max bytes, one with control
// or invisible format characters, or one that starts or ends with a space
// character that trimming kept (a no-break space): a user is printed and
// compared, and such a name would look like another.
func checkLabel(what, s string, max int) error {
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	switch {
	case s == "":
		return fmt.Errorf("%s must not be empty", what)
	case len(s) > max:
		return fmt.Errorf("%s is %d bytes; at most %d are allowed", what, len(s), max)
	case strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || termtext.Invisible(r) }):
		// The rule of a user name everywhere else (returns.ValidUser).
		return fmt.Errorf("%s %s holds control or invisible characters (or a blank that is not a space)", what, termtext.Quote(s))
	case unicode.IsSpace(first) || unicode.IsSpace(last):
		return fmt.Errorf("%s %s starts or ends with a space character", what, termtext.Quote(s))
	}
	return nil
}
