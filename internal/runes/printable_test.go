package runes

import (
	"testing"
	"unicode/utf8"
)

func TestPrintableRemovesWhatATerminalActsOn(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"line 1\nline 2\tcol", "line 1\nline 2\tcol"},
		{"äöü 😀 ě", "äöü 😀 ě"}, // 'ě' is C4 9B: a 0x9b byte inside a rune is text
		{"a\x1b]52;c;ZXZpbA==\x07b", "a]52;c;ZXZpbA==b"},
		{"\x1b[2Jcleared\x1b[0m", "[2Jcleared[0m"},
		{"over\rwrite\b\x00\x7f", "overwrite"},
		{"c1 \u009b31m \u009d0;x\u009c \u0085", "c1 31m 0;x "},
		{"raw \x9b byte \xff", "raw \ufffd byte \ufffd"},
	}
	for _, c := range cases {
		got := Printable(c.in)
		if got != c.want {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Printable(%q) = %q is not UTF-8", c.in, got)
		}
	}
}

func TestPrintableKeepsEveryOtherRune(t *testing.T) {
	t.Parallel()
	for r := rune(0); r <= 0x3000; r++ {
		s := string(r)
		control := r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f
		if got := Printable(s); (got == "") != control || !control && got != s {
			t.Fatalf("Printable(%U) = %q (control: %v)", r, got, control)
		}
	}
}
