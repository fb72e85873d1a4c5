package business

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"

	"assistant/internal/termtext"
)

// MaxLineBytes is the longest line (after decoding to UTF-8) a CSV table
// may hold. A longer one is refused with its line number before more of it
// is read, so a file without line breaks (/dev/zero, a binary file) ends
// the read at once instead of filling memory.
const MaxLineBytes = 1 << 20

// Column is one column a Table looks for in a file's header.
type Column struct {
	// Name is the column's canonical name ("order_id"), also its name in
	// messages.
	Name string
	// Aliases are other header names that mean the column, tried after
	// Name in this order; the first one the header holds is used.
	Aliases []string
	// Required refuses a header without the column.
	Required bool
	// Header, when set, is the one header name that means the column (a
	// mapping the caller was given): Name and Aliases are not tried, and
	// no other column takes that header by an alias.
	Header string
}

// TableSpec says what a Table reads: the file's name in messages ("orders
// file"), the columns it looks for, and what a refused file leaves
// ("nothing was imported").
type TableSpec struct {
	What    string
	Columns []Column
	Refused string
	// CheckRows opens a header that lacks a required column all the same
	// (Has says which it has), so that the caller can check the rows too
	// and report the header and the rows in one pass.
	CheckRows bool
}

// Table reads a CSV export whose columns are found by name: UTF-8 with or
// without a BOM, or UTF-16 (little or big endian, with or without a BOM);
// the delimiter sniffed from the header line among ',', ';' and tab; the
// header's names compared with case, spaces, '_' and '-' normalised
// (NormalizeHeader); columns not asked for ignored. It reads one record at
// a time: memory does not grow with the file.
type Table struct {
	spec  TableSpec
	recs  *records
	lines *lineCap
	idx   []int // file column of each spec column, -1: absent
	width int   // fields of the header
	delim rune
	utf16 bool
	rec   []string
	// Header is the file's header as read (trimmed, BOM removed).
	Header []string
}

// HeaderError reports a header a Table cannot use: a required column
// missing, or no header at all. It says what was found.
type HeaderError struct {
	What    string   // "orders file"
	Missing []string // canonical names of the missing columns
	Found   []string // the header's names, as they are in the file
	Delim   rune
	// Repeated, when set, holds the header's names, as in the file, of a
	// column named more than once (Missing[0] is the column): which copy
	// holds the value is unknown, so the file is refused.
	Repeated []string
	// Wanted holds, for each of Missing, the header name the caller asked
	// for it (Column.Header), or "" where its name and aliases were
	// looked for.
	Wanted []string
	// Needs are the import's options that would name the missing
	// columns (NeedMapping): what the refusal's hint offers; nil for a
	// file whose columns have one name only (a batch file).
	Needs []Need
}

// Error implements the error interface for *HeaderError.
func (e *HeaderError) Error() string {
	if len(e.Repeated) > 0 {
		return fmt.Sprintf("%s: line 1: column %s given %d times (%s); keep one", e.What, e.Missing[0], len(e.Repeated), strings.Join(e.Repeated, ", "))
	}
	if len(e.Found) == 0 {
		return fmt.Sprintf("%s: line 1: no header (want %s)", e.What, strings.Join(e.Missing, ","))
	}
	return fmt.Sprintf("%s: %s", e.What, e.detail())
}

// detail is the message of a header that lacks columns (not one with a
// column repeated, nor none at all) without the file's name in front:
// "line 1: missing column …; found …".
func (e *HeaderError) detail() string {
	found := e.Found
	more := ""
	if len(found) > 12 {
		more = fmt.Sprintf(", … (%d columns)", len(found))
		found = found[:12]
	}
	missing := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		missing[i] = m
		if i < len(e.Wanted) && e.Wanted[i] != "" {
			missing[i] = fmt.Sprintf("%s (the header %s)", m, termtext.Quote(e.Wanted[i]))
		}
	}
	return fmt.Sprintf("line 1: missing column %s; found %s%s; delimiter looks like %s",
		strings.Join(missing, ", "), strings.Join(found, ", "), more, delimName(e.Delim))
}

// delimName names a delimiter in a message.
func delimName(r rune) string {
	if r == '\t' {
		return "tab"
	}
	return fmt.Sprintf("'%c'", r)
}

