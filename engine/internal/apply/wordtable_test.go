package apply

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestWordTableMatchesMap adds and finds strings in a wordTable and a
// map side by side: short and long ones, ones sharing their first 8
// bytes, ones that differ by length only, the empty string, and enough to
// make the table grow several times.
func TestWordTableMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var pool []string
	for range 3000 {
		n := r.IntN(24)
		var sb strings.Builder
		for range n {
			sb.WriteByte("abc\x00é"[r.IntN(5)])
		}
		pool = append(pool, sb.String())
	}
	pool = append(pool, "", "abcdefgh", "abcdefghi", "abcdefghij", "abcdefgx", "abcdefg", "abcdefg\x00", strings.Repeat("a", 300), strings.Repeat("a", 301))
	tab := newWordTable(4)
	var strs []string
	var words []wordPostings
	want := map[string]int32{}
	for range 20000 {
		s := pool[r.IntN(len(pool))]
		if r.IntN(10) == 0 {
			s = pool[len(pool)-1-r.IntN(9)]
		}
		idx, head, added := tab.index(s, words, strs)
		w, ok := want[s]
		if ok == added || ok && idx != w {
			t.Fatalf("%q: index %d, added %v; the map says %d, %v", s, idx, added, w, ok)
		}
		if added {
			if idx != int32(len(strs)) {
				t.Fatalf("%q added as %d, want %d", s, idx, len(strs))
			}
			want[s] = idx
			strs = append(strs, s)
			words = append(words, wordPostings{head: head})
		}
	}
	if len(strs) != len(want) || tab.n != len(want) || len(tab.slots) < 2*tab.n {
		t.Fatalf("%d strings, %d in the table of %d slots; the map holds %d", len(strs), tab.n, len(tab.slots), len(want))
	}
}
