package business

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// multiLineField returns a file: the header, then one row whose quoted
// item holds lines lines of 99 bytes each and a line break, then rest.
func multiLineField(header, before string, lines int, after string) io.Reader {
	line := strings.Repeat("x", 99) + "\n"
	return io.MultiReader(
		strings.NewReader(header+"\n"+before+`"`),
		&repeatReader{s: line, n: lines},
		strings.NewReader(`"`+after+"\n"),
	)
}

// repeatReader reads s n times without holding it n times.
type repeatReader struct {
	s   string
	n   int
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.s[r.off:])
	r.off += n
	if r.off == len(r.s) {
		r.off, r.n = 0, r.n-1
	}
	return n, nil
}

// A record that runs on over many lines (a quoted field with line breaks)
// is held to MaxLineBytes as it is read, whole or in its lines: refused
// with its first line, the rest of the file never read (before: a 60 MB
// quoted item was read whole, 250 MB of memory). One just under the limit
// is read (and refused as a row for its item's length, not the record's).
func TestRecordCapAcrossLines(t *testing.T) {
	t.Parallel()
	const header = "order_id,user,item,delivered_at,final_sale"
	tests := []struct {
		name    string
		lines   int
		wantCap bool
	}{
		{"60MB", 600_000, true},
		{"JustOver", MaxLineBytes/100 + 1, true},
		{"Under", MaxLineBytes/100 - 100, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &countingReader{r: multiLineField(header, "O1,u,", tt.lines, ",2025-01-01T00:00:00Z,false")}
			f, err := ParseOrders(context.Background(), in, ParseOptions{Operator: true})
			if f != nil {
				f.Close()
			}
			var ie *ImportError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an *ImportError", err)
			}
			capped := strings.Contains(err.Error(), "the record from line 2 on is longer than")
			if capped != tt.wantCap {
				t.Fatalf("err = %.300v; record cap %v, want %v", err, capped, tt.wantCap)
			}
			if in.n > MaxLineBytes+4<<20 {
				t.Errorf("read %d bytes of the file, want at most MaxLineBytes and the buffers", in.n)
			}
		})
	}
}

// Every value a message quotes is cut to termtext.MaxQuoted bytes and
// escaped, so a bad file gives one short line however long its values:
// rows of 1 MB of invalid UTF-8, a 1 MB bad date, a 1 MB bad flag.
// Before: a 40 MB message for 12 rows of \xff, 3 MB for three bad dates.
func TestMessagesCutLongValues(t *testing.T) {
	t.Parallel()
	const header = "order_id,user,item,delivered_at,final_sale\n"
	big := func(s string) string { return strings.Repeat(s, (MaxLineBytes-100)/len(s)) }
	rows := func(n int, row string) string { return header + strings.Repeat(row+"\n", n) }
	tests := []struct {
		name, file, want string
	}{
		{"InvalidUTF8", rows(12, "O1,u,"+big("\xff")+",,false"), `"\xff\xff`},
		{"BadDate", rows(3, "O1,u,Pen,"+big("9")+",false"), `delivered_at "9999`},
		{"BadFlag", rows(3, "O1,u,Pen,,"+big("x")), `final_sale "xxxx`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseOrders(context.Background(), strings.NewReader(tt.file), ParseOptions{Operator: true})
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if len(msg) > 5000 || strings.Contains(msg, "\n") || !strings.Contains(msg, tt.want) || !strings.Contains(msg, `"…`) {
				t.Fatalf("message of %d bytes, want one line under 5000 bytes with %s cut (…): %.300s", len(msg), tt.want, msg)
			}
		})
	}
}

// Orders whose rows do not follow each other are named beside other bad
// rows, in line order, in one run (before: only when no other row was
// bad: X1, X2, X1 again on line 4 and an empty item on line 5 named line
// 5 only).
func TestScatteredOrdersNamedBesideBadRows(t *testing.T) {
	t.Parallel()
	const header = "order_id,user,item,delivered_at,final_sale\n"
	tests := []struct {
		name, rows string
		want       []string
	}{
		{"ScatteredThenBad", "X1,u,A,,false\nX2,u,B,,false\nX1,u,C,,false\nX3,u,,,false\n",
			[]string{"line 4: order X1 is also on line 2", "line 5: item must not be empty"}},
		{"BadThenScattered", "X0,u,,,false\nX1,u,A,,false\nX2,u,B,,false\nX1,u,C,,false\n",
			[]string{"line 2: item must not be empty", "line 5: order X1 is also on line 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseOrders(context.Background(), strings.NewReader(header+tt.rows), ParseOptions{Operator: true})
			var ie *ImportError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an *ImportError", err)
			}
			if len(ie.Lines) != len(tt.want) {
				t.Fatalf("lines %q, want %q", ie.Lines, tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(ie.Lines[i], w) {
					t.Errorf("line %d of the message: %q, want it to start %q", i, ie.Lines[i], w)
				}
			}
		})
	}
}

// More than ten bad lines of both kinds: the first ten by line number,
// then how many more.
func TestBadLinesMerge(t *testing.T) {
	t.Parallel()
	var a, b badLines
	for i := 1; i <= 12; i++ {
		a.add(2*i, errors.New("row"))
		b.add(2*i+1, errors.New("scattered"))
	}
	m := a.merge(b)
	if len(m.lines) != maxBadLines || m.nums[0] != 2 || m.nums[1] != 3 || m.nums[maxBadLines-1] != 11 || m.more != 24-maxBadLines {
		t.Fatalf("merged %v (%d more)", m.nums, m.more)
	}
}

// Delivery times are not guessed: a wall time the clocks skip or show
// twice in --timezone is refused, as is an offset beyond ±14:00; RFC
// 3339's lower-case t and z are read. Before: 02:30 on the spring-forward
// day was stored as 01:30Z, the autumn one taken as CET, +24:00 stored a
// day earlier, and "z" refused.
func TestParseDeliveryTimeNotGuessed(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	tests := []struct {
		in      string
		loc     *time.Location
		want    string // RFC 3339 in UTC, or "" for an error
		wantErr string
	}{
		{"2026-03-29 02:30:00", berlin, "", "does not exist in Europe/Berlin"},
		{"2026-10-25 02:30:00", berlin, "", "occurs twice in Europe/Berlin (+02:00 and +01:00"},
		{"2026-03-29 03:30:00", berlin, "2026-03-29T01:30:00Z", ""},
		{"2026-10-25 03:30:00", berlin, "2026-10-25T02:30:00Z", ""},
		{"2026-10-25 01:30:00", berlin, "2026-10-24T23:30:00Z", ""},
		{"2026-07-01", berlin, "2026-06-30T22:00:00Z", ""},
		{"2026-11-20T10:00:00+24:00", nil, "", "offsets go from -14:00 to +14:00"},
		{"2026-11-20 10:00:00 -1500", nil, "", "offsets go from -14:00 to +14:00"},
		{"2026-11-20T10:00:00+14:00", nil, "2026-11-19T20:00:00Z", ""},
		{"2026-11-20t10:00:00z", nil, "2026-11-20T10:00:00Z", ""},
		{"2026-11-20T10:00:00z", nil, "2026-11-20T10:00:00Z", ""},
	}
	for _, tt := range tests {
		got, err := ParseDeliveryTime(tt.in, tt.loc)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: %v, %v; want an error with %q", tt.in, got, err, tt.wantErr)
			}
		case err != nil || got.Format(time.RFC3339) != tt.want:
			t.Errorf("%q: %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}