// NormalizeHeader is how header names are compared: lower case, leading
// and trailing space and a BOM removed, and every run of spaces, '_' and
// '-' made one space ("Order ID", "order_id" and "ORDER-ID" are one name).
func NormalizeHeader(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "\ufeff")
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(s) {
		if r == ' ' || r == '_' || r == '-' || r == '\t' {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// OpenTable reads the header of the CSV in r (at most maxBytes bytes of
// it are ever read; past that a read fails with ErrTooLarge) and returns
// the Table that reads its records. Errors: *HeaderError, an
// *ImportError for a header line that is not CSV or not UTF-8, ErrTooLarge,
// or the read's error.
func OpenTable(r io.Reader, spec TableSpec, maxBytes int64) (*Table, error) {
	br := bufio.NewReaderSize(CapReader(r, maxBytes), 64<<10)
	var (
		src   io.Reader = br
		utf16 bool
	)
	head, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, readFailure(spec, err)
	}
	// UTF-8 (the common case) is read as it is: no transform, so a large
	// file costs no copy through a decoder.
	switch {
	case bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}):
		br.Discard(3)
	case bytes.HasPrefix(head, []byte{0xFF, 0xFE}), bytes.HasPrefix(head, []byte{0xFE, 0xFF}):
		src, utf16 = transform.NewReader(&evenBytes{r: br}, unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder()), true
	case len(head) >= 4 && head[0] != 0 && head[1] == 0 && head[2] != 0 && head[3] == 0:
		// UTF-16 without a BOM, as some spreadsheet programs save it:
		// ASCII letters with a zero byte after each.
		src, utf16 = transform.NewReader(&evenBytes{r: br}, unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM).NewDecoder()), true
	case len(head) >= 4 && head[0] == 0 && head[1] != 0 && head[2] == 0 && head[3] != 0:
		src, utf16 = transform.NewReader(&evenBytes{r: br}, unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM).NewDecoder()), true
	}
	lc := &lineCap{r: src, line: 1}
	dec := bufio.NewReaderSize(lc, 64<<10)
	delim, err := sniffDelimiter(dec)
	if err != nil {
		return nil, readFailure(spec, err)
	}
	recs := newRecords(dec, delim)
	recs.cap = lc
	t := &Table{spec: spec, recs: recs, lines: lc, delim: delim, utf16: utf16}
	_, header, err := t.recs.read()
	if errors.Is(err, io.EOF) {
		return nil, &HeaderError{What: spec.What, Missing: t.required(), Delim: delim}
	}
	if err != nil {
		return nil, readFailure(spec, err)
	}
	if err := t.checkText(1, header); err != nil {
		return nil, &ImportError{What: spec.What, Lines: []string{err.Error()}, Refused: spec.Refused}
	}
	t.Header = make([]string, len(header))
	for i, h := range header {
		t.Header[i] = strings.TrimPrefix(strings.TrimSpace(h), "\ufeff")
	}
	t.width = len(header)
	if err := t.matchHeader(); err != nil {
		var he *HeaderError
		if !spec.CheckRows || !errors.As(err, &he) || len(he.Repeated) > 0 {
			return nil, err
		}
	}
	t.rec = make([]string, len(spec.Columns))
	return t, nil
}

// required lists the canonical names of the spec's required columns.
func (t *Table) required() []string {
	var out []string
	for _, c := range t.spec.Columns {
		if c.Required {
			out = append(out, c.Name)
		}
	}
	return out
}

// matchHeader finds each spec column in the header: a column with a
// Header by that name alone, taken first; every other one by its name,
// else by its first alias found, among the names no Header took. One
// name of a column given twice (order_id and "Order ID" are one name) is
// a *HeaderError naming it: which copy holds the value is unknown.
func (t *Table) matchHeader() error {
	pos := map[string][]int{}
	for i, h := range t.Header {
		pos[NormalizeHeader(h)] = append(pos[NormalizeHeader(h)], i)
	}
	t.idx = make([]int, len(t.spec.Columns))
	taken := map[int]bool{}
	for i, c := range t.spec.Columns {
		t.idx[i] = -1
		if c.Header == "" {
			continue
		}
		ps := pos[NormalizeHeader(c.Header)]
		if len(ps) > 1 {
			return &HeaderError{What: t.spec.What, Missing: []string{c.Name}, Found: t.Header, Delim: t.delim, Repeated: pick(t.Header, ps)}
		}
		if len(ps) == 1 {
			t.idx[i] = ps[0]
			taken[ps[0]] = true
		}
	}
	var missing, wanted []string
	for i, c := range t.spec.Columns {
		if c.Header == "" {
			for _, name := range append([]string{c.Name}, c.Aliases...) {
				ps := pos[NormalizeHeader(name)]
				if len(ps) > 1 {
					return &HeaderError{What: t.spec.What, Missing: []string{c.Name}, Found: t.Header, Delim: t.delim, Repeated: pick(t.Header, ps)}
				}
				if len(ps) == 1 && t.idx[i] < 0 && !taken[ps[0]] {
					t.idx[i] = ps[0] // the first name of the spec's order wins
				}
			}
		}
		if t.idx[i] < 0 && c.Required {
			missing, wanted = append(missing, c.Name), append(wanted, c.Header)
		}
	}
	if len(missing) > 0 {
		return &HeaderError{What: t.spec.What, Missing: missing, Wanted: wanted, Found: t.Header, Delim: t.delim}
	}
	return nil
}

// pick returns header's names at positions ps.
func pick(header []string, ps []int) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = header[p]
	}
	return out
}

