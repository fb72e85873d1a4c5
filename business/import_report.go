package business

import (
	"encoding/csv"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"assistant/internal/termtext"
)

// problemKind is a kind of problem a row of an orders file can have. An
// orders file is read once and every row checked whole, so one refusal
// names every problem of the file: the rows of one kind together
// (ImportError.Groups).
type problemKind uint8

// The kinds of problem of an orders file, in the order of kindInfos.
const (
	kindHeader         problemKind = iota // the header line, beside missing columns
	kindQuote                             // CSV syntax: a stray or unbalanced quote
	kindFieldCount                        // another number of fields than the header
	kindText                              // not valid UTF-8 or UTF-16
	kindOrderID                           // the order id rule
	kindUser                              // the user name rule
	kindOtherUser                         // another user's row without the operator role
	kindItem                              // an empty item, or one too long
	kindDelivered                         // a delivery time in no format read
	kindNoZone                            // a delivery time without a zone, and no location
	kindDeliveredRange                    // before MinDeliveredAt or too far ahead
	kindClock                             // a wall time the zone's clocks skip or show twice
	kindOffset                            // an offset beyond ±14:00
	kindDaysAgo                           // a bad delivered_days_ago
	kindFinalSale                         // a final_sale that is not a yes or no word
	kindDisagree                          // a row that disagrees with its order's first row
	kindTooManyItems                      // an order past maxLineItems distinct items
	kindScattered                         // an order whose rows do not follow each other
	numKinds
)

// kindInfo says how rows of a kind are named and reported.
type kindInfo struct {
	// name is BadRows.Kind (docs/orders.md "Problems").
	name string
	// each lists every row's own message, which says more than its
	// value does (which rule an id breaks, the line it disagrees with);
	// other kinds list line numbers and the first row's message.
	each bool
	// summary follows "N rows " (the orders file's summary adds what
	// depends on the import: the user, the date format).
	summary string
}

var kindInfos = [numKinds]kindInfo{
	kindHeader:         {name: "header", each: true},
	kindQuote:          {name: "csv_quote", summary: `with a stray or unbalanced " (a field that holds " must be quoted, each " in it doubled)`},
	kindFieldCount:     {name: "field_count", summary: "with another number of fields than the header"},
	kindText:           {name: "encoding", summary: "with text that is not valid UTF-8 or UTF-16"},
	kindOrderID:        {name: "order_id", each: true, summary: "with an order id that breaks the order id rule"},
	kindUser:           {name: "user", each: true, summary: "with a user that breaks the user name rule"},
	kindOtherUser:      {name: "other_user", each: true},
	kindItem:           {name: "item", each: true, summary: fmt.Sprintf("with an empty item or one over %d bytes", MaxItemBytes)},
	kindDelivered:      {name: "delivered_at"},
	kindNoZone:         {name: "time_zone", summary: "with a delivered_at without a time zone"},
	kindDeliveredRange: {name: "delivered_at_range", each: true, summary: fmt.Sprintf("with a delivered_at before %s or more than %s after now", MinDeliveredAt.Format("2006-01-02"), MaxDeliveredAhead)},
	kindClock:          {name: "delivered_at_clock", each: true, summary: "with a wall time that the time zone's clocks skip or show twice (write it with its offset)"},
	kindOffset:         {name: "delivered_at_offset", summary: "with an offset beyond ±14:00"},
	kindDaysAgo:        {name: "delivered_days_ago", each: true, summary: "with a delivered_days_ago that is not a whole number of days from 0"},
	kindFinalSale:      {name: "final_sale", summary: "with a final_sale that is not a yes or no word"},
	kindDisagree:       {name: "disagree", each: true, summary: "that disagree with their order's first row (the rows of one order must agree)"},
	kindTooManyItems:   {name: "too_many_items", summary: fmt.Sprintf("of orders past %d distinct items", maxLineItems)},
	kindScattered:      {name: "scattered", each: true, summary: "of orders that come back after other orders (sort the file by order id)"},
}

// BadRows is one kind of problem that rows of an orders file have, and
// the rows that have it.
type BadRows struct {
	// Kind names the kind for a program: "final_sale", "delivered_at",
	// "csv_quote", … (docs/orders.md "Problems"); "header" for the
	// header line's own problems.
	Kind string
	// Summary says what the rows have; it follows "N rows ": "with a
	// final_sale that is not a yes or no word".
	Summary string
	// Count is how many rows have it.
	Count int
	// Lines are the line numbers of the first rows (at most ten), in
	// file order, and Messages each one's message ("line 4: final_sale
	// \"vielleicht\" must be …").
	Lines    []int
	Messages []string
}

