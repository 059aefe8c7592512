package index

import (
	"context"
	"slices"
	"sort"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
)

// Value stores may keep, besides the values, structures that answer some
// questions without visiting every row. Each is an optional interface of
// ColumnValues; what it returns is read-only and valid while the Source is
// in use.

// OrderedValues is a DenseValues of an int, datetime, float or string
// column (the record ids among them) that also keeps its rows in order of
// value.
type OrderedValues interface {
	DenseValues
	// Order returns the rows of Present in ascending order of their
	// values (strings by bytes), rows of equal value in ascending order
	// of their record ids, as a query orders them: a walk takes a sort's
	// rows in order without sorting ties, and seeks a cursor's value and
	// id. It is nil when the store keeps no order for the column.
	Order() []uint32
}

// MemoOrderedValues is an OrderedValues that keeps one figure derived
// from its order for as long as the order stays as it is.
type MemoOrderedValues interface {
	OrderedValues
	// OrderMemo returns what estimate returns for the column's order,
	// Order's result: computed on the first call, and again only once
	// the order changed. It is 0 when the store keeps no order; the
	// same estimate is always passed.
	OrderMemo(estimate func(order []uint32) float64) float64
}

// RunOrderedValues is an OrderedValues that also describes its order as
// runs of rows that follow one another among the rows of Present, as the
// record ids' order is when a table's ids grow with its inserts, batch by
// batch.
type RunOrderedValues interface {
	OrderedValues
	// OrderRuns returns what Order returns, and where each of its runs
	// starts in it (the first at 0): each row of a run is the next row
	// of Present after the row before it, so a run holds every row of
	// Present from its first to its last. runs is nil when the runs are
	// too many to be worth walking.
	OrderRuns() (order, runs []uint32)
}

// CodedValues is a ColumnValues of a string column with few distinct
// values that also codes each row's value as a small integer.
type CodedValues interface {
	ColumnValues
	// Codes returns a code per row, 0 for a row without a value (so are
	// rows past the end of codes), and the value of code k ≥ 1 at
	// vals[k-1]; ok is false when the column has no such codes. Codes
	// are fewer than maxPostingGroups+1; a value may have a code and no
	// row.
	Codes() (codes []uint16, vals []codec.Value, ok bool)
}

// SubstringValues is a ColumnValues of a string column that can narrow
// the rows a substring may occur in.
type SubstringValues interface {
	ColumnValues
	// SubstringCandidates returns a superset of the rows whose value
	// contains sub, under simple case folding when fold, and the rows
	// of it known to contain sub (nil: none, every row is to be tested);
	// ok is false when it cannot narrow them. The bitmaps are the
	// caller's.
	SubstringCandidates(sub string, fold bool) (rows, sure *roaring.Bitmap, ok bool)
}

// orderedColumn is a column's order with its values as one array type.
type orderedColumn[T int64 | float64] struct {
	arr     []T
	order   []uint32
	present *roaring.Bitmap
}

// span returns the positions [i, j) of the order whose values lie in b.
func (o orderedColumn[T]) span(b bounds[T]) (int, int) {
	i, j := 0, len(o.order)
	if b.hasLo {
		i = sort.Search(len(o.order), func(k int) bool {
			v := o.arr[o.order[k]]
			return v > b.lo || (b.loIncl && v == b.lo)
		})
	}
	if b.hasHi {
		j = sort.Search(len(o.order), func(k int) bool {
			v := o.arr[o.order[k]]
			return v > b.hi || (!b.hiIncl && v == b.hi)
		})
	}
	return i, max(i, j)
}

// rows returns the rows at positions [i, j) of the order as a bitmap. A
// few are sorted; more are set in a dense bitset, or cleared from the
// present rows when the span is most of them.
func (o orderedColumn[T]) rows(i, j int) *roaring.Bitmap {
	n, count := len(o.order), j-i
	switch {
	case count == 0:
		return roaring.New()
	case count <= n/512:
		rows := slices.Clone(o.order[i:j])
		slices.Sort(rows)
		out := roaring.New()
		out.AddMany(rows)
		return out
	}
	words := make([]uint64, o.present.Maximum()/64+1)
	if count <= n-count {
		for _, row := range o.order[i:j] {
			words[row>>6] |= 1 << (row & 63)
		}
	} else {
		o.present.WriteDenseTo(words)
		for _, row := range o.order[:i] {
			words[row>>6] &^= 1 << (row & 63)
		}
		for _, row := range o.order[j:] {
			words[row>>6] &^= 1 << (row & 63)
		}
	}
	return roaring.FromDense(words, false)
}

