package index

// This file runs the range predicates of a plan ($lt, $le, $gt and $ge,
// joined per column): against the column's value store when it has one,
// else by walking its ordered index.

import (
	"context"
	"errors"
	"math"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
)

// rangeNode compares values of the candidates against one or two bounds
// of one column: in memory when the column has a value store, else by
// scanning the ordered index.
type rangeNode struct{ preds []*Pred }

// mergeRanges joins the range nodes of an and that compare the same column,
// so that a two-sided range is one pass.
func mergeRanges(children []planNode) []planNode {
	out := children[:0:0]
	byCol := map[*Column]*rangeNode{}
	for _, c := range children {
		r, ok := c.(*rangeNode)
		if !ok || r.preds[0].Op == OpStartsWith {
			out = append(out, c)
			continue
		}
		col := r.preds[0].Column
		if prev := byCol[col]; prev != nil {
			prev.preds = append(prev.preds, r.preds...)
			continue
		}
		merged := &rangeNode{preds: append([]*Pred(nil), r.preds...)}
		byCol[col] = merged
		out = append(out, merged)
	}
	return out
}

func (r *rangeNode) cost() cost { return costRange }

func (r *rangeNode) exec(x *execCtx, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	col := r.preds[0].Column
	vals, err := x.src.Values(col)
	if err != nil {
		return nil, err
	}
	if vals != nil {
		if out, ok := r.inOrder(vals, cand); ok {
			x.via("ordered range")
			if x.tr != nil {
				if n, ok := r.estimate(x); ok {
					x.estimateCount(n)
				}
			}
			return out, nil
		}
	}
	c, err := x.candidates(cand)
	if err != nil {
		return nil, err
	}
	if vals != nil {
		x.via("column store")
		if out, ok := r.typed(vals, c); ok {
			return out, nil
		}
		out := roaring.New()
		it := c.Iterator()
		for n := 1; it.HasNext(); n++ {
			if err := checkContext(x.ctx, n); err != nil {
				return nil, err
			}
			row := it.Next()
			v := vals.Get(row)
			if r.match(v) {
				out.Add(row)
			}
		}
		return out, nil
	}
	x.via("ordered index")
	out := c.Clone()
	for _, p := range r.preds {
		rows := roaring.New()
		err = x.src.Scan(col, rangeBounds(p), false, func(_ codec.Value, found *roaring.Bitmap) bool {
			rows.Or(found)
			return true
		})
		if errors.Is(err, ErrNoOrderedIndex) {
			return r.scanRecords(x, c)
		}
		if err != nil {
			return nil, err
		}
		x.estimateRows(rows)
		out.And(rows)
	}
	return out, nil
}

// scanRecords evaluates the range on the records of the candidates, for a
// column the source keeps in no ordered index.
func (r *rangeNode) scanRecords(x *execCtx, c *roaring.Bitmap) (*roaring.Bitmap, error) {
	x.via("records")
	out := roaring.New()
	var rec codec.Record
	it := c.Iterator()
	for n := 1; it.HasNext(); n++ {
		if err := checkContext(x.ctx, n); err != nil {
			return nil, err
		}
		row := it.Next()
		found, err := x.src.Record(row, &rec)
		if err != nil {
			return nil, err
		}
		if found && r.match(recordValue(&rec, r.preds[0].Column)) {
			out.Add(row)
		}
	}
	return out, nil
}

// inOrder answers the range from the column's in-memory order: a binary
// search and the rows of a slice of it. ok is false when the store keeps
// no order, the bounds do not suit it, or the candidates are so few that
// comparing their values is cheaper.
func (r *rangeNode) inOrder(vals ColumnValues, cand *roaring.Bitmap) (*roaring.Bitmap, bool) {
	if dv, ok := vals.(DenseValues); !ok || (cand != nil && cand.GetCardinality() < dv.Present().GetCardinality()/16) {
		return nil, false
	}
	fo, io, ok := ordered(vals, r.preds[0].Column.Type)
	switch {
	case !ok:
		return nil, false
	case fo.order != nil:
		b, ok := floatBounds(r.preds)
		if !ok {
			return nil, false
		}
		return fo.filter(cand, b), true
	}
	b, ok := intBounds(r.preds)
	if !ok {
		return nil, false
	}
	return io.filter(cand, b), true
}

// estimate returns how many rows the range holds, when the column keeps an
// in-memory order.
func (r *rangeNode) estimate(x *execCtx) (uint64, bool) {
	vals, err := x.src.Values(r.preds[0].Column)
	if err != nil || vals == nil {
		return 0, false
	}
	fo, io, ok := ordered(vals, r.preds[0].Column.Type)
	switch {
	case !ok:
		return 0, false
	case fo.order != nil:
		b, ok := floatBounds(r.preds)
		if !ok {
			return 0, false
		}
		i, j := fo.span(b)
		return uint64(j - i), true
	}
	b, ok := intBounds(r.preds)
	if !ok {
		return 0, false
	}
	i, j := io.span(b)
	return uint64(j - i), true
}

