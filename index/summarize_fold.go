package index

// This file folds the values of summarized columns into sums, averages,
// minimums and maximums: value by value, over the arrays of a dense value
// store, over every group in one pass, or by group code on every core.

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
)

// summaryAcc accumulates one summary of one group.
type summaryAcc struct {
	n    int64 // rows or values seen
	sumI int64 // the sum of int values
	sumF float64
	best codec.Value // the minimum or maximum so far
}

// add takes one non-null value into the accumulator of a summary function.
func (a *summaryAcc) add(fn summaryFn, v codec.Value) {
	switch fn {
	case fnCount:
		a.n++
	case fnSum, fnAverage:
		a.n++
		if v.Kind == codec.KindInt {
			a.sumI += v.Int
		} else {
			a.sumF += v.Float
		}
	case fnMin, fnMax:
		if v.Kind == codec.KindStrings {
			for _, e := range v.Strs {
				a.extreme(fn, codec.String(e))
			}
			return
		}
		a.extreme(fn, v)
	}
}

func (a *summaryAcc) extreme(fn summaryFn, v codec.Value) {
	a.n++
	if a.best.IsNull() || (fn == fnMin && compareValues(v, a.best) < 0) || (fn == fnMax && compareValues(v, a.best) > 0) {
		a.best = v
	}
}

// result is the value of a summary function over a column of type in:
// null for sums, averages, minimums and maximums of no values. Sums of
// ints are ints; averages are floats (of ints, the exact sum divided).
func (a *summaryAcc) result(fn summaryFn, in ColumnType) codec.Value {
	switch fn {
	case fnCount:
		return codec.Int(a.n)
	case fnSum:
		if a.n == 0 {
			return codec.Null()
		}
		if in == TypeInt {
			return codec.Int(a.sumI)
		}
		return codec.Float(a.sumF)
	case fnAverage:
		if a.n == 0 {
			return codec.Null()
		}
		if in == TypeInt {
			return codec.Float(float64(a.sumI) / float64(a.n))
		}
		return codec.Float(a.sumF / float64(a.n))
	case fnMin, fnMax:
		return a.best
	}
	return codec.Null()
}

// DenseValues is a ColumnValues that also hands out its values as arrays
// indexed by row, so that summaries over many rows scan memory instead of
// calling Get for each. Present holds the rows with a value; the array of
// the column's kind (Ints for int, datetime and bool columns, Floats for
// float columns, Strings for string, email and link columns) is longer
// than the largest of them; Strings has no rows for other columns. Both are read-only and valid while the Source
// is in use.
type DenseValues interface {
	ColumnValues
	Present() *roaring.Bitmap
	Ints() []int64
	Floats() []float64
	Strings() PackedStrings
}

// foldBatch is how many rows a dense fold takes from a bitmap at a time.
const foldBatch = 1024

