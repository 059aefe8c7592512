package gen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// QuerySet holds the query files of a dataset, n queries of each class.
type QuerySet struct {
	// Exact are vocabulary words of at least 3 letters, drawn as the text
	// draws them, as distinct as the draw allows.
	Exact []string
	// Typo1 and Typo2 are words of at least 5 and 9 letters with 1 and 2
	// edits (substitution, insertion or deletion: the Levenshtein distance
	// is exactly 1 or 2), none of which is itself a vocabulary word.
	Typo1, Typo2 []Typo
	// Prefix are the first 1, 2 or 3 letters of drawn words, in turn.
	Prefix []string
	// Phrase are 2 to 4 consecutive words of the body of a random doc, so
	// each occurs in the dataset at least once.
	Phrase []string
	// Filter is a mix of filter and sort bodies, by kind in turn.
	Filter []FilterQuery
}

// Typo is a misspelt query and the word it misspells.
type Typo struct {
	Query, Word string
}

// FilterQuery is the filter and sort of a query request, as JSON.
type FilterQuery struct {
	// Kind names the shape of the query (see filterKinds).
	Kind string `json:"kind"`
	// Filter is a filter object.
	Filter json.RawMessage `json:"filter"`
	// Sort is a sort object, or null for the default order.
	Sort json.RawMessage `json:"sort"`
}

// Query classes, each with its own random stream.
const (
	classExact = iota
	classTypo1
	classTypo2
	classPrefix
	classPhrase
	classFilter
)

// Queries returns n queries of each class. Phrases need docs: with N = 0
// there are none.
func (g *Gen) Queries(n int) QuerySet {
	var q QuerySet
	r := g.rng(streamQueries, classExact)
	q.Exact = g.distinctWords(r, n, 3)

	r = g.rng(streamQueries, classTypo1)
	for _, w := range g.distinctWords(r, n, 5) {
		q.Typo1 = append(q.Typo1, Typo{Query: g.misspell(r, w, 1), Word: w})
	}
	r = g.rng(streamQueries, classTypo2)
	for _, w := range g.distinctWords(r, n, 9) {
		q.Typo2 = append(q.Typo2, Typo{Query: g.misspell(r, w, 2), Word: w})
	}

	r = g.rng(streamQueries, classPrefix)
	words := g.wordDraw(r)
	for i := range n {
		k := 1 + i%3
		w := g.words[words.Uint64()]
		for len(w) <= k {
			w = g.words[words.Uint64()]
		}
		q.Prefix = append(q.Prefix, w[:k])
	}

	r = g.rng(streamQueries, classPhrase)
	for range n {
		if g.n == 0 {
			break
		}
		body := strings.Fields(g.Doc(r.IntN(g.n))["body"].(string))
		k := 2 + r.IntN(3)
		at := r.IntN(len(body) - k + 1)
		q.Phrase = append(q.Phrase, strings.Join(body[at:at+k], " "))
	}

	r = g.rng(streamQueries, classFilter)
	for i := range n {
		kind := filterKinds[i%len(filterKinds)]
		filter, sort := kind.make(g, r)
		q.Filter = append(q.Filter, FilterQuery{Kind: kind.name, Filter: mustJSON(filter), Sort: mustJSON(sort)})
	}
	return q
}