// text is the group as a refusal shows it: a row alone as its message;
// more rows as their count and summary, then either each one's message
// or their line numbers and the first one's message; past ten rows, how
// many more.
func (g BadRows) text() []string {
	if g.Kind == kindInfos[kindHeader].name {
		return g.Messages
	}
	if g.Count == 1 {
		return g.Messages
	}
	more := ""
	if n := g.Count - len(g.Lines); n > 0 {
		more = fmt.Sprintf(" (and %d more)", n)
	}
	if kindByName(g.Kind).each {
		return []string{fmt.Sprintf("%d rows %s: %s%s", g.Count, g.Summary, strings.Join(g.Messages, "; "), more)}
	}
	nums := make([]string, len(g.Lines))
	for i, n := range g.Lines {
		nums[i] = strconv.Itoa(n)
	}
	return []string{fmt.Sprintf("%d rows %s: lines %s%s (%s)", g.Count, g.Summary, strings.Join(nums, ", "), more, g.Messages[0])}
}

// kindByName is the kindInfo of a BadRows.Kind.
func kindByName(name string) kindInfo {
	for _, k := range kindInfos {
		if k.name == name {
			return k
		}
	}
	return kindInfo{name: name}
}

// rowProblems collects the problems of an orders file as it is read: the
// header's missing columns, and the rows of each kind (the first ten of
// each with their message, and how many).
type rowProblems struct {
	missing *HeaderError
	kinds   [numKinds]badLines
}

// add records that the row at line has a problem of kind k.
func (p *rowProblems) add(k problemKind, line int, err error) {
	p.kinds[k].add(line, err)
}

// empty reports whether nothing was found wrong.
func (p *rowProblems) empty() bool {
	if p.missing != nil {
		return false
	}
	for _, b := range p.kinds {
		if len(b.lines) > 0 {
			return false
		}
	}
	return true
}

// rowErrorKind is the kind of a record that the table could not read
// (RowError's cause).
func rowErrorKind(err error) problemKind {
	var fc *fieldCountError
	switch {
	case errors.Is(err, csv.ErrBareQuote), errors.Is(err, csv.ErrQuote):
		return kindQuote
	case errors.As(err, &fc):
		return kindFieldCount
	}
	return kindText
}

// summary is what rows of kind k have, as the refusal says it after
// "N rows ".
func (f *OrdersFile) summary(k problemKind) string {
	switch k {
	case kindOtherUser:
		return fmt.Sprintf("of users other than the importing user %s", termtext.Quote(f.opts.User))
	case kindDelivered:
		if f.pattern != nil {
			return "with a delivered_at that is not a date in the format " + f.pattern.text
		}
		return "with a delivered_at that is not a date YYYY-MM-DD, an RFC 3339 time or YYYY-MM-DD HH:MM:SS [±hhmm]"
	}
	return kindInfos[k].summary
}

// refusal is the error of a file with the problems p (nil when there are
// none): the header's missing columns alone as their *HeaderError; else
// an *ImportError with the missing columns first, then a group a kind,
// in the order of their first lines. note follows the groups.
func (f *OrdersFile) refusal(p *rowProblems, note string) error {
	if p.empty() {
		return nil
	}
	var groups []BadRows
	var needs []Need
	if p.missing != nil {
		needs = p.missing.Needs
	}
	for k, b := range p.kinds {
		if len(b.lines) == 0 {
			continue
		}
		needs = addNeed(needs, need(problemKind(k), f.pattern != nil))
		groups = append(groups, BadRows{Kind: kindInfos[k].name, Summary: f.summary(problemKind(k)),
			Count: len(b.lines) + b.more, Lines: b.nums, Messages: b.lines})
	}
	if len(groups) == 0 {
		return p.missing
	}
	slices.SortStableFunc(groups, func(a, b BadRows) int { return a.Lines[0] - b.Lines[0] })
	ie := &ImportError{What: f.spec.What, Refused: f.spec.Refused, Groups: groups, Header: p.missing, Note: note, Needs: needs}
	if p.missing != nil {
		ie.Lines = append(ie.Lines, p.missing.detail())
	}
	for _, g := range groups {
		ie.Lines = append(ie.Lines, g.text()...)
		ie.More += g.Count - len(g.Lines)
	}
	return ie
}
