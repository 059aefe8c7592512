package index

// This file runs a query's filter lazily: instead of computing every
// matching row before ordering, a walk of the sort order tests each row it
// visits against the filter and stops once the page is full.
//
// The cost rule. A walk of the order visits about V = L·|live|/E rows to
// fill a window of L rows when the filter matches an estimated E rows
// (E from the postings' sizes and the ranges' spans in the in-memory
// orders, the conditions of an and taken as independent), and more: it
// takes the rows of one value of the first sort key together when the
// order has more keys, so it tests all of the group of ties it stops in,
// of G rows (estimated from the first key's in-memory order, tieGroup; a
// walk of the ids has none, nor one of a single key in memory, which takes
// ties in id order as its order keeps them):
// V = max(L·|live|/E + G/2, G). The eager plan first builds the filter's
// bitmap and then walks (or heaps) over it; the lazy one tests the V rows
// instead, each against every condition. In units of about one in-memory
// row visit:
//
//	eager build   Σ postings |P|/16 (set algebra runs on whole words)
//	              + Σ ranges |live|/2 (a slice of the in-memory order)
//	lazy tests    V · (Σ postings 4 (a bitmap probe)
//	                 + Σ ranges 2 (an array compare), 8 without a typed array)
//
// and the query runs lazily when the tests cost less than the build, the
// window (offset, page and one more row) holds at most maxLazyLimit rows,
// the order's first key is an ordered index or the order is the default
// one with the ids' order in memory (not a random order), and every
// condition can be tested on one row: no scans but $contains and
// $iContains on a column whose store narrows them by trigrams, no links,
// no element conditions (a not adds |live|/16 to the build and a probe of
// the live rows to the tests).
// Otherwise the eager plan runs; it also runs, starting over, when the
// source turns out to keep no ordered index of the sort column and when
// the walk tests more rows than its budget (lazyBudget). The walk itself
// is the same in both plans; what changes is how a visited row is found
// to match.
//
// A $contains or $iContains reads its trigram candidates C up front, in
// both plans. The eager one then tests the value of each of them; the lazy
// one probes the candidates for each row it visits and tests the values
// of those in them:
//
//	eager build   |C| · 8 (a substring search of a stored value)
//	lazy tests    V · (4 + |C|/|live| · 12 (probes of the rows with a
//	              value and of those sure to match, then a search))
//
// so a frequent word verifies the values of about the page's rows, not
// those of every candidate.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
)

// maxLazyLimit is the largest window a lazy walk takes: past it the walk
// visits enough rows that the filter's bitmap is worth building.
const maxLazyLimit = 256

// Units of the cost rule (see above).
const (
	lazyPostingBuild = 16 // rows of a posting per unit of eager set algebra
	lazyRangeBuild   = 2  // rows of the table per unit of an eager range
	lazyPostingTest  = 4
	lazyTypedTest    = 2
	lazyValueTest    = 8
	lazySubstring    = 8 // a substring search of a stored value
)

// testKind is what a rowTest checks.
type testKind uint8

const (
	testLive      testKind = iota // the row is live: an and of nothing
	testAnd                       // every child holds
	testOr                        // some child holds
	testNot                       // the row is live and the child does not hold
	testBits                      // the row is in a posting
	testInts                      // an int or datetime range, on the value array
	testFloats                    // a float range, on the value array
	testValue                     // a range on the value store's values
	testSubstring                 // a substring, on the trigram candidates and the value array
	testDense                     // a row is in a posting, on the posting's words (densify)
)

// rowTest is a filter's plan turned into a test of one row: one rowTest
// per node of the plan, with what the node needs read up front (postings,
// value arrays), the estimated share of live rows it passes, and the
// counts of rows it tested and passed, which an explained query prints.
type rowTest struct {
	node     planNode
	kind     testKind
	children []*rowTest

	bits    *roaring.Bitmap // testBits: the posting; testLive, testNot: the live rows
	dense   []uint64        // testDense: the posting as one bit a row
	present *roaring.Bitmap // testInts, testFloats: the rows with a value (nil: all, see sparse)
	ints    []int64
	floats  []float64
	ib      bounds[int64]
	fb      bounds[float64]
	vals    ColumnValues
	rng     *rangeNode
	// testSubstring: the trigram candidates (bits), those of them known
	// to match (nil: none), the value array, the test of one value and
	// the count of tested rows that were candidates.
	sure  *roaring.Bitmap
	strs  PackedStrings
	match func(string) bool
	cands uint64

	share       float64 // estimated share of the live rows that pass
	build, test float64 // costs of the rule, in row visits

	tested, passed uint64
}

