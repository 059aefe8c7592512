package fts

// This file holds the scoring state of one table search: the query words
// looked up in the vocabulary, their postings among the candidates, and
// the BM25 scores of a set of rows computed from them.

import (
	"context"
	"math"
	"runtime"

	"github.com/RoaringBitmap/roaring/v2"
)

// scorer is the scoring state of one table search.
type scorer struct {
	ctx   context.Context
	src   Source
	lex   *Lexicon
	q     *Query
	cands *roaring.Bitmap
	// filtered is set when cands may be narrower than the table's rows:
	// postings are then intersected with them.
	filtered bool
	targets  []target

	words  [][]expansion // by query word
	capped bool

	// groups are the query words by searched column, column first, in the
	// order the scores of a row add up; postings the terms each found.
	groups   []group
	postings []posting
	found    map[uint32]map[string]bool
	union    *roaring.Bitmap // the rows of every posting, once listed

	s       *scratch        // kept between searches, taken once scoring starts
	touched *roaring.Bitmap // the rows whose total may be non-zero
}

// group is one query word in one searched column: its postings are
// x.postings[first:end], and a row's score for the group is the best of
// theirs.
type group struct {
	col        int // index in targets
	fs         *FieldLengths
	avg        float64
	first, end int
}

// posting is a term a query word found in a searched column.
type posting struct {
	// rows are the candidates holding the term; levels the rows (of the
	// table) holding it at least TFLevels[i] times.
	rows   *roaring.Bitmap
	levels [len(TFLevels)]*roaring.Bitmap
	// scale is what the term's BM25 is multiplied by: the column's
	// weight, the match factor and the term's idf.
	scale float64
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

// fetch reads the postings of every expansion in every searched column,
// keeps those that hold a candidate, and notes their terms as found (what
// highlighting marks).
func (x *scorer) fetch() error {
	x.found = map[uint32]map[string]bool{}
	terms := 0
	for _, exps := range x.words {
		terms += len(exps)
	}
	x.postings = make([]posting, 0, terms*len(x.targets))
	for ti, tc := range x.targets {
		fs := x.src.Lengths(tc.col.ID)
		if fs == nil || fs.docs == 0 {
			continue
		}
		avg := fs.AvgLen()
		for _, exps := range x.words {
			if err := x.ctx.Err(); err != nil {
				return err
			}
			g := group{col: ti, fs: fs, avg: avg, first: len(x.postings)}
			for _, ex := range exps {
				rows, levels, err := x.src.Terms(tc.col.ID, ex.term)
				if err != nil {
					return err
				}
				df := int(rows.GetCardinality())
				if df == 0 {
					continue
				}
				if x.filtered {
					rows.And(x.cands)
					if rows.IsEmpty() {
						continue
					}
				}
				if x.found[tc.col.ID] == nil {
					x.found[tc.col.ID] = make(map[string]bool, terms)
				}
				x.found[tc.col.ID][ex.term] = true
				factor := tc.weight * MatchFactor(ex.dist, ex.completion)
				x.postings = append(x.postings, posting{rows: rows, levels: levels, scale: factor * IDF(fs.docs, df)})
			}
			if g.end = len(x.postings); g.end > g.first {
				x.groups = append(x.groups, g)
			}
		}
	}
	return nil
}

// unionRows returns the rows holding some posting's term.
func (x *scorer) unionRows() *roaring.Bitmap {
	if x.union == nil {
		all := make([]*roaring.Bitmap, len(x.postings))
		for i := range x.postings {
			all[i] = x.postings[i].rows
		}
		x.union = roaring.FastOr(all...)
	}
	return x.union
}

// countMatches returns how many rows hold some posting's term, or limit
// when that is more: a posting that large answers without the union.
func (x *scorer) countMatches(limit uint64) uint64 {
	for i := range x.postings {
		if x.postings[i].rows.GetCardinality() >= limit {
			return limit
		}
	}
	return min(x.unionRows().GetCardinality(), limit)
}

// scratch is the memory a search scores in, by row and per group, kept
// between searches (scratches) so that a search allocates little whatever
// its number of matches. Its arrays are zero over their whole length when
// kept: a search clears the rows it touched.
type scratch struct {
	total []float64 // text score, then boosters, by row
	best  []float64 // one group's best score by row
	// excess is by row how much its scores for the groups exceed what
	// the trailing tiers may give (lowerBound).
	excess []float64
	marks  []uint64  // a bit per row: the rows being scored
	held   []uint32  // the rows a group's postings hold
	seen   []uint32  // the rows given a lower bound
	lows   []float64 // a heap of the k best lower bounds
	// buf takes rows from bitmap iterators, one loop at a time: an array
	// on the stack escapes to the heap through the iterator's interface.
	buf [512]uint32
	// iter walks a bitmap's rows into buf, reused for the same reason.
	iter roaring.ManyIntIterator
	// tables holds a posting's BM25 by length bucket for each frequency
	// class, computed[level] telling which are current.
	tables   [len(TFLevels) + 1][256]float64
	computed [len(TFLevels) + 1]bool
}

// iterate returns the scratch's iterator over the rows of b, from the
// first: one loop at a time uses it.
func (s *scratch) iterate(b *roaring.Bitmap) *roaring.ManyIntIterator {
	s.iter.Initialize(b)
	return &s.iter
}

// scratches keeps a few scratches between searches. Unlike a sync.Pool it
// is not emptied by garbage collections: a scratch holds two scores per
// row of the largest table searched, megabytes at a million rows, which a
// search after each collection would otherwise allocate and zero again,
// adding to the collections. It keeps one per processor at most, the
// searches that can score at once.
var scratches = make(chan *scratch, runtime.GOMAXPROCS(0))

// getScratch returns a kept scratch, or a new one.
func getScratch() *scratch {
	select {
	case s := <-scratches:
		return s
	default:
		return new(scratch)
	}
}

// putScratch keeps s for a later search, unless enough are kept.
func putScratch(s *scratch) {
	select {
	case scratches <- s:
	default:
	}
}

// arrays returns the score arrays, taking a kept scratch on
// first use.
func (x *scorer) arrays() (total, best []float64) {
	if x.s == nil {
		x.s = getScratch()
		n := int(x.cands.Maximum()) + 1
		if cap(x.s.total) < n {
			n := n + n/8
			x.s.total, x.s.best, x.s.marks = make([]float64, n), make([]float64, n), make([]uint64, n/64+1)
			x.s.excess = make([]float64, n)
		}
		x.s.total, x.s.best, x.s.marks = x.s.total[:n], x.s.best[:n], x.s.marks[:n/64+1]
		x.s.excess = x.s.excess[:n]
	}
	return x.s.total, x.s.best
}

// free gives the scratch back, zeroing the rows the search
// touched. best and marks are zero already: addText clears them group by
// group, and stops between groups only.
func (x *scorer) free() {
	if x.s == nil {
		return
	}
	total := x.s.total
	if x.touched != nil && !x.touched.IsEmpty() {
		lo, hi := x.touched.Minimum(), x.touched.Maximum()
		if n := x.touched.GetCardinality(); n*16 < uint64(hi-lo) {
			it := x.s.iterate(x.touched)
			buf := &x.s.buf
			for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
				for _, row := range buf[:n] {
					total[row] = 0
				}
			}
		} else {
			// One span of memory to clear beats a walk of the rows.
			clear(total[lo : hi+1])
		}
	}
	x.s.iter = roaring.ManyIntIterator{} // holds no bitmap while kept
	putScratch(x.s)
	x.s = nil
}

