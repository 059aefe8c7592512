package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/fts"
	"github.com/coppice-db/coppice/index"
)

// SearchRequest is a search request (spec §4.1.3, §4.1.4). Nil pointers
// take the defaults; Target, Filter and Boosters are bound to each table
// searched.
type SearchRequest struct {
	// Query is the text searched for; nil finds nothing (an empty body).
	Query *string
	// Fuzziness is the edit distance allowed per word, 0..2 (default 1).
	Fuzziness *float64
	// Prefix is "phrase" or "disabled" (default).
	Prefix *string
	// Target lists the columns searched (fts.ReadTarget); nil searches
	// every text column.
	Target []fts.Target
	Filter Filter
	// Boosters (fts.ReadBoosters) add to the scores.
	Boosters []fts.Booster
	// Highlight and EncodeHTML default to true.
	Highlight  *bool
	EncodeHTML *bool
	// Size (default 25, 1..200) and Offset (default 0, 0..800) page the
	// ranked hits.
	Size, Offset *int
	// Tables selects the tables of a branch search; nil searches them all.
	// A table search ignores it.
	Tables []SearchTable
}

// SearchTable is one table of a branch search, with its own filter, target
// and boosters.
type SearchTable struct {
	Table    string
	Filter   Filter
	Target   []fts.Target
	Boosters []fts.Booster
}

// SearchOptions are the server settings of a search.
type SearchOptions struct {
	// Now is the origin of date boosters without one; zero means the
	// current time.
	Now time.Time
}

// SearchResult is a page of ranked records.
type SearchResult struct {
	Records    []*SearchHit
	TotalCount int
	Warning    string
}

// SearchHit is one found record: the whole record (links unexpanded), its
// table, score and highlights. Highlight maps column paths, nested by
// object, to snippets; nil when highlighting is off.
type SearchHit struct {
	Doc       *Doc
	Table     string
	Score     float64
	Highlight map[string]any
}

// Search limits (spec §8).
const (
	searchDefaultSize = 25
	searchMaxSize     = 200
	searchMaxOffset   = 800
	// maxTotalCount is where totalCount stops counting.
	maxTotalCount = 10000
	// maxFuzzyTerms and maxPrefixTerms cap the dictionary terms one query
	// word expands to.
	maxFuzzyTerms  = 64
	maxPrefixTerms = 256
)

// searchParams are the validated settings shared by every table searched.
type searchParams struct {
	words      []string
	fuzziness  int
	phrase     bool
	highlight  bool
	encodeHTML bool
	size       int
	offset     int
	meta       string
	now        time.Time
}

func (e *Engine) searchParams(in *SearchRequest, opts SearchOptions) (*searchParams, error) {
	p := &searchParams{size: searchDefaultSize, fuzziness: 1, highlight: true, encodeHTML: true, meta: e.opts.Meta, now: opts.Now}
	if p.now.IsZero() {
		p.now = time.Now()
	}
	if in.Query != nil {
		if *in.Query == "" {
			return nil, invalidf("query must not be empty")
		}
		for _, tok := range fts.Tokenize(*in.Query) {
			p.words = append(p.words, tok.Term)
		}
	}
	if f := in.Fuzziness; f != nil {
		if *f != math.Trunc(*f) || *f < 0 || *f > 2 {
			return nil, invalidf("fuzziness must be 0, 1 or 2, got %v", *f)
		}
		p.fuzziness = int(*f)
	}
	if in.Prefix != nil {
		switch *in.Prefix {
		case "disabled":
		case "phrase":
			p.phrase = true
		default:
			return nil, invalidf("prefix must be phrase or disabled, got [%s]", *in.Prefix)
		}
	}
	if in.Highlight != nil {
		p.highlight = *in.Highlight
	}
	if in.EncodeHTML != nil {
		p.encodeHTML = *in.EncodeHTML
	}
	if in.Size != nil {
		if *in.Size < 1 || *in.Size > searchMaxSize {
			return nil, invalidf("page size must be between 1 and %d, got %d", searchMaxSize, *in.Size)
		}
		p.size = *in.Size
	}
	if in.Offset != nil {
		if *in.Offset < 0 || *in.Offset > searchMaxOffset {
			return nil, invalidf("page offset must be between 0 and %d, got %d", searchMaxOffset, *in.Offset)
		}
		p.offset = *in.Offset
	}
	return p, nil
}

