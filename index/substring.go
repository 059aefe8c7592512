package index

import (
	"strings"
	"unicode/utf8"
)

// substringMatch returns the test of a string value for $contains of sub
// (or $iContains when fold) that a scan applies row after row: it
// allocates nothing for a value of ASCII bytes, the usual kind, and folds
// sub once rather than once a row.
func substringMatch(sub string, fold bool) func(string) bool {
	if !fold {
		return func(s string) bool { return strings.Contains(s, sub) }
	}
	fsub := foldString(sub)
	asciiSub := isASCII(fsub)
	return func(s string) bool {
		if !isASCII(s) {
			return strings.Contains(foldString(s), fsub)
		}
		// An ASCII value folds to ASCII: byte by byte, letters to upper
		// case. It holds no folded non-ASCII sub.
		return asciiSub && containsUpperASCII(s, fsub)
	}
}

// isASCII reports whether every byte of s is below utf8.RuneSelf.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// upperASCII upper-cases an ASCII letter and leaves every other byte.
func upperASCII(b byte) byte {
	if 'a' <= b && b <= 'z' {
		return b - ('a' - 'A')
	}
	return b
}

// containsUpperASCII reports whether s, its letters upper-cased, contains
// u, which has no lower-case ASCII letter.
func containsUpperASCII(s, u string) bool {
	if len(u) == 0 {
		return true
	}
	first := u[0]
	for i := 0; i+len(u) <= len(s); i++ {
		if upperASCII(s[i]) != first {
			continue
		}
		j := 1
		for j < len(u) && upperASCII(s[i+j]) == u[j] {
			j++
		}
		if j == len(u) {
			return true
		}
	}
	return false
}