// Has reports whether the header holds spec column i.
func (t *Table) Has(i int) bool { return t.idx[i] >= 0 }

// ColumnName is the header's name of spec column i ("" when absent).
func (t *Table) ColumnName(i int) string {
	if t.idx[i] < 0 {
		return ""
	}
	return t.Header[t.idx[i]]
}

// Delimiter is the delimiter the header was read with.
func (t *Table) Delimiter() rune { return t.delim }

// TrimBlank removes the ASCII spaces and tabs around a field, and nothing
// else: a no-break space or another Unicode space is part of the text (and
// the order id and user rules refuse it there), never dropped without a
// word (docs/orders.md "Formats").
func TrimBlank(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// Next reads the next record: its first line number and its fields in the
// order of the spec's columns, with ASCII spaces and tabs around them
// removed (TrimBlank; "" for an absent column). The slice
// is reused by the next call. It returns io.EOF after the last record. A
// record that is not well formed (a CSV syntax error, another number of
// fields than the header, text that is not valid UTF-8) is a *RowError:
// the caller may go on reading the next one. Other errors (over the size
// limit, a line over MaxLineBytes, a read failure) end the table.
func (t *Table) Next() (int, []string, error) {
	line, rec, err := t.recs.read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) && isSyntaxErr(pe.Err) {
			return pe.StartLine, nil, &RowError{Line: pe.StartLine, Err: pe.Err}
		}
		if errors.Is(err, io.EOF) {
			return 0, nil, io.EOF
		}
		return 0, nil, readFailure(t.spec, err)
	}
	if len(rec) != t.width {
		return line, nil, &RowError{Line: line, Err: &fieldCountError{got: len(rec), want: t.width}}
	}
	for i, p := range t.idx {
		t.rec[i] = ""
		if p >= 0 {
			t.rec[i] = TrimBlank(rec[p])
		}
	}
	// A line found valid UTF-8 whole has valid fields; UTF-16 text is
	// checked field by field for the decoder's U+FFFD.
	if !t.recs.valid || t.utf16 {
		if err := t.checkText(line, t.rec); err != nil {
			return line, nil, err
		}
	}
	return line, t.rec, nil
}

// checkText refuses fields that are not valid UTF-8, and, in a UTF-16
// file, the replacement character its decoder puts for an unpaired
// surrogate: text is never changed without a word.
func (t *Table) checkText(line int, fields []string) error {
	for _, f := range fields {
		if !utf8.ValidString(f) {
			return &RowError{Line: line, Err: fmt.Errorf("%s is not valid UTF-8; save the file as UTF-8 or UTF-16", termtext.Quote(f))}
		}
		if t.utf16 && strings.ContainsRune(f, utf8.RuneError) {
			return &RowError{Line: line, Err: fmt.Errorf("%s is not valid UTF-16 (an unpaired surrogate, shown as \\ufffd)", termtext.Quote(f))}
		}
	}
	return nil
}

// fieldCountError is the cause of a record with another number of fields
// than the header.
type fieldCountError struct{ got, want int }

func (e *fieldCountError) Error() string {
	return fmt.Sprintf("%d fields, the header has %d", e.got, e.want)
}

// RowError is one bad record of a Table.
type RowError struct {
	Line int
	Err  error
}

// Error implements the error interface for *RowError.
func (e *RowError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *RowError) Unwrap() error { return e.Err }

// isSyntaxErr reports whether a csv.ParseError's cause is the CSV text of
// one record (the reader can go on with the next), not a failure of the
// reader below.
func isSyntaxErr(err error) bool {
	return errors.Is(err, csv.ErrQuote) || errors.Is(err, csv.ErrBareQuote) || errors.Is(err, csv.ErrFieldCount)
}

// readFailure is the error of a table that cannot be read on: over its
// size limit, a line or record over MaxLineBytes or a header that is not
// CSV (an *ImportError naming the line), or a read failure.
func readFailure(spec TableSpec, err error) error {
	var pe *csv.ParseError
	switch {
	case errors.Is(err, ErrTooLarge):
		return fmt.Errorf("%s is %w; split it into several files (%s)", spec.What, err, spec.Refused)
	case errors.Is(err, errLineTooLong):
		return &ImportError{What: spec.What, Lines: []string{err.Error()}, Refused: spec.Refused}
	case errors.As(err, &pe) && isSyntaxErr(pe.Err):
		// The header line's CSV syntax (a bad quote): the usual shape,
		// "line N: …", not encoding/csv's "parse error on line …".
		return &ImportError{What: spec.What, Lines: []string{(&RowError{Line: pe.StartLine, Err: pe.Err}).Error()}, Refused: spec.Refused}
	case errors.Is(err, errOddUTF16):
		return &ImportError{What: spec.What, Lines: []string{err.Error()}, Refused: spec.Refused}
	}
	return fmt.Errorf("read %s: %w", spec.What, err)
}