func (r *rangeNode) match(v codec.Value) bool {
	for _, p := range r.preds {
		// Ranges hold comparisons and prefixes, never a pattern: nothing
		// to cut short.
		if !matchScalar(context.Background(), p, v) {
			return false
		}
	}
	return true
}

// typed compares the array of a float, int or datetime column directly
// when its store exposes one; ok is false when it cannot.
func (r *rangeNode) typed(vals ColumnValues, c *roaring.Bitmap) (out *roaring.Bitmap, ok bool) {
	dv, dense := vals.(DenseValues)
	if !dense {
		return nil, false
	}
	switch r.preds[0].Column.Type {
	case "float":
		b, ok := floatBounds(r.preds)
		arr := dv.Floats()
		if !ok || arr == nil {
			return nil, false
		}
		return filterTyped(c, dv.Present(), arr, b), true
	case "int", "datetime":
		b, ok := intBounds(r.preds)
		arr := dv.Ints()
		if !ok || arr == nil {
			return nil, false
		}
		return filterTyped(c, dv.Present(), arr, b), true
	}
	return nil, false
}

// filterTyped keeps the rows of c ∩ present whose value in arr lies in b.
// When the candidates are a large part of the table it scans the whole
// array in one tight loop and intersects afterwards; otherwise it visits
// the candidates.
func filterTyped[T int64 | float64](c, present *roaring.Bitmap, arr []T, b bounds[T]) *roaring.Bitmap {
	if c.GetCardinality() > uint64(len(arr))/8 {
		hits := make([]uint32, 0, 1024)
		for i, v := range arr {
			if b.holds(v) {
				hits = append(hits, uint32(i))
			}
		}
		out := roaring.New()
		out.AddMany(hits)
		out.And(present)
		out.And(c)
		return out
	}
	out := roaring.New()
	var buf, keep [256]uint32
	it := roaring.And(c, present).ManyIterator()
	for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
		k := 0
		for _, row := range buf[:n] {
			if b.holds(arr[row]) {
				keep[k] = row
				k++
			}
		}
		out.AddMany(keep[:k])
	}
	return out
}

// bounds is an interval of an ordered type, each side open or closed.
type bounds[T int64 | float64] struct {
	lo, hi         T
	hasLo, hasHi   bool
	loIncl, hiIncl bool
}

func (b *bounds[T]) add(op Op, v T) bool {
	switch op {
	case OpGt, OpGe:
		if !b.hasLo || v > b.lo || (v == b.lo && op == OpGt) {
			b.lo, b.loIncl, b.hasLo = v, op == OpGe, true
		}
	case OpLt, OpLe:
		if !b.hasHi || v < b.hi || (v == b.hi && op == OpLt) {
			b.hi, b.hiIncl, b.hasHi = v, op == OpLe, true
		}
	default:
		return false
	}
	return true
}

func (b *bounds[T]) holds(v T) bool {
	if b.hasLo && (v < b.lo || (v == b.lo && !b.loIncl)) {
		return false
	}
	return !b.hasHi || v < b.hi || (v == b.hi && b.hiIncl)
}

func floatBounds(preds []*Pred) (bounds[float64], bool) {
	var b bounds[float64]
	for _, p := range preds {
		var v float64
		switch p.Value.Kind {
		case codec.KindFloat:
			v = p.Value.Float
		case codec.KindInt:
			v = float64(p.Value.Int)
		default:
			return b, false
		}
		if math.IsNaN(v) || !b.add(p.Op, v) {
			return b, false
		}
	}
	return b, true
}

func intBounds(preds []*Pred) (bounds[int64], bool) {
	var b bounds[int64]
	kind := preds[0].Column.Type
	for _, p := range preds {
		want := codec.KindInt
		if kind == "datetime" {
			want = codec.KindDatetime
		}
		if p.Value.Kind != want || !b.add(p.Op, p.Value.Int) {
			return b, false
		}
	}
	return b, true
}

func (r *rangeNode) step() *ExplainNode {
	return valueStep("range", func(hide bool) string {
		parts := make([]string, len(r.preds))
		for i, p := range r.preds {
			parts[i] = formatPred(p, hide)
		}
		return strings.Join(parts, " and ")
	})
}

func (r *rangeNode) subnodes() []planNode { return nil }

// rangeBounds turns a comparison or prefix into scan bounds.
func rangeBounds(p *Pred) Bounds {
	v := p.Value
	switch p.Op {
	case OpLt:
		return Bounds{Hi: &v}
	case OpLe:
		return Bounds{Hi: &v, HiIncl: true}
	case OpGt:
		return Bounds{Lo: &v}
	case OpGe:
		return Bounds{Lo: &v, LoIncl: true}
	case OpStartsWith:
		s := v.Str
		return Bounds{Prefix: &s}
	}
	return Bounds{}
}
