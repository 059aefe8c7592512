package memstore

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

// A column of a store may carry structures derived from its values, each
// built on the first query that asks for it and kept exactly consistent
// with the column from then on:
//
//   - an order (int, datetime, float and string columns): the rows holding
//     a value sorted by value, rows of equal value by record id, as a
//     query orders them, so that a range is a binary search and a slice,
//     and a sort walks rows in order and seeks a cursor's (value, id)
//     directly; the record ids' order walks
//     the default order of a query, by its runs of rows that follow one
//     another (rowRuns) when it has few. A write marks its row stale
//     instead of moving it; the next reader merges the stale rows back
//     in, in time linear in the column, before using the order.
//   - a dictionary (string columns with few distinct values): a small code
//     per row, so that summaries group rows in one pass over the filter's
//     rows. Writes keep the codes current; a column that grows past
//     maxDictValues values drops its dictionary for good.
//   - a trigram index (string columns): the rows whose value holds each
//     three-byte sequence, so that $contains reads candidates instead of
//     every value. Writes keep it current.
//   - an id index (the record-id column): the row of each id, so that a
//     point read finds its row without reading storage (colindex_ids.go).
//     Writes keep it current.
//
// Readers build and refresh them holding the store for reading (slot.go),
// serialized by colIndex.mu; what they hand out is never changed
// afterwards, so a reader may use it until it releases the store. Writers,
// who hold the store for writing, update them in place: no reader is
// about then.

// colIndex holds the derived structures of one column.
type colIndex struct {
	mu sync.Mutex

	// order is the rows of the column's present set by ascending value,
	// rows of equal value by ascending record id (tieIDs); it is
	// meaningful when hasOrder. stale holds the rows written since it
	// was built. A row's id changes only with a write of every column
	// of its store (TableStore.apply), which marks it stale in every
	// order: the rows kept in place keep their ids.
	order    []uint32
	hasOrder bool
	stale    roaring.Bitmap
	noOrder  bool     // the values had no order (a NaN) when last tried
	runs     []uint32 // where order's runs start (OrderRuns), or nil
	hasRuns  bool     // runs is known for order
	memo     float64  // what OrderMemo computed for order
	hasMemo  bool     // memo is known for order

	dict   *colDict
	noDict bool // the column had too many values for a dictionary

	tri *trigramIndex

	ids idIndexPtr // the record-id column's rows by id (colindex_ids.go)
}

// written records, before it happens, that row's value changes to v (null
// for a removal). The caller holds the store's write lock.
func (c *Column) written(row uint32, v codec.Value) {
	ix := &c.ix
	if ix.hasOrder {
		ix.stale.Add(row)
	}
	ix.noOrder = false
	c.idsWritten(row, v.Str, v.IsNull())
	if ix.dict != nil {
		if !ix.dict.set(row, v) {
			ix.dict, ix.noDict = nil, true
		}
	}
	if ix.tri != nil {
		old := ""
		had := c.present.Contains(row)
		if had {
			old = c.strs.get(row)
		}
		ix.tri.update(row, old, had, v)
	}
}

var (
	_ index.OrderedValues     = (*Column)(nil)
	_ index.RunOrderedValues  = (*Column)(nil)
	_ index.MemoOrderedValues = (*Column)(nil)
)

// Order returns the rows holding a value in ascending order of value, rows
// of equal value in ascending order of their record ids (by row for a
// column outside a store), for an int, datetime, float or string column
// (strings by bytes; nil for others, or for a float column holding NaN).
// It implements index.OrderedValues.
func (c *Column) Order() []uint32 {
	ix := &c.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return c.orderLocked()
}

// OrderRuns returns Order and where its runs start (rowRuns), found on the
// first call after the order was built: one pass over it. It implements
// index.RunOrderedValues.
func (c *Column) OrderRuns() (order, runs []uint32) {
	ix := &c.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	order = c.orderLocked()
	if order != nil && !ix.hasRuns {
		ix.runs, ix.hasRuns = rowRuns(order, &c.present), true
	}
	return order, ix.runs
}

