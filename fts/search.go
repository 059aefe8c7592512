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
	"sync"
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
	// Size and Offset page the merged ranking.
	Size, Offset int
}

// NewQuery checks a search's settings. Errors are *index.InputError.
func NewQuery(s Settings) (*Query, error) {
	q := &Query{Size: DefaultSize, fuzziness: 1, highlight: true, encodeHTML: true, now: s.Now}
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
// record id), how many records matched, and a warning when query words
// matched too many terms to search them all.
type Ranking struct {
	Hits    []RowScore
	Total   int
	Warning string

	q       *Query
	targets []target
	// found holds, by column id, the terms that matched some candidate:
	// what highlighting marks.
	found map[uint32]map[string]bool
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

// Search runs q on the table of src and returns its k best hits. meta is
// the record metadata key the filter and the boosters name metadata
// columns under. A request that does not fit the table is an
// *index.InputError; it stops with ctx's error when ctx ends.
func Search(ctx context.Context, src Source, q *Query, req TableRequest, meta string, k int) (*Ranking, error) {
	t := src.Table()
	targets, err := bindTarget(t, req.Target)
	if err != nil {
		return nil, err
	}
	filter, err := req.Filter.Bind(t, meta)
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
	boosters, err := bindBoosters(ctx, src, req.Boosters, meta, q.now)
	if err != nil {
		return nil, err
	}
	r := &Ranking{q: q, targets: targets}
	if len(q.words) == 0 || cands.IsEmpty() {
		return r, nil
	}
	x := &scorer{ctx: ctx, src: src, lex: src.Lexicon(), q: q, cands: cands, targets: targets}
	x.expand()
	if x.capped {
		r.Warning = "some query words match too many terms: not every variant was searched"
	}
	matched, err := x.score()
	if err != nil {
		return nil, err
	}
	r.found = x.found
	if q.phrase && len(q.words) > 1 {
		if matched, err = x.verifyPhrase(matched); err != nil {
			return nil, err
		}
	}
	r.Total = int(matched.GetCardinality())
	if err := boosters.apply(ctx, src, matched, x.total); err != nil {
		return nil, err
	}
	req.Stats.scored(x, matched)
	if r.Hits, err = x.top(matched, k); err != nil {
		return nil, err
	}
	req.Stats.ranked(r.Hits)
	x.free()
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

// scorer is the scoring state of one table search.
type scorer struct {
	ctx     context.Context
	src     Source
	lex     *Lexicon
	q       *Query
	cands   *roaring.Bitmap
	targets []target

	words  [][]expansion // by query word
	capped bool

	total []float64 // text score by row
	best  []float64 // scratch: one word's best score in one column
	// span holds the first and last row whose total may be non-zero;
	// empty when span[0] > span[1].
	span  [2]uint32
	found map[uint32]map[string]bool
}

// expand looks every query word up in the vocabulary.
func (x *scorer) expand() {
	x.words = make([][]expansion, len(x.q.words))
	for i, w := range x.q.words {
		ms := x.lex.Fuzzy(w, x.q.fuzziness, maxFuzzyTerms+1)
		if len(ms) > maxFuzzyTerms {
			ms, x.capped = ms[:maxFuzzyTerms], true
		}
		seen := map[string]bool{}
		for _, m := range ms {
			seen[m.Term] = true
			x.words[i] = append(x.words[i], expansion{term: m.Term, dist: m.Dist})
		}
		if x.q.phrase && i == len(x.q.words)-1 {
			ps := x.lex.Prefix(w, maxPrefixTerms+1)
			if len(ps) > maxPrefixTerms {
				ps, x.capped = ps[:maxPrefixTerms], true
			}
			for _, m := range ps {
				if !seen[m.Term] {
					seen[m.Term] = true
					x.words[i] = append(x.words[i], expansion{term: m.Term, completion: true})
				}
			}
		}
	}
}

// scorePool recycles the per-row score arrays. A pooled array is zero over
// its whole capacity: a search clears only the rows it touched.
var scorePool sync.Pool

func getScores(n int) []float64 {
	if v, ok := scorePool.Get().(*[]float64); ok && cap(*v) >= n {
		return (*v)[:n]
	}
	return make([]float64, n, n+n/8)
}

// free returns the score arrays to the pool, zeroing the rows the search
// touched (best is zero already). A search that failed half way drops its
// arrays instead.
func (x *scorer) free() {
	if x.total == nil {
		return
	}
	total, best := x.total, x.best
	if x.span[0] <= x.span[1] {
		// One span of memory to clear beats a walk of the rows.
		clear(total[x.span[0] : x.span[1]+1])
	}
	scorePool.Put(&total)
	scorePool.Put(&best)
	x.total, x.best = nil, nil
}

// score computes the BM25 text score of every candidate that matches some
// word, into x.total, and returns those rows. For each word and column the
// best-scoring variant counts (as ColumnScore); words and columns add up.
func (x *scorer) score() (*roaring.Bitmap, error) {
	n := int(x.cands.Maximum()) + 1
	x.total, x.best = getScores(n), getScores(n)
	x.found = map[uint32]map[string]bool{}
	matched := roaring.New()
	for _, tc := range x.targets {
		fs := x.src.Lengths(tc.col.ID)
		if fs == nil || fs.docs == 0 {
			continue
		}
		avg := fs.AvgLen()
		for _, exps := range x.words {
			if err := x.ctx.Err(); err != nil {
				return nil, err
			}
			var union []*roaring.Bitmap
			for _, ex := range exps {
				posting, levels, err := x.src.Terms(tc.col.ID, ex.term)
				if err != nil {
					return nil, err
				}
				df := int(posting.GetCardinality())
				if df == 0 {
					continue
				}
				posting.And(x.cands)
				if posting.IsEmpty() {
					continue
				}
				if x.found[tc.col.ID] == nil {
					x.found[tc.col.ID] = map[string]bool{}
				}
				x.found[tc.col.ID][ex.term] = true
				union = append(union, posting)
				idf := IDF(fs.docs, df)
				factor := tc.weight * MatchFactor(ex.dist, ex.completion)
				// Rows by frequency class: those below the next level
				// first, then the rest climbs.
				rest := posting
				for level := 0; level <= len(levels); level++ {
					part := rest
					if level < len(levels) && !levels[level].IsEmpty() {
						part = roaring.AndNot(rest, levels[level])
						rest = roaring.And(rest, levels[level])
					} else {
						rest = nil
					}
					x.scoreRows(part, fs, factor*idf, TFClass(level), avg)
					if rest == nil || rest.IsEmpty() {
						break
					}
				}
			}
			if len(union) == 0 {
				continue
			}
			u := union[0]
			if len(union) > 1 {
				u = roaring.FastOr(union...)
			}
			total, best := x.total, x.best
			var buf [512]uint32
			it := u.ManyIterator()
			for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
				for _, row := range buf[:n] {
					total[row] += best[row]
					best[row] = 0
				}
			}
			matched.Or(u)
		}
	}
	x.span = [2]uint32{1, 0}
	if !matched.IsEmpty() {
		x.span = [2]uint32{matched.Minimum(), matched.Maximum()}
	}
	return matched, nil
}

// scoreRows raises x.best of each row to its BM25 for a term held tf
// times, times scale (the idf, weight and match factor). The BM25 of a
// length bucket is computed once.
func (x *scorer) scoreRows(rows *roaring.Bitmap, fs *FieldLengths, scale float64, tf int, avg float64) {
	var byBucket [256]float64
	for b := range int(fs.maxBucket) + 1 {
		l := int(math.Round(avg)) // 0: a row without a length
		if b > 0 {
			l = BucketLength(uint8(b - 1))
		}
		byBucket[b] = scale * TermBM25(1, tf, l, avg)
	}
	best, buckets := x.best, fs.bucket
	var buf [512]uint32
	it := rows.ManyIterator()
	for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
		for _, row := range buf[:n] {
			var b uint8
			if int(row) < len(buckets) {
				b = buckets[row]
			}
			if s := byBucket[b]; s > best[row] {
				best[row] = s
			}
		}
	}
}

// ctxCheckRows is how many rows a loop over rows takes between looks at
// its context.
const ctxCheckRows = 4096

// verifyPhrase keeps the rows where some searched column holds the query
// words in a row, in order, the last one possibly as a prefix.
func (x *scorer) verifyPhrase(matched *roaring.Bitmap) (*roaring.Bitmap, error) {
	sets := make([]map[string]bool, len(x.words))
	for i, exps := range x.words {
		sets[i] = map[string]bool{}
		for _, ex := range exps {
			sets[i][ex.term] = true
		}
	}
	out := roaring.New()
	var rec codec.Record
	var toks []Token
	it := matched.Iterator()
	for n := 0; it.HasNext(); n++ {
		if n%ctxCheckRows == 0 {
			if err := x.ctx.Err(); err != nil {
				return nil, err
			}
		}
		row := it.Next()
		ok, err := x.src.Record(row, &rec)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		found := false
		for _, tc := range x.targets {
			v, has := rec.Get(tc.col.ID)
			if !has {
				continue
			}
			texts := []string{v.Str}
			if v.Kind == codec.KindStrings {
				texts = v.Strs
			}
			for _, text := range texts {
				toks = AppendTokens(toks[:0], text)
				if holdsPhrase(toks, sets) {
					found = true
					break
				}
			}
			if found {
				break
			}
		}
		if found {
			out.Add(row)
		}
	}
	return out, nil
}

// holdsPhrase reports whether consecutive tokens match the word sets in order.
func holdsPhrase(toks []Token, sets []map[string]bool) bool {
	for i := 0; i+len(sets) <= len(toks); i++ {
		ok := true
		for j, set := range sets {
			if toks[i+j].Pos != toks[i].Pos+j || !set[toks[i+j].Term] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
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
