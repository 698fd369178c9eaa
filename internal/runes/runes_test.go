package runes

import "testing"

func TestPrefixAndSuffixCountCodePoints(t *testing.T) {
	t.Parallel()
	cases := []struct {
		s, prefix2, suffix2 string
	}{
		{"", "", ""}, {"a", "a", "a"}, {"äöü", "äö", "öü"}, {"a😀b", "a😀", "😀b"},
	}
	for _, c := range cases {
		if got := Prefix(c.s, 2); got != c.prefix2 {
			t.Errorf("Prefix(%q, 2) = %q, want %q", c.s, got, c.prefix2)
		}
		if got := Suffix(c.s, 2); got != c.suffix2 {
			t.Errorf("Suffix(%q, 2) = %q, want %q", c.s, got, c.suffix2)
		}
	}
	if Prefix("abc", 0) != "" || Suffix("abc", 0) != "" {
		t.Error("n = 0 must give the empty string")
	}
}
