package returns_test

import (
	"strings"
	"testing"

	"assistant/flow/returns"
	"assistant/internal/termtext"
)

// TestLongValuesQuotedCut: a refused task id, order id or user name, and a
// refused --action, are quoted in their message cut to termtext.MaxQuoted
// bytes with "…" (docs/orders.md "Limits": a value a message quotes is
// cut), so the message stays one short line however long the value.
func TestLongValuesQuotedCut(t *testing.T) {
	long := strings.Repeat("u", 120) + " x" // 122 bytes, refused for its space
	tests := []struct {
		name string
		err  error
	}{
		{"TaskID", returns.ValidTaskID(long)},
		{"OrderID", returns.ValidOrderID(long)},
		{"User", returns.ValidUser(long)},
		{"LeadingDash", returns.ValidTaskID("-" + long[:100])},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("accepted")
			}
			msg := tt.err.Error()
			if strings.Contains(msg, long[:termtext.MaxQuoted+1]) || !strings.Contains(msg, "…") {
				t.Errorf("message quotes the value uncut: %q", msg)
			}
		})
	}
}
