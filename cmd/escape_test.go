package cmd

import "testing"

func TestTermSafe(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"Plain", "Trail running shoes (size 42)", "Trail running shoes (size 42)"},
		{"ChineseAndDash", "运动鞋 42码 — charcoal, Café", "运动鞋 42码 — charcoal, Café"},
		{"Newline", "A1\nB2", `A1\nB2`},
		{"TabAndCR", "a\tb\rc", `a\tb\rc`},
		{"Escape", "\x1b[31mred\x1b[0m", `\e[31mred\e[0m`},
		{"Bell", "ding\a", `ding\x07`},
		{"Nul", "a\x00b", `a\x00b`},
		{"Del", "a\x7fb", `a\x7fb`},
		{"C1InUTF8", "a\u0085b\u009bc", `a\u0085b\u009bc`},
		{"RightToLeftOverride", "order\u202Egpj.exe", `order\u202egpj.exe`},
		{"BidiIsolates", "\u2066x\u2067y\u2068z\u2069", `\u2066x\u2067y\u2068z\u2069`},
		{"LeftToRightEmbedding", "\u202Aa\u202Cb\u202Dc", `\u202aa\u202cb\u202dc`},
		{"ZeroWidth", "A\u200B3001\u200D\uFEFF", `A\u200b3001\u200d\ufeff`},
		{"WordJoinerAndMarks", "a\u2060b\u200Ec\u200Fd", `a\u2060b\u200ec\u200fd`},
		{"LineSeparator", "a\u2028b", `a\u2028b`},
		{"InvalidUTF8", "ok\xffbad\xc3", `ok\xffbad\xc3`},
		{"BackslashCannotForgeAnEscape", `a\nb`, `a\\nb`},
		{"Empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := termSafe(tt.in); got != tt.want {
				t.Errorf("termSafe(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
