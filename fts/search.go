package fts

// This file runs the search of one table (spec §4.1.3): the query words
// looked up in the vocabulary (typo variants and completions), BM25 over
// the postings of the candidates the filter leaves, the phrase check, the
// boosters, and the k best records. The engine hands it a Source; it reads
// nothing else.

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

// Source is what a table search reads: one table of one branch at one
// point in time, as the planner reads it (index.Source), and its text
// index. The engine implements it. Bitmaps returned are owned by the
// caller. A Source is used by one goroutine.
type Source interface {
	index.Source
	// Lexicon returns the table's vocabulary.
	Lexicon() *Lexicon
	// Lengths returns the field lengths of a searchable column; nil when
	// the column has none. They do not change while the Source is used.
	Lengths(col uint32) *FieldLengths
	// Terms returns the rows whose column col holds term, and the rows
	// holding it at least TFLevels[i] times.
	Terms(col uint32, term string) (rows *roaring.Bitmap, levels [len(TFLevels)]*roaring.Bitmap, err error)
	// Records reads the live records of rows, given in ascending order,
	// and calls fn with the index in rows of each one found, in order;
	// rec is reused between calls. It reads many rows for less than a
	// call of Record each.
	Records(rows []uint32, fn func(i int, rec *codec.Record) error) error
}

// Searchable reports whether search looks into columns of type t (json as
// plain text: keys and values). The engine indexes exactly these.
func Searchable(t index.ColumnType) bool {
	switch t {
	case index.TypeString, index.TypeText, index.TypeEmail, index.TypeMultiple, index.TypeJSON:
		return true
	}
	return false
}

// Search limits (spec §8).
const (
	DefaultSize = 25
	MaxSize     = 200
	MaxOffset   = 800
	// MaxTotalCount is where a search's totalCount stops counting.
	MaxTotalCount = 10000
	// maxFuzzyTerms and maxPrefixTerms cap the dictionary terms one query
	// word expands to.
	maxFuzzyTerms  = 64
	maxPrefixTerms = 256
)

// Settings are a search's settings as the client sent them; nil pointers
// take the defaults.
type Settings struct {
	// Query is the text searched for; nil finds nothing (an empty body).
	Query *string
	// Fuzziness is the edit distance allowed per word, 0..2 (default 1).
	Fuzziness *float64
	// Prefix is "phrase" or "disabled" (default).
	Prefix *string
	// Highlight and EncodeHTML default to true.
	Highlight  *bool
	EncodeHTML *bool
	// Size (default 25, 1..200) and Offset (default 0, 0..800) page the
	// ranked hits.
	Size, Offset *int
	// Now is the origin of date boosters without one; zero means the
	// current time.
	Now time.Time
	// Exhaustive scores every matching record instead of skipping those
	// that cannot reach the page: the same answer, slower. Tests compare
	// the two; benchmarks measure the difference.
	Exhaustive bool
}

// Query is a checked search: the words and settings shared by every table
// searched.
type Query struct {
	words      []string
	fuzziness  int
	phrase     bool
	highlight  bool
	encodeHTML bool
	now        time.Time
	exhaustive bool
	// Tests prune small tables: seed overrides pruneSeed when set, and
	// force prunes whatever the postings' sizes; phraseStop, when set, is
	// the count of rows holding a phrase past which its check stops,
	// instead of MaxTotalCount.
	seed       int
	force      bool
	phraseStop uint64
	// Size and Offset page the merged ranking.
	Size, Offset int
}

// NewQuery checks a search's settings. Errors are *index.InputError.
func NewQuery(s Settings) (*Query, error) {
	q := &Query{Size: DefaultSize, fuzziness: 1, highlight: true, encodeHTML: true, now: s.Now, exhaustive: s.Exhaustive}
	if q.now.IsZero() {
		q.now = time.Now()
	}
	if s.Query != nil {
		if *s.Query == "" {
			return nil, invalidf("query must not be empty")
		}
		for _, tok := range Tokenize(*s.Query) {
			q.words = append(q.words, tok.Term)
		}
	}
	if f := s.Fuzziness; f != nil {
		if *f != math.Trunc(*f) || *f < 0 || *f > 2 {
			return nil, invalidf("fuzziness must be 0, 1 or 2, got %v", *f)
		}
		q.fuzziness = int(*f)
	}
	if s.Prefix != nil {
		switch *s.Prefix {
		case "disabled":
		case "phrase":
			q.phrase = true
		default:
			return nil, invalidf("prefix must be phrase or disabled, got [%s]", *s.Prefix)
		}
	}
	if s.Highlight != nil {
		q.highlight = *s.Highlight
	}
	if s.EncodeHTML != nil {
		q.encodeHTML = *s.EncodeHTML
	}
	if s.Size != nil {
		if *s.Size < 1 || *s.Size > MaxSize {
			return nil, invalidf("page size must be between 1 and %d, got %d", MaxSize, *s.Size)
		}
		q.Size = *s.Size
	}
	if s.Offset != nil {
		if *s.Offset < 0 || *s.Offset > MaxOffset {
			return nil, invalidf("page offset must be between 0 and %d, got %d", MaxOffset, *s.Offset)
		}
		q.Offset = *s.Offset
	}
	return q, nil
}

