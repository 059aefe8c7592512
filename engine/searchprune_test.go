package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"
)

// pruneWords makes a vocabulary of n words with near neighbours (shared
// syllables), so that typos and prefixes find several terms.
func pruneWords(rng *rand.Rand, n int) []string {
	syl := []string{"ba", "ce", "di", "fo", "gu", "ka", "le", "mi", "no", "pu", "ra", "se", "ti", "vo", "za", "er", "an", "st", "ö", "ç"}
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b strings.Builder
		for range 1 + rng.Intn(4) {
			b.WriteString(syl[rng.Intn(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// TestSearchPruningDifferential loads a few thousand records whose words
// are drawn with Zipf frequencies (a few in most records, most in few), on
// main and, after a fork and more writes, on a child whose postings span
// two layers; then compares randomized searches (several words, typos,
// prefixes, phrases, targets, filters, boosters, pages) run as usual with
// the same searches scored exhaustively: the same records in the same
// order with the same scores to the bit, the same count, warning and
// highlights.
func TestSearchPruningDifferential(t *testing.T) {
	seed := *searchSeed
	if seed == 0 {
		seed = rand.Int63()
	}
	t.Logf("seed %d (-search.seed to repeat)", seed)
	rng := rand.New(rand.NewSource(seed))
	docs, queries := 9000, 150
	if testing.Short() {
		docs, queries = 6000, 60
	}
	words := pruneWords(rng, 600)
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(words)-1))
	text := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[zipf.Uint64()]
		}
		return strings.Join(ws, " ")
	}
	doc := func() map[string]any {
		d := map[string]any{"title": text(2 + rng.Intn(6)), "body": text(20 + rng.Intn(80)), "n": json.Number(fmt.Sprint(rng.Intn(10)))}
		if rng.Intn(3) > 0 {
			d["tags"] = []any{text(1), text(1 + rng.Intn(2))}
		}
		return d
	}
	e, main := recFixture(t, searchTables)
	load := func(ref Ref, from, n int) {
		for at := from; at < from+n; at += MaxBulkRecords {
			var batch []map[string]any
			for i := at; i < min(at+MaxBulkRecords, from+n); i++ {
				d := doc()
				d["id"] = fmt.Sprintf("p%05d", i)
				batch = append(batch, d)
			}
			if _, err := e.BulkInsert(ctx, ref, "docs", batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	load(main, 0, docs)
	for range 200 { // holes and rewritten records
		id := fmt.Sprintf("p%05d", rng.Intn(docs))
		op := Op{Kind: OpDelete, Table: "docs", ID: id}
		if rng.Intn(2) == 0 {
			op = Op{Kind: OpInsert, Table: "docs", ID: id, Values: doc()}
		}
		if _, err := e.WriteOne(main, op); err != nil && op.Kind == OpInsert {
			t.Fatal(err) // a delete may find the record deleted already
		}
	}
	child := main
	child.Branch = "child"
	if err := e.Branches().Create(child, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	load(child, docs, docs/10)

	large := 0
	for q := range queries {
		ref := main
		if q%2 == 1 {
			ref = child
		}
		in, desc := randomPruneSearch(t, rng, words, zipf)
		// One origin for date boosters without one: both searches must
		// compute the same boosts.
		now := time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC)
		exhaustive, err := e.SearchTable(ctx, ref, "docs", in, SearchOptions{Exhaustive: true, Now: now})
		if err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		got, err := e.SearchTable(ctx, ref, "docs", in, SearchOptions{Now: now})
		if err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		if got.TotalCount != exhaustive.TotalCount || got.Warning != exhaustive.Warning {
			t.Fatalf("%s on %s: total %d warning %q, exhaustive %d %q", desc, ref.Branch, got.TotalCount, got.Warning, exhaustive.TotalCount, exhaustive.Warning)
		}
		if len(got.Records) != len(exhaustive.Records) {
			t.Fatalf("%s on %s: %d records, exhaustive %d", desc, ref.Branch, len(got.Records), len(exhaustive.Records))
		}
		for i, h := range got.Records {
			w := exhaustive.Records[i]
			if h.Doc.ID != w.Doc.ID || math.Float64bits(h.Score) != math.Float64bits(w.Score) || !reflect.DeepEqual(h.Highlight, w.Highlight) {
				t.Fatalf("%s on %s: record %d is %s %v %v, exhaustive %s %v %v", desc, ref.Branch, i, h.Doc.ID, h.Score, h.Highlight, w.Doc.ID, w.Score, w.Highlight)
			}
		}
		if got.TotalCount > 4*1024 {
			large++
		}
	}
	// Pruning starts from a thousand rows: most searches must match many
	// more, or it is hardly exercised.
	if large < queries/5 {
		t.Fatalf("only %d of %d searches matched more than 4096 records", large, queries)
	}
}

// randomPruneSearch draws a search over words: one to three of them,
// Zipf-drawn (so often common), some misspelt; a prefix or a phrase at
// times; any fuzziness, target weights, a filter, boosters and page.
func randomPruneSearch(t *testing.T, rng *rand.Rand, words []string, zipf *rand.Zipf) (SearchRequest, string) {
	t.Helper()
	var ws []string
	for range 1 + rng.Intn(3) {
		w := words[zipf.Uint64()]
		if r := []rune(w); rng.Intn(5) == 0 && len(r) > 3 {
			i := rng.Intn(len(r) - 1)
			r[i], r[i+1] = r[i+1], r[i]
			w = string(r)
		}
		ws = append(ws, w)
	}
	prefix := "disabled"
	if rng.Intn(4) == 0 {
		prefix = "phrase"
		if last := []rune(ws[len(ws)-1]); len(last) > 1 && rng.Intn(2) == 0 {
			ws[len(ws)-1] = string(last[:1+rng.Intn(len(last)-1)])
		}
	}
	query := strings.Join(ws, " ")
	fuzz := float64(rng.Intn(3))
	size, offset := 1+rng.Intn(30), 0
	if rng.Intn(4) == 0 {
		offset = rng.Intn(100)
	}
	in := SearchRequest{Query: &query, Fuzziness: &fuzz, Prefix: &prefix, Size: &size, Offset: &offset}
	var target, filter, boosters []byte
	if rng.Intn(3) == 0 {
		target = fmt.Appendf(nil, `[{"column": "title", "weight": %d}, "body", {"column": "tags", "weight": %d}]`, 1+rng.Intn(10), 1+rng.Intn(10))
	}
	if rng.Intn(3) == 0 {
		filter = fmt.Appendf(nil, `{"n": {"$ge": %d}}`, rng.Intn(10))
	}
	switch rng.Intn(5) {
	case 0:
		boosters = fmt.Appendf(nil, `[{"valueBooster": {"column": "n", "value": %d, "factor": %.2f}}]`, rng.Intn(10), rng.Float64()*4-1)
	case 1:
		mods := []string{"none", "log1p", "ln1p", "square", "sqrt", "reciprocal", "log"}
		boosters = fmt.Appendf(nil, `[{"numericBooster": {"column": "n", "factor": %.2f, "modifier": %q, "ifMatchesFilter": {"n": {"$gt": 2}}}}]`,
			rng.Float64()*3, mods[rng.Intn(len(mods))])
	case 2:
		boosters = fmt.Appendf(nil, `[{"dateBooster": {"column": "svc.createdAt", "scale": "1d", "decay": %.2f, "factor": %.2f}}]`, rng.Float64(), rng.Float64()*3)
	}
	if err := readSearch(&in, target, filter, boosters); err != nil {
		t.Fatal(err)
	}
	desc := fmt.Sprintf("%q fuzziness %v prefix %s size %d offset %d target %s filter %s boosters %s", query, fuzz, prefix, size, offset, target, filter, boosters)
	return in, desc
}