// filter returns the rows of cand (nil: every row) whose value lies in b.
// When the candidates are few against the span it compares their values;
// otherwise it takes the span's rows and intersects.
func (o orderedColumn[T]) filter(cand *roaring.Bitmap, b bounds[T]) *roaring.Bitmap {
	i, j := o.span(b)
	if cand == nil {
		return o.rows(i, j)
	}
	n, count := len(o.order), j-i
	if cand.GetCardinality()*4 < uint64(min(count, n-count)) {
		return filterTyped(cand, o.present, o.arr, b)
	}
	out := o.rows(i, j)
	out.And(cand)
	return out
}

// groupBufs recycles the room walks gather a value's rows in: a walk
// through large groups of ties would otherwise leave a buffer as large as
// a group behind each time.
var groupBufs = sync.Pool{New: func() any { return new([]uint32) }}

// maxGroupBuf bounds the room a walk gives back for reuse.
const maxGroupBuf = 1 << 20

// walk calls fn for each distinct value in b, in ascending order
// (descending when desc), with the rows holding it that are candidates,
// until fn returns false; values no candidate holds are skipped. The rows
// passed are valid until fn returns, in ascending order of the column's
// order.
//
// Each row of a value is tested once, as the walk reaches it, and a value
// is handed to fn once all its rows are tested. Only a candidate's value
// and those of the rows after it are read, to find the end of its value's
// rows: a selective filter visits many rows per candidate, and a value
// read is a random access to the value array where a test is often a
// probe of a small posting.
func (o orderedColumn[T]) walk(b bounds[T], desc bool, cand func(row uint32) bool, fn func(rows []uint32) bool) {
	i, j := o.span(b)
	pb := groupBufs.Get().(*[]uint32)
	buf := (*pb)[:0]
	defer func() {
		if cap(buf) <= maxGroupBuf {
			*pb = buf[:0]
			groupBufs.Put(pb)
		}
	}()
	if desc {
		for k := j - 1; k >= i; k-- {
			row := o.order[k]
			if !cand(row) {
				continue
			}
			// The rows of this value above k were tested already and are
			// not candidates; take those below it.
			v := o.arr[row]
			buf = append(buf[:0], row)
			for k > i && o.arr[o.order[k-1]] == v {
				k--
				if r := o.order[k]; cand(r) {
					buf = append(buf, r)
				}
			}
			slices.Reverse(buf)
			if !fn(buf) {
				return
			}
		}
		return
	}
	for k := i; k < j; k++ {
		row := o.order[k]
		if !cand(row) {
			continue
		}
		v := o.arr[row]
		buf = append(buf[:0], row)
		for k+1 < j && o.arr[o.order[k+1]] == v {
			k++
			if r := o.order[k]; cand(r) {
				buf = append(buf, r)
			}
		}
		if !fn(buf) {
			return
		}
	}
}

// tiePos is a position of a sort's walk: a value and a record id.
type tiePos[T int64 | float64] struct {
	v  T
	id string
}

// walkRows calls fn with each row of the order whose value lies in b and
// that is a candidate, until fn returns false: values in ascending order
// (descending when desc), rows of one value in ascending order of their
// ids (descending when idDesc), which is the order's own (OrderedValues)
// or its reverse, read from ids by row. With at set, b holds at's value
// and the walk starts past at: the rows of at's value that come before
// or at it are found by a binary search of their ids, not visited.
//
// Each row is tested as the walk reaches it and handed on at once: a walk
// that stops in a group of ties visits none of it past the row it stops
// at. When the two directions differ, each group is walked apart, its
// other end found by a galloping search.
func (o orderedColumn[T]) walkRows(b bounds[T], desc, idDesc bool, ids PackedStrings, at *tiePos[T], cand, fn func(row uint32) bool) {
	i, j := o.span(b)
	val := func(k int) T { return o.arr[o.order[k]] }
	idAt := func(k int) string {
		if row := o.order[k]; int(row) < ids.Len() {
			return ids.At(row)
		}
		return ""
	}
	// run walks the positions [lo, hi), backward when back; it reports
	// whether fn wants more.
	run := func(lo, hi int, back bool) bool {
		if back {
			for k := hi - 1; k >= lo; k-- {
				if row := o.order[k]; cand(row) && !fn(row) {
					return false
				}
			}
			return true
		}
		for k := lo; k < hi; k++ {
			if row := o.order[k]; cand(row) && !fn(row) {
				return false
			}
		}
		return true
	}
	// at's group is [gs, ge); its rows of ids after at's are [past, ge),
	// those of ids before it [gs, before).
	var gs, ge, past, before int
	if at != nil {
		gs = i + sort.Search(j-i, func(x int) bool { return val(i+x) >= at.v })
		ge = gs + sort.Search(j-gs, func(x int) bool { return val(gs+x) > at.v })
		past = gs + sort.Search(ge-gs, func(x int) bool { return idAt(gs+x) > at.id })
		before = gs + sort.Search(ge-gs, func(x int) bool { return idAt(gs+x) >= at.id })
	}
	switch {
	case !desc && !idDesc:
		if at != nil {
			i = past
		}
		run(i, j, false)
	case desc && idDesc:
		if at != nil {
			j = before
		}
		run(i, j, true)
	case desc:
		// Values downward, each group's ids upward.
		if at != nil {
			if !run(past, ge, false) {
				return
			}
			j = gs
		}
		for j > i {
			start := o.groupStart(i, j-1)
			if !run(start, j, false) {
				return
			}
			j = start
		}
	default:
		// Values upward, each group's ids downward.
		if at != nil {
			if !run(gs, before, true) {
				return
			}
			i = ge
		}
		for i < j {
			end := o.groupEnd(i, j)
			if !run(i, end, true) {
				return
			}
			i = end
		}
	}
}

