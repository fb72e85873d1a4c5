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
)

// errOddUTF16 ends a UTF-16 file whose last unit is one byte short.
var errOddUTF16 = errors.New("UTF-16 file with an odd number of bytes: its last character is cut; save it again")

// evenBytes passes a UTF-16 file's bytes through and fails at its end
// when their number is odd: the decoder would put U+FFFD for the lone
// byte, or drop it.
type evenBytes struct {
	r io.Reader
	n int64
}

// Read reads from the reader below; at its end, an odd count is errOddUTF16.
func (e *evenBytes) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.n += int64(n)
	if errors.Is(err, io.EOF) && e.n%2 != 0 {
		return n, errOddUTF16
	}
	return n, err
}

// sniffDelimiter peeks at the header line and returns the delimiter it
// holds most of outside quotes (',' when none or a tie).
func sniffDelimiter(r *bufio.Reader) (rune, error) {
	var head []byte
	for n := 4096; ; n *= 2 {
		b, err := r.Peek(n)
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			head = b[:i]
			break
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, bufio.ErrBufferFull) {
				head = b
				break
			}
			return 0, err
		}
	}
	counts := map[rune]int{}
	quoted := false
	for _, c := range string(head) {
		switch {
		case c == '"':
			quoted = !quoted
		case !quoted && (c == ',' || c == ';' || c == '\t'):
			counts[c]++
		}
	}
	best := ','
	for _, c := range []rune{';', '\t'} {
		if counts[c] > counts[best] {
			best = c
		}
	}
	return best, nil
}

// errLineTooLong is the cause of a line over MaxLineBytes.
var errLineTooLong = errors.New("line too long")

// lineTooLongError names the line over MaxLineBytes.
type lineTooLongError struct{ line int }

func (e *lineTooLongError) Error() string {
	return fmt.Sprintf("line %d is longer than %d bytes (%d MiB): not a CSV export", e.line, MaxLineBytes, MaxLineBytes>>20)
}

func (e *lineTooLongError) Unwrap() error { return errLineTooLong }

// recordTooLongError names the record (its first line) that runs past
// MaxLineBytes over several lines: a quoted field that holds line breaks.
type recordTooLongError struct{ line int }

func (e *recordTooLongError) Error() string {
	return fmt.Sprintf("the record from line %d on is longer than %d bytes (%d MiB) (a quoted field that runs on over many lines): not a CSV export", e.line, MaxLineBytes, MaxLineBytes>>20)
}

func (e *recordTooLongError) Unwrap() error { return errLineTooLong }

// lineCap passes text through and fails as soon as one line grows past
// MaxLineBytes, or the record being read (which may span lines: a quoted
// field with line breaks) past MaxLineBytes and the buffer above, so that
// no reader above it buffers more than that.
type lineCap struct {
	r    io.Reader
	line int // the line being read, from 1
	run  int // bytes of it so far
	// total counts the bytes passed up; recStart is total where the
	// record being read starts (records.read sets it, and recLine, its
	// first line), so total-recStart is at most the record's bytes so far
	// plus what the buffer above holds of the records after it.
	total, recStart int64
	recLine         int
	slack           int64 // the buffer above's size
}

// Read reads from the reader below, failing on a line over MaxLineBytes.
// A line that starts and ends inside one read is shorter than the read,
// far shorter than MaxLineBytes: only the line that runs on from the last
// read, and the one that runs on past this one, are counted.
func (l *lineCap) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.total += int64(n)
	if l.recLine > 0 && l.total-l.recStart > MaxLineBytes+l.slack {
		return 0, &recordTooLongError{line: l.recLine}
	}
	b := p[:n]
	first := bytes.IndexByte(b, '\n')
	if first < 0 {
		l.run += n
		if l.run > MaxLineBytes {
			return 0, &lineTooLongError{line: l.line}
		}
		return n, err
	}
	if l.run+first > MaxLineBytes {
		return 0, &lineTooLongError{line: l.line}
	}
	last := bytes.LastIndexByte(b, '\n')
	l.line += bytes.Count(b[first:last+1], []byte{'\n'})
	l.run = n - last - 1
	if l.run > MaxLineBytes {
		return 0, &lineTooLongError{line: l.line}
	}
	return n, err
}

// records reads the records of a CSV text as encoding/csv does (Comma
// the delimiter, any number of fields, no comments, strict quotes), and
// faster for the common line: one that the buffer holds whole and that
// has no quote is split at its delimiters here, in one string, and only
// the other lines (quoted fields, a line longer than the buffer, the
// last line without a line break) are read by encoding/csv, from the
// same buffer. FuzzRecords checks that both read every text alike.
type records struct {
	br    *bufio.Reader
	cr    *csv.Reader // reads from br itself (csv.NewReader keeps a *bufio.Reader)
	delim byte
	// Lines read by cr and by the fast path: cr numbers the lines it
	// reads only, so a line it reports is its own count plus fast.
	csv, fast int
	fields    []string // the fast path's record, reused
	err       error    // a failure of the reader below, returned again
	cap       *lineCap // the reader below br, told where each record starts; nil: none
	// valid says that the last record's line is valid UTF-8 (checked
	// whole by the fast path), so each of its fields is.
	valid bool
}