// OrderMemo returns what estimate returns for the column's order, computed
// on the first call after the order was built or changed; 0 when the
// column has no order. It implements index.MemoOrderedValues.
func (c *Column) OrderMemo(estimate func(order []uint32) float64) float64 {
	ix := &c.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	order := c.orderLocked()
	if order == nil {
		return 0
	}
	if !ix.hasMemo {
		ix.memo, ix.hasMemo = estimate(order), true
	}
	return ix.memo
}

// orderLocked is Order, with ix.mu held.
func (c *Column) orderLocked() []uint32 {
	switch c.kind {
	case codec.KindInt, codec.KindDatetime, codec.KindFloat, codec.KindString:
	default:
		return nil
	}
	ix := &c.ix
	if ix.hasOrder && ix.stale.IsEmpty() {
		return ix.order
	}
	if ix.noOrder {
		return nil
	}
	var order []uint32
	var ok bool
	switch {
	case c.kind == codec.KindString && ix.hasOrder:
		order, ok = c.mergeStrOrder(ix.order, &ix.stale), true
	case c.kind == codec.KindString:
		order, ok = c.sortStrRows(c.present.ToArray()), true
	case ix.hasOrder:
		order, ok = c.mergeOrder(ix.order, &ix.stale)
	default:
		order, ok = c.sortRows(c.present.ToArray())
	}
	ix.runs, ix.hasRuns = nil, false
	ix.memo, ix.hasMemo = 0, false
	if !ok {
		ix.order, ix.hasOrder, ix.noOrder = nil, false, true
		ix.stale.Clear()
		return nil
	}
	if !ix.hasOrder || cap(order) != cap(ix.order) {
		c.indexBuilt()
	}
	ix.order, ix.hasOrder = order, true
	ix.stale.Clear()
	return order
}

// maxRunShare bounds the runs rowRuns finds: at most one per this many
// rows of the order, past which walking the runs saves little.
const maxRunShare = 16

// rowRuns returns where the runs of order start, a run being rows that
// follow one another among present: each is the next row of present after
// the one before it. So a run holds every row of present from its first
// to its last, and no other run reaches there. Rows loaded in batches
// whose values grow with each batch's rows, as record ids do, make one
// run per batch at most. It is nil when the runs are more than one per
// maxRunShare rows.
func rowRuns(order []uint32, present *roaring.Bitmap) []uint32 {
	if len(order) == 0 {
		return nil
	}
	var words []uint64 // present, made at the first gap between rows
	runs := []uint32{0}
	for k := 1; k < len(order); k++ {
		prev, row := order[k-1], order[k]
		if row == prev+1 {
			continue
		}
		if row > prev {
			if words == nil {
				words = make([]uint64, present.Maximum()/64+1)
				present.WriteDenseTo(words)
			}
			if nextSet(words, prev+1) == row {
				continue
			}
		}
		if len(runs) > len(order)/maxRunShare {
			return nil
		}
		runs = append(runs, uint32(k))
	}
	return runs
}

// nextSet returns the first bit set in words at or after from, which one
// is.
func nextSet(words []uint64, from uint32) uint32 {
	i := from / 64
	w := words[i] >> (from % 64)
	if w != 0 {
		return from + uint32(bits.TrailingZeros64(w))
	}
	for i++; words[i] == 0; i++ {
	}
	return i*64 + uint32(bits.TrailingZeros64(words[i]))
}

// orderKey maps the value of row to a uint64 that sorts as the value does;
// ok is false for NaN, which has no place in an order.
func (c *Column) orderKey(row uint32) (uint64, bool) {
	if c.kind == codec.KindFloat {
		f := c.floats[row]
		if math.IsNaN(f) {
			return 0, false
		}
		if f == 0 {
			f = 0 // -0 and +0 are one value
		}
		b := math.Float64bits(f)
		if b>>63 != 0 {
			return ^b, true
		}
		return b | 1<<63, true
	}
	return uint64(c.ints[row]) ^ 1<<63, true
}

