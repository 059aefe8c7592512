package fts

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// TestLexicon compares every lookup of a lexicon (an automaton plus added
// terms, then compacted) with a scan of all its terms.
func TestLexicon(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	word := func() string {
		const letters = "abcdeé"
		r := []rune(letters)
		var b strings.Builder
		for range 1 + rng.Intn(6) {
			b.WriteRune(r[rng.Intn(len(r))])
		}
		return b.String()
	}
	var base, added []string
	for range 300 {
		base = append(base, word())
	}
	d, err := BuildDict(base)
	if err != nil {
		t.Fatal(err)
	}
	lex := NewLexicon(d)
	all := map[string]bool{}
	for _, w := range base {
		all[w] = true
	}
	for round := range 3 {
		added = added[:0]
		for range 50 {
			added = append(added, word())
		}
		lex = lex.With(added)
		for _, w := range added {
			all[w] = true
		}
		if round == 2 {
			if lex, err = lex.Compact(); err != nil {
				t.Fatal(err)
			}
			if lex.Pending() != 0 {
				t.Fatalf("compacted lexicon has %d pending terms", lex.Pending())
			}
		}
		if lex.Len() != len(all) {
			t.Fatalf("round %d: %d terms, want %d", round, lex.Len(), len(all))
		}
		for range 200 {
			q := word()
			if lex.Has(q) != all[q] {
				t.Fatalf("Has(%q) = %v", q, lex.Has(q))
			}
			var wantPrefix []string
			for w := range all {
				if strings.HasPrefix(w, q) {
					wantPrefix = append(wantPrefix, w)
				}
			}
			slices.Sort(wantPrefix)
			if got := terms(lex.Prefix(q, 0)); !slices.Equal(got, wantPrefix) {
				t.Fatalf("Prefix(%q) = %v, want %v", q, got, wantPrefix)
			}
			if len(wantPrefix) > 2 {
				if got := terms(lex.Prefix(q, 2)); !slices.Equal(got, wantPrefix[:2]) {
					t.Fatalf("Prefix(%q, 2) = %v, want %v", q, got, wantPrefix[:2])
				}
			}
			for dist := range 3 {
				k := Edits(q, dist)
				var want []string
				for w := range all {
					if d := editDistance(q, w); d <= k {
						want = append(want, fmt.Sprintf("%d:%s", d, w))
					}
				}
				slices.Sort(want)
				var got []string
				for _, m := range lex.Fuzzy(q, dist, 0) {
					got = append(got, fmt.Sprintf("%d:%s", m.Dist, m.Term))
				}
				if !slices.Equal(got, want) {
					t.Fatalf("round %d Fuzzy(%q, %d) = %v, want %v", round, q, dist, got, want)
				}
			}
		}
	}
}

func terms(ms []Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Term
	}
	return out
}