// sumMinMax adds the values of the rows it yields to sum, in row order, and
// returns it with their minimum and maximum; it yields at least one row.
func sumMinMax[T int64 | float64](arr []T, it roaring.ManyIntIterable, buf []uint32, sum T) (T, T, T) {
	var lo, hi T
	first := true
	for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
		for _, row := range buf[:n] {
			v := arr[row]
			sum += v
			if first {
				lo, hi, first = v, v, false
				continue
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return sum, lo, hi
}

// foldDense takes the values of rows of a column of type t into a, for a
// sum, average, minimum or maximum, reading the arrays of a dense value
// store in row order. ok is false, with nothing done, when vals is not
// dense or the function and type have no dense loop.
func foldDense(vals ColumnValues, t ColumnType, fn summaryFn, rows *roaring.Bitmap, a *summaryAcc) bool {
	dv, ok := vals.(DenseValues)
	if !ok || fn == fnCount {
		return false
	}
	have := roaring.And(rows, dv.Present())
	if have.IsEmpty() {
		return true
	}
	last := int(have.Maximum())
	buf := make([]uint32, foldBatch)
	it := have.ManyIterator()
	switch t {
	case TypeInt, TypeDatetime:
		ints := dv.Ints()
		if last >= len(ints) || (t == TypeDatetime && (fn == fnSum || fn == fnAverage)) {
			return false
		}
		kind := codec.KindInt
		if t == TypeDatetime {
			kind = codec.KindDatetime
		}
		sum, lo, hi := sumMinMax(ints, it, buf, a.sumI)
		switch fn {
		case fnSum, fnAverage:
			a.n += int64(have.GetCardinality())
			a.sumI = sum
		case fnMin:
			a.extreme(fn, codec.Value{Kind: kind, Int: lo})
		case fnMax:
			a.extreme(fn, codec.Value{Kind: kind, Int: hi})
		}
		return true
	case TypeFloat:
		floats := dv.Floats()
		if last >= len(floats) {
			return false
		}
		sum, lo, hi := sumMinMax(floats, it, buf, a.sumF)
		switch fn {
		case fnSum, fnAverage:
			a.n += int64(have.GetCardinality())
			a.sumF = sum
		case fnMin:
			a.extreme(fn, codec.Float(lo))
		case fnMax:
			a.extreme(fn, codec.Float(hi))
		}
		return true
	case TypeString, TypeEmail:
		strs := dv.Strings()
		if last >= strs.Len() || (fn != fnMin && fn != fnMax) {
			return false
		}
		first := true
		var best string
		for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
			for _, row := range buf[:n] {
				v := strs.At(row)
				if first || (fn == fnMin && v < best) || (fn == fnMax && v > best) {
					best, first = v, false
				}
			}
		}
		a.extreme(fn, codec.String(best))
		return true
	}
	return false
}

// summaryExec computes one summary on rows.
type summaryExec struct {
	ctx  context.Context
	spec *summarySpec
	// exists, for a count of a column of the table itself, holds the rows
	// where it is not null.
	exists *roaring.Bitmap
	rd     valueReader
}

func (q *summarizeReq) summaryExecs(x *valueReaders) ([]*summaryExec, error) {
	out := make([]*summaryExec, len(q.summaries))
	for i, s := range q.summaries {
		e := &summaryExec{ctx: q.ctx, spec: s}
		switch {
		case s.star:
		case s.fn == fnCount && len(s.col.links) == 0:
			ex, err := x.src.Exists(s.col.col)
			if err != nil {
				return nil, err
			}
			e.exists = ex
		default:
			rd, err := x.reader(s.col)
			if err != nil {
				return nil, err
			}
			e.rd = rd
		}
		out[i] = e
	}
	return out, nil
}

// result is the summary's value from its accumulator.
func (e *summaryExec) result(a *summaryAcc) codec.Value {
	if e.spec.star {
		return codec.Int(a.n)
	}
	return a.result(e.spec.fn, e.spec.col.col.Type)
}

// addRow takes one row into a group's accumulator.
func (e *summaryExec) addRow(a *summaryAcc, row uint32) error {
	switch {
	case e.spec.star:
		a.n++
	case e.exists != nil:
		if e.exists.Contains(row) {
			a.n++
		}
	default:
		v, err := e.rd.get(row)
		if err != nil {
			return err
		}
		if !v.IsNull() {
			a.add(e.spec.fn, v)
		}
	}
	return nil
}

// addRows takes a set of rows into a group's accumulator: counts are
// cardinalities, and dense value stores are scanned as arrays.
func (e *summaryExec) addRows(a *summaryAcc, rows *roaring.Bitmap) error {
	switch {
	case e.spec.star:
		a.n += int64(rows.GetCardinality())
		return nil
	case e.exists != nil:
		a.n += int64(rows.AndCardinality(e.exists))
		return nil
	}
	if sr, ok := e.rd.(storeReader); ok && foldDense(sr.vals, e.spec.col.col.Type, e.spec.fn, rows, a) {
		return nil
	}
	return eachRow(e.ctx, rows, func(row uint32) error { return e.addRow(a, row) })
}

// labelRows maps each row of cand to the index of its group (at most
// maxPostingGroups+1 groups, which partition cand).
func labelRows(groups []*sumGroup, cand *roaring.Bitmap) []uint16 {
	gid := make([]uint16, int(cand.Maximum())+1)
	buf := make([]uint32, foldBatch)
	for gi, g := range groups {
		it := g.rows.ManyIterator()
		for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
			for _, row := range buf[:n] {
				gid[row] = uint16(gi)
			}
		}
	}
	return gid
}

// groupFold holds, per group, the count, sum, minimum and maximum of a
// numeric column's values: one pass serves every summary of the column.
type groupFold[T int64 | float64] struct {
	counts      []int64
	sum, lo, hi []T
}

