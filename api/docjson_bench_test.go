package api

import (
	"strings"
	"testing"
)

// BenchmarkAppendString encodes a record body of about 130 words of
// printable ASCII, the bulk of the bytes of a page, as a JSON string.
func BenchmarkAppendString(b *testing.B) {
	text := strings.Repeat("alpha bravo charlie delta echo foxtrot golf ", 20)
	buf := make([]byte, 0, 2*len(text))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		buf = appendString(buf[:0], text)
	}
}