// SearchTable runs a full-text search on one table of a branch. It stops
// with ctx's error when ctx ends.
func (e *Engine) SearchTable(ctx context.Context, ref Ref, tableName string, in SearchRequest, opts SearchOptions) (*SearchResult, error) {
	p, err := e.searchParams(&in, opts)
	if err != nil {
		return nil, err
	}
	spec := SearchTable{Table: tableName, Filter: in.Filter, Target: in.Target, Boosters: in.Boosters}
	th, err := e.searchOne(ref, spec, p, p.offset+p.size)
	if err != nil {
		return nil, err
	}
	return pageHits([]*tableHits{th}, p), nil
}

// SearchBranch runs a full-text search over the tables of a branch (all,
// or in.Tables) and merges their rankings. It stops with ctx's error when
// ctx ends.
func (e *Engine) SearchBranch(ctx context.Context, ref Ref, in SearchRequest, opts SearchOptions) (*SearchResult, error) {
	p, err := e.searchParams(&in, opts)
	if err != nil {
		return nil, err
	}
	_, d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return nil, err
	}
	b, err := d.state.Load().branch(ref.Branch)
	if err != nil {
		return nil, err
	}
	specs := in.Tables
	if specs == nil {
		for _, t := range b.Schema.Tables {
			specs = append(specs, SearchTable{Table: t.Name})
		}
	}
	seen := map[string]bool{}
	for _, s := range specs {
		if s.Table == "" {
			return nil, invalidf("tables: a table name must not be empty")
		}
		if b.Schema.byName[s.Table] == nil {
			return nil, invalidf("tables: table [%s] not found", s.Table)
		}
		if seen[s.Table] {
			return nil, invalidf("tables: table [%s] is listed twice", s.Table)
		}
		seen[s.Table] = true
	}
	var all []*tableHits
	for _, s := range specs {
		th, err := e.searchOne(ref, s, p, p.offset+p.size)
		if err != nil {
			return nil, err
		}
		all = append(all, th)
	}
	return pageHits(all, p), nil
}

// tableHits are the best hits of one table, ranked, with the table's
// count of matches.
type tableHits struct {
	hits    []*SearchHit
	total   int
	warning string
}

// pageHits merges the tables' rankings (score, then table, then id) and
// cuts the page.
func pageHits(all []*tableHits, p *searchParams) *SearchResult {
	res := &SearchResult{Records: []*SearchHit{}}
	var hits []*SearchHit
	for _, th := range all {
		hits = append(hits, th.hits...)
		res.TotalCount += th.total
		if res.Warning == "" {
			res.Warning = th.warning
		}
	}
	res.TotalCount = min(res.TotalCount, maxTotalCount)
	sort.SliceStable(hits, func(i, j int) bool { return hitLess(hits[i], hits[j]) })
	if p.offset < len(hits) {
		res.Records = hits[p.offset:min(len(hits), p.offset+p.size)]
	}
	return res
}

func hitLess(a, b *SearchHit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.Table != b.Table {
		return a.Table < b.Table
	}
	return a.Doc.ID < b.Doc.ID
}

// targetColumn is a searched column and its weight.
type targetColumn struct {
	c      *column
	weight float64
}

// expansion is a dictionary term a query word matched, and how.
type expansion struct {
	term       string
	dist       int
	completion bool
}