// foldAll folds arr over the rows next yields, by group (gid), values in
// ascending row order.
func foldAll[T int64 | float64](arr []T, gid []uint16, ng int, next func() []uint32) *groupFold[T] {
	f := &groupFold[T]{counts: make([]int64, ng), sum: make([]T, ng), lo: make([]T, ng), hi: make([]T, ng)}
	for rows := next(); len(rows) > 0; rows = next() {
		for _, row := range rows {
			g, v := gid[row], arr[row]
			switch {
			case f.counts[g] == 0:
				f.lo[g], f.hi[g] = v, v
			case v < f.lo[g]:
				f.lo[g] = v
			case v > f.hi[g]:
				f.hi[g] = v
			}
			f.sum[g] += v
			f.counts[g]++
		}
	}
	return f
}

// pick returns group g's accumulation for fn.
func (f *groupFold[T]) pick(fn summaryFn, g int) T {
	switch fn {
	case fnMin:
		return f.lo[g]
	case fnMax:
		return f.hi[g]
	}
	return f.sum[g]
}

// foldGroups computes summary i of every group in one pass over the rows
// of cand, labelled by gid, reading a dense value store; ok is false,
// with nothing done, when the summary has no such pass. Per group, values
// are taken in ascending row order, as addRows takes them.
func (e *summaryExec) foldGroups(groups []*sumGroup, i int, cand *roaring.Bitmap, gid []uint16, folds map[string]any) bool {
	sr, ok := e.rd.(storeReader)
	if !ok {
		return false
	}
	dv, ok := sr.vals.(DenseValues)
	fn, t := e.spec.fn, e.spec.col.col.Type
	if !ok || fn == fnCount {
		return false
	}
	datetimeSum := t == TypeDatetime && (fn == fnSum || fn == fnAverage)
	if f, done := folds[e.spec.col.path]; done && !datetimeSum {
		// Another summary of this column folded it already.
		assignFold(groups, i, f, fn, t)
		return true
	}
	have := roaring.And(cand, dv.Present())
	if have.IsEmpty() {
		return true
	}
	last := int(have.Maximum())
	ng := len(groups)
	counts := make([]int64, ng)
	buf := make([]uint32, foldBatch)
	it := have.ManyIterator()
	next := func() []uint32 { return buf[:it.NextMany(buf)] }
	switch t {
	case TypeInt, TypeDatetime:
		ints := dv.Ints()
		if last >= len(ints) || datetimeSum {
			return false
		}
		f := foldAll(ints, gid, ng, next)
		folds[e.spec.col.path] = f
		assignFold(groups, i, f, fn, t)
		return true
	case TypeFloat:
		floats := dv.Floats()
		if last >= len(floats) {
			return false
		}
		f := foldAll(floats, gid, ng, next)
		folds[e.spec.col.path] = f
		assignFold(groups, i, f, fn, t)
		return true
	case TypeString, TypeEmail:
		strs := dv.Strings()
		if last >= strs.Len() || (fn != fnMin && fn != fnMax) {
			return false
		}
		acc := make([]string, ng)
		for rows := next(); len(rows) > 0; rows = next() {
			for _, row := range rows {
				g, v := gid[row], strs.At(row)
				if counts[g] == 0 || (fn == fnMin && v < acc[g]) || (fn == fnMax && v > acc[g]) {
					acc[g] = v
				}
				counts[g]++
			}
		}
		for g, grp := range groups {
			if counts[g] > 0 {
				grp.accs[i].extreme(fn, codec.String(acc[g]))
			}
		}
		return true
	}
	return false
}

// assignFold sets summary i of every group from a column's fold.
func assignFold(groups []*sumGroup, i int, fold any, fn summaryFn, t ColumnType) {
	for g, grp := range groups {
		a := &grp.accs[i]
		switch f := fold.(type) {
		case *groupFold[int64]:
			switch {
			case f.counts[g] == 0:
			case fn == fnSum || fn == fnAverage:
				a.n += f.counts[g]
				a.sumI += f.sum[g]
			case t == TypeDatetime:
				a.extreme(fn, codec.Value{Kind: codec.KindDatetime, Int: f.pick(fn, g)})
			default:
				a.extreme(fn, codec.Int(f.pick(fn, g)))
			}
		case *groupFold[float64]:
			switch {
			case f.counts[g] == 0:
			case fn == fnSum || fn == fnAverage:
				a.n += f.counts[g]
				a.sumF += f.sum[g]
			default:
				a.extreme(fn, codec.Float(f.pick(fn, g)))
			}
		}
	}
}