// groupEnd returns the end of the group of equal values that starts at
// position k, no further than hi: a galloping search forward.
func (o orderedColumn[T]) groupEnd(k, hi int) int {
	v := o.arr[o.order[k]]
	lo := k + 1 // the positions before lo hold v
	for step := 1; ; step *= 2 {
		p := k + step
		if p >= hi || o.arr[o.order[p]] != v {
			p = min(p, hi)
			return lo + sort.Search(p-lo, func(x int) bool { return o.arr[o.order[lo+x]] != v })
		}
		lo = p + 1
	}
}

// groupStart returns the start of the group of equal values that ends at
// position k, no lower than lo: a galloping search backward.
func (o orderedColumn[T]) groupStart(lo, k int) int {
	v := o.arr[o.order[k]]
	hi := k // the positions from hi to k hold v
	for step := 1; ; step *= 2 {
		p := k - step
		if p < lo || o.arr[o.order[p]] != v {
			from := max(p+1, lo)
			return from + sort.Search(hi-from, func(x int) bool { return o.arr[o.order[from+x]] == v })
		}
		hi = p
	}
}

// groupAt returns the number of positions of the order holding the value
// at position k.
func (o orderedColumn[T]) groupAt(k int) int {
	v := o.arr[o.order[k]]
	i := sort.Search(k, func(x int) bool { return o.arr[o.order[x]] >= v })
	j := k + sort.Search(len(o.order)-k, func(x int) bool { return o.arr[o.order[k+x]] > v })
	return j - i
}

// meanGroup is the mean size of the groups of equal values holding
// samples evenly spaced positions of the order (all of them when it has
// fewer): about the size of the group of a row drawn at random.
func (o orderedColumn[T]) meanGroup(samples int) float64 {
	n := len(o.order)
	if n == 0 {
		return 0
	}
	samples = min(samples, n)
	sum := 0
	for i := range samples {
		sum += o.groupAt((2*i + 1) * n / (2 * samples))
	}
	return float64(sum) / float64(samples)
}

// ordered returns a column's in-memory order as floats or ints (one of fo,
// io set), or ok false when its value store keeps none.
func ordered(vals ColumnValues, t ColumnType) (fo orderedColumn[float64], io orderedColumn[int64], ok bool) {
	ov, isOrdered := vals.(OrderedValues)
	if !isOrdered {
		return fo, io, false
	}
	switch t {
	case "float":
		arr := ov.Floats()
		if arr == nil {
			return fo, io, false
		}
		if order := ov.Order(); order != nil {
			return orderedColumn[float64]{arr: arr, order: order, present: ov.Present()}, io, true
		}
	case "int", "datetime":
		arr := ov.Ints()
		if arr == nil {
			return fo, io, false
		}
		if order := ov.Order(); order != nil {
			return fo, orderedColumn[int64]{arr: arr, order: order, present: ov.Present()}, true
		}
	}
	return fo, io, false
}

