package business

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// spool holds the orders of a file that ParseOrders found good, in a
// compact binary form, in a temporary file (unlinked at once: it goes when
// it is closed). The import reads them from it instead of parsing the CSV
// a second time: no field is split, checked or parsed twice, and what is
// written is exactly what was checked, even if the file changed meanwhile.
// The temporary file lives in the page cache, not in the process's memory;
// it is written and read as a stream.
//
// One record per order:
//
//	flags     byte: spoolFinal, spoolNewUser, and the delivery kind
//	line      uvarint: the order's first line in the file
//	id, item  uvarint length, then the bytes, each
//	user      uvarint length and bytes, when spoolNewUser (else the last one)
//	delivered varint Unix seconds, uvarint nanoseconds, when spoolAtNew
//
// An export repeats its user and its delivery times from row to row; a
// record says "the same as the last one" instead of repeating them.
type spool struct {
	file      *os.File
	closeFile func() error // closes file (and removes it where it was not unlinked)
	w         *bufio.Writer
	rec       []byte // the record being encoded, reused
	// the last user and delivery time written
	user string
	at   *time.Time
}

// Flags of a spool record; the delivery kind is flags & spoolAtMask.
const (
	spoolFinal   = 1 << 0 // final sale
	spoolNewUser = 1 << 1 // the user follows
	spoolAtNone  = 0 << 2 // not delivered
	spoolAtSame  = 1 << 2 // delivered at the last time written
	spoolAtNew   = 2 << 2 // delivered; the time follows
	spoolAtMask  = 3 << 2
)

// spoolBuffer is the size of the spool's write and read buffers.
const spoolBuffer = 64 << 10

// TempError is a failure of the temporary directory ($TMPDIR, or the
// system's): a temporary file that could not be made, written or read back
// (full, read-only, missing). It is a local storage failure, never the
// input's fault: it wraps no returns.ErrInvalid, and the CLI exits 1 with
// it. Dir is the directory (os.TempDir), Err the failure.
type TempError struct {
	Dir string
	Err error
}

// Error is one line naming the directory and saying TMPDIR can point
// elsewhere.
func (e *TempError) Error() string {
	return fmt.Sprintf("temporary directory %s: %v (set TMPDIR to a directory with room to write)", e.Dir, e.Err)
}

// Unwrap returns the failure.
func (e *TempError) Unwrap() error { return e.Err }

// tempError wraps err, a failure of a temporary file, in a *TempError.
func tempError(err error) error {
	return &TempError{Dir: os.TempDir(), Err: err}
}

// CreateTemp creates a new temporary file in $TMPDIR (os.CreateTemp with
// pattern) and unlinks it at once, so that nothing of it is left behind
// however the process ends; where an open file cannot be unlinked, the
// returned close function removes it. Errors: *TempError.
func CreateTemp(pattern string) (*os.File, func() error, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return nil, nil, tempError(err)
	}
	if os.Remove(f.Name()) != nil {
		return f, func() error { err := f.Close(); os.Remove(f.Name()); return err }, nil
	}
	return f, f.Close, nil
}

// newSpool creates an empty spool in the system's temporary directory.
// Errors: *TempError.
func newSpool() (*spool, error) {
	f, closeFile, err := CreateTemp("assistant-orders-*.spool")
	if err != nil {
		return nil, err
	}
	return &spool{file: f, closeFile: closeFile, w: bufio.NewWriterSize(f, spoolBuffer)}, nil
}

