package business

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// csvSteps reads text with encoding/csv alone, as records.read is to
// read it: each record as "LINE: fields" and each bad one as its
// *csv.ParseError, until io.EOF.
func csvSteps(text []byte, delim rune) []string {
	cr := csv.NewReader(bytes.NewReader(text))
	cr.Comma = delim
	cr.FieldsPerRecord = -1
	var out []string
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			out = append(out, fmt.Sprintf("error %d %d %d %v", pe.StartLine, pe.Line, pe.Column, pe.Err))
			continue
		}
		if err != nil {
			return append(out, "failure "+err.Error())
		}
		line, _ := cr.FieldPos(0)
		out = append(out, fmt.Sprintf("%d: %q", line, rec))
	}
}

// recordSteps reads text with records, from r.
func recordSteps(r io.Reader, delim rune) []string {
	recs := newRecords(bufio.NewReaderSize(r, 4096), delim)
	var out []string
	for {
		line, rec, err := recs.read()
		if errors.Is(err, io.EOF) {
			return out
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			if line != pe.StartLine {
				return append(out, fmt.Sprintf("line %d beside error %v", line, pe))
			}
			out = append(out, fmt.Sprintf("error %d %d %d %v", pe.StartLine, pe.Line, pe.Column, pe.Err))
			continue
		}
		if err != nil {
			return append(out, "failure "+err.Error())
		}
		out = append(out, fmt.Sprintf("%d: %q", line, rec))
	}
}

// checkRecordsLikeCSV fails when records reads text otherwise than
// encoding/csv: other fields, line numbers or errors, read whole or a byte
// at a time.
func checkRecordsLikeCSV(t *testing.T, text []byte, delim rune) {
	t.Helper()
	want := csvSteps(text, delim)
	for name, r := range map[string]io.Reader{
		"Whole":      bytes.NewReader(text),
		"ByteByByte": iotest.OneByteReader(bytes.NewReader(text)),
	} {
		if got := recordSteps(r, delim); !slices.Equal(got, want) {
			t.Fatalf("%s, delimiter %q, text %q:\nrecords  %q\nencoding/csv %q", name, delim, text, got, want)
		}
	}
}

// Seeds of FuzzRecords: the lines the fast path takes and those it leaves
// to encoding/csv, next to each other.
var recordsSeeds = []string{
	"a,b,c\n1,2,3\n",
	"a,b\n\n\n1,2\r\n\r\n3,4",
	"a,b\n1,\"x\ny\",2\n3,4\n\"q\"\"q\",5\n",
	"a\n\"unterminated\n1\n2\n",
	"a,b\nx\"y,2\n3,4\n",
	"a,b\n\"x\"y,2\n3,4\n",
	"a,b\r\n1,2\r\r\n\r\n3\r",
	"a;b\t;c\n1;2;3\n\"a;b\";c\n",
	"a,b\n1,\"2\n\n3\"\n4,5\n\n",
	"\n\n\"a\",b\nc,d\n",
	"x,y\n1,\"multi\r\nline\"\n2,3\n",
	"one\n" + strings.Repeat("long,", 2000) + "\n2\n\"q\"\n" + strings.Repeat("z", 5000) + "\n3\n",
	"é,ü\n\xff,\xfe\n",
}

func TestRecordsLikeCSV(t *testing.T) {
	t.Parallel()
	for i, seed := range recordsSeeds {
		for _, delim := range []rune{',', ';', '\t'} {
			t.Run(fmt.Sprintf("%d%c", i, delim), func(t *testing.T) {
				checkRecordsLikeCSV(t, []byte(seed), delim)
			})
		}
	}
}

// FuzzRecords: records reads every text as encoding/csv does (run it
// with go test -fuzz FuzzRecords ./business).
func FuzzRecords(f *testing.F) {
	for _, seed := range recordsSeeds {
		f.Add([]byte(seed), uint8(0))
	}
	f.Fuzz(func(t *testing.T, text []byte, d uint8) {
		checkRecordsLikeCSV(t, text, []rune{',', ';', '\t'}[d%3])
	})
}

// TestRecordsStalledWriter: the records of whole lines a pipe has sent
// are read while its writer stalls with the next line unsent or half
// sent: the reader does not wait to fill its whole buffer. (It did: on a
// stalled pipe, a row past a limit was not seen until the writer sent
// about 64 KiB more or closed.)
func TestRecordsStalledWriter(t *testing.T) {
	t.Parallel()
	for _, tail := range []string{"", "3,half-a-li"} {
		t.Run(fmt.Sprintf("tail%q", tail), func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			go pw.Write([]byte("a,b\n1,2\n2,3\n" + tail)) // then nothing, never closed
			recs := newRecords(bufio.NewReaderSize(pr, 64<<10), ',')
			got := make(chan string, 3)
			go func() {
				for {
					line, rec, err := recs.read()
					if err != nil {
						got <- "error " + err.Error()
						return
					}
					got <- fmt.Sprintf("%d: %q", line, rec)
				}
			}()
			for _, want := range []string{`1: ["a" "b"]`, `2: ["1" "2"]`, `3: ["2" "3"]`} {
				select {
				case g := <-got:
					if g != want {
						t.Fatalf("read %s, want %s", g, want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("record %s not read within 10 s while the writer stalls after it", want)
				}
			}
		})
	}
}
