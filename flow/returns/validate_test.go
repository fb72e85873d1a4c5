package returns_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"assistant/flow/returns"
)

func TestValidTaskID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"return-25", true},
		{"退货-1", true},
		{strings.Repeat("x", 128), true},
		{"", false},
		{strings.Repeat("x", 129), false},
		{"a b", false},
		{"a/b", false},
		{`a\b`, false},
		{"a\tb", false},
		{"a\x00b", false},
		{".", false},
		{"..", false},
		{"\xff", false},
		// Characters that print as nothing or as a blank (termtext.Invisible):
		// such an id would read as another id, or as none.
		{"a\u200bb", false},     // zero-width space (Cf)
		{"a\u202eb", false},     // bidi override (Cf)
		{"a\u3164b", false},     // Hangul filler
		{"\u115f", false},       // Hangul choseong filler
		{"a\uffa0b", false},     // halfwidth Hangul filler
		{"a\u2800b", false},     // Braille blank
		{"ali\u034fce", false},  // combining grapheme joiner
		{"a\ufe0fb", false},     // variation selector
		{"a\U000e0041b", false}, // tag character
		{"한글-1", true},
		{"⠁-1", true}, // a Braille letter prints
	}
	for _, tt := range tests {
		if err := returns.ValidTaskID(tt.id); (err == nil) != tt.ok {
			t.Errorf("ValidTaskID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
		}
	}
}

func TestValidReason(t *testing.T) {
	tests := []struct {
		reason string
		ok     bool
	}{
		{"尺寸不合适", true},
		{"too small", true},
		{strings.Repeat("é", returns.MaxReasonRunes), true},
		{"   ", false},
		{"", false},
		{strings.Repeat("é", returns.MaxReasonRunes+1), false},
		{"bad\x01reason", false},
		{"\xff\xfe", false},
		{"\u200b", false},
		{"\u200b\u200c\u200d\u2060", false},
		{"\u3000\u200b", false},
		{"\u2800", false},
		{"\u00ad\ufe0f", false},
		{"size\u200b", true},
		{"👍\ufe0f", true},
	}
	for _, tt := range tests {
		if err := returns.ValidReason(tt.reason); (err == nil) != tt.ok {
			t.Errorf("ValidReason(%q) = %v, want ok=%v", tt.reason, err, tt.ok)
		}
	}
}

func TestParseBatch(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		rows    int
		wantErr string // substring; "" means no error
	}{
		{"Good", "task,order,reason\nr1,A3003,too small\nr2,A3004,\n", 2, ""},
		{"BOMHeader", "\ufefftask,order,reason\nr1,A3003,x\n", 1, ""},
		{"WrongHeader", "id,order,reason\nr1,A3003,x\n", 0, "line 1"},
		{"NoRows", "task,order,reason\n", 0, "no rows"},
		{"BadTaskID", "task,order,reason\nr1,A3003,x\nr 2,A3004,x\n", 0, "line 3"},
		{"DuplicateTask", "task,order,reason\nr1,A3003,x\nr1,A3004,x\n", 0, "already on line 2"},
		{"FieldCount", "task,order,reason\nr1,A3003\n", 0, "line 2"},
		{"ControlInReason", "task,order,reason\nr1,A3003,\"a\x01b\"\n", 0, "control"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, fp, err := returns.ParseBatch(strings.NewReader(tt.file))
			if tt.wantErr == "" {
				if err != nil || len(rows) != tt.rows || fp == "" {
					t.Fatalf("ParseBatch = %d rows, fp %q, err %v; want %d rows", len(rows), fp, err, tt.rows)
				}
				return
			}
			if !errors.Is(err, returns.ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestReduce(t *testing.T) {
	exp := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	s := returns.State{Task: "t", Order: "A3003", Reason: "size"}
	upd := returns.State{Stage: returns.StageDraftReady, Draft: &returns.DraftRef{ID: "d_1", ExpiresAt: exp}}
	got := returns.Reduce(s, upd)
	if got.Task != "t" || got.Order != "A3003" || got.Reason != "size" || got.Stage != returns.StageDraftReady {
		t.Errorf("Reduce kept %+v", got)
	}
	if got.Draft == nil || got.Draft.ID != "d_1" || !got.Draft.ExpiresAt.Equal(exp) {
		t.Errorf("Draft = %+v, want d_1 expiring %s", got.Draft, exp)
	}
	if s.Stage != "" || s.Draft != nil {
		t.Errorf("Reduce changed its input: %+v", s)
	}
	got.Draft.ID = "d_2"
	if upd.Draft.ID != "d_1" {
		t.Errorf("Reduce's result shares the update's draft: %+v", upd.Draft)
	}
}