// eval tests a row, counting it.
func (t *rowTest) eval(row uint32) bool {
	t.tested++
	if t.holds(row) {
		t.passed++
		return true
	}
	return false
}

// holds tests a row as the node's eager evaluation would include it.
func (t *rowTest) holds(row uint32) bool {
	switch t.kind {
	case testLive:
		return t.bits.Contains(row)
	case testAnd:
		for _, c := range t.children {
			if !c.eval(row) {
				return false
			}
		}
		return true
	case testOr:
		for _, c := range t.children {
			if c.eval(row) {
				return true
			}
		}
		return false
	case testNot:
		return t.bits.Contains(row) && !t.children[0].eval(row)
	case testBits:
		return t.bits.Contains(row)
	case testDense:
		w := int(row >> 6)
		return w < len(t.dense) && t.dense[w]&(1<<(row&63)) != 0
	case testInts:
		return int(row) < len(t.ints) && t.ib.holds(t.ints[row]) && t.has(row)
	case testFloats:
		return int(row) < len(t.floats) && t.fb.holds(t.floats[row]) && t.has(row)
	case testValue:
		return t.rng.match(t.vals.Get(row))
	case testSubstring:
		if !t.bits.Contains(row) {
			return false
		}
		t.cands++
		// As the eager scan, only rows with a value match.
		if int(row) >= t.strs.Len() || !t.has(row) {
			return false
		}
		return (t.sure != nil && t.sure.Contains(row)) || t.match(t.strs.At(row))
	}
	return false
}

// has reports whether a row within the value array has a value: always,
// when every row of the array does (present is nil then).
func (t *rowTest) has(row uint32) bool {
	return t.present == nil || t.present.Contains(row)
}

// sparse returns the rows with a value of a value array of n rows, or nil
// when every row of it has one: a row test then reads the array alone,
// not the bitmap too.
func sparse(present *roaring.Bitmap, n int) *roaring.Bitmap {
	if n > 0 && present.GetCardinality() == uint64(n) && present.Minimum() == 0 && present.Maximum() == uint32(n-1) {
		return nil
	}
	return present
}

// lazyBuilder turns plan nodes into row tests, reading what they need.
type lazyBuilder struct {
	x    *execCtx
	live *roaring.Bitmap
	n    float64 // live rows, at least 1
	// fetched are the postings read, handed to the eager plan when the
	// rule chooses it.
	fetched map[planNode]*roaring.Bitmap
}

// build returns the test of a node; ok is false when the node cannot be
// tested row by row.
func (b *lazyBuilder) build(n planNode) (*rowTest, bool, error) {
	t := &rowTest{node: n}
	switch n := n.(type) {
	case *andNode:
		if len(n.children) == 0 {
			t.kind, t.bits, t.share = testLive, b.live, 1
			t.test = lazyPostingTest
			return t, true, nil
		}
		t.kind, t.share = testAnd, 1
		for _, c := range n.children {
			ct, ok, err := b.build(c)
			if !ok || err != nil {
				return nil, ok, err
			}
			t.children = append(t.children, ct)
			t.share *= ct.share
			t.build += ct.build
			t.test += ct.test
		}
		// The children that fail most often per unit of test run first.
		slices.SortStableFunc(t.children, func(p, q *rowTest) int {
			a, c := (1-p.share)/p.test, (1-q.share)/q.test
			switch {
			case a > c:
				return -1
			case a < c:
				return 1
			}
			return 0
		})
		return t, true, nil
	case *orNode:
		t.kind = testOr
		miss := 1.0
		for _, c := range n.children {
			ct, ok, err := b.build(c)
			if !ok || err != nil {
				return nil, ok, err
			}
			t.children = append(t.children, ct)
			miss *= 1 - ct.share
			t.build += ct.build
			t.test += ct.test
		}
		t.share = 1 - miss
		return t, true, nil
	case *notNode:
		ct, ok, err := b.build(n.child)
		if !ok || err != nil {
			return nil, ok, err
		}
		t.kind, t.bits, t.children = testNot, b.live, []*rowTest{ct}
		t.share = 1 - ct.share
		t.build = ct.build + b.n/lazyPostingBuild
		t.test = ct.test + lazyPostingTest
		return t, true, nil
	case *postingNode:
		rows, err := n.read(b.x)
		if err != nil {
			return nil, false, err
		}
		b.fetched[n] = rows
		c := float64(rows.GetCardinality())
		t.kind, t.bits = testBits, rows
		t.share = min(1, c/b.n)
		t.build, t.test = c/lazyPostingBuild, lazyPostingTest
		return t, true, nil
	case *rangeNode:
		return b.buildRange(t, n)
	case *scanNode:
		return b.buildSubstring(t, n)
	}
	return nil, false, nil
}

