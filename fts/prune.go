package fts

// This file skips the matched records that cannot reach the k best, so
// that the work of a search follows the page it returns rather than the
// number of records its words occur in (MaxScore, term at a time).
//
// A row's text score is a sum over groups (a query word in a column) of
// the best score among the group's postings the row holds, and a
// posting's score for a row grows with the row's term frequency and falls
// with its field length. The postings come with frequency levels (rows
// holding the term at least 2, 3, 5 times), so each posting splits into
// tiers, one per frequency class, and a tier's rows score at most its
// bound: the class's BM25 at the column's shortest field. Upper bounds per
// block of rows stored with the postings would be tighter, but would
// change the storage format; these come from what every posting has.
//
// The tiers are ordered best bound first. A threshold, which at least k
// rows are known to reach, splits them in two: the trailing tiers, whose
// bounds, taking the best per group and adding the most the boosters add,
// stay below the threshold, and the leading, essential ones. A row found
// only in trailing tiers cannot reach the k best and is never scored.
//
// The threshold comes from lower bounds: the rows of some leading tiers,
// each counting for every group the score of the best of those tiers that
// holds it (a term it holds, so its score for the group is at least
// that), plus the least the boosters add. It starts from the first tiers
// that hold a few thousand rows, and is raised once from all the tiers it
// found essential. A row's lower bound is also its exact score for the
// groups those tiers cover, which gives it an upper bound of its own: per
// group the greater of that score and the best bound of the tiers left
// out. The rows of the essential tiers whose own bound reaches the
// threshold (the few that hold several of the words, in a common word's
// large tiers) are then scored exactly, every group and every posting,
// and offered to the k best. The rows kept are those an exhaustive
// scoring keeps, with the same scores to the bit: a row is scored by the
// same sums in the same order either way.

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
)

// tier is the rows of a posting holding its term in one frequency class:
// at least TFLevels[level-1] times (any number for level 0) and fewer than
// TFLevels[level] times (any number for the last level).
type tier struct {
	posting, group int
	level          int
	// bound is the most a row of the tier scores for its group.
	bound float64
	rows  *roaring.Bitmap // once computed
}

// pruneSeed is how many rows the tiers the first threshold comes from
// hold at least.
const pruneSeed = 1024

// seedRows is how many rows the first threshold is drawn from for the k
// best.
func (x *scorer) seedRows(k int) uint64 {
	seed := pruneSeed
	if x.q.seed > 0 {
		seed = x.q.seed
	}
	return uint64(max(seed, 8*k))
}

// worthPruning reports whether skipping rows may pay: there are many more
// matches (at least n) than the threshold is first drawn from, the
// boosters add a bounded amount, and most of the postings' rows lie in
// postings larger than that (which pruning intersects with the rows it
// scores instead of walking them). The many small postings of a prefix or
// of a word's typos are walked either way.
func (x *scorer) worthPruning(n uint64, k int, boost boostRange) bool {
	seed := x.seedRows(k)
	if k <= 0 || math.IsInf(boost.hi, 1) || math.IsInf(boost.lo, -1) || n <= 2*seed {
		return false
	}
	if x.q.force {
		return true
	}
	var all, skippable uint64
	for i := range x.postings {
		n := x.postings[i].rows.GetCardinality()
		all += n
		if n > seed {
			skippable += n - seed
		}
	}
	return 2*skippable >= all
}

