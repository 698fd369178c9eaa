// Package names turns workspace paths and ids into bounded, file-system-safe
// names: the one rule behind transcript directories, lock files, private
// homes, git refs and derived workspaces.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// MaxNameBytes is the longest file name (one path element) the file systems
// workers use accept.
const MaxNameBytes = 255

// flatBytes keeps a flattened name plus a suffix such as ".lock" within one
// file name.
const flatBytes = 200

// hashChars is how much of a hash keeps flattened and shortened names unique.
const hashChars = 12

// Flat flattens a path ("team/repo") into one file name: a simple name is
// kept as is; anything else has its unsafe characters replaced by '_' and a
// hash of the original appended, so distinct paths never share a name. The
// result is at most 200 bytes.
func Flat(path string) string {
	safe := Sanitize(path, '_')
	if safe == path && !strings.HasPrefix(path, ".") && len(path) <= flatBytes && !HasHashSuffix(path) {
		return path
	}
	return withHash(strings.TrimLeft(safe, "."), path, flatBytes)
}

// Safe reports whether r may stand in a file name, a ref component or a
// workspace segment as it is: an ASCII letter or digit, '-', '_' or '.'.
func Safe(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}

// Sanitize replaces every character of s that is not Safe with with.
func Sanitize(s string, with byte) string {
	var b strings.Builder
	for _, r := range s {
		if Safe(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte(with)
		}
	}
	return b.String()
}

// HasHashSuffix reports whether name ends the way a hashed name does
// ("-" and 12 lower-case hex digits). Such a name is never kept as is, so a
// kept name and a hashed one never meet: a workspace named
// "team_repo-<12 hex>" does not get the name of "team/repo".
func HasHashSuffix(name string) bool {
	if len(name) < hashChars+1 || name[len(name)-hashChars-1] != '-' {
		return false
	}
	for _, c := range []byte(name[len(name)-hashChars:]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Hashed is readable (cut to fit) + "-" + a hash of key, at most maxBytes
// long: the name of key when readable alone would not be one-to-one.
func Hashed(readable, key string, maxBytes int) string { return withHash(readable, key, maxBytes) }

// Shorten bounds name to maxBytes bytes: a name within the bound is kept, a
// longer one keeps its beginning and ends in a hash of the whole name, so two
// long names never share a shortened one.
func Shorten(name string, maxBytes int) string {
	if len(name) <= maxBytes {
		return name
	}
	return withHash(name, name, maxBytes)
}

// withHash is prefix (cut at a code point boundary) + "-" + a hash of key,
// at most maxBytes long.
func withHash(prefix, key string, maxBytes int) string {
	sum := sha256.Sum256([]byte(key))
	suffix := "-" + hex.EncodeToString(sum[:])[:hashChars]
	keep := min(len(prefix), maxBytes-len(suffix))
	for keep > 0 && keep < len(prefix) && !utf8.RuneStart(prefix[keep]) {
		keep--
	}
	return prefix[:keep] + suffix
}