// addText adds the text score of rows (nil: every posting row) to their
// totals: for each group in order, the best score among the group's
// postings a row holds, when it holds one. Every row's sum is made of the
// same terms in the same order however the rows are chosen, so a row
// scores the same to the last bit in every set it is scored in.
//
// A posting smaller than rows is walked, its rows looked up among them;
// a larger one is intersected with them.
func (x *scorer) addText(rows *roaring.Bitmap) error {
	total, best := x.arrays()
	var n uint64
	if rows != nil {
		n = rows.GetCardinality()
		x.mark(rows, true)
		defer x.mark(rows, false)
	}
	for gi := range x.groups {
		if err := x.ctx.Err(); err != nil {
			return err
		}
		g := &x.groups[gi]
		x.s.held = x.s.held[:0]
		for pi := g.first; pi < g.end; pi++ {
			p := &x.postings[pi]
			size := p.rows.GetCardinality()
			switch {
			case rows == nil && size <= walkedPosting:
				x.walk(p, g, false)
			case rows == nil:
				x.raise(p, g, p.rows)
			case size <= n:
				x.walk(p, g, true)
			default:
				if part := roaring.And(p.rows, rows); !part.IsEmpty() {
					x.raise(p, g, part)
				}
			}
		}
		for _, row := range x.s.held {
			total[row] += best[row]
			best[row] = 0
		}
	}
	return nil
}

// walkedPosting is the size up to which scoring every row of a posting
// walks it, looking each row's frequency class up in the levels, rather
// than splitting it by level into new bitmaps.
const walkedPosting = 4096

// mark sets or clears the bits of rows in the marks.
func (x *scorer) mark(rows *roaring.Bitmap, on bool) {
	marks := x.s.marks
	buf := &x.s.buf
	it := x.s.iterate(rows)
	for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
		for _, row := range buf[:n] {
			if on {
				marks[row/64] |= 1 << (row % 64)
			} else {
				marks[row/64] = 0
			}
		}
	}
}

