package fts

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// benchText returns n words of the benchmark vocabulary with some capitals
// and punctuation, roughly a record's body.
func benchText(n int) string {
	r := rand.New(rand.NewPCG(3, 4))
	words := randomWords(5, 1000)
	var b strings.Builder
	for i := range n {
		w := words[r.IntN(len(words))]
		if i%10 == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		b.WriteString(w)
		if i%12 == 11 {
			b.WriteString(".")
		}
		b.WriteString(" ")
	}
	return b.String()
}

func BenchmarkTokenize(b *testing.B) {
	for _, n := range []int{1e1, 1e2, 1e3} {
		text := benchText(n)
		b.Run(fmt.Sprintf("words=%.0e", float64(n)), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				Tokenize(text)
			}
		})
	}
}

func BenchmarkHighlight(b *testing.B) {
	for _, n := range []int{1e1, 1e2, 1e3} {
		text := benchText(n)
		terms := Terms(text)
		match := matchTerms(terms[len(terms)/2], terms[len(terms)-1])
		b.Run(fmt.Sprintf("words=%.0e", float64(n)), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				Highlight(text, match, true)
			}
		})
	}
}