// tiers returns the tiers of every posting with their bounds, the best
// bound first. A level is left out when no row reaches it.
func (x *scorer) tiers() []tier {
	var out []tier
	for gi := range x.groups {
		g := &x.groups[gi]
		shortest := g.fs.minLength(g.avg)
		for pi := g.first; pi < g.end; pi++ {
			p := &x.postings[pi]
			for level := 0; level <= len(p.levels); level++ {
				if level > 0 && (p.levels[level-1] == nil || !p.rows.Intersects(p.levels[level-1])) {
					break
				}
				bound := p.scale * TermBM25(1, TFClass(level), shortest, g.avg)
				out = append(out, tier{posting: pi, group: gi, level: level, bound: bound})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b tier) int { return cmp.Compare(b.bound, a.bound) })
	return out
}

// tierRows returns the rows of a tier. The result may be the posting's
// own bitmap: the caller must not change it.
func (x *scorer) tierRows(t *tier) *roaring.Bitmap {
	if t.rows != nil {
		return t.rows
	}
	p := &x.postings[t.posting]
	rows := p.rows
	if t.level > 0 {
		rows = roaring.And(rows, p.levels[t.level-1])
	}
	if t.level < len(p.levels) && p.levels[t.level] != nil && !p.levels[t.level].IsEmpty() {
		rows = roaring.AndNot(rows, p.levels[t.level])
	}
	t.rows = rows
	return rows
}

// essential returns how many leading tiers hold rows that may still reach
// threshold: a row whose tiers all come after them scores at most the sum,
// over groups, of the best bound among the trailing tiers, plus boost, and
// that is below threshold. best is scratch, one per group.
func essential(tiers []tier, threshold, boost float64, best []float64) int {
	if math.IsInf(threshold, -1) {
		return len(tiers)
	}
	clear(best)
	sum := boost
	for i := len(tiers) - 1; i >= 0; i-- {
		t := &tiers[i]
		if t.bound > best[t.group] {
			sum += t.bound - best[t.group]
			best[t.group] = t.bound
		}
		if !below(sum, threshold) {
			return i + 1
		}
	}
	return 0
}

// below reports whether bound is under threshold by more than rounding
// can account for: a bound is a sum of the same kind of terms as a score,
// added in another order.
func below(bound, threshold float64) bool {
	return bound+1e-9*(math.Abs(bound)+math.Abs(threshold)) < threshold
}

// scorePruned offers to top the matching rows that may reach it with
// their scores (text and boosters); boost bounds what the boosters add to
// a row. phrased, when not nil, holds the rows that hold a phrase: the
// only matches.
func (x *scorer) scorePruned(phrased *roaring.Bitmap, boosters boosterSet, boost boostRange, top *topK) error {
	tiers := x.tiers()
	best := make([]float64, len(x.groups)) // scratch of essential
	n, held := 0, uint64(0)
	for n < len(tiers) && held < x.seedRows(top.k) {
		held += x.tierRows(&tiers[n]).GetCardinality()
		n++
	}
	threshold, scored, err := x.lowerBound(tiers, n, phrased, top.k, boost)
	if err != nil {
		return err
	}
	if e := essential(tiers, threshold+boost.lo, boost.hi, best); e > n {
		// The rows of all the essential tiers get a bound, which raises
		// the threshold.
		if _, scored, err = x.lowerBound(tiers, e, phrased, top.k, boost); err != nil {
			return err
		}
	}
	if scored == nil {
		// Fewer than k rows hold a leading tier: every tier is essential.
		scored = x.unionTiers(tiers)
		if phrased != nil {
			scored.And(phrased)
		}
	}
	x.touched = scored // before scoring: free clears what a failure leaves
	if err := x.addText(scored); err != nil {
		return err
	}
	return x.finish(scored, boosters, top)
}

// denseUnionTiers is how many small tiers are unioned through the
// scratch marks rather than merged pairwise; a tier is small when it
// holds at most walkedPosting rows.
const denseUnionTiers = 32

// unionTiers returns the rows of tiers. The hundreds of small tiers of a
// prefix's completions are unioned by setting their rows' bits in the
// scratch marks and reading the bitmap back, one pass over their rows,
// where merging them pairwise copies the growing union once per tier;
// large tiers are merged, container by container. The marks are zero
// again when it returns.
func (x *scorer) unionTiers(tiers []tier) *roaring.Bitmap {
	var large, small []*roaring.Bitmap
	for i := range tiers {
		switch rows := x.tierRows(&tiers[i]); {
		case rows.GetCardinality() > walkedPosting:
			large = append(large, rows)
		case !rows.IsEmpty():
			small = append(small, rows)
		}
	}
	if len(small) < denseUnionTiers {
		return roaring.FastOr(append(large, small...)...)
	}
	x.arrays()
	marks := x.s.marks
	lo, hi := len(marks), -1
	buf := &x.s.buf
	for _, rows := range small {
		lo, hi = min(lo, int(rows.Minimum()/64)), max(hi, int(rows.Maximum()/64))
		it := x.s.iterate(rows)
		for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
			for _, row := range buf[:n] {
				marks[row/64] |= 1 << (row % 64)
			}
		}
	}
	out := roaring.FromDense(marks[:hi+1], true)
	clear(marks[lo : hi+1])
	if len(large) == 0 {
		return out
	}
	return roaring.FastOr(append(large, out)...)
}