// tieIDs returns the column of record ids that orders the rows of equal
// value: the store's id column; nil for a column outside a store and for
// the id column itself, whose values are unique, and whose rows of equal
// value then stay in row order.
//
// A column's order may read the id column's order (inIDOrder) while it
// holds its own ix.mu: the id column's ix.mu is taken inside another
// column's, never the other way.
func (c *Column) tieIDs() *Column {
	if c.store == nil {
		return nil
	}
	ids := c.store.cols[index.MetaIDColumn]
	if ids == nil || ids == c {
		return nil
	}
	return ids
}

// compareTies orders two rows of equal value: by record id (ids from
// tieIDs), then by row.
func compareTies(ids *Column, a, b uint32) int {
	if ids != nil {
		if x := strings.Compare(ids.strs.get(a), ids.strs.get(b)); x != 0 {
			return x
		}
	}
	return cmp.Compare(a, b)
}

// minIDOrderRows is the number of rows from which inIDOrder takes them
// from the id column's order rather than comparing their ids.
const minIDOrderRows = 4096

// inIDOrder returns rows, given in ascending order, in ascending order of
// their record ids (compareTies), so that a stable sort by value leaves
// the rows of equal value in id order without comparing ids: many rows
// are taken from the id column's order (built once, kept by its column),
// as a comparison of ids reads strings all over memory. rows may be
// reused.
func (c *Column) inIDOrder(rows []uint32) []uint32 {
	ids := c.tieIDs()
	if ids == nil {
		return rows
	}
	if len(rows) >= minIDOrderRows {
		if order := ids.Order(); order != nil {
			words := make([]uint64, rows[len(rows)-1]/64+1)
			for _, row := range rows {
				words[row>>6] |= 1 << (row & 63)
			}
			out := make([]uint32, 0, len(rows))
			for _, row := range order {
				if w := int(row >> 6); w < len(words) && words[w]&(1<<(row&63)) != 0 {
					out = append(out, row)
				}
			}
			if len(out) == len(rows) {
				return out
			}
			// A row without an id, which a store's rows never are:
			// compare them instead.
		}
	}
	slices.SortFunc(rows, func(a, b uint32) int { return compareTies(ids, a, b) })
	return rows
}

// sortRows orders rows, given in ascending order, by value, rows of equal
// value by record id (compareTies): the rows are put in id order first,
// and the sort by value is stable.
func (c *Column) sortRows(rows []uint32) ([]uint32, bool) {
	rows = c.inIDOrder(rows)
	keys := make([]uint64, len(rows))
	for i, row := range rows {
		k, ok := c.orderKey(row)
		if !ok {
			return nil, false
		}
		keys[i] = k
	}
	if len(rows) < 256 {
		idx := make([]int, len(rows))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			switch {
			case keys[a] < keys[b]:
				return -1
			case keys[a] > keys[b]:
				return 1
			}
			return 0
		})
		out := make([]uint32, len(rows))
		for i, k := range idx {
			out[i] = rows[k]
		}
		return out, true
	}
	return radixSort(keys, rows), true
}

// radixSort sorts rows by keys, stably, sixteen bits at a time from the
// lowest; it may reorder both slices in place and returns the sorted rows.
func radixSort(keys []uint64, rows []uint32) []uint32 {
	n := len(keys)
	k2, r2 := make([]uint64, n), make([]uint32, n)
	count := make([]int, 1<<16)
	for shift := uint(0); shift < 64; shift += 16 {
		clear(count)
		for _, k := range keys {
			count[(k>>shift)&0xFFFF]++
		}
		if count[(keys[0]>>shift)&0xFFFF] == n {
			continue // every key has this digit
		}
		sum := 0
		for d, m := range count {
			count[d] = sum
			sum += m
		}
		for i, k := range keys {
			d := (k >> shift) & 0xFFFF
			p := count[d]
			count[d]++
			k2[p], r2[p] = k, rows[i]
		}
		keys, k2 = k2, keys
		rows, r2 = r2, rows
	}
	return rows
}