// TableRequest is what a search asks of one table: the columns searched,
// the records considered and the boosters.
type TableRequest struct {
	// Target lists the columns searched; nil or empty searches every
	// searchable column.
	Target   []Target
	Filter   index.Filter
	Boosters []Booster
	// Stats, when set, receive what the search did (stats.go).
	Stats *Stats
}

// RowScore is a found record of one table: its row and score.
type RowScore struct {
	Row   uint32
	Score float64
}

// Ranking is the answer of one table: its best hits, best first (ties by
// record id), how many records matched (counted up to MaxTotalCount), and
// a warning when query words matched too many terms to search them all.
type Ranking struct {
	Hits    []RowScore
	Total   int
	Warning string

	q       *Query
	targets []target
	// found holds, by column id, the terms that matched some candidate:
	// what highlighting marks.
	found map[uint32]map[string]bool
	// scored is how many records were scored: every match unless pruning
	// skipped some.
	scored uint64
}

// Ranked is a found record as a search over several tables orders it.
type Ranked struct {
	Score     float64
	Table, ID string
}

// Before reports whether a ranks before b: a higher score first, then the
// table name, then the record id.
func (a Ranked) Before(b Ranked) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.Table != b.Table {
		return a.Table < b.Table
	}
	return a.ID < b.ID
}

// target is a searched column and its weight.
type target struct {
	col    *index.Column
	weight float64
}

// expansion is a dictionary term a query word matched, and how.
type expansion struct {
	term       string
	dist       int
	completion bool
}

// Search runs q on the table of src and returns its k best hits; the
// filter and the boosters name the meta columns under the table's Meta.
// A request that does not fit the table is an *index.InputError; it stops
// with ctx's error when ctx ends.
//
// The matches and their count come from the postings alone (and, for a
// phrase, from reading the records that hold every word). Scores are
// computed for the records that may reach the k best (see prune.go), or
// for every match when q is exhaustive: both give the same hits and scores.
func Search(ctx context.Context, src Source, q *Query, req TableRequest, k int) (*Ranking, error) {
	t := src.Table()
	targets, err := bindTarget(t, req.Target)
	if err != nil {
		return nil, err
	}
	filter, err := req.Filter.Bind(t)
	if err != nil {
		return nil, err
	}
	if err := checkFilter(filter); err != nil {
		return nil, err
	}
	cands, err := req.Stats.candidates(ctx, src, filter)
	if err != nil {
		return nil, err
	}
	boosters, err := bindBoosters(ctx, src, req.Boosters, q.now)
	if err != nil {
		return nil, err
	}
	r := &Ranking{q: q, targets: targets}
	if len(q.words) == 0 || cands.IsEmpty() {
		return r, nil
	}
	// Postings hold live rows only: without a filter they need no
	// intersection with the candidates.
	x := &scorer{ctx: ctx, src: src, lex: src.Lexicon(), q: q, cands: cands, filtered: !req.Filter.IsZero(), targets: targets}
	defer x.free()
	x.expand()
	if x.capped {
		r.Warning = "some query words match too many terms: not every variant was searched"
	}
	if err := x.fetch(); err != nil {
		return nil, err
	}
	r.found = x.found
	// A phrase's matches are the rows that hold it; other matches are
	// counted from the postings (up to what the count and the choice
	// below need) and listed only when every one is scored.
	var phrased, unchecked *roaring.Bitmap
	var check *phraseCheck
	var n uint64
	if q.phrase && len(q.words) > 1 {
		// The count stops at MaxTotalCount: so may the check, whose
		// unchecked rows are then checked only while they may reach the
		// k best.
		var stop uint64
		if !q.exhaustive {
			stop = MaxTotalCount
			if q.phraseStop > 0 {
				stop = q.phraseStop
			}
		}
		check = x.newPhraseCheck()
		if phrased, unchecked, err = x.verifyPhrase(check, x.phraseCandidates(), stop); err != nil {
			return nil, err
		}
		n = phrased.GetCardinality()
	} else {
		n = x.countMatches(max(MaxTotalCount, 2*x.seedRows(k)+1))
	}
	r.Total = int(min(n, MaxTotalCount))
	if n == 0 {
		req.Stats.scored(x, 0, 0)
		req.Stats.ranked(nil)
		return r, nil
	}
	top, err := x.newTop(k)
	if err != nil {
		return nil, err
	}
	bound, err := boosters.bounds(src)
	if err != nil {
		return nil, err
	}
	switch {
	case unchecked != nil:
		err = x.scoreUnchecked(check, phrased, unchecked, boosters, top)
	case q.exhaustive || !x.worthPruning(n, k, bound):
		matched := phrased
		if matched == nil {
			matched = x.unionRows()
		}
		err = x.scoreAll(matched, boosters, top)
	default:
		err = x.scorePruned(phrased, boosters, bound, top)
	}
	if err != nil {
		return nil, err
	}
	r.scored = x.touched.GetCardinality()
	req.Stats.scored(x, uint64(r.Total), r.scored)
	r.Hits = top.sorted()
	req.Stats.ranked(r.Hits)
	return r, nil
}

