package fts

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

var pruneSeed0 = flag.Uint64("prune.seed", 0, "seed of TestPruneDifferential (0: time)")

// Columns of the test corpus.
const (
	colTitle = iota + 1
	colBody
	colTags
	colN
	colPrice
	colAt
)

// corpusTable is the table of the test corpus: text to search, and
// numbers and dates to filter and boost by.
func corpusTable() *index.Table {
	t := &index.Table{ID: 1, Name: "docs", Columns: map[string]*index.Column{}, Meta: "svc"}
	for _, c := range []*index.Column{
		{Path: "title", ID: colTitle, Type: index.TypeString},
		{Path: "body", ID: colBody, Type: index.TypeText},
		{Path: "tags", ID: colTags, Type: index.TypeMultiple},
		{Path: "n", ID: colN, Type: index.TypeInt},
		{Path: "price", ID: colPrice, Type: index.TypeFloat},
		{Path: "at", ID: colAt, Type: index.TypeDatetime},
	} {
		t.Columns[c.Path] = c
		t.Leaves = append(t.Leaves, c)
	}
	return t
}

// corpus is a generated table and the words it was written with, most
// frequent first.
type corpus struct {
	src   *memSource
	words []string
	draw  func() string // a word, drawn as the texts draw them
	texts []string      // the bodies, for phrases
}

// corpusEpoch is the middle of the corpus's dates.
var corpusEpoch = time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)

// newCorpus writes n records of Zipf-drawn words (as the benchmark
// dataset draws them, so that a few words occur in most records and most
// in few) at scattered rows, some fields missing or empty.
func newCorpus(seed uint64, n, vocab int) *corpus {
	r := rand.New(rand.NewPCG(seed, 7))
	words := randomWords(seed, vocab)
	r.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(words)-1))
	c := &corpus{words: words, draw: func() string { return words[zipf.Uint64()] }}
	text := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = c.draw()
			if r.IntN(10) == 0 {
				ws[i] = strings.ToUpper(ws[i][:1]) + ws[i][1:]
			}
		}
		return strings.Join(ws, " ")
	}
	var rows []uint32
	var recs []*codec.Record
	row := uint32(r.IntN(50))
	for i := range n {
		rec := &codec.Record{ID: fmt.Sprintf("d%06d", r.IntN(10*n)), Version: 1}
		if r.IntN(8) > 0 {
			rec.Set(colTitle, codec.String(text(1+r.IntN(7))))
		} else if r.IntN(20) == 0 {
			rec.Set(colTitle, codec.String(""))
		}
		if r.IntN(10) > 0 {
			body := text(20 + r.IntN(100))
			rec.Set(colBody, codec.String(body))
			c.texts = append(c.texts, body)
		}
		if k := r.IntN(4); k > 0 {
			tags := make([]string, k)
			for j := range tags {
				tags[j] = text(1 + r.IntN(2))
			}
			rec.Set(colTags, codec.Strings(tags))
		}
		rec.Set(colN, codec.Int(int64(r.IntN(10))))
		if r.IntN(5) > 0 {
			rec.Set(colPrice, codec.Float(math.Round(math.Exp(r.NormFloat64()*1.5)*100)/100))
		}
		if r.IntN(6) > 0 {
			rec.Set(colAt, codec.Datetime(corpusEpoch.Add(time.Duration(r.Int64N(int64(2*365*24*time.Hour)))-365*24*time.Hour)))
		}
		rec.ID = fmt.Sprintf("%s-%d", rec.ID, i) // unique, in no relation to rows
		rows = append(rows, row)
		recs = append(recs, rec)
		row += 1 + uint32(r.IntN(3))
	}
	c.src = newMemSource(corpusTable(), rows, recs)
	return c
}

// searchCase is one randomized search of a corpus.
type searchCase struct {
	s     Settings
	req   TableRequest
	k     int
	noIDs bool
	// seed sets how many rows the first pruning threshold is drawn from,
	// small for small tables; force prunes whatever the postings' sizes.
	seed  int
	force bool
	// phraseStop, when set, stops a phrase check after that many rows
	// hold the phrase, as MaxTotalCount does on large tables.
	phraseStop uint64
	desc       string
}