// searchOne searches one table and returns its k best hits, read and
// highlighted.
func (e *Engine) searchOne(ref Ref, spec SearchTable, p *searchParams, k int) (*tableHits, error) {
	d, b, t, err := e.resolveTable(ref, spec.Table)
	if err != nil {
		return nil, err
	}
	targets, err := parseTarget(t, spec.Target)
	if err != nil {
		return nil, err
	}
	if _, err := e.ensureSearchStore(d, b, t); err != nil {
		return nil, err
	}
	src, release, err := e.openSource(ref, spec.Table, storeOptional)
	if err != nil {
		return nil, err
	}
	defer release()
	ss := d.search[storeKey{src.b.ID, src.t.ID}]
	if ss == nil || ss.version != src.b.Version {
		// A schema change slipped in between: build against this snapshot.
		if ss, err = buildSearchStore(src.snap, d.id, src.b, src.t); err != nil {
			return nil, err
		}
	}
	lex := ss.lex.Load()
	if lex.Pending() > maxPendingTerms {
		if compact, err := lex.Compact(); err == nil {
			// The same terms in one automaton: other readers may keep
			// either; a write that extended it meanwhile wins.
			ss.lex.CompareAndSwap(lex, compact)
			lex = compact
		}
	}
	filter, err := spec.Filter.Bind(src.it, p.meta)
	if err != nil {
		return nil, queryError(err)
	}
	if err := checkSearchFilter(filter); err != nil {
		return nil, err
	}
	cands, err := index.Compile(filter).Execute(src)
	if err != nil {
		return nil, err
	}
	boosters, err := parseBoosters(src, spec.Boosters, p)
	if err != nil {
		return nil, err
	}
	x := &searchExec{src: src, ss: ss, lex: lex, p: p, cands: cands, targets: targets}
	out := &tableHits{}
	if len(p.words) == 0 || cands.IsEmpty() {
		return out, nil
	}
	x.expand()
	if x.capped {
		out.warning = "some query words match too many terms: not every variant was searched"
	}
	matched, err := x.score()
	if err != nil {
		return nil, err
	}
	if p.phrase && len(p.words) > 1 {
		if matched, err = x.verifyPhrase(matched); err != nil {
			return nil, err
		}
	}
	out.total = int(matched.GetCardinality())
	if err := boosters.apply(src, matched, x.total); err != nil {
		return nil, err
	}
	rows, scores, err := x.top(matched, k)
	if err != nil {
		return nil, err
	}
	proj := index.AllColumns()
	for i, row := range rows {
		var rec codec.Record
		ok, err := src.Record(row, &rec)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		doc, err := src.doc(&rec, proj)
		if err != nil {
			return nil, err
		}
		h := &SearchHit{Doc: doc, Table: t.Name, Score: scores[i]}
		if p.highlight {
			h.Highlight = x.highlight(&rec)
		}
		out.hits = append(out.hits, h)
	}
	x.free()
	return out, nil
}

// parseTarget binds a target list to a table: an object column stands for
// its text leaves, "*" for every other text column at weight 1. Without a
// target (or with an empty one) every text column is searched.
func parseTarget(t *table, target []fts.Target) ([]targetColumn, error) {
	var all []targetColumn
	for _, c := range t.leaves {
		if searchable(c.Type) {
			all = append(all, targetColumn{c: c, weight: 1})
		}
	}
	if len(target) == 0 {
		return all, nil
	}
	weights := map[*column]float64{}
	var order []*column
	star := false
	for _, it := range target {
		name, weight := it.Column, it.Weight
		if weight == 0 {
			weight = 1
		}
		if weight < 1 || weight > 10 {
			return nil, invalidf("target: weight of column [%s] must be between 1 and 10, got %v", name, weight)
		}
		if name == "*" {
			star = true
			continue
		}
		base := t.byPath[name]
		if base == nil {
			return nil, invalidf("target: column [%s] not found", name)
		}
		for _, c := range t.leaves {
			if c.path != name && !strings.HasPrefix(c.path, name+".") {
				continue
			}
			if _, seen := weights[c]; !seen {
				order = append(order, c)
			}
			weights[c] = weight
		}
	}
	var out []targetColumn
	for _, c := range order {
		if searchable(c.Type) {
			out = append(out, targetColumn{c: c, weight: weights[c]})
		}
	}
	if star {
		for _, tc := range all {
			if _, listed := weights[tc.c]; !listed {
				out = append(out, tc)
			}
		}
	}
	return out, nil
}

// checkSearchFilter rejects what search filters do not support: $contains,
// $startsWith and $endsWith on text columns, and any filter on a multiple
// column.
func checkSearchFilter(n index.Node) error {
	var walk func(n index.Node) error
	walk = func(n index.Node) error {
		switch x := n.(type) {
		case *index.And:
			for _, c := range x.Children {
				if err := walk(c); err != nil {
					return err
				}
			}
		case *index.Or:
			for _, c := range x.Children {
				if err := walk(c); err != nil {
					return err
				}
			}
		case *index.Not:
			return walk(x.Child)
		case *index.Elements:
			if len(x.Links) == 0 {
				return invalidf("column [%s]: search filters do not support multiple columns", x.Column.Path)
			}
		case *index.Pred:
			if len(x.Links) > 0 {
				return nil
			}
			switch {
			case x.Column.Type == TypeMultiple:
				return invalidf("column [%s]: search filters do not support multiple columns", x.Column.Path)
			case x.Column.Type == TypeText && (x.Op == index.OpContains || x.Op == index.OpIContains || x.Op == index.OpStartsWith || x.Op == index.OpEndsWith):
				return invalidf("column [%s]: search filters do not support $contains, $startsWith or $endsWith on text columns", x.Column.Path)
			}
		}
		return nil
	}
	return walk(n)
}

