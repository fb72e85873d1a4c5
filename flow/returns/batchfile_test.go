package returns_test

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"assistant/business"
	"assistant/flow/returns"
	"assistant/runs"
)

// rowsReader streams a batch file of n rows whose reasons are reasonRunes
// long (3-byte runes), without holding it in memory.
type rowsReader struct {
	n, i    int
	reason  string
	pending []byte
	started bool
}

func newRowsReader(n, reasonRunes int) *rowsReader {
	return &rowsReader{n: n, reason: strings.Repeat("尺", reasonRunes)}
}

func (r *rowsReader) Read(p []byte) (int, error) {
	if !r.started {
		r.pending, r.started = append(r.pending, "task,order,reason\n"...), true
	}
	for len(r.pending) < len(p) && r.i < r.n {
		r.pending = fmt.Appendf(r.pending, "row-%06d,A3003,%s\n", r.i, r.reason)
		r.i++
	}
	if len(r.pending) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

func TestParseBatchLimits(t *testing.T) {
	tests := []struct {
		name   string
		rows   int
		reason int // runes of each reason
		want   int // rows returned; -1 = refused as too large
	}{
		{"Small", 3, 10, 3},
		{"RowLimitExactly", returns.MaxBatchRows, 1, returns.MaxBatchRows},
		{"OneRowOverTheLimit", returns.MaxBatchRows + 1, 1, -1},
		// 50,000 rows of 500 three-byte runes: about 75 MB, over
		// MaxBatchFileBytes: refused whole, no row of it run.
		{"OverTheSizeLimit", 50_000, 500, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, fp, err := returns.ParseBatch(newRowsReader(tt.rows, tt.reason))
			if tt.want < 0 {
				if !errors.Is(err, returns.ErrInvalid) || !errors.Is(err, business.ErrTooLarge) {
					t.Fatalf("err = %v, want ErrInvalid and business.ErrTooLarge", err)
				}
				if rows != nil || fp != "" {
					t.Fatalf("a refused file gave %d rows, fingerprint %q", len(rows), fp)
				}
				if !strings.Contains(err.Error(), "split it") {
					t.Errorf("%q does not say what to do", err)
				}
				return
			}
			if err != nil || len(rows) != tt.want || len(fp) != 32 {
				t.Fatalf("got %d rows, fingerprint %q, err %v; want %d rows", len(rows), fp, err, tt.want)
			}
			if last := rows[len(rows)-1]; last.RowNo != tt.want || last.TaskID != fmt.Sprintf("row-%06d", tt.want-1) {
				t.Fatalf("last row %+v", last)
			}
		})
	}
}

func TestParseBatchRefusals(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"Empty", "", "batch file: line 1: no header (want task,order,reason)"},
		{"HeaderOnly", "task,order,reason\n", "no rows"},
		{"BadHeader", "id,order,reason\nr1,A3003,x\n", "missing column task; found id, order, reason; delimiter looks like ','"},
		{"Semicolons", "Task;Order\nr1;A3003\n", "missing column reason; found Task, Order; delimiter looks like ';'"},
		{"InvalidUTF8", "task,order,reason\nr1,A3003,bad\xff\n", "line 2: "},
		{"BadQuote", "task,order,reason\nr1,A3003,\"x\n", "batch file"},
		{"BadRow", "task,order,reason\nr1,A3003,x\nr1,A3004,y\n", "line 3: task r1 already on line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := returns.ParseBatch(strings.NewReader(tt.file))
			if !errors.Is(err, returns.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}

	// batch files follow the header rules of orders files.
	t.Run("HeaderByName", func(t *testing.T) {
		want := []runs.BatchRow{{RowNo: 1, Line: 2, TaskID: "r1", OrderID: "A3003", Reason: "size"}, {RowNo: 2, Line: 3, TaskID: "r2", OrderID: "A3004", Reason: ""}}
		for name, file := range map[string]string{
			"Plain":        "task,order,reason\nr1,A3003,size\nr2,A3004,\n",
			"Reordered":    "reason,order,task\nsize,A3003,r1\n,A3004,r2\n",
			"ExtraColumns": "Note,Task ID,Order ID,Reason,Agent\nx,r1,A3003,size,me\ny,r2,A3004,,me\n",
			"Semicolons":   "task;order;reason\nr1;A3003;size\nr2;A3004;\n",
			"Tabs":         "TASK\tORDER\tREASON\r\nr1\tA3003\tsize\r\nr2\tA3004\t\r\n",
			"UTF8BOM":      "\ufefftask,order,reason\nr1,A3003,size\nr2,A3004,\n",
			"UTF16LE":      utf16LE("\ufefftask,order,reason\r\nr1,A3003,size\r\nr2,A3004,\r\n"),
		} {
			t.Run(name, func(t *testing.T) {
				rows, _, err := returns.ParseBatch(strings.NewReader(file))
				if err != nil || !slices.Equal(rows, want) {
					t.Fatalf("rows %+v, err %v; want %+v", rows, err, want)
				}
			})
		}
	})

	t.Run("SameFileSameFingerprint", func(t *testing.T) {
		_, a, err1 := returns.ParseBatch(newRowsReader(1000, 20))
		_, b, err2 := returns.ParseBatch(newRowsReader(1000, 20))
		_, c, err3 := returns.ParseBatch(newRowsReader(1001, 20))
		if err1 != nil || err2 != nil || err3 != nil || a != b || a == c {
			t.Fatalf("fingerprints %s %s %s (%v %v %v): want the first two equal, the third different", a, b, c, err1, err2, err3)
		}
	})
}

// utf16LE encodes s as UTF-16 little endian, as spreadsheet programs save
// "Unicode text".
func utf16LE(s string) string {
	var b strings.Builder
	for _, u := range utf16.Encode([]rune(s)) {
		b.WriteByte(byte(u))
		b.WriteByte(byte(u >> 8))
	}
	return b.String()
}
