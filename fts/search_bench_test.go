package fts

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coppice-db/coppice/bench"
	"github.com/coppice-db/coppice/codec"
)

// Search benchmarks on a table held in memory (memSource), drawn as the
// benchmark dataset of bench/gen draws its docs: titles of 3–8 and bodies
// of 30–200 words, Zipf over a real word list (the system's, after the
// shipped common words), 1–5 of 200 tags. Without storage they time the
// search itself: lookups, scoring, pruning, the k best. Each op runs one
// query of a class both pruned and exhaustively, in turn, so the ratio of
// the two comes from one run. Sizes 1e4 and 1e5, and 1e6 when
// COPPICE_BENCH_MAX allows.

// benchMaxEnv names the variable that sets the largest corpus size.
const benchMaxEnv = "COPPICE_BENCH_MAX"

// benchSizes returns the corpus sizes to run.
func benchSizes(b *testing.B) []int {
	top := 100_000
	if s := os.Getenv(benchMaxEnv); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			b.Fatalf("%s=%q: want a size like 1000000", benchMaxEnv, s)
		}
		top = int(f)
	}
	var out []int
	for _, n := range []int{1e4, 1e5, 1e6} {
		if n <= top {
			out = append(out, n)
		}
	}
	return out
}

// benchVocab is the vocabulary of the corpus, most frequent first: the
// shipped common words, then the system's word list, each shuffled.
var benchVocab = sync.OnceValue(func() []string {
	r := rand.New(rand.NewPCG(11, 12))
	clean := func(text string) []string {
		var out []string
		for line := range strings.Lines(text) {
			w := strings.TrimSpace(line)
			if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") == "" {
				out = append(out, w)
			}
		}
		slices.Sort(out)
		out = slices.Compact(out)
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	head := clean(bench.Words)
	seen := map[string]bool{}
	for _, w := range head {
		seen[w] = true
	}
	words := head
	if b, err := os.ReadFile("/usr/share/dict/words"); err == nil {
		for _, w := range clean(string(b)) {
			if !seen[w] {
				words = append(words, w)
			}
		}
	}
	return words
})

// benchCorpus is a generated table and its query classes.
type benchCorpus struct {
	src     *memSource
	classes []benchClass
}

// benchClass is a class of queries and how they are searched.
type benchClass struct {
	name    string
	queries []string
	fuzz    float64
	prefix  string
}

var benchCorpora = map[int]*benchCorpus{}

// getBenchCorpus generates the corpus of n docs once.
func getBenchCorpus(b *testing.B, n int) *benchCorpus {
	if c := benchCorpora[n]; c != nil {
		return c
	}
	b.StopTimer()
	defer b.StartTimer()
	t0 := time.Now()
	vocab := benchVocab()
	inVocab := make(map[string]bool, len(vocab))
	for _, w := range vocab {
		inVocab[w] = true
	}
	r := rand.New(rand.NewPCG(1, uint64(n)))
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1))
	draw := func() string { return vocab[zipf.Uint64()] }
	text := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = draw()
		}
		return strings.Join(ws, " ")
	}
	t := corpusTable()
	rows := make([]uint32, n)
	recs := make([]*codec.Record, n)
	var bodies []string
	for i := range n {
		rec := &codec.Record{ID: fmt.Sprintf("d%08d", i), Version: 1}
		rec.Set(colTitle, codec.String(text(3+r.IntN(6))))
		body := text(30 + r.IntN(171))
		if i < 10_000 {
			bodies = append(bodies, body)
		}
		rec.Set(colBody, codec.String(body))
		tags := make([]string, 1+r.IntN(5))
		for j := range tags {
			tags[j] = fmt.Sprintf("tag%03d", r.IntN(200))
		}
		rec.Set(colTags, codec.Strings(tags))
		rows[i], recs[i] = uint32(i), rec
	}
	c := &benchCorpus{src: newMemSource(t, rows, recs)}
	words := func(minLen int) []string {
		var out []string
		seen := map[string]bool{}
		for len(out) < 50 {
			if w := draw(); len(w) >= minLen && !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
		return out
	}
	misspell := func(ws []string, k int) []string {
		out := make([]string, len(ws))
		for i, w := range ws {
			for q := w; ; q = w {
				for range k {
					q = typo(r, q)
				}
				if !inVocab[q] && editDistance(q, w) == k {
					out[i] = q
					break
				}
			}
		}
		return out
	}
	var prefixes, phrases []string
	for i := range 50 {
		w := draw()
		for len(w) <= 1+i%3 {
			w = draw()
		}
		prefixes = append(prefixes, w[:1+i%3])
		body := strings.Fields(bodies[r.IntN(len(bodies))])
		k := 2 + r.IntN(3)
		at := r.IntN(len(body) - k + 1)
		phrases = append(phrases, strings.Join(body[at:at+k], " "))
	}
	exact := words(3)
	c.classes = []benchClass{
		{"exact", exact, 0, "disabled"},
		{"exact-f1", exact, 1, "disabled"},
		{"typo1", misspell(words(5), 1), 1, "disabled"},
		{"typo2", misspell(words(9), 2), 2, "disabled"},
		{"prefix", prefixes, 0, "phrase"},
		{"words", phrases, 0, "disabled"},
		{"words-f1", phrases, 1, "disabled"},
		{"phrase", phrases, 0, "phrase"},
	}
	b.Logf("corpus of %d docs, %d terms, in %v", n, c.src.lex.Len(), time.Since(t0).Round(time.Millisecond))
	benchCorpora[n] = c
	return c
}

