package business

import (
	"fmt"
	"strings"
)

// ImportError lists the bad lines of an input file; nothing was imported.
type ImportError struct {
	What string // "orders file" ("" reads as that)
	// Lines are the message's parts: "line 3: …", in file order, at most
	// maxBadLines; for an orders file, one a group of Groups (and the
	// missing columns first).
	Lines []string
	More  int  // bad lines not listed
	Empty bool // the file has a header and no rows
	// Groups are the problems of an orders file by kind, in the order
	// of their first lines: every row was checked whole, so every
	// problem of the file is in them.
	Groups []BadRows
	// Header is the orders file's missing columns, when rows are bad too
	// (a header that lacks columns and nothing else is a *HeaderError
	// alone); errors.As finds it.
	Header *HeaderError
	// Note follows the count when it is not the whole story: more than
	// maxScattered orders come back after other orders, and only that
	// many were checked.
	Note string
	// Refused says what a refused file leaves ("nothing was created" for
	// a batch file; "" reads as "nothing was imported").
	Refused string
	// Needs are the import's options that would read the rows refused
	// for want of them, in the order first needed: what the refusal's
	// hint offers.
	Needs []Need
}

// Error implements the error interface for *ImportError.
func (e *ImportError) Error() string {
	what := e.What
	if what == "" {
		what = "orders file"
	}
	refused := e.Refused
	if refused == "" {
		refused = "nothing was imported"
	}
	if e.Empty {
		return fmt.Sprintf("no orders in the %s: it holds a header and no rows; %s", what, refused)
	}
	more := ""
	if e.More > 0 && len(e.Groups) == 0 {
		// A group says how many of its rows it does not list.
		more = fmt.Sprintf(" (and %d more)", e.More)
	}
	if e.Note != "" {
		more += "; " + e.Note
	}
	return fmt.Sprintf("%s has bad rows, %s: %s%s", what, refused, strings.Join(e.Lines, "; "), more)
}

// Unwrap returns the missing columns (Header), if any.
func (e *ImportError) Unwrap() error {
	if e.Header == nil {
		return nil
	}
	return e.Header
}

// badLines collects the bad lines of a file, keeping the first few.
type badLines struct {
	lines []string
	nums  []int // the line number of each of lines
	more  int
}

func (b *badLines) add(line int, err error) {
	if len(b.lines) < maxBadLines {
		b.lines = append(b.lines, fmt.Sprintf("line %d: %v", line, err))
		b.nums = append(b.nums, line)
		return
	}
	b.more++
}

// merge returns the bad lines of a and b together, the first maxBadLines
// by line number (each keeps its first ones in file order) and how many
// more there are.
func (b badLines) merge(o badLines) badLines {
	var m badLines
	i, j := 0, 0
	for i < len(b.lines) || j < len(o.lines) {
		if j >= len(o.lines) || (i < len(b.lines) && b.nums[i] <= o.nums[j]) {
			m.push(b.nums[i], b.lines[i])
			i++
		} else {
			m.push(o.nums[j], o.lines[j])
			j++
		}
	}
	m.more += b.more + o.more
	return m
}

// push adds a line already made, as add does.
func (b *badLines) push(num int, line string) {
	if len(b.lines) < maxBadLines {
		b.lines, b.nums = append(b.lines, line), append(b.nums, num)
		return
	}
	b.more++
}