// buildSubstring tests $contains and $iContains of a string column whose
// store keeps a value array and narrows substrings by trigrams; any other
// scan cannot be tested row by row. The share it estimates is that of the
// candidates, a bound of the matches.
func (b *lazyBuilder) buildSubstring(t *rowTest, n *scanNode) (*rowTest, bool, error) {
	p := n.pred
	if (p.Op != OpContains && p.Op != OpIContains) || p.Quant != QuantNone || len(p.JSONPath) != 0 || !storable(p.Column) {
		return nil, false, nil
	}
	vals, err := b.x.src.Values(p.Column)
	if err != nil || vals == nil {
		return nil, false, err
	}
	dv, ok := vals.(DenseValues)
	sv, ok2 := vals.(SubstringValues)
	if !ok || !ok2 {
		return nil, false, nil
	}
	strs := dv.Strings()
	if strs.Len() == 0 {
		return nil, false, nil
	}
	rows, sure, ok := sv.SubstringCandidates(p.Value.Str, p.Op == OpIContains)
	if !ok {
		return nil, false, nil
	}
	c := float64(rows.GetCardinality())
	t.kind, t.bits, t.sure, t.present, t.strs = testSubstring, rows, sure, sparse(dv.Present(), strs.Len()), strs
	t.match = substringMatch(p.Value.Str, p.Op == OpIContains)
	t.share = min(1, c/b.n)
	t.build = c * lazySubstring
	t.test = lazyPostingTest + t.share*(lazySubstring+lazyPostingTest)
	return t, true, nil
}

// buildRange tests a range on the column's value array when its store has
// one and the bounds suit it, else on the store's values; a column with
// no value store cannot be tested row by row.
func (b *lazyBuilder) buildRange(t *rowTest, n *rangeNode) (*rowTest, bool, error) {
	vals, err := b.x.src.Values(n.preds[0].Column)
	if err != nil || vals == nil {
		return nil, false, err
	}
	t.rng, t.vals, t.kind, t.test = n, vals, testValue, lazyValueTest
	if dv, ok := vals.(DenseValues); ok {
		switch n.preds[0].Column.Type {
		case "float":
			if fb, ok := floatBounds(n.preds); ok && dv.Floats() != nil {
				t.kind, t.floats, t.fb, t.present, t.test = testFloats, dv.Floats(), fb, sparse(dv.Present(), len(dv.Floats())), lazyTypedTest
			}
		case "int", "datetime":
			if ib, ok := intBounds(n.preds); ok && dv.Ints() != nil {
				t.kind, t.ints, t.ib, t.present, t.test = testInts, dv.Ints(), ib, sparse(dv.Present(), len(dv.Ints())), lazyTypedTest
			}
		}
	}
	t.share = 1.0 / 3 // a range of unknown span: the usual guess
	if c, ok := n.estimate(b.x); ok {
		t.share = min(1, float64(c)/b.n)
	}
	t.build = b.n / lazyRangeBuild
	return t, true, nil
}

// lazyVisits is the number of rows a walk is expected to visit to fill a
// window of limit rows with the test's matches, finishing the group of
// ties of about group rows it stops in: half of it past the last match
// needed, on average, and at least the whole of the first group.
func lazyVisits(t *rowTest, limit int, live, group float64) float64 {
	return min(live, max(float64(limit)/max(t.share, 1/live)+group/2, group))
}

// lazyWorth applies the cost rule to a filter's test and a window.
func lazyWorth(t *rowTest, limit int, live, group float64) bool {
	return lazyVisits(t, limit, live, group)*t.test < t.build
}

// tieSamples is how many positions of an order tieGroup looks at.
const tieSamples = 16