// add appends the order of g (finished: its item set). A write error
// stays in the buffered writer and is returned by finish.
func (s *spool) add(g *group) {
	o := &g.order
	flags := byte(0)
	if o.FinalSale {
		flags |= spoolFinal
	}
	if o.User != s.user || s.user == "" {
		flags |= spoolNewUser
	}
	switch {
	case o.DeliveredAt == nil:
		flags |= spoolAtNone
	case s.at != nil && o.DeliveredAt.Equal(*s.at):
		flags |= spoolAtSame
	default:
		flags |= spoolAtNew
	}
	b := append(s.rec[:0], flags)
	b = binary.AppendUvarint(b, uint64(g.line))
	b = appendString(b, o.ID)
	b = appendString(b, o.Item)
	if flags&spoolNewUser != 0 {
		b = appendString(b, o.User)
		s.user = o.User
	}
	if flags&spoolAtMask == spoolAtNew {
		b = binary.AppendVarint(b, o.DeliveredAt.Unix())
		b = binary.AppendUvarint(b, uint64(o.DeliveredAt.Nanosecond()))
		s.at = o.DeliveredAt
	}
	s.w.Write(b)
	s.rec = b
}

// appendString appends the length and the bytes of v to b.
func appendString(b []byte, v string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

// finish writes what is buffered; the spool is then ready to be read.
// Errors: *TempError.
func (s *spool) finish() error {
	if err := s.w.Flush(); err != nil {
		return tempError(fmt.Errorf("orders file: write temporary file: %w", err))
	}
	return nil
}

// close removes the spool.
func (s *spool) close() error {
	if s == nil {
		return nil
	}
	return s.closeFile()
}

// replay reads the spool from its start and calls emit with each order, in
// file order, in groups of newGroup (emit owns each). Orders delivered at
// one time share one *time.Time, which nothing changes. ctx ends it
// (its error).
func (s *spool) replay(ctx context.Context, newGroup func() *group, emit func(*group) error) error {
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return tempError(fmt.Errorf("orders file: read temporary file: %w", err))
	}
	r := bufio.NewReaderSize(s.file, spoolBuffer)
	var (
		user string
		at   *time.Time
		buf  []byte
	)
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("read orders file: %w", err)
			}
		}
		flags, err := r.ReadByte()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return spoolErr(err)
		}
		line, err := binary.ReadUvarint(r)
		if err != nil {
			return spoolErr(err)
		}
		// The id and the item are read into one string (one allocation
		// for both).
		idLen, err := binary.ReadUvarint(r)
		if err != nil {
			return spoolErr(err)
		}
		if buf, err = readN(r, buf[:0], idLen); err != nil {
			return spoolErr(err)
		}
		itemLen, err := binary.ReadUvarint(r)
		if err != nil {
			return spoolErr(err)
		}
		if buf, err = readN(r, buf, itemLen); err != nil {
			return spoolErr(err)
		}
		both := string(buf)
		if flags&spoolNewUser != 0 {
			n, err := binary.ReadUvarint(r)
			if err != nil {
				return spoolErr(err)
			}
			if buf, err = readN(r, buf[:0], n); err != nil {
				return spoolErr(err)
			}
			user = string(buf)
		}
		g := newGroup()
		g.line = int(line)
		g.order = Order{ID: both[:idLen], Item: both[idLen:], User: user, FinalSale: flags&spoolFinal != 0}
		switch flags & spoolAtMask {
		case spoolAtSame:
			g.order.DeliveredAt = at
		case spoolAtNew:
			sec, err := binary.ReadVarint(r)
			if err != nil {
				return spoolErr(err)
			}
			nsec, err := binary.ReadUvarint(r)
			if err != nil {
				return spoolErr(err)
			}
			t := time.Unix(sec, int64(nsec)).UTC()
			at = &t
			g.order.DeliveredAt = at
		}
		if err := emit(g); err != nil {
			return err
		}
	}
}

// readN appends n bytes of r to buf.
func readN(r *bufio.Reader, buf []byte, n uint64) ([]byte, error) {
	if n > MaxLineBytes {
		return buf, errors.New("record longer than a line")
	}
	start := len(buf)
	buf = append(buf, make([]byte, n)...)
	_, err := io.ReadFull(r, buf[start:])
	return buf, err
}

// spoolErr is the error of a spool that cannot be read back (*TempError).
func spoolErr(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return tempError(fmt.Errorf("orders file: read temporary file: %w", err))
}