// foldCodes counts the candidates of each code and folds the numeric
// columns that dense value stores hold for every candidate: the sums,
// minimums and maximums their summaries need, by code. The folds are keyed
// by column path, as foldGroups keeps them.
//
// Many candidates are folded on every core without changing a result: the
// candidates' codes are labelled in slices of rows (counts are exact), then
// each column is folded whole by one goroutine, in ascending row order, so
// its float sums are those of every other path.
func foldCodes(cand *roaring.Bitmap, gid []uint16, ng int, execs []*summaryExec, spare int) ([]int64, map[string]any) {
	folds := map[string]any{}
	var folders []codeFolder
	byPath := map[string]codeFolder{}
	total := cand.GetCardinality()
	last := int(cand.Maximum())
	for _, e := range execs {
		sr, ok := e.rd.(storeReader)
		if !ok {
			continue
		}
		dv, ok := sr.vals.(DenseValues)
		fn, t := e.spec.fn, e.spec.col.col.Type
		if !ok || fn == fnCount || (t == TypeDatetime && (fn == fnSum || fn == fnAverage)) {
			continue
		}
		f := byPath[e.spec.col.path]
		if f == nil {
			switch t {
			case TypeInt, TypeDatetime:
				if arr := dv.Ints(); last < len(arr) {
					f = newCodeFold(arr, ng)
				}
			case TypeFloat:
				if arr := dv.Floats(); last < len(arr) {
					f = newCodeFold(arr, ng)
				}
			}
			// Only columns every candidate has a value in fold here: their
			// count is the group's.
			if f == nil || cand.AndCardinality(dv.Present()) != total {
				continue
			}
			byPath[e.spec.col.path] = f
			folders = append(folders, f)
			folds[e.spec.col.path] = f.fold()
		}
		f.need(fn)
	}
	workers := 1
	if total >= parallelFoldRows && len(folders) > 0 {
		var release func()
		workers, release = foldGoroutines(spare)
		defer release()
	}
	if workers == 1 {
		return foldCodeBatches(cand, gid, ng, folders), folds
	}
	lab := foldLabels.Get().(*foldLabel)
	defer foldLabels.Put(lab)
	lab.rows = slices.Grow(lab.rows[:0], int(total))[:total]
	lab.codes = slices.Grow(lab.codes[:0], int(total))[:total]
	rows, codes := lab.rows, lab.codes
	for it, n := cand.ManyIterator(), 0; ; {
		k := it.NextMany(rows[n:])
		if k == 0 {
			break
		}
		n += k
	}
	parts := make([][]int64, workers)
	inParallel(workers, func(w int) {
		lo, hi := len(rows)*w/workers, len(rows)*(w+1)/workers
		n := make([]int64, ng)
		for i, row := range rows[lo:hi] {
			g := gid[row]
			codes[lo+i] = g
			n[g]++
		}
		parts[w] = n
	})
	counts := parts[0]
	for _, n := range parts[1:] {
		for g, c := range n {
			counts[g] += c
		}
	}
	inParallel(min(workers, len(folders)), func(w int) {
		for i := w; i < len(folders); i += workers {
			folders[i].add(rows, codes)
		}
	})
	for _, f := range folders {
		f.setCounts(counts)
	}
	return counts, folds
}

// foldLabel is the candidates and their codes of a parallel foldCodes,
// kept between calls: millions of rows are megabytes the collector would
// otherwise reclaim after every request.
type foldLabel struct {
	rows  []uint32
	codes []uint16
}

var foldLabels = sync.Pool{New: func() any { return new(foldLabel) }}

// parallelFoldRows is the number of candidates from which foldCodes uses
// more than one core: below it, starting goroutines costs more than it
// saves.
const parallelFoldRows = 1 << 16

// foldWorkers bounds the goroutines parallel folds run beside their
// requests' own, over every summary running at once: one fewer than the
// cores less one, so that a summary, however large, and however many run,
// leaves a core to point reads and writes (with two cores, folds run in
// their request's goroutine only, unless their caller lends them cores it
// found idle: SummarizeRequest.SpareCores).
var foldWorkers = make(chan struct{}, max(runtime.GOMAXPROCS(0)-2, 0))

// foldGoroutines returns how many goroutines a large fold runs on, its
// request's own included, and what gives back the fold workers it took:
// the free workers of the pool, then up to spare more, one a core at most.
func foldGoroutines(spare int) (int, func()) {
	cores := runtime.GOMAXPROCS(0)
	extra, release := takeFoldWorkers(cores - 1)
	return min(1+extra+max(spare, 0), cores), release
}