// tieGroup estimates the rows of the group of equal values of o's first
// key that a walk stops in: the mean size of the groups at evenly spaced
// positions of the key's in-memory order, a mean weighted by size, as a
// row of a large group is more likely the one that fills the window. The
// store keeps it with the order when it can (MemoOrderedValues), so that
// it is found once per order, not per query. It is 0 for the ids' order,
// whose values are unique; for an order of one key and the ids, whose
// in-memory order keeps ties as the walk takes them (walkByRow), so that
// it stops at the row that fills the window; and when the key has no
// in-memory order (its index in storage is walked group by group).
func tieGroup(src Source, o Order) (float64, error) {
	if len(o.Keys) == 0 {
		return 0, nil
	}
	c := o.Keys[0].Column
	vals, err := src.Values(c)
	if err != nil || vals == nil {
		return 0, err
	}
	if len(o.Keys) == 1 && !o.Random {
		ids, err := src.Values(IDColumn)
		if err != nil {
			return 0, err
		}
		if dv, ok := ids.(DenseValues); ok && dv.Strings().Len() > 0 {
			return 0, nil
		}
	}
	fo, io, ok := ordered(vals, c.Type)
	if !ok {
		return 0, nil
	}
	estimate := func(order []uint32) float64 {
		if fo.order != nil {
			fo.order = order
			return fo.meanGroup(tieSamples)
		}
		io.order = order
		return io.meanGroup(tieSamples)
	}
	if mv, ok := vals.(MemoOrderedValues); ok {
		return mv.OrderMemo(estimate), nil
	}
	if fo.order != nil {
		return estimate(fo.order), nil
	}
	return estimate(io.order), nil
}

// errLazySpent stops a lazy walk that tested more rows than its budget.
var errLazySpent = errors.New("index: lazy walk over budget")

// lazyBudget is the most rows a lazy walk tests before it gives up for
// the eager plan: four times the rows it was expected to visit, and some
// slack. The estimate takes the filter's conditions and the sort order as
// independent; when they are not (a range that keeps only the end of the
// order the walk reaches last), the walk would visit most of the table,
// and the work lost to trying is bounded by the budget.
func lazyBudget(t *rowTest, limit int, live, group float64) uint64 {
	return uint64(4*lazyVisits(t, limit, live, group)) + 256
}

// selectLazy runs the query's page as a lazy walk when the cost rule
// chooses it; ok is false when it does not, and the eager plan runs (with
// the postings read here). An explained query notes the tests' counts.
func (p *QueryPlan) selectLazy(ctx context.Context, src Source, w Window, explain bool) (rows []uint32, keys []Key, ok bool, err error) {
	if w.Limit > maxLazyLimit || !walkable(p.order) || p.filter.root == nil {
		return nil, nil, false, nil
	}
	if len(p.order.Keys) == 0 {
		ord, err := idOrder(src)
		if err != nil || ord.order == nil {
			return nil, nil, false, err
		}
	}
	start := time.Now()
	live, err := src.Live()
	if err != nil {
		return nil, nil, false, err
	}
	b := &lazyBuilder{
		x:       &execCtx{ctx: ctx, src: src, live: live},
		live:    live,
		n:       max(1, float64(live.GetCardinality())),
		fetched: map[planNode]*roaring.Bitmap{},
	}
	t, ok, err := b.build(p.filter.root)
	defer func() {
		if !ok {
			p.filter.fetched = b.fetched
		}
	}()
	if err != nil || !ok {
		return nil, nil, false, err
	}
	group, err := tieGroup(src, p.order)
	if err != nil || !lazyWorth(t, w.Limit, b.n, group) {
		return nil, nil, false, err
	}
	p.limit, p.reverse = w.Limit, w.Reverse
	var held denseHeld
	defer held.release()
	held.densify(t, lazyVisits(t, w.Limit, b.n, group))
	cc := candidates{set: live, test: t, budget: lazyBudget(t, w.Limit, b.n, group)}
	rows, keys, err = walk(ctx, src, cc, p.order, w, &p.sel)
	switch {
	case errors.Is(err, ErrNoOrderedIndex):
		// The eager plan starts over.
		return nil, nil, false, nil
	case errors.Is(err, errLazySpent):
		// What the walk took is dropped, and the plan says so: the
		// eager plan starts over.
		p.gaveUp = t.tested
		return nil, nil, false, nil
	case err != nil:
		return nil, nil, true, err
	}
	p.sel.kind = "lazy walk"
	if explain {
		p.explainLazy(t, start, len(rows))
	}
	return rows, keys, true, nil
}