// newRecords reads the CSV text in br, whose buffer must be at least
// 4,096 bytes (csv.NewReader reads from a smaller one through a buffer of
// its own, which would read ahead of the fast path), with delimiter
// delim (',', ';' or tab).
func newRecords(br *bufio.Reader, delim rune) *records {
	cr := csv.NewReader(br)
	cr.Comma = delim
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	return &records{br: br, cr: cr, delim: byte(delim)}
}

// read returns the next record: its first line number and its fields
// (reused by the next call). Errors: io.EOF after the last record, a
// *csv.ParseError (its lines counted in the whole text) for a record that
// is not well formed (the next call reads on), or the failure of the
// reader below (returned again by every later call).
func (r *records) read() (int, []string, error) {
	r.valid = false
	if r.err != nil {
		return 0, nil, r.err
	}
	if r.cap != nil {
		// The record starts where br's reader has read to, less what br
		// holds unread.
		r.cap.recStart = r.cap.total - int64(r.br.Buffered())
		r.cap.recLine = r.csv + r.fast + 1
		r.cap.slack = int64(r.br.Size())
	}
	line, rec, ok, err := r.readFast()
	if err != nil {
		r.err = err
		return 0, nil, err
	}
	if ok {
		return line, rec, nil
	}
	rec, err = r.cr.Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			r.csv = pe.Line
			c := *pe
			c.StartLine += r.fast
			c.Line += r.fast
			return c.StartLine, nil, &c
		}
		if !errors.Is(err, io.EOF) {
			r.err = err
		}
		return 0, nil, err
	}
	// The record ends on the line its last field starts on, plus the
	// line breaks inside that field (a quoted one may hold some).
	first, _ := r.cr.FieldPos(0)
	last, _ := r.cr.FieldPos(len(rec) - 1)
	r.csv = last + strings.Count(rec[len(rec)-1], "\n")
	if r.cap != nil {
		// Within MaxLineBytes and the buffer: the record is held to
		// MaxLineBytes exactly, its fields and delimiters counted.
		n := len(rec) - 1
		for _, f := range rec {
			n += len(f)
		}
		if n > MaxLineBytes {
			r.err = &recordTooLongError{line: first + r.fast}
			return 0, nil, r.err
		}
	}
	return first + r.fast, rec, nil
}

// readFast reads the next record itself when the buffer holds its whole
// line and the line has no quote, as encoding/csv would: a line break
// ("\n" or "\r\n") ends it, empty lines are skipped, and the fields are
// split at every delimiter. ok false leaves the line to encoding/csv. An
// error is a failure of the reader below (io.EOF is no error: the last
// line goes to encoding/csv).
func (r *records) readFast() (line int, rec []string, ok bool, err error) {
	for {
		buf, _ := r.br.Peek(r.br.Buffered())
		end := bytes.IndexByte(buf, '\n')
		for end < 0 {
			// Read on until a line break is buffered, one read of the
			// reader below at a time: a pipe whose writer stalls after a
			// whole line still has that line read (filling the buffer
			// whole would wait for bytes that may never come). A line
			// longer than the buffer, or the last one without a break,
			// goes to encoding/csv. The reader below fails at most once:
			// its error is kept, not read again.
			n := len(buf)
			if n >= r.br.Size() {
				return 0, nil, false, nil
			}
			buf, err = r.br.Peek(n + 1)
			if err != nil && !errors.Is(err, io.EOF) {
				return 0, nil, false, err
			}
			if len(buf) <= n {
				return 0, nil, false, nil // the end of the text
			}
			if end = bytes.IndexByte(buf[n:], '\n'); end >= 0 {
				end += n
			}
		}
		b := buf[:end]
		if bytes.IndexByte(b, '"') >= 0 {
			return 0, nil, false, nil
		}
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
		r.fast++
		if len(b) == 0 {
			r.br.Discard(end + 1)
			continue
		}
		r.valid = utf8.Valid(b)
		text := string(b)
		r.br.Discard(end + 1)
		r.fields = r.fields[:0]
		for {
			i := strings.IndexByte(text, r.delim)
			if i < 0 {
				break
			}
			r.fields = append(r.fields, text[:i])
			text = text[i+1:]
		}
		r.fields = append(r.fields, text)
		return r.csv + r.fast, r.fields, true, nil
	}
}