// searchExec is the scoring state of one table search.
type searchExec struct {
	src     *source
	ss      *searchStore
	lex     *fts.Lexicon
	p       *searchParams
	cands   *roaring.Bitmap
	targets []targetColumn

	words  [][]expansion // by query word
	capped bool

	total []float64 // text score by row
	best  []float64 // scratch: one word's best score in one column
	// span holds the first and last row whose total may be non-zero;
	// empty when span[0] > span[1].
	span [2]uint32
	// found holds, by column id, the terms that matched some candidate:
	// what highlighting marks.
	found map[uint32]map[string]bool
}

// expand looks every query word up in the vocabulary.
func (x *searchExec) expand() {
	x.words = make([][]expansion, len(x.p.words))
	for i, w := range x.p.words {
		ms := x.lex.Fuzzy(w, x.p.fuzziness, maxFuzzyTerms+1)
		if len(ms) > maxFuzzyTerms {
			ms, x.capped = ms[:maxFuzzyTerms], true
		}
		seen := map[string]bool{}
		for _, m := range ms {
			seen[m.Term] = true
			x.words[i] = append(x.words[i], expansion{term: m.Term, dist: m.Dist})
		}
		if x.p.phrase && i == len(x.p.words)-1 {
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
func (x *searchExec) free() {
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
// best-scoring variant counts (fts.ColumnScore); words and columns add up.
func (x *searchExec) score() (*roaring.Bitmap, error) {
	n := int(x.cands.Maximum()) + 1
	x.total, x.best = getScores(n), getScores(n)
	x.found = map[uint32]map[string]bool{}
	matched := roaring.New()
	for _, tc := range x.targets {
		fs := x.ss.cols[tc.c.ID]
		if fs == nil || fs.docs == 0 {
			continue
		}
		avg := fs.avgLen()
		for _, exps := range x.words {
			var union []*roaring.Bitmap
			for _, ex := range exps {
				posting, levels, err := x.src.termBitmaps(tc.c.ID, ex.term)
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
				if x.found[tc.c.ID] == nil {
					x.found[tc.c.ID] = map[string]bool{}
				}
				x.found[tc.c.ID][ex.term] = true
				union = append(union, posting)
				idf := fts.IDF(fs.docs, df)
				factor := tc.weight * fts.MatchFactor(ex.dist, ex.completion)
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
					x.scoreRows(part, fs, factor*idf, fts.TFClass(level), avg)
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
func (x *searchExec) scoreRows(rows *roaring.Bitmap, fs *fieldStats, scale float64, tf int, avg float64) {
	var byBucket [256]float64
	for b := range int(fs.maxBucket) + 1 {
		l := int(math.Round(avg)) // 0: a row without a length
		if b > 0 {
			l = fts.BucketLength(uint8(b - 1))
		}
		byBucket[b] = scale * fts.TermBM25(1, tf, l, avg)
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

// verifyPhrase keeps the rows where some searched column holds the query
// words in a row, in order, the last one possibly as a prefix.
func (x *searchExec) verifyPhrase(matched *roaring.Bitmap) (*roaring.Bitmap, error) {
	sets := make([]map[string]bool, len(x.words))
	for i, exps := range x.words {
		sets[i] = map[string]bool{}
		for _, ex := range exps {
			sets[i][ex.term] = true
		}
	}
	out := roaring.New()
	var rec codec.Record
	var toks []fts.Token
	it := matched.Iterator()
	for it.HasNext() {
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
			v, has := rec.Get(tc.c.ID)
			if !has {
				continue
			}
			texts := []string{v.Str}
			if v.Kind == codec.KindStrings {
				texts = v.Strs
			}
			for _, text := range texts {
				toks = fts.AppendTokens(toks[:0], text)
				if hasPhrase(toks, sets) {
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

// hasPhrase reports whether consecutive tokens match the word sets in order.
func hasPhrase(toks []fts.Token, sets []map[string]bool) bool {
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

// top returns the k best rows of matched by score, ties by record id.
func (x *searchExec) top(matched *roaring.Bitmap, k int) ([]uint32, []float64, error) {
	ids, err := x.src.Values(index.IDColumn)
	if err != nil {
		return nil, nil, err
	}
	idOf := func(row uint32) string {
		if ids != nil {
			return ids.Get(row).Str
		}
		var rec codec.Record
		if ok, err := x.src.Record(row, &rec); err == nil && ok {
			return rec.ID
		}
		return ""
	}
	type entry struct {
		row   uint32
		score float64
	}
	// worse orders entries from the worst hit kept to the best.
	worse := func(a, b entry) bool {
		if a.score != b.score {
			return a.score < b.score
		}
		return idOf(a.row) > idOf(b.row)
	}
	h := make([]entry, 0, k)
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && worse(h[r], h[l]) {
				m = r
			}
			if !worse(h[m], h[i]) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	consider := func(e entry) {
		if len(h) < k {
			h = append(h, e)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if !worse(h[i], h[p]) {
					break
				}
				h[i], h[p] = h[p], h[i]
				i = p
			}
			return
		}
		// Most rows lose on the score alone; the id decides ties only.
		if k == 0 || e.score < h[0].score || !worse(h[0], e) {
			return
		}
		h[0] = e
		down(0)
	}
	var buf [512]uint32
	many := matched.ManyIterator()
	for n := many.NextMany(buf[:]); n > 0; n = many.NextMany(buf[:]) {
		for _, row := range buf[:n] {
			if sc := x.total[row]; len(h) < k || k > 0 && sc >= h[0].score {
				consider(entry{row, sc})
			}
		}
	}
	slices.SortFunc(h, func(a, b entry) int {
		if worse(b, a) {
			return -1
		}
		if worse(a, b) {
			return 1
		}
		return 0
	})
	rows := make([]uint32, len(h))
	scores := make([]float64, len(h))
	for i, e := range h {
		rows[i], scores[i] = e.row, e.score
	}
	return rows, scores, nil
}

// highlight marks the matched words of a returned record's searched
// columns, nested by object path.
func (x *searchExec) highlight(rec *codec.Record) map[string]any {
	out := map[string]any{}
	for _, tc := range x.targets {
		terms := x.found[tc.c.ID]
		if len(terms) == 0 {
			continue
		}
		v, ok := rec.Get(tc.c.ID)
		if !ok {
			continue
		}
		match := func(term string) bool { return terms[term] }
		var snippets []string
		switch v.Kind {
		case codec.KindString:
			snippets = fts.Highlight(v.Str, match, x.p.encodeHTML)
		case codec.KindStrings:
			for _, s := range v.Strs {
				snippets = append(snippets, fts.Highlight(s, match, x.p.encodeHTML)...)
			}
		}
		if len(snippets) > 0 {
			index.SetPath(out, tc.c.path, snippets)
		}
	}
	return out
}

// boosterSet holds the parsed boosters of one table search.
type boosterSet []booster

// booster adds to the score of the rows it applies to.
type booster struct {
	applies *roaring.Bitmap // nil: every row
	// one of:
	equal   *roaring.Bitmap // valueBooster: rows holding the value
	factor  float64
	numeric *index.Column // numericBooster
	mod     fts.Modifier
	date    *index.Column // dateBooster
	decay   fts.DateDecay
}

// parseBoosters binds the boosters of a table search to its source.
func parseBoosters(src *source, list []fts.Booster, p *searchParams) (boosterSet, error) {
	var out boosterSet
	for _, bj := range list {
		var b booster
		var cond Filter
		switch {
		case bj.ValueBooster != nil:
			vb := bj.ValueBooster
			col, err := boosterColumn(src, vb.Column, p.meta, "valueBooster")
			if err != nil {
				return nil, err
			}
			if vb.Factor == nil {
				return nil, invalidf("valueBooster: factor is required")
			}
			if vb.Value == nil {
				return nil, invalidf("valueBooster: value is required")
			}
			filter := index.FilterOf(map[string]any{col.Path: vb.Value})
			if col.Type == TypeMultiple {
				filter = index.FilterOf(map[string]any{col.Path: map[string]any{"$includes": vb.Value}})
			}
			eq, err := index.Matching(src, filter, p.meta)
			if err != nil {
				return nil, invalidf("valueBooster: %v", queryError(err))
			}
			b.equal, b.factor, cond = eq, *vb.Factor, vb.IfMatchesFilter
		case bj.NumericBooster != nil:
			nb := bj.NumericBooster
			col, err := boosterColumn(src, nb.Column, p.meta, "numericBooster")
			if err != nil {
				return nil, err
			}
			if col.Type != TypeInt && col.Type != TypeFloat {
				return nil, invalidf("numericBooster: column [%s] is not an int or float column", nb.Column)
			}
			if nb.Factor == nil {
				return nil, invalidf("numericBooster: factor is required")
			}
			mod, err := fts.ParseModifier(nb.Modifier)
			if err != nil {
				return nil, invalidf("numericBooster: %v", err)
			}
			b.numeric, b.factor, b.mod, cond = col, *nb.Factor, mod, nb.IfMatchesFilter
		case bj.DateBooster != nil:
			db := bj.DateBooster
			col, err := boosterColumn(src, db.Column, p.meta, "dateBooster")
			if err != nil {
				return nil, err
			}
			if col.Type != TypeDatetime {
				return nil, invalidf("dateBooster: column [%s] is not a datetime column", db.Column)
			}
			if db.Decay == nil {
				return nil, invalidf("dateBooster: decay is required")
			}
			dec, err := fts.NewDateDecay(db.Origin, db.Scale, *db.Decay, db.Factor, p.now)
			if err != nil {
				return nil, invalidf("%v", err)
			}
			b.date, b.decay, cond = col, dec, db.IfMatchesFilter
		default:
			return nil, invalidf("boosters: each booster needs exactly one of valueBooster, numericBooster and dateBooster")
		}
		if !cond.IsZero() {
			rows, err := index.Matching(src, cond, p.meta)
			if err != nil {
				return nil, invalidf("ifMatchesFilter: %v", queryError(err))
			}
			b.applies = rows
		}
		out = append(out, b)
	}
	return out, nil
}

// boosterColumn resolves a booster's column: a column of the table or a
// metadata date (<meta>.createdAt, <meta>.updatedAt).
func boosterColumn(src *source, name, meta, what string) (*index.Column, error) {
	if name == "" {
		return nil, invalidf("%s: column is required", what)
	}
	if c := src.it.Columns[name]; c != nil && c.ID != 0 {
		return c, nil
	}
	switch name {
	case meta + ".createdAt":
		return index.CreatedAtColumn, nil
	case meta + ".updatedAt":
		return index.UpdatedAtColumn, nil
	}
	return nil, invalidf("%s: column [%s] not found", what, name)
}

// apply adds every booster to the scores of the matched rows.
func (bs boosterSet) apply(src *source, matched *roaring.Bitmap, scores []float64) error {
	for _, b := range bs {
		rows := matched
		if b.applies != nil {
			rows = roaring.And(matched, b.applies)
		}
		switch {
		case b.equal != nil:
			it := roaring.And(rows, b.equal).Iterator()
			for it.HasNext() {
				row := it.Next()
				scores[row] += fts.ValueBoost(b.factor, true, true)
			}
		case b.numeric != nil || b.date != nil:
			col := b.numeric
			if col == nil {
				col = b.date
			}
			vals, err := src.Values(col)
			if err != nil {
				return err
			}
			if vals == nil {
				return fmt.Errorf("engine: no column values for booster column %s", col.Path)
			}
			it := rows.Iterator()
			for it.HasNext() {
				row := it.Next()
				v := vals.Get(row)
				if v.IsNull() {
					continue
				}
				if b.numeric != nil {
					f := v.Float
					if v.Kind == codec.KindInt {
						f = float64(v.Int)
					}
					scores[row] += fts.NumericBoost(b.factor, b.mod, f, true, true)
				} else {
					scores[row] += b.decay.Boost(time.Unix(0, v.Int).UTC(), true, true)
				}
			}
		}
	}
	return nil
}