func BenchmarkSearch(b *testing.B) {
	for _, n := range benchSizes(b) {
		for _, name := range []string{"exact", "exact-f1", "typo1", "typo2", "prefix", "words", "words-f1", "phrase"} {
			b.Run(fmt.Sprintf("%.0e/%s", float64(n), name), func(b *testing.B) {
				c := getBenchCorpus(b, n)
				for _, cl := range c.classes {
					if cl.name == name {
						benchSearchClass(b, c, cl)
					}
				}
			})
		}
	}
}

// benchSearchClass runs the queries of a class in turn, top 20, each both
// pruned and exhaustively (which first alternates), and reports the
// latency quantiles of the pruned searches, their ratio to the exhaustive
// ones (x-p50, x-p99), and how many records a search matched and scored.
// Allocations count both searches.
func benchSearchClass(b *testing.B, c *benchCorpus, cl benchClass) {
	size := 20
	run := func(q string, exhaustive bool) (*Ranking, time.Duration) {
		t0 := time.Now()
		query, err := NewQuery(Settings{Query: &q, Fuzziness: &cl.fuzz, Prefix: &cl.prefix, Size: &size, Exhaustive: exhaustive})
		if err != nil {
			b.Fatal(err)
		}
		r, err := Search(context.Background(), c.src, query, TableRequest{}, size)
		if err != nil {
			b.Fatal(err)
		}
		return r, time.Since(t0)
	}
	for _, q := range cl.queries {
		run(q, false)
	}
	var pruned, full []time.Duration
	var matched, scored uint64
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		q := cl.queries[i%len(cl.queries)]
		var r *Ranking
		var d, e time.Duration
		if i%2 == 0 {
			r, d = run(q, false)
			_, e = run(q, true)
		} else {
			_, e = run(q, true)
			r, d = run(q, false)
		}
		pruned, full = append(pruned, d), append(full, e)
		matched += uint64(r.Total)
		scored += r.scored
	}
	b.StopTimer()
	p50, p99 := quantile(pruned, 0.5), quantile(pruned, 0.99)
	b.ReportMetric(p50, "p50-ns")
	b.ReportMetric(p99, "p99-ns")
	b.ReportMetric(quantile(full, 0.5)/p50, "x-p50")
	b.ReportMetric(quantile(full, 0.99)/p99, "x-p99")
	b.ReportMetric(float64(matched)/float64(b.N), "matches")
	b.ReportMetric(float64(scored)/float64(b.N), "scored")
}

// quantile returns the q-quantile of d in nanoseconds (nearest rank).
func quantile(d []time.Duration, q float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[int(math.Ceil(q*float64(len(s))))-1])
}
