package business

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestCapReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		size     int
		max      int64
		tooLarge bool
	}{
		{"Under", 10, 11, false},
		{"Exactly", 11, 11, false},
		{"OneOver", 12, 11, true},
		{"Empty", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := io.ReadAll(CapReader(strings.NewReader(strings.Repeat("x", tt.size)), tt.max))
			if tt.tooLarge {
				if !errors.Is(err, ErrTooLarge) {
					t.Fatalf("err = %v, want ErrTooLarge", err)
				}
				return
			}
			if err != nil || len(b) != tt.size {
				t.Fatalf("read %d bytes, %v; want %d", len(b), err, tt.size)
			}
		})
	}
}

func TestParseOrdersLimits(t *testing.T) {
	t.Parallel()
	orders := func(n, itemBytes int) io.Reader {
		var b strings.Builder
		b.WriteString("order_id,user,item,delivered_at,final_sale\n")
		item := strings.Repeat("i", itemBytes)
		for i := range n {
			fmt.Fprintf(&b, "O%d,u,%s,2025-01-01T00:00:00Z,false\n", i, item)
		}
		return strings.NewReader(b.String())
	}
	tests := []struct {
		name     string
		r        io.Reader
		tooLarge bool
	}{
		{"RowLimitExactly", orders(MaxOrdersRows, 1), false},
		{"OneRowOver", orders(MaxOrdersRows+1, 1), true},
		{"OverTheSizeLimit", orders(70_000, 1000), true}, // about 71 MB
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseOrders(context.Background(), tt.r, ParseOptions{Operator: true})
			if tt.tooLarge {
				if !errors.Is(err, ErrTooLarge) || f != nil || !strings.Contains(err.Error(), "nothing was imported") {
					t.Fatalf("err = %v, want ErrTooLarge and no file", err)
				}
				return
			}
			if err != nil || f.Orders() != MaxOrdersRows {
				t.Fatalf("err = %v", err)
			}
			f.Close()
		})
	}
}
