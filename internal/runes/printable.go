package runes

import (
	"strings"
	"unicode/utf8"
)

// Printable is s as text a terminal shows and never acts on: the C0
// control characters but newline and tab, DEL and the C1 controls
// (U+0080–U+009F, where a terminal may read CSI and OSC) are removed, and a
// byte that is not UTF-8 becomes U+FFFD (a lone 0x9b is CSI to a terminal
// that is not in UTF-8 mode). Tab stays: it only moves the cursor right,
// and compiler and test output hold it. Everything else is kept, so s is
// returned as is when it holds none of these.
func Printable(s string) string {
	if isPrintable(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case !isControl(r):
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func isPrintable(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || isControl(r) {
			return false
		}
		i += size
	}
	return true
}

// isControl: a control character Printable removes.
func isControl(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f
}