// explainLazy notes the steps of a lazy walk that ran: the walk, and under
// it the filter's steps, each with the rows it tested as its estimate and
// the rows that passed as its count.
func (p *QueryPlan) explainLazy(t *rowTest, start time.Time, rows int) {
	steps := map[planNode]*ExplainNode{}
	filter := describeSteps(p.filter.root, steps)
	var note func(t *rowTest)
	note = func(t *rowTest) {
		e := steps[t.node]
		e.Ran, e.Estimated, e.Actual = t.tested > 0, t.tested, t.passed
		switch t.kind {
		case testInts, testFloats, testValue:
			e.Via = "column store"
		case testSubstring:
			// As the eager scan: the values tested on the column
			// store, under it the trigram candidates the rows were
			// probed in.
			e.Via = "column store"
			tri := step("trigram", formatFilterValue(t.node.(*scanNode).pred.Value))
			tri.logged = "?"
			tri.Ran, tri.Estimated, tri.Actual = true, t.tested, t.cands
			e.Children = []*ExplainNode{tri}
		}
		order := make([]*ExplainNode, 0, len(t.children))
		for _, c := range t.children {
			note(c)
			order = append(order, steps[c.node])
		}
		if len(order) > 0 {
			e.Children = order
		}
	}
	note(t)
	p.explained = &queryTrace{start: start, filter: filter, cand: t.passed}
	p.explained.root = p.outline(filter)
	sel := p.explained.root.Children[0]
	sel.Ran = true
	sel.Time = time.Since(start)
	sel.Estimated = min(uint64(p.limit), t.passed)
	sel.Actual = uint64(rows)
}

// A posting's Contains finds the row's container among the posting's,
// then the row in it: a binary search of an array container for a sparse
// posting, several times the cost of a value array's compare. A walk that
// tests many rows against a posting tests them instead on the posting
// written out as one bit a row (testDense): that costs clearing the words
// and setting the posting's bits once, and pays when the tests it is
// expected to run save more:
//
//	dense build   2·words/lazyDenseWords (clearing them, and writing the
//	              containers of a dense part of the posting a word at a
//	              time) + |A|/lazyDenseRows (|A|: the rows in the array
//	              containers of its sparse parts, set one by one)
//	saved         tests · (lazyPostingTest - lazyDenseTest)
//
// The words come from a pool and go back once the walk ends.
const (
	lazyDenseWords = 16 // words cleared per unit
	lazyDenseRows  = 4  // bits of a posting set per unit
	lazyDenseTest  = 1
)

// denseWords holds the word slices of dense postings between walks.
var denseWords = sync.Pool{New: func() any { return new([]uint64) }}

// denseHeld is the pooled words a walk's tests hold, given back by
// release.
type denseHeld []*[]uint64

// densify turns the postings of t that are expected to be tested often
// enough into dense tests, given the rows t itself is expected to test.
func (h *denseHeld) densify(t *rowTest, tests float64) {
	switch t.kind {
	case testAnd:
		// Each child tests the rows its earlier siblings passed.
		for _, c := range t.children {
			h.densify(c, tests)
			tests *= c.share
		}
	case testOr:
		// Each child tests the rows its earlier siblings failed.
		for _, c := range t.children {
			h.densify(c, tests)
			tests *= 1 - c.share
		}
	case testNot:
		h.densify(t.children[0], tests)
	case testBits:
		words := t.bits.DenseSize()
		// Bitmap and run containers are written a word at a time.
		cost := float64(2*words)/lazyDenseWords + float64(t.bits.Stats().ArrayContainerValues)/lazyDenseRows
		if words == 0 || tests*(lazyPostingTest-lazyDenseTest) <= cost {
			return
		}
		buf := denseWords.Get().(*[]uint64)
		if uint64(cap(*buf)) < words {
			*buf = make([]uint64, words)
		} else {
			*buf = (*buf)[:words]
			clear(*buf)
		}
		t.bits.WriteDenseTo(*buf)
		t.kind, t.dense = testDense, *buf
		*h = append(*h, buf)
	}
}

// release gives the held words back to the pool.
func (h *denseHeld) release() {
	for _, buf := range *h {
		denseWords.Put(buf)
	}
	*h = nil
}
