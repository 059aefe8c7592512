package index

// This file decides summariesFilter on the groups, orders them, cuts the
// page and turns each group into an output row.

import (
	"container/heap"
	"slices"

	"github.com/coppice-db/coppice/codec"
)

// view shows a group to summariesFilter.
func (q *summarizeReq) view(g *sumGroup) RowView {
	r := groupRow{}
	for i, c := range q.groupCols {
		r[c] = g.vals[i]
	}
	for i, c := range q.sumCols {
		r[c] = g.res[i]
	}
	return r
}

// groupRow is a group as a RowView: values by made-up column.
type groupRow map[*Column]codec.Value

func (r groupRow) Value(c *Column) codec.Value { return r[c] }
func (r groupRow) Linked(*Column) RowView      { return nil }

// first returns the first q.size groups in order. Groups differ in their
// values, so the order is total.
func (q *summarizeReq) first(groups []*sumGroup) []*sumGroup {
	if len(groups) <= q.size {
		slices.SortFunc(groups, q.compareGroups)
		return groups
	}
	// Keep the q.size first seen so far in a heap whose root is the last
	// of them.
	h := &groupHeap{cmp: q.compareGroups, groups: slices.Clone(groups[:q.size])}
	heap.Init(h)
	for _, g := range groups[q.size:] {
		if q.compareGroups(g, h.groups[0]) < 0 {
			h.groups[0] = g
			heap.Fix(h, 0)
		}
	}
	slices.SortFunc(h.groups, q.compareGroups)
	return h.groups
}

// groupHeap is a max-heap of groups.
type groupHeap struct {
	cmp    func(a, b *sumGroup) int
	groups []*sumGroup
}

func (h *groupHeap) Len() int           { return len(h.groups) }
func (h *groupHeap) Less(i, j int) bool { return h.cmp(h.groups[i], h.groups[j]) > 0 }
func (h *groupHeap) Swap(i, j int)      { h.groups[i], h.groups[j] = h.groups[j], h.groups[i] }
func (h *groupHeap) Push(x any)         { h.groups = append(h.groups, x.(*sumGroup)) }

func (h *groupHeap) Pop() any {
	x := h.groups[len(h.groups)-1]
	h.groups = h.groups[:len(h.groups)-1]
	return x
}

// compareGroups orders groups: by the sort keys, then by the group values
// ascending, nulls last in both directions.
func (q *summarizeReq) compareGroups(a, b *sumGroup) int {
	for _, k := range q.order {
		var x, y codec.Value
		if k.group {
			x, y = a.vals[k.i], b.vals[k.i]
		} else {
			x, y = a.res[k.i], b.res[k.i]
		}
		if c := compareNullsLast(x, y, k.desc); c != 0 {
			return c
		}
	}
	for i := range a.vals {
		if c := compareNullsLast(a.vals[i], b.vals[i], false); c != 0 {
			return c
		}
	}
	return 0
}

// compareNullsLast compares two values in a direction, nulls after every
// value either way.
func compareNullsLast(x, y codec.Value, desc bool) int {
	switch {
	case x.IsNull() && y.IsNull():
		return 0
	case x.IsNull():
		return 1
	case y.IsNull():
		return -1
	}
	c := compareValues(x, y)
	if desc {
		c = -c
	}
	return c
}

// row builds a group's output row.
func (q *summarizeReq) row(g *sumGroup) SummaryRow {
	r := SummaryRow{Groups: make([]any, len(q.groups)), Summaries: make([]any, len(q.summaries))}
	for i, gc := range q.groups {
		r.Groups[i] = outputValue(gc.col.Type, g.vals[i])
	}
	for i, s := range q.summaries {
		r.Summaries[i] = outputValue(s.typ, g.res[i])
	}
	return r
}

// outputValue converts a value of a column type to its output form: nil,
// bool, int64, float64, time.Time, string (json columns as JSON text, links
// as the target id) or []string.
func outputValue(t ColumnType, v codec.Value) any {
	if v.IsNull() {
		return nil
	}
	switch v.Kind {
	case codec.KindBool:
		return v.Int != 0
	case codec.KindInt:
		if t == TypeFloat {
			return float64(v.Int)
		}
		return v.Int
	case codec.KindFloat:
		return v.Float
	case codec.KindDatetime:
		return v.Time()
	case codec.KindStrings:
		return append([]string{}, v.Strs...) // an empty list is [], not null
	case codec.KindVector:
		return append([]float64{}, v.Vec...)
	}
	return v.Str
}