// scanInMemory serves a Scan of a column from its value store's order;
// served is false when the store keeps none or the bounds do not suit it.
func scanInMemory(src Source, c *Column, b Bounds, desc bool, cand func(row uint32) bool, fn func(rows []uint32) bool) (served bool, err error) {
	if b.Prefix != nil {
		return false, nil
	}
	vals, err := src.Values(c)
	if err != nil || vals == nil {
		return false, err
	}
	fo, io, ok := ordered(vals, c.Type)
	if !ok {
		return false, nil
	}
	if fo.order != nil {
		fb, ok := scanBounds(b, floatOfValue)
		if !ok {
			return false, nil
		}
		fo.walk(fb, desc, cand, fn)
		return true, nil
	}
	ib, ok := scanBounds(b, intOfValue(c.Type))
	if !ok {
		return false, nil
	}
	io.walk(ib, desc, cand, fn)
	return true, nil
}

// walkRowsInMemory serves a walk of the rows of a sort on one column, c,
// whose value store keeps an order (walkRows), starting past at (nil: at
// the first row); served is false when the store keeps none or at's value
// does not suit it. desc and idDesc are as walkRows takes them, ids the
// record ids by row.
func walkRowsInMemory(src Source, c *Column, at *Key, desc, idDesc bool, ids PackedStrings, cand, fn func(row uint32) bool) (served bool, err error) {
	vals, err := src.Values(c)
	if err != nil || vals == nil {
		return false, err
	}
	fo, io, ok := ordered(vals, c.Type)
	if !ok {
		return false, nil
	}
	if fo.order != nil {
		return walkFrom(fo, at, desc, idDesc, ids, cand, fn, floatOfValue), nil
	}
	return walkFrom(io, at, desc, idDesc, ids, cand, fn, intOfValue(c.Type)), nil
}

// floatOfValue is v as a float column's order holds it: a float, or an
// integer; false for other kinds.
func floatOfValue(v codec.Value) (float64, bool) {
	switch v.Kind {
	case codec.KindFloat:
		return v.Float, true
	case codec.KindInt:
		return float64(v.Int), true
	}
	return 0, false
}

// intOfValue returns how a value is read as an integer column of type t's
// order holds it: an integer, or a datetime for a datetime column.
func intOfValue(t ColumnType) func(codec.Value) (int64, bool) {
	kind := codec.KindInt
	if t == TypeDatetime {
		kind = codec.KindDatetime
	}
	return func(v codec.Value) (int64, bool) { return v.Int, v.Kind == kind }
}

// walkFrom is walkRowsInMemory on an order of T: served is false when
// at's value does not convert to T.
func walkFrom[T int64 | float64](o orderedColumn[T], at *Key, desc, idDesc bool, ids PackedStrings, cand, fn func(row uint32) bool, conv func(codec.Value) (T, bool)) bool {
	var b bounds[T]
	var pos *tiePos[T]
	if at != nil {
		v, ok := conv(at.Values[0])
		if !ok {
			return false
		}
		pos = &tiePos[T]{v: v, id: at.ID}
		if desc {
			b.hi, b.hasHi, b.hiIncl = v, true, true
		} else {
			b.lo, b.hasLo, b.loIncl = v, true, true
		}
	}
	o.walkRows(b, desc, idDesc, ids, pos, cand, fn)
	return true
}

// walkRuns is walkIDOrder over an order in runs (RunOrderedValues),
// forward from position lo to hi: in each run, the rows of cand between
// the run's first and last rows in the window that hold an id are the
// run's candidates, in row order, as no other run reaches there. It
// appends up to limit of them to rows and keys.
func walkRuns(ctx context.Context, ord idOrdering, lo, hi int, cand *roaring.Bitmap, limit int, rows []uint32, keys []Key) ([]uint32, []Key, error) {
	runs := ord.runs
	r := sort.Search(len(runs), func(i int) bool { return int(runs[i]) > lo }) - 1
	n := 0
	for ; r < len(runs) && int(runs[r]) < hi && len(rows) < limit; r++ {
		start, end := max(int(runs[r]), lo), hi
		if r+1 < len(runs) {
			end = min(end, int(runs[r+1]))
		}
		if start >= end {
			continue
		}
		first, last := ord.order[start], ord.order[end-1]
		it := cand.Iterator()
		it.AdvanceIfNeeded(first)
		for it.HasNext() && len(rows) < limit {
			n++
			if err := checkContext(ctx, n); err != nil {
				return rows, keys, err
			}
			row := it.Next()
			if row > last {
				break
			}
			if ord.present.Contains(row) {
				rows = append(rows, row)
				keys = append(keys, Key{Values: []codec.Value{}, ID: ord.ids.At(row)})
			}
		}
	}
	return rows, keys, nil
}

