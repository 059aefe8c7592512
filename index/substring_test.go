package index

import (
	"math/rand"
	"strings"
	"testing"
)

// TestSubstringMatch checks the row test of $contains and $iContains
// against strings.Contains and containsFold, which fold both sides anew,
// on random strings of ASCII letters, letters whose folding reaches ASCII,
// other non-ASCII runes and invalid bytes.
func TestSubstringMatch(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	pieces := []string{"a", "A", "b", "B", "k", "K", "\u212a", "s", "ſ", "é", "É", "ß", "σ", "Σ", " ", "1", "\xc3", "\xff"}
	randStr := func(max int) string {
		var b strings.Builder
		for i := rng.Intn(max + 1); i > 0; i-- {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		return b.String()
	}
	for range 20000 {
		s, sub := randStr(10), randStr(3)
		if got, want := substringMatch(sub, false)(s), strings.Contains(s, sub); got != want {
			t.Fatalf("contains %q in %q: %v, want %v", sub, s, got, want)
		}
		if got, want := substringMatch(sub, true)(s), containsFold(s, sub); got != want {
			t.Fatalf("iContains %q in %q: %v, want %v", sub, s, got, want)
		}
	}
}
