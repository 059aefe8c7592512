package index

import (
	"strings"
	"testing"
)

// BenchmarkPatternPathological matches patterns that make a matcher which
// retries its stars take O(value × pattern) time, against a 10 MB value
// of the pattern's most frequent rune: a long literal between stars (the
// KMP search) and a long segment with `?` (the bit-parallel search, 32
// state words per rune).
func BenchmarkPatternPathological(b *testing.B) {
	value := strings.Repeat("a", 10<<20)
	for _, c := range []struct{ name, pattern string }{
		{"literal2000", "*" + strings.Repeat("a", 2000) + "b*"},
		{"wild2000", "*" + strings.Repeat("a?", 1000) + "b*"},
		{"stars50", strings.Repeat("a*", 50) + "b"},
	} {
		for _, fold := range []bool{false, true} {
			name := c.name
			if fold {
				name += "/fold"
			}
			b.Run(name, func(b *testing.B) {
				p, err := CompilePattern(c.pattern, fold)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(value)))
				for b.Loop() {
					if p.Match(value) {
						b.Fatal("matched")
					}
				}
			})
		}
	}
}