// randomCase draws a search: one to four words, some misspelt, any
// fuzziness; plain, a prefix, or a phrase from a body; with or without a
// target, a filter and boosters; a page from the first to deep.
func (c *corpus) randomCase(r *rand.Rand) searchCase {
	var words []string
	for range 1 + r.IntN(4) {
		w := c.draw()
		if r.IntN(4) == 0 {
			w = typo(r, w)
		}
		words = append(words, w)
	}
	prefix := "disabled"
	switch r.IntN(6) {
	case 0: // a prefix of a word
		w := []rune(c.draw())
		words = []string{string(w[:1+r.IntN(min(3, len(w)))])}
		prefix = "phrase"
	case 1: // a phrase from a body, its last word cut short at times
		body := strings.Fields(c.texts[r.IntN(len(c.texts))])
		k := min(len(body), 2+r.IntN(2))
		at := r.IntN(len(body) - k + 1)
		words = body[at : at+k]
		if last := []rune(words[k-1]); r.IntN(2) == 0 && len(last) > 2 {
			words = append(words[:k-1:k-1], string(last[:2+r.IntN(len(last)-2)]))
		}
		prefix = "phrase"
	}
	query := strings.Join(words, " ")
	fuzz := float64(r.IntN(3))
	size, offset := 1+r.IntN(40), 0
	if r.IntN(4) == 0 {
		offset = r.IntN(200)
	}
	sc := searchCase{s: Settings{Query: &query, Fuzziness: &fuzz, Prefix: &prefix, Size: &size, Offset: &offset, Now: corpusEpoch},
		k: size + offset, noIDs: r.IntN(8) == 0, seed: 16 << r.IntN(4), force: r.IntN(4) > 0}
	if r.IntN(2) == 0 {
		sc.phraseStop = uint64(1 + r.IntN(20))
	}
	if r.IntN(3) == 0 {
		for _, col := range []string{"title", "body", "tags", "*"} {
			if r.IntN(2) == 0 {
				sc.req.Target = append(sc.req.Target, Target{Column: col, Weight: float64(1 + r.IntN(10))})
			}
		}
	}
	filters := []string{
		`{"n": %d}`, `{"n": {"$ge": %d}}`, `{"$any": [{"n": %d}, {"price": {"$lt": 2}}]}`, `{"$not": {"n": %d}}`,
	}
	var filter string
	if r.IntN(3) == 0 {
		filter = fmt.Sprintf(filters[r.IntN(len(filters))], r.IntN(10))
		f, err := index.ReadFilter([]byte(filter))
		if err != nil {
			panic(err)
		}
		sc.req.Filter = f
	}
	if r.IntN(3) == 0 {
		sc.req.Boosters = randomBoosters(r, c)
	}
	sc.desc = fmt.Sprintf("%q fuzziness %v prefix %s k %d (offset %d) target %v filter %s boosters %d noIDs %v phrase stop %d",
		query, fuzz, prefix, sc.k, offset, sc.req.Target, filter, len(sc.req.Boosters), sc.noIDs, sc.phraseStop)
	return sc
}

// randomBoosters draws one to three boosters of every kind, some of which
// subtract, some conditional.
func randomBoosters(r *rand.Rand, c *corpus) []Booster {
	factor := func(lo, hi float64) *float64 {
		f := lo + r.Float64()*(hi-lo)
		return &f
	}
	var out []Booster
	for range 1 + r.IntN(3) {
		var b Booster
		var cond index.Filter
		if r.IntN(3) == 0 {
			cond, _ = index.ReadFilter(fmt.Appendf(nil, `{"n": {"$lt": %d}}`, r.IntN(10)))
		}
		switch r.IntN(4) {
		case 0:
			b.ValueBooster = &ValueBooster{Column: "n", Value: int64(r.IntN(10)), Factor: factor(-2, 6), IfMatchesFilter: cond}
		case 1:
			b.ValueBooster = &ValueBooster{Column: "tags", Value: c.draw(), Factor: factor(0, 4), IfMatchesFilter: cond}
		case 2:
			mods := []string{"", "none", "log", "log1p", "ln", "ln1p", "square", "sqrt", "reciprocal"}
			col := []string{"n", "price"}[r.IntN(2)]
			b.NumericBooster = &NumericBooster{Column: col, Factor: factor(-1.5, 3), Modifier: mods[r.IntN(len(mods))], IfMatchesFilter: cond}
		default:
			scales := []string{"1d", "30d", "12h", "90m"}
			b.DateBooster = &DateBooster{Column: "at", Scale: scales[r.IntN(len(scales))], Decay: factor(0, 1), Factor: factor(0, 5), IfMatchesFilter: cond}
			if r.IntN(2) == 0 {
				b.DateBooster.Origin = corpusEpoch.Add(time.Duration(r.IntN(100)-50) * 24 * time.Hour).Format(time.RFC3339)
			}
		}
		out = append(out, b)
	}
	return out
}

// run searches the corpus for a case, pruned or exhaustive.
func (c *corpus) run(t testing.TB, sc searchCase, exhaustive bool) *Ranking {
	t.Helper()
	s := sc.s
	s.Exhaustive = exhaustive
	q, err := NewQuery(s)
	if err != nil {
		t.Fatalf("%s: %v", sc.desc, err)
	}
	q.seed, q.force, q.phraseStop = sc.seed, sc.force, sc.phraseStop
	c.src.noIDs = sc.noIDs
	r, err := Search(context.Background(), c.src, q, sc.req, sc.k)
	if err != nil {
		t.Fatalf("%s: %v", sc.desc, err)
	}
	return r
}

