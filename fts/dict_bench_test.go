package fts

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkFuzzy looks up words with one or two typos through the automaton
// walk, then times the brute-force scan of every term on a sample of the same
// queries and reports both, so the ratio comes from one run.
func BenchmarkFuzzy(b *testing.B) {
	for _, n := range []int{1e4, 1e5} {
		words := randomWords(42, n)
		d, err := NewDict(words)
		if err != nil {
			b.Fatal(err)
		}
		for _, dist := range []int{1, 2} {
			r := rand.New(rand.NewPCG(7, uint64(dist)))
			queries := make([]string, 64)
			for i := range queries {
				q := words[r.IntN(len(words))]
				for range dist {
					q = typo(r, q)
				}
				queries[i] = q
			}
			b.Run(fmt.Sprintf("terms=%.0e/dist=%d", float64(n), dist), func(b *testing.B) {
				matches, i := 0, 0
				for b.Loop() {
					matches += len(d.Fuzzy(queries[i%len(queries)], dist, 0))
					i++
				}
				perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				const sample = 16
				start := time.Now()
				for _, q := range queries[:sample] {
					bruteFuzzy(words, q, dist, 0)
				}
				brute := float64(time.Since(start).Nanoseconds()) / sample
				b.ReportMetric(float64(matches)/float64(b.N), "matches/op")
				b.ReportMetric(brute, "brute-ns/op")
				b.ReportMetric(brute/perOp, "speedup")
			})
		}
	}
}