// mergeOrder returns a new order: old without the stale rows, merged with
// the stale rows that hold a value, sorted; rows of equal value by record
// id.
func (c *Column) mergeOrder(old []uint32, stale *roaring.Bitmap) ([]uint32, bool) {
	fresh := roaring.And(stale, &c.present).ToArray()
	fresh, ok := c.sortRows(fresh)
	if !ok {
		return nil, false
	}
	staleBits := make([]uint64, stale.Maximum()/64+1)
	stale.WriteDenseTo(staleBits)
	isStale := func(row uint32) bool {
		w := int(row >> 6)
		return w < len(staleBits) && staleBits[w]&(1<<(row&63)) != 0
	}
	ids := c.tieIDs()
	out := make([]uint32, 0, len(old)+len(fresh))
	fi := 0
	var fk uint64
	if len(fresh) > 0 {
		fk, _ = c.orderKey(fresh[0])
	}
	for _, row := range old {
		if isStale(row) {
			continue
		}
		k, _ := c.orderKey(row)
		for fi < len(fresh) && (fk < k || (fk == k && compareTies(ids, fresh[fi], row) < 0)) {
			out = append(out, fresh[fi])
			if fi++; fi < len(fresh) {
				fk, _ = c.orderKey(fresh[fi])
			}
		}
		out = append(out, row)
	}
	return append(out, fresh[fi:]...), true
}

// compareStrRows orders two rows of a string column by value, then by
// record id (compareTies, ids from tieIDs).
func (c *Column) compareStrRows(ids *Column, a, b uint32) int {
	if x := strings.Compare(c.strs.get(a), c.strs.get(b)); x != 0 {
		return x
	}
	return compareTies(ids, a, b)
}

// sortStrRows orders rows of a string column, given in ascending order,
// by value, rows of equal value by record id: the rows are put in id order
// first (inIDOrder), and rows of equal value then compare by that
// position; rows may be reused.
func (c *Column) sortStrRows(rows []uint32) []uint32 {
	if c.tieIDs() == nil {
		slices.SortFunc(rows, func(a, b uint32) int { return c.compareStrRows(nil, a, b) })
		return rows
	}
	rows = c.inIDOrder(rows)
	pos := make([]uint32, len(rows))
	for i := range pos {
		pos[i] = uint32(i)
	}
	slices.SortFunc(pos, func(a, b uint32) int {
		if x := strings.Compare(c.strs.get(rows[a]), c.strs.get(rows[b])); x != 0 {
			return x
		}
		return cmp.Compare(a, b)
	})
	out := make([]uint32, len(rows))
	for i, p := range pos {
		out[i] = rows[p]
	}
	return out
}

// mergeStrOrder returns a new order of a string column: old without the
// stale rows, with the stale rows that hold a value put in place by binary
// search, so that a few writes cost a few searches and one copy, not a
// comparison of every string.
func (c *Column) mergeStrOrder(old []uint32, stale *roaring.Bitmap) []uint32 {
	fresh := c.sortStrRows(roaring.And(stale, &c.present).ToArray())
	ids := c.tieIDs()
	staleBits := make([]uint64, stale.Maximum()/64+1)
	stale.WriteDenseTo(staleBits)
	kept := make([]uint32, 0, len(old))
	for _, row := range old {
		w := int(row >> 6)
		if w < len(staleBits) && staleBits[w]&(1<<(row&63)) != 0 {
			continue
		}
		kept = append(kept, row)
	}
	out := make([]uint32, 0, len(kept)+len(fresh))
	at := 0
	for _, row := range fresh {
		i := at + sort.Search(len(kept)-at, func(k int) bool { return c.compareStrRows(ids, kept[at+k], row) > 0 })
		out = append(out, kept[at:i]...)
		out = append(out, row)
		at = i
	}
	return append(out, kept[at:]...)
}