// raise raises the best score of each row of part (rows holding p's term)
// to the term's score: rows by frequency class, those below the next
// level first, then the rest climbs.
func (x *scorer) raise(p *posting, g *group, part *roaring.Bitmap) {
	rest := part
	for level := 0; level <= len(p.levels); level++ {
		sub := rest
		if level < len(p.levels) && p.levels[level] != nil && !p.levels[level].IsEmpty() {
			sub = roaring.AndNot(rest, p.levels[level])
			rest = roaring.And(rest, p.levels[level])
		} else {
			rest = nil
		}
		byBucket := bm25ByBucket(p, g, level)
		buf := &x.s.buf
		it := x.s.iterate(sub)
		for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
			x.raiseRows(buf[:n], &byBucket, g.fs.bucket)
		}
		if rest == nil || rest.IsEmpty() {
			break
		}
	}
}

// walk raises the best score of each row holding p's term (each marked
// row, when marked), walking the posting and reading each row's frequency
// class from the levels: the first level that does not hold the row, as
// raise counts.
func (x *scorer) walk(p *posting, g *group, marked bool) {
	levels := len(p.levels)
	for levels > 0 && (p.levels[levels-1] == nil || p.levels[levels-1].IsEmpty()) {
		levels--
	}
	sc := x.s
	clear(sc.computed[:])
	table := func(level int) *[256]float64 {
		if !sc.computed[level] {
			sc.tables[level], sc.computed[level] = bm25ByBucket(p, g, level), true
		}
		return &sc.tables[level]
	}
	marks := sc.marks
	buf := &x.s.buf
	it := x.s.iterate(p.rows)
	for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
		rows := buf[:n]
		if marked {
			kept := rows[:0]
			for _, row := range rows {
				if marks[row/64]&(1<<(row%64)) != 0 {
					kept = append(kept, row)
				}
			}
			rows = kept
		}
		if levels == 0 {
			x.raiseRows(rows, table(0), g.fs.bucket)
			continue
		}
		for _, row := range rows {
			level := 0
			for level < levels && p.levels[level] != nil && p.levels[level].Contains(row) {
				level++
			}
			x.raiseRows([]uint32{row}, table(level), g.fs.bucket)
		}
	}
}

// raiseRows raises the best score of each row to the score of its length
// bucket, noting the row among those the group holds on its first score
// (every score is positive).
func (x *scorer) raiseRows(rows []uint32, byBucket *[256]float64, buckets []uint8) {
	best, held := x.s.best, x.s.held
	for _, row := range rows {
		var b uint8
		if int(row) < len(buckets) {
			b = buckets[row]
		}
		s := byBucket[b]
		if cur := best[row]; cur == 0 {
			held = append(held, row)
			best[row] = s
		} else if s > cur {
			best[row] = s
		}
	}
	x.s.held = held
}

// bm25ByBucket returns p's score for a row of each length bucket holding
// the term in the frequency class of level: scale times the term's BM25 at
// the bucket's length (the rounded average for bucket 0, a row without a
// length).
func bm25ByBucket(p *posting, g *group, level int) (out [256]float64) {
	tf := TFClass(level)
	for b := range int(g.fs.maxBucket) + 1 {
		l := int(math.Round(g.avg))
		if b > 0 {
			l = BucketLength(uint8(b - 1))
		}
		out[b] = p.scale * TermBM25(1, tf, l, g.avg)
	}
	return out
}

// scoreAll scores every matched row, adds the boosters and offers each
// row to top. Unless a phrase narrowed them, the matched rows are all the
// posting rows, which addText then reads without intersecting.
func (x *scorer) scoreAll(matched *roaring.Bitmap, boosters boosterSet, top *topK) error {
	x.touched = matched
	rows := matched
	if x.union == matched {
		rows = nil
	}
	if err := x.addText(rows); err != nil {
		return err
	}
	return x.finish(matched, boosters, top)
}

// finish adds the boosters to rows whose text score is in and offers the
// rows to top.
func (x *scorer) finish(rows *roaring.Bitmap, boosters boosterSet, top *topK) error {
	if err := boosters.apply(x.ctx, x.src, rows, x.s.total); err != nil {
		return err
	}
	total := x.s.total
	buf := &x.s.buf
	it := x.s.iterate(rows)
	for n, seen := it.NextMany(buf[:]), 0; n > 0; n = it.NextMany(buf[:]) {
		if seen += n; seen >= ctxCheckRows {
			if err := x.ctx.Err(); err != nil {
				return err
			}
			seen = 0
		}
		for _, row := range buf[:n] {
			top.offer(row, total[row])
		}
	}
	return nil
}

// ctxCheckRows is how many rows a loop over rows takes between looks at
// its context.
const ctxCheckRows = 4096