// bindTarget binds a target list to table t: an object column stands for
// its searchable leaves, "*" for every other searchable column at weight
// 1. Without a target (or with an empty one) every searchable column is
// searched, in the table's column order.
func bindTarget(t *index.Table, list []Target) ([]target, error) {
	var all []target
	for _, c := range t.Leaves {
		if Searchable(c.Type) {
			all = append(all, target{col: c, weight: 1})
		}
	}
	if len(list) == 0 {
		return all, nil
	}
	weights := map[*index.Column]float64{}
	var order []*index.Column
	star := false
	for _, it := range list {
		name, weight := it.Column, it.Weight
		if weight == 0 {
			weight = 1
		}
		if err := checkWeight(name, weight); err != nil {
			return nil, err
		}
		if name == "*" {
			star = true
			continue
		}
		if t.Columns[name] == nil {
			return nil, invalidf("target: column [%s] not found", name)
		}
		for _, c := range t.Leaves {
			if c.Path != name && !strings.HasPrefix(c.Path, name+".") {
				continue
			}
			if _, seen := weights[c]; !seen {
				order = append(order, c)
			}
			weights[c] = weight
		}
	}
	var out []target
	for _, c := range order {
		if Searchable(c.Type) {
			out = append(out, target{col: c, weight: weights[c]})
		}
	}
	if star {
		for _, tc := range all {
			if _, listed := weights[tc.col]; !listed {
				out = append(out, tc)
			}
		}
	}
	return out, nil
}

// checkFilter rejects what search filters do not support: $contains,
// $startsWith and $endsWith on text columns, and any filter on a multiple
// column.
func checkFilter(n index.Node) error {
	switch x := n.(type) {
	case *index.And:
		for _, c := range x.Children {
			if err := checkFilter(c); err != nil {
				return err
			}
		}
	case *index.Or:
		for _, c := range x.Children {
			if err := checkFilter(c); err != nil {
				return err
			}
		}
	case *index.Not:
		return checkFilter(x.Child)
	case *index.Elements:
		if len(x.Links) == 0 {
			return invalidf("column [%s]: search filters do not support multiple columns", x.Column.Path)
		}
	case *index.Pred:
		if len(x.Links) > 0 {
			return nil
		}
		switch {
		case x.Column.Type == index.TypeMultiple:
			return invalidf("column [%s]: search filters do not support multiple columns", x.Column.Path)
		case x.Column.Type == index.TypeText && (x.Op == index.OpContains || x.Op == index.OpIContains || x.Op == index.OpStartsWith || x.Op == index.OpEndsWith):
			return invalidf("column [%s]: search filters do not support $contains, $startsWith or $endsWith on text columns", x.Column.Path)
		}
	}
	return nil
}

// Highlight marks the matched words of a returned record's searched
// columns, nested by object path; nil when the query turned highlighting
// off.
func (r *Ranking) Highlight(rec *codec.Record) map[string]any {
	if !r.q.highlight {
		return nil
	}
	out := map[string]any{}
	for _, tc := range r.targets {
		terms := r.found[tc.col.ID]
		if len(terms) == 0 {
			continue
		}
		v, ok := rec.Get(tc.col.ID)
		if !ok {
			continue
		}
		match := func(term string) bool { return terms[term] }
		var snippets []string
		switch v.Kind {
		case codec.KindString:
			snippets = Highlight(v.Str, match, r.q.encodeHTML)
		case codec.KindStrings:
			for _, s := range v.Strs {
				snippets = append(snippets, Highlight(s, match, r.q.encodeHTML)...)
			}
		}
		if len(snippets) > 0 {
			index.SetPath(out, tc.col.Path, snippets)
		}
	}
	return out
}
