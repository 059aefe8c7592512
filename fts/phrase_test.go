package fts

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPhraseFilter checks the quick test run before a text is tokenized
// against the check itself: on random texts (mixed case, punctuation,
// accented and non-Latin words, over-long runs) and random phrases with
// typo variants and completions, every text that holds the phrase passes
// the filter. Texts that lack a word must be turned away, or the filter
// saves nothing. The checks that read the words of an ASCII text where
// they lie, without tokenizing it (around an anchor word's occurrences,
// and word by word), say what the tokens say.
func TestPhraseFilter(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vocab := []string{"to", "tot", "toll", "tolls", "atoll", "of", "off", "the", "then", "them",
		"café", "cafe", "東", "naïve", "naive", "x1", "b2b", strings.Repeat("z", MaxTokenBytes+1)}
	seps := []string{" ", "  ", ", ", "-", ".", "\n", "'", "@"}
	text := func() string {
		var b strings.Builder
		for i := range 1 + r.IntN(12) {
			if i > 0 {
				b.WriteString(seps[r.IntN(len(seps))])
			}
			w := vocab[r.IntN(len(vocab))]
			if r.IntN(4) == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			b.WriteString(w)
		}
		return b.String()
	}
	var held, turned int
	for range 300 {
		// A phrase of 2 to 3 words, each with a few terms as a fuzzy
		// lookup finds them; the last word completed at times.
		n := 2 + r.IntN(2)
		x := &scorer{q: &Query{phrase: true}, words: make([][]expansion, n)}
		sets := make([]map[string]bool, n)
		for i := range n {
			w := vocab[r.IntN(len(vocab))]
			x.q.words = append(x.q.words, Fold(w))
			sets[i] = map[string]bool{}
			for range 1 + r.IntN(3) {
				term := Fold(vocab[r.IntN(len(vocab))])
				x.words[i] = append(x.words[i], expansion{term: term, dist: 1})
				sets[i][term] = true
			}
			if i == n-1 && r.IntN(2) == 0 {
				for _, v := range vocab {
					if term := Fold(v); strings.HasPrefix(term, Fold(w)) {
						x.words[i] = append(x.words[i], expansion{term: term, completion: true})
						sets[i][term] = true
					}
				}
			}
		}
		f := x.phraseFilter()
		f.sets = sets
		for range 200 {
			s := text()
			if r.IntN(3) == 0 {
				// Plant the phrase, with terms of its words.
				var ws []string
				for i := range n {
					ws = append(ws, x.words[i][r.IntN(len(x.words[i]))].term)
				}
				s += " " + strings.Join(ws, seps[r.IntN(3)]) + " " + text()
			}
			holds := holdsPhrase(AppendTokens(nil, s), sets)
			admitted := f.admits(s)
			if holds && !admitted {
				t.Fatalf("%q holds the phrase of %v but the filter turns it away", s, x.words)
			}
			if got := f.holds(s); got != holds {
				t.Fatalf("%q: the check around the anchor says %v for the phrase of %v, the tokens %v", s, got, x.words, holds)
			}
			anchor := f.anchor
			f.anchor = -1
			if got := f.holds(s); got != holds {
				t.Fatalf("%q: the check of the words says %v for the phrase of %v, the tokens %v", s, got, x.words, holds)
			}
			f.anchor = anchor
			if holds {
				held++
			}
			if !admitted {
				turned++
			}
		}
	}
	if held == 0 || turned == 0 {
		t.Fatalf("%d texts held their phrase, %d were turned away: the test tests nothing", held, turned)
	}
}
