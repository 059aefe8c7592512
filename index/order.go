package index

import (
	"context"
	"slices"
	"sort"

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
	// values (strings by bytes), rows of equal value in ascending row
	// order; nil when the store keeps no order for the column.
	Order() []uint32
}

// RowOrderedValues is an OrderedValues that also tells when its order is
// the rows' own: every row's value is above the value of each row before
// it, as the record ids are when a table's ids grow with its inserts.
type RowOrderedValues interface {
	OrderedValues
	// OrderByRow returns what Order returns, and whether that is the
	// rows of Present in ascending row order.
	OrderByRow() (order []uint32, byRow bool)
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
	var buf []uint32
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
		fb, ok := scanBounds(b, func(v codec.Value) (float64, bool) {
			switch v.Kind {
			case codec.KindFloat:
				return v.Float, true
			case codec.KindInt:
				return float64(v.Int), true
			}
			return 0, false
		})
		if !ok {
			return false, nil
		}
		fo.walk(fb, desc, cand, fn)
		return true, nil
	}
	kind := codec.KindInt
	if c.Type == TypeDatetime {
		kind = codec.KindDatetime
	}
	ib, ok := scanBounds(b, func(v codec.Value) (int64, bool) { return v.Int, v.Kind == kind })
	if !ok {
		return false, nil
	}
	io.walk(ib, desc, cand, fn)
	return true, nil
}

// walkRowOrder is walkIDOrder over an order that is the rows' own: the
// rows of cand within the window, order[0] to order[len(order)-1], that
// hold an id, in ascending row order, up to limit of them, appended to
// rows and keys.
func walkRowOrder(ctx context.Context, order []uint32, ids PackedStrings, present, cand *roaring.Bitmap, limit int, rows []uint32, keys []Key) ([]uint32, []Key, error) {
	if len(order) == 0 {
		return rows, keys, nil
	}
	first, last := order[0], order[len(order)-1]
	it := cand.Iterator()
	it.AdvanceIfNeeded(first)
	for n := 1; it.HasNext() && len(rows) < limit; n++ {
		if err := checkContext(ctx, n); err != nil {
			return rows, keys, err
		}
		row := it.Next()
		if row > last {
			break
		}
		if !present.Contains(row) {
			continue
		}
		rows = append(rows, row)
		keys = append(keys, Key{Values: []codec.Value{}, ID: ids.At(row)})
	}
	return rows, keys, nil
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

// idOrder returns the record ids' in-memory order and the ids by row, or a
// nil order when the id store keeps none; it builds the order on first use.
// When the order is the rows' own (RowOrderedValues), it also returns the
// rows holding an id, else nil present.
func idOrder(src Source) (order []uint32, ids PackedStrings, present *roaring.Bitmap, err error) {
	vals, err := src.Values(IDColumn)
	if err != nil || vals == nil {
		return nil, PackedStrings{}, nil, err
	}
	ov, ok := vals.(OrderedValues)
	if !ok {
		return nil, PackedStrings{}, nil, nil
	}
	ids = ov.Strings()
	p := ov.Present()
	if ids.Len() == 0 || !p.IsEmpty() && int(p.Maximum()) >= ids.Len() {
		return nil, PackedStrings{}, nil, nil
	}
	byRow := false
	if rv, ok := ov.(RowOrderedValues); ok {
		order, byRow = rv.OrderByRow()
	} else {
		order = ov.Order()
	}
	if order == nil {
		return nil, PackedStrings{}, nil, nil
	}
	if byRow {
		present = p
	}
	return order, ids, present, nil
}

// walkIDOrder produces the default order (ascending id) by walking the
// ids' in-memory order within the window's cursors, taking the rows that
// are candidates until the window is full. With present not nil (the
// order is the rows' own, idOrder), a forward walk over a candidate set
// takes the set's rows in row order instead: the same rows, without
// visiting the rows between them.
func walkIDOrder(ctx context.Context, order []uint32, ids PackedStrings, present *roaring.Bitmap, cc candidates, w Window) ([]uint32, []Key, error) {
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
	if present != nil && cc.test == nil && !w.Reverse {
		return walkRowOrder(ctx, order[lo:hi], ids, present, cc.set, w.Limit, rows, keys)
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