// takeFoldWorkers takes up to n of foldWorkers, without waiting, and
// returns how many it took and what gives them back.
func takeFoldWorkers(n int) (int, func()) {
	took := 0
	for took < n {
		select {
		case foldWorkers <- struct{}{}:
			took++
			continue
		default:
		}
		break
	}
	return took, func() {
		for range took {
			<-foldWorkers
		}
	}
}

// foldCodeBatches is foldCodes in one goroutine: codes and folds in the
// same pass over the candidates, a batch at a time.
func foldCodeBatches(cand *roaring.Bitmap, gid []uint16, ng int, folders []codeFolder) []int64 {
	counts := make([]int64, ng)
	buf := make([]uint32, foldBatch)
	gb := make([]uint16, foldBatch)
	it := cand.ManyIterator()
	for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
		rows, codes := buf[:n], gb[:n]
		for i, row := range rows {
			g := gid[row]
			codes[i] = g
			counts[g]++
		}
		for _, f := range folders {
			f.add(rows, codes)
		}
	}
	for _, f := range folders {
		f.setCounts(counts)
	}
	return counts
}

// inParallel runs fn(0) … fn(n-1), each in its own goroutine but the first,
// and returns when all have.
func inParallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	fn(0)
	wg.Wait()
}

// codeFolder folds one numeric column by code, batch by batch.
type codeFolder interface {
	need(fn summaryFn)
	add(rows []uint32, codes []uint16)
	setCounts(counts []int64) // the codes' counts, once every row is added
	fold() any                // the *groupFold it fills
}

// codeFold fills a groupFold whose counts are the codes' counts. Minimums
// start above every value and maximums below, so a code's first value
// replaces them; a code without rows is never read.
type codeFold[T int64 | float64] struct {
	arr         []T
	f           *groupFold[T]
	sum, lo, hi bool
}

func newCodeFold[T int64 | float64](arr []T, ng int) codeFolder {
	f := &groupFold[T]{sum: make([]T, ng), lo: make([]T, ng), hi: make([]T, ng)}
	var top, bottom T
	switch any(top).(type) {
	case float64:
		top, bottom = T(math.Inf(1)), T(math.Inf(-1))
	case int64:
		var maxInt int64 = math.MaxInt64
		top, bottom = T(maxInt), T(-maxInt-1)
	}
	for g := range ng {
		f.lo[g], f.hi[g] = top, bottom
	}
	return &codeFold[T]{arr: arr, f: f}
}

func (c *codeFold[T]) fold() any { return c.f }

func (c *codeFold[T]) setCounts(counts []int64) { c.f.counts = counts }

func (c *codeFold[T]) need(fn summaryFn) {
	switch fn {
	case fnSum, fnAverage:
		c.sum = true
	case fnMin:
		c.lo = true
	case fnMax:
		c.hi = true
	}
}

// add folds a batch of rows whose codes are codes: one loop for the one
// function needed, or one loop for all three.
func (c *codeFold[T]) add(rows []uint32, codes []uint16) {
	arr, sum, lo, hi := c.arr, c.f.sum, c.f.lo, c.f.hi
	codes = codes[:len(rows)]
	switch {
	case c.sum && !c.lo && !c.hi:
		for i, row := range rows {
			sum[codes[i]] += arr[row]
		}
	case c.lo && !c.sum && !c.hi:
		for i, row := range rows {
			if g, v := codes[i], arr[row]; v < lo[g] {
				lo[g] = v
			}
		}
	case c.hi && !c.sum && !c.lo:
		for i, row := range rows {
			if g, v := codes[i], arr[row]; v > hi[g] {
				hi[g] = v
			}
		}
	default:
		for i, row := range rows {
			g, v := codes[i], arr[row]
			sum[g] += v
			if v < lo[g] {
				lo[g] = v
			}
			if v > hi[g] {
				hi[g] = v
			}
		}
	}
}

// countCodes counts the rows of each code.
func countCodes(rows *roaring.Bitmap, gid []uint16, ng int) []int64 {
	counts := make([]int64, ng)
	buf := make([]uint32, foldBatch)
	it := rows.ManyIterator()
	for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
		for _, row := range buf[:n] {
			counts[gid[row]]++
		}
	}
	return counts
}