// TestPruneDifferential compares pruned searches with exhaustive ones on
// randomized corpora and queries: the same hits in the same order with
// the same scores to the bit, the same count, warning and highlighted
// terms. Most searches must skip records, or the comparison says little.
// Phrase checks stop early at times (a small phraseStop stands for
// MaxTotalCount), and then choose the same hits from fewer checked rows.
func TestPruneDifferential(t *testing.T) {
	seed := *pruneSeed0
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (-prune.seed to repeat)", seed)
	corpora, queries, docs := 3, 300, 6000
	if testing.Short() {
		corpora, queries, docs = 2, 150, 4000
	}
	r := rand.New(rand.NewPCG(seed, 1))
	searches, pruned, matched, scored, phraseStops := 0, 0, uint64(0), uint64(0), 0
	for i := range corpora {
		c := newCorpus(seed+uint64(i), docs, 1500+r.IntN(3000))
		for range queries {
			sc := c.randomCase(r)
			want, got := c.run(t, sc, true), c.run(t, sc, false)
			// A phrase check that stopped counts at least the rows it
			// stopped at.
			stopped := *sc.s.Prefix == "phrase" && sc.phraseStop > 0 && uint64(want.Total) > sc.phraseStop
			totalOK := got.Total == want.Total || stopped && uint64(got.Total) >= sc.phraseStop && got.Total < want.Total
			if !totalOK || got.Warning != want.Warning {
				t.Fatalf("%s: total %d warning %q, exhaustive %d %q", sc.desc, got.Total, got.Warning, want.Total, want.Warning)
			}
			if len(got.Hits) != len(want.Hits) {
				t.Fatalf("%s: %d hits, exhaustive %d", sc.desc, len(got.Hits), len(want.Hits))
			}
			for j := range got.Hits {
				g, w := got.Hits[j], want.Hits[j]
				if g.Row != w.Row || math.Float64bits(g.Score) != math.Float64bits(w.Score) {
					t.Fatalf("%s: hit %d is row %d score %v, exhaustive row %d score %v", sc.desc, j, g.Row, g.Score, w.Row, w.Score)
				}
			}
			if !reflect.DeepEqual(got.found, want.found) {
				t.Fatalf("%s: found %v, exhaustive %v", sc.desc, got.found, want.found)
			}
			if stopped {
				// The stopped check scores every row it did not check:
				// not pruning.
				phraseStops++
				continue
			}
			searches++
			if got.scored < want.scored {
				pruned++
			}
			matched += want.scored
			scored += got.scored
		}
	}
	t.Logf("%d searches, %d pruned; %d rows scored of %d matched; %d phrase checks stopped", searches, pruned, scored, matched, phraseStops)
	if phraseStops < 3 {
		t.Fatalf("only %d phrase checks stopped early: the stop is hardly tested", phraseStops)
	}
	if pruned < searches/4 || scored*3 > matched*2 {
		t.Fatalf("pruning skipped too little to be tested: %d of %d searches, %d of %d rows scored", pruned, searches, scored, matched)
	}
}

// TestPruneRowBounds: the rows of a tier that pruning cannot skip
// whole are skipped one by one when their scores so far, and the most
// the other tiers may add, stay below the threshold. Here the few short
// records of common words promise a score their long ones do not reach.
func TestPruneRowBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var rows []uint32
	var recs []*codec.Record
	for i := range 4000 {
		words := make([]string, 100+r.IntN(50))
		if r.IntN(50) == 0 {
			words = words[:3]
		}
		for j := range words {
			words[j] = fmt.Sprintf("w%d", r.IntN(5000))
		}
		for _, w := range []struct {
			term string
			in   int // per thousand records
		}{{"gamma", 10}, {"alpha", 100}, {"beta", 100}, {"delta", 400}} {
			if r.IntN(1000) < w.in {
				words[r.IntN(len(words))] = w.term
			}
		}
		rec := &codec.Record{ID: fmt.Sprintf("d%06d", i), Version: 1}
		rec.Set(colBody, codec.String(strings.Join(words, " ")))
		rows, recs = append(rows, uint32(i)), append(recs, rec)
	}
	c := &corpus{src: newMemSource(corpusTable(), rows, recs)}
	query, fuzz, prefix := "gamma alpha beta delta", 0.0, "disabled"
	for _, k := range []int{5, 20} {
		sc := searchCase{s: Settings{Query: &query, Fuzziness: &fuzz, Prefix: &prefix}, k: k, seed: 16, force: true,
			desc: fmt.Sprintf("%q k %d", query, k)}
		want, got := c.run(t, sc, true), c.run(t, sc, false)
		if len(got.Hits) != len(want.Hits) {
			t.Fatalf("%s: %d hits, exhaustive %d", sc.desc, len(got.Hits), len(want.Hits))
		}
		for j := range got.Hits {
			if g, w := got.Hits[j], want.Hits[j]; g != w {
				t.Fatalf("%s: hit %d is %+v, exhaustive %+v", sc.desc, j, g, w)
			}
		}
		// The essential tiers hold over 400 rows; those that may reach
		// the k best, a few more than k.
		if got.scored > uint64(10*k+100) {
			t.Errorf("%s: %d rows scored of %d matched", sc.desc, got.scored, want.Total)
		}
	}
}
