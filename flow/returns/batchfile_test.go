package returns_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"assistant/business"
	"assistant/flow/returns"
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
		// MaxBatchFileBytes; the build before issue 14 cut it at 64 MiB
		// and ran the rows before the cut.
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
		{"Empty", "", "header must be task,order,reason"},
		{"HeaderOnly", "task,order,reason\n", "no rows"},
		{"BadHeader", "id,order,reason\nr1,A3003,x\n", "header must be"},
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

	t.Run("SameFileSameFingerprint", func(t *testing.T) {
		_, a, err1 := returns.ParseBatch(newRowsReader(1000, 20))
		_, b, err2 := returns.ParseBatch(newRowsReader(1000, 20))
		_, c, err3 := returns.ParseBatch(newRowsReader(1001, 20))
		if err1 != nil || err2 != nil || err3 != nil || a != b || a == c {
			t.Fatalf("fingerprints %s %s %s (%v %v %v): want the first two equal, the third different", a, b, c, err1, err2, err3)
		}
	})
}