// distinctWords draws n words of at least minLen letters, each new to the
// list when 100 draws can find one.
func (g *Gen) distinctWords(r *rand.Rand, n, minLen int) []string {
	words := g.wordDraw(r)
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for range n {
		var w string
		for try := 0; ; try++ {
			w = g.words[words.Uint64()]
			if len(w) >= minLen && (!seen[w] || try >= 100) {
				break
			}
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// misspell applies k random edits to w until the result is at Levenshtein
// distance k from w and not a vocabulary word. It gives up after 1000 tries
// and returns the last attempt, which then may fall short.
func (g *Gen) misspell(r *rand.Rand, w string, k int) string {
	var q string
	for range 1000 {
		b := []byte(w)
		for range k {
			letter := byte('a' + r.IntN(26))
			switch r.IntN(3) {
			case 0:
				b[r.IntN(len(b))] = letter
			case 1:
				b = slices.Insert(b, r.IntN(len(b)+1), letter)
			default:
				at := r.IntN(len(b))
				b = slices.Delete(b, at, at+1)
			}
		}
		q = string(b)
		if Levenshtein(q, w) == k && !g.vocab[q] {
			break
		}
	}
	return q
}

// Levenshtein returns the edit distance of two ASCII strings (insertions,
// deletions and substitutions each cost 1).
func Levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// obj is a JSON object under construction.
type obj = map[string]any

// filterKind makes one shape of filter+sort query with random parameters;
// a nil sort means the default order.
type filterKind struct {
	name string
	make func(g *Gen, r *rand.Rand) (filter, sort any)
}

// filterKinds are the shapes of the filter mix, in the order they recur.
var filterKinds = []filterKind{
	{"eq", func(g *Gen, r *rand.Rand) (any, any) {
		return obj{"category": randCategory(r)}, nil
	}},
	{"range", func(g *Gen, r *rand.Rand) (any, any) {
		// 5% of docs.
		q := 0.05 + 0.85*r.Float64()
		return obj{"price": obj{"$ge": PriceQuantile(q), "$lt": PriceQuantile(q + 0.05)}}, nil
	}},
	{"eq-sort", func(g *Gen, r *rand.Rand) (any, any) {
		return obj{"category": randCategory(r), "active": true}, obj{"created_at": "desc"}
	}},
	{"ranges-sort", func(g *Gen, r *rand.Rand) (any, any) {
		p, rt, d := r.Float64()*0.5, float64(r.IntN(26))/10, r.Float64()*0.6
		return obj{
			"price":      obj{"$ge": PriceQuantile(0.01 + p), "$lt": PriceQuantile(0.49 + p)},
			"rating":     obj{"$ge": rt, "$lt": round2(rt + 2.5)},
			"created_at": obj{"$ge": rfc3339(DateQuantile(d)), "$lt": rfc3339(DateQuantile(d + 0.4))},
		}, obj{"views": "desc"}
	}},
	{"contains", func(g *Gen, r *rand.Rand) (any, any) {
		return obj{"title": obj{"$contains": g.distinctWords(r, 1, 4)[0]}}, nil
	}},
	{"includes-sort", func(g *Gen, r *rand.Rand) (any, any) {
		return obj{"tags": obj{"$includes": Tag(r.IntN(NumTags))}}, obj{"price": "asc"}
	}},
	{"link-sort", func(g *Gen, r *rand.Rand) (any, any) {
		return obj{"owner": UserID(r.IntN(100))}, obj{"created_at": "desc"}
	}},
	{"any-sort", func(g *Gen, r *rand.Rand) (any, any) {
		return obj{"$any": []any{
			obj{"category": randCategory(r)},
			obj{"views": obj{"$ge": 1000 + r.IntN(9000)}},
		}}, []any{obj{"rating": "desc"}, obj{"created_at": "asc"}}
	}},
}

// randCategory draws a category with the docs' own frequencies.
func randCategory(r *rand.Rand) string {
	return Categories[rand.NewZipf(r, 1.2, 1, uint64(len(Categories)-1)).Uint64()]
}

func rfc3339(t time.Time) string { return t.Format(time.RFC3339) }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("gen: marshal %v: %v", v, err))
	}
	return b
}

// WriteFiles writes the set into dir, which it creates: exact.txt,
// prefix.txt and phrase.txt one query a line; typo1.tsv and typo2.tsv
// "query<TAB>word"; filter.jsonl one FilterQuery a line.
func (q QuerySet) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lines := func(name string, n int, line func(i int) string) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		w := bufio.NewWriter(f)
		for i := range n {
			w.WriteString(line(i))
			w.WriteByte('\n')
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	typo := func(t []Typo) func(int) string {
		return func(i int) string { return t[i].Query + "\t" + t[i].Word }
	}
	for _, err := range []error{
		lines("exact.txt", len(q.Exact), func(i int) string { return q.Exact[i] }),
		lines("typo1.tsv", len(q.Typo1), typo(q.Typo1)),
		lines("typo2.tsv", len(q.Typo2), typo(q.Typo2)),
		lines("prefix.txt", len(q.Prefix), func(i int) string { return q.Prefix[i] }),
		lines("phrase.txt", len(q.Phrase), func(i int) string { return q.Phrase[i] }),
		lines("filter.jsonl", len(q.Filter), func(i int) string { return string(mustJSON(q.Filter[i])) }),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}
