// Package runes cuts text by code points, the unit every limit of the
// project counts in (reports, results, outputs, messages), and keeps
// model text from acting on an operator's terminal (Printable).
package runes

import "unicode/utf8"

// Prefix returns the first n code points of s (all of s when shorter).
func Prefix(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// Suffix returns the last n code points of s (all of s when shorter).
func Suffix(s string, n int) string {
	i := len(s)
	for k := 0; k < n && i > 0; k++ {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}