// lowerBound returns a score the text of at least k matching rows reaches
// (those of phrased, when not nil): the kth best, over the rows of
// tiers[:m], of the sum over groups of the best score among the group's
// tiers a row is in. -∞ when fewer than k rows are in tiers[:m].
//
// Each term of that sum is the row's exact score for its group, as far as
// the leading tiers go: the trailing ones, tiers[m:], may raise it to the
// best of their bounds for the group, no more. So a row scores at most,
// over groups, the greater of its score and that bound, plus the most the
// boosters add. lowerBound also returns the rows of the leading tiers
// whose upper bound is not below the threshold with the least the
// boosters add: every row that may reach the k best is among them, as a
// row in the trailing tiers only is below it (essential). nil with the
// threshold -∞.
func (x *scorer) lowerBound(tiers []tier, m int, phrased *roaring.Bitmap, k int, boost boostRange) (float64, *roaring.Bitmap, error) {
	total, best := x.arrays()
	sc := x.s
	lead := tiers[:m]
	// The most the trailing tiers give a row, in all (trail) and for each
	// group: above that, a row's own score for a group raises its bound.
	trail := boost.hi
	bestTrail := make([]float64, len(x.groups))
	for _, t := range tiers[m:] {
		if t.bound > bestTrail[t.group] {
			trail += t.bound - bestTrail[t.group]
			bestTrail[t.group] = t.bound
		}
	}
	excess := sc.excess[:len(total)]
	order := make([]int, len(lead))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return lead[order[i]].group < lead[order[j]].group })
	sc.seen = sc.seen[:0] // rows with a bound, each once
	defer func() {
		for _, row := range sc.seen {
			total[row], excess[row] = 0, 0
		}
	}()
	for i := 0; i < len(order); {
		if err := x.ctx.Err(); err != nil {
			return 0, nil, err
		}
		g := lead[order[i]].group
		sc.held = sc.held[:0]
		for ; i < len(order) && lead[order[i]].group == g; i++ {
			t := &lead[order[i]]
			rows := x.tierRows(t)
			if phrased != nil {
				rows = roaring.And(rows, phrased)
			}
			byBucket := bm25ByBucket(&x.postings[t.posting], &x.groups[g], t.level)
			buf := &x.s.buf
			it := x.s.iterate(rows)
			for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
				x.raiseRows(buf[:n], &byBucket, x.groups[g].fs.bucket)
			}
		}
		for _, row := range sc.held {
			if total[row] == 0 {
				sc.seen = append(sc.seen, row)
			}
			total[row] += best[row]
			if over := best[row] - bestTrail[g]; over > 0 {
				excess[row] += over
			}
			best[row] = 0
		}
	}
	if len(sc.seen) < k {
		return math.Inf(-1), nil, nil
	}
	// The k best in a min-heap: its root is the kth best.
	lows := sc.lows[:0]
	for _, row := range sc.seen {
		s := total[row]
		if len(lows) < k {
			lows = append(lows, s)
			for i := len(lows) - 1; i > 0 && lows[(i-1)/2] > lows[i]; i = (i - 1) / 2 {
				lows[i], lows[(i-1)/2] = lows[(i-1)/2], lows[i]
			}
			continue
		}
		if s <= lows[0] {
			continue
		}
		lows[0] = s
		for i := 0; ; {
			m, l, r := i, 2*i+1, 2*i+2
			if l < k && lows[l] < lows[m] {
				m = l
			}
			if r < k && lows[r] < lows[m] {
				m = r
			}
			if m == i {
				break
			}
			lows[i], lows[m] = lows[m], lows[i]
			i = m
		}
	}
	sc.lows = lows
	threshold := lows[0]
	// The rows kept are marked, and the marks read back as a bitmap: one
	// pass, where sorting them costs more.
	marks := sc.marks
	lo, hi := len(marks), -1
	for _, row := range sc.seen {
		if !below(trail+excess[row], threshold+boost.lo) {
			marks[row/64] |= 1 << (row % 64)
			lo, hi = min(lo, int(row/64)), max(hi, int(row/64))
		}
	}
	if hi < 0 {
		return threshold, roaring.New(), nil
	}
	out := roaring.FromDense(marks[:hi+1], true)
	clear(marks[lo : hi+1])
	return threshold, out, nil
}