// runsWalkCheaper reports whether walking an order in runs costs less
// than a heap over n candidates (about one id comparison each): the walk
// seeks the candidates once per run it enters, about one per run length
// of rows it passes, and passes about limit·|live|/n rows.
func runsWalkCheaper(ord idOrdering, n, limit int) bool {
	if n == 0 {
		return false
	}
	perRun := float64(len(ord.order)) / float64(len(ord.runs))
	passed := float64(limit) * float64(len(ord.order)) / float64(n)
	return 4*(passed/perRun+1) < float64(n)
}

// scanBounds converts scan bounds to an interval of the array's type.
func scanBounds[T int64 | float64](b Bounds, conv func(codec.Value) (T, bool)) (bounds[T], bool) {
	var out bounds[T]
	if b.Lo != nil {
		v, ok := conv(*b.Lo)
		if !ok {
			return out, false
		}
		out.lo, out.hasLo, out.loIncl = v, true, b.LoIncl
	}
	if b.Hi != nil {
		v, ok := conv(*b.Hi)
		if !ok {
			return out, false
		}
		out.hi, out.hasHi, out.hiIncl = v, true, b.HiIncl
	}
	return out, true
}

// idOrdering is the record ids' in-memory order (idOrder).
type idOrdering struct {
	order   []uint32
	ids     PackedStrings
	present *roaring.Bitmap
	// runs is where the order's runs start (RunOrderedValues), or nil.
	runs []uint32
}

// idOrder returns the record ids' in-memory order and the ids by row, with
// a nil order when the id store keeps none; it builds the order on first
// use.
func idOrder(src Source) (idOrdering, error) {
	vals, err := src.Values(IDColumn)
	if err != nil || vals == nil {
		return idOrdering{}, err
	}
	ov, ok := vals.(OrderedValues)
	if !ok {
		return idOrdering{}, nil
	}
	out := idOrdering{ids: ov.Strings(), present: ov.Present()}
	if p := out.present; out.ids.Len() == 0 || !p.IsEmpty() && int(p.Maximum()) >= out.ids.Len() {
		return idOrdering{}, nil
	}
	if rv, ok := ov.(RunOrderedValues); ok {
		out.order, out.runs = rv.OrderRuns()
	} else {
		out.order = ov.Order()
	}
	if out.order == nil {
		return idOrdering{}, nil
	}
	return out, nil
}

// walkIDOrder produces the default order (ascending id) by walking the
// ids' in-memory order within the window's cursors, taking the rows that
// are candidates until the window is full. A forward walk over a
// candidate set of an order in runs takes each run's candidates in row
// order instead (walkRuns): the same rows, without visiting the rows
// between them.
func walkIDOrder(ctx context.Context, ord idOrdering, cc candidates, w Window) ([]uint32, []Key, error) {
	order, ids := ord.order, ord.ids
	lo, hi := 0, len(order)
	if w.After != nil {
		after := w.After.ID
		lo = sort.Search(len(order), func(k int) bool { return ids.At(order[k]) > after })
	}
	if w.Before != nil {
		before := w.Before.ID
		hi = max(lo, sort.Search(len(order), func(k int) bool { return ids.At(order[k]) >= before }))
	}
	// Room for the window up front, for the windows of pages at least.
	rows := make([]uint32, 0, min(w.Limit, maxLazyLimit))
	keys := make([]Key, 0, min(w.Limit, maxLazyLimit))
	if ord.runs != nil && cc.test == nil && !w.Reverse {
		return walkRuns(ctx, ord, lo, hi, cc.set, w.Limit, rows, keys)
	}
	n := 0
	// visit takes row when it is a candidate and reports whether the
	// window wants more.
	visit := func(row uint32) (bool, error) {
		n++
		if err := checkContext(ctx, n); err != nil {
			return false, err
		}
		if !cc.has(row) {
			return true, nil
		}
		if cc.spent() {
			return false, errLazySpent
		}
		rows = append(rows, row)
		keys = append(keys, Key{Values: []codec.Value{}, ID: ids.At(row)})
		return len(rows) < w.Limit, nil
	}
	if w.Reverse {
		for i := hi - 1; i >= lo; i-- {
			if more, err := visit(order[i]); err != nil || !more {
				return rows, keys, err
			}
		}
		return rows, keys, nil
	}
	for _, row := range order[lo:hi] {
		if more, err := visit(row); err != nil || !more {
			return rows, keys, err
		}
	}
	return rows, keys, nil
}
