package index

import (
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
)

// SortKey is one column of a sort order.
type SortKey struct {
	Column *Column
	Desc   bool
}

// Order is a full sort order: the keys, then (when Random) a random order
// fixed by Seed, then ascending id, which makes every order total.
type Order struct {
	Keys   []SortKey
	Random bool
	Seed   uint64
}

// Key is the position of a row in an order: its sort values and its id.
type Key struct {
	Values []codec.Value
	ID     string
}

// keyReader reads sort keys of rows from value stores, or records when a
// column has none.
type keyReader struct {
	ctx   context.Context
	reads int // records read, for checking ctx
	src   Source
	order Order
	vals  []ColumnValues
	ids   ColumnValues
	rec   codec.Record
	// slab is where the values of the next keys are cut from: one
	// allocation for many keys rather than one each, slabRows keys (0:
	// keySlabRows) at a time.
	slab     []codec.Value
	slabRows int
	// tmp holds the values of the keys tempKey hands out, its first used
	// of them; resetTemp lets the next keys reuse them.
	tmp  *keyScratch
	used int
}

// keyScratch is the room of keys that are weighed and mostly dropped: their
// values, and the rows of a group with their keys.
type keyScratch struct {
	vals []codec.Value
	rows []keyedRow
}

// keyScratches recycles the room of dropped keys, so that a walk over a
// large group of ties leaves little garbage behind.
var keyScratches = sync.Pool{New: func() any { return new(keyScratch) }}

// maxScratchKeys bounds the room a reader gives back for reuse.
const maxScratchKeys = 1 << 16

// keySlabRows is how many keys' values a keyReader allocates at once.
const keySlabRows = 32

func newKeyReader(ctx context.Context, src Source, o Order) (*keyReader, error) {
	kr := &keyReader{ctx: ctx, src: src, order: o, vals: make([]ColumnValues, len(o.Keys))}
	for i, k := range o.Keys {
		v, err := src.Values(k.Column)
		if err != nil {
			return nil, err
		}
		kr.vals[i] = v
	}
	ids, err := src.Values(IDColumn)
	if err != nil {
		return nil, err
	}
	kr.ids = ids
	return kr, nil
}

// via is how the reader reads keys, as a step of a plan names it: from
// value stores alone, or from records too.
func (kr *keyReader) via() string {
	if kr.ids == nil || slices.Contains(kr.vals, nil) {
		return "records"
	}
	return "column store"
}

// key returns the position of row; ok is false for a row that vanished.
func (kr *keyReader) key(row uint32) (Key, bool, error) {
	return kr.fill(row, kr.values())
}

// values returns room for the values of one key that the key keeps.
func (kr *keyReader) values() []codec.Value {
	n := len(kr.order.Keys)
	if len(kr.slab) < n {
		rows := kr.slabRows
		if rows == 0 {
			rows = keySlabRows
		}
		kr.slab = make([]codec.Value, n*rows)
	}
	vals := kr.slab[:n:n]
	kr.slab = kr.slab[n:]
	return vals
}

// tempKey is key for a row that is weighed and mostly dropped: its values
// are valid until the next resetTemp or release; own keeps them.
func (kr *keyReader) tempKey(row uint32) (Key, bool, error) {
	return kr.fill(row, kr.tempValues())
}

// tempValues returns room for the values of a key from the temporary
// buffer, valid as tempKey's are.
func (kr *keyReader) tempValues() []codec.Value {
	n := len(kr.order.Keys)
	t := kr.scratch()
	if len(t.vals)-kr.used < n {
		// Keys cut from the old buffer stay valid: it is left to them.
		t.vals = make([]codec.Value, max(2*len(t.vals), n*keySlabRows))
		kr.used = 0
	}
	vals := t.vals[kr.used : kr.used+n : kr.used+n]
	kr.used += n
	return vals
}

// own returns k with values of its own, out of the reader's temporary
// buffer.
func (kr *keyReader) own(k Key) Key {
	vals := kr.values()
	copy(vals, k.Values)
	k.Values = vals
	return k
}

// resetTemp lets the next temporary keys reuse the values of the ones
// handed out so far, which must no longer be in use.
func (kr *keyReader) resetTemp() {
	if kr.tmp != nil {
		// Cleared, so that the buffer holds on to no strings.
		clear(kr.tmp.vals[:kr.used])
	}
	kr.used = 0
}

// scratch returns the reader's room for temporary keys.
func (kr *keyReader) scratch() *keyScratch {
	if kr.tmp == nil {
		kr.tmp = keyScratches.Get().(*keyScratch)
	}
	return kr.tmp
}

// release gives the temporary buffer back for other readers once no
// temporary key is in use.
func (kr *keyReader) release() {
	if kr.tmp == nil {
		return
	}
	kr.resetTemp()
	t := kr.tmp
	kr.tmp = nil
	clear(t.rows[:cap(t.rows)])
	t.rows = t.rows[:0]
	if len(t.vals) <= maxScratchKeys && cap(t.rows) <= maxScratchKeys {
		keyScratches.Put(t)
	}
}

// fill reads the key of row into vals.
func (kr *keyReader) fill(row uint32, vals []codec.Value) (Key, bool, error) {
	k := Key{Values: vals}
	needRecord := kr.ids == nil
	for _, v := range kr.vals {
		if v == nil {
			needRecord = true
		}
	}
	if needRecord {
		kr.reads++
		if err := checkContext(kr.ctx, kr.reads); err != nil {
			return k, false, err
		}
		ok, err := kr.src.Record(row, &kr.rec)
		if err != nil || !ok {
			return k, false, err
		}
	}
	for i, sk := range kr.order.Keys {
		if kr.vals[i] != nil {
			k.Values[i] = kr.vals[i].Get(row)
		} else {
			k.Values[i] = recordValue(&kr.rec, sk.Column)
		}
	}
	if kr.ids != nil {
		k.ID = kr.ids.Get(row).Str
	} else {
		k.ID = kr.rec.ID
	}
	return k, true, nil
}

// compareKeys orders two positions: each sort value with nulls last in
// both directions, then the random order, then ascending id.
func (o Order) compareKeys(a, b Key) int {
	for i := range o.Keys {
		if c := o.compareValue(i, a.Values[i], b.Values[i]); c != 0 {
			return c
		}
	}
	if o.Random {
		ha, hb := o.randomRank(a.ID), o.randomRank(b.ID)
		switch {
		case ha < hb:
			return -1
		case ha > hb:
			return 1
		}
	}
	return strings.Compare(a.ID, b.ID)
}

// compareValue orders two values of sort key i as compareKeys does: nulls
// last in both directions.
func (o Order) compareValue(i int, x, y codec.Value) int {
	return compareNullsLast(x, y, o.Keys[i].Desc)
}

// windowCompare is compareKeys in the window's direction: inverted when
// the window is read in reverse.
func (o Order) windowCompare(w Window) func(a, b Key) int {
	if w.Reverse {
		return func(a, b Key) int { return -o.compareKeys(a, b) }
	}
	return o.compareKeys
}

// randomRank is the place of an id in the random order of Seed.
func (o Order) randomRank(id string) uint64 {
	h := fnv.New64a()
	var seed [8]byte
	binary.BigEndian.PutUint64(seed[:], o.Seed)
	h.Write(seed[:])
	h.Write([]byte(id))
	return h.Sum64()
}

// keyedRow is a row with its position.
type keyedRow struct {
	row uint32
	key Key
}

// rowHeap keeps the n first rows of an order seen so far: a max-heap on
// cmp, so its root is the last row kept.
type rowHeap struct {
	cmp  func(a, b Key) int
	rows []keyedRow
}

func (h *rowHeap) Len() int           { return len(h.rows) }
func (h *rowHeap) Less(i, j int) bool { return h.cmp(h.rows[i].key, h.rows[j].key) > 0 }
func (h *rowHeap) Swap(i, j int)      { h.rows[i], h.rows[j] = h.rows[j], h.rows[i] }
func (h *rowHeap) Push(x any)         { h.rows = append(h.rows, x.(keyedRow)) }
func (h *rowHeap) Pop() any {
	x := h.rows[len(h.rows)-1]
	h.rows = h.rows[:len(h.rows)-1]
	return x
}

// Window selects rows of an order: at most Limit rows strictly after
// After (when set) and strictly before Before (when set), counted from the
// start of the order, or from its end when Reverse.
type Window struct {
	After, Before *Key
	Limit         int
	Reverse       bool
}

// Select returns the rows of cand that fall in the window, in order (in
// reverse order when w.Reverse), with their keys. It stops with ctx's
// error once ctx ends.
func Select(ctx context.Context, src Source, cand *roaring.Bitmap, o Order, w Window) ([]uint32, []Key, error) {
	return selectOrder(ctx, src, cand, o, w, nil)
}

// orderNote is how Select ordered the rows: the kind of step, walk or
// heap, and how it read the order (the via of ExplainNode).
type orderNote struct{ kind, via string }

// set notes a way of ordering; a nil note notes nothing.
func (n *orderNote) set(kind, via string) {
	if n != nil {
		n.kind, n.via = kind, via
	}
}

// selectOrder is Select, noting on note how it ordered the rows.
func selectOrder(ctx context.Context, src Source, cand *roaring.Bitmap, o Order, w Window, note *orderNote) ([]uint32, []Key, error) {
	if w.Limit <= 0 || cand.IsEmpty() {
		note.set("heap", "") // of nothing: a walk is never chosen for few rows
		return nil, nil, nil
	}
	if walkable(o) {
		prefer, err := preferWalk(src, cand, o, w)
		if err != nil {
			return nil, nil, err
		}
		if !prefer {
			return selectHeap(ctx, src, cand, o, w, note)
		}
		rows, keys, err := walk(ctx, src, candidates{set: cand}, o, w, note)
		if !errors.Is(err, ErrNoOrderedIndex) {
			return rows, keys, err
		}
		// The source keeps no order of the column: what the walk took is
		// dropped, and the heap starts over.
	}
	return selectHeap(ctx, src, cand, o, w, note)
}

// preferWalk decides between walking an ordered index and a heap over the
// candidates. A heap reads every candidate's key (cost ∝ |cand|); a walk
// visits about Limit·|live|/|cand| values, each a storage read worth some
// fifty in-memory key reads, or one such read when the walk is of the
// ids' in-memory order. So walk when |cand|² > f·Limit·|live| (f the cost
// of a visit: 50, or 1), and always for very large candidate sets; a
// storage walk never for fewer than minWalk candidates.
func preferWalk(src Source, cand *roaring.Bitmap, o Order, w Window) (bool, error) {
	n := cand.GetCardinality()
	visit := 50.0
	if len(o.Keys) == 0 {
		ord, err := idOrder(src)
		if err != nil {
			return false, err
		}
		if ord.runs != nil && !w.Reverse {
			return runsWalkCheaper(ord, int(n), w.Limit), nil
		}
		if ord.order != nil {
			visit = 1
		}
	}
	if n <= minWalk && visit > 1 {
		return false, nil
	}
	live, err := src.Live()
	if err != nil {
		return true, nil
	}
	return float64(n)*float64(n) > visit*float64(w.Limit)*float64(live.GetCardinality()), nil
}

// minWalk is the candidate count below which a heap always wins.
const minWalk = 4096

// walkable reports whether an order can be produced by walking an ordered
// index: a first key on an indexed column, whose groups of equal values are
// then ordered by the rest of the key, or no key (id order).
func walkable(o Order) bool {
	if len(o.Keys) == 0 {
		return !o.Random
	}
	c := o.Keys[0].Column
	return indexed(c) && c.Type != TypeMultiple && c.ID != MetaIDColumn
}

// selectHeap reads the key of every candidate and keeps the first Limit.
func selectHeap(ctx context.Context, src Source, cand *roaring.Bitmap, o Order, w Window, note *orderNote) ([]uint32, []Key, error) {
	kr, err := newKeyReader(ctx, src, o)
	if err != nil {
		return nil, nil, err
	}
	// The keys kept are the window's: a page's needs fewer than a slab.
	kr.slabRows = min(w.Limit, keySlabRows)
	note.set("heap", "column store")
	rows, ok := selectDense(kr, cand, o, w)
	if !ok {
		note.set("heap", "id store")
		rows, ok = selectByID(kr, cand, o, w)
	}
	if ok {
		keys := make([]Key, 0, len(rows))
		for _, row := range rows {
			k, _, err := kr.key(row)
			if err != nil {
				return nil, nil, err
			}
			keys = append(keys, k)
		}
		return rows, keys, nil
	}
	note.set("heap", kr.via())
	defer kr.release()
	// In reverse, the heap keeps the last rows: invert the order.
	cmp := o.windowCompare(w)
	h := &rowHeap{cmp: cmp}
	it := cand.Iterator()
	for n := 1; it.HasNext(); n++ {
		if err := checkContext(ctx, n); err != nil {
			return nil, nil, err
		}
		row := it.Next()
		kr.resetTemp()
		k, ok, err := kr.tempKey(row)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			continue
		}
		if w.After != nil && o.compareKeys(k, *w.After) <= 0 {
			continue
		}
		if w.Before != nil && o.compareKeys(k, *w.Before) >= 0 {
			continue
		}
		if h.Len() < w.Limit {
			heap.Push(h, keyedRow{row, kr.own(k)})
			continue
		}
		if cmp(k, h.rows[0].key) < 0 {
			// The top's key is its own: it takes the row's values.
			copy(h.rows[0].key.Values, k.Values)
			h.rows[0].key.ID, h.rows[0].row = k.ID, row
			heap.Fix(h, 0)
		}
	}
	slices.SortFunc(h.rows, func(x, y keyedRow) int { return cmp(x.key, y.key) })
	rows = make([]uint32, len(h.rows))
	keys := make([]Key, len(h.rows))
	for i, r := range h.rows {
		rows[i], keys[i] = r.row, r.key
	}
	return rows, keys, nil
}

// candidates are the rows a walk may take: a bitmap of them, or, in a lazy
// walk, a test of the filter on each row, the live rows as the set, and
// the most rows the walk may test before it gives up.
type candidates struct {
	set    *roaring.Bitmap
	test   *rowTest
	budget uint64
}

// has reports whether a row is a candidate. Once a lazy walk has spent its
// budget every row is one, so that the walk hands the next to take, which
// stops it.
func (c candidates) has(row uint32) bool {
	if c.test != nil {
		return c.test.tested >= c.budget || c.test.eval(row)
	}
	return c.set.Contains(row)
}

// spent reports whether a lazy walk tested all the rows of its budget.
func (c candidates) spent() bool { return c.test != nil && c.test.tested >= c.budget }

// keep keeps the candidates of rows, reusing rows.
func (c candidates) keep(rows []uint32) []uint32 {
	out := rows[:0]
	for _, row := range rows {
		if c.has(row) {
			out = append(out, row)
		}
	}
	return out
}

// walk produces the order by walking the first sort column's ordered index
// (or, with no key, taking candidates by id), keeping each value's rows
// that are candidates; rows of one value are ordered by the rest of the
// key.
func walk(ctx context.Context, src Source, cc candidates, o Order, w Window, note *orderNote) ([]uint32, []Key, error) {
	cand := cc.set
	if len(o.Keys) == 0 {
		ord, err := idOrder(src)
		if err != nil {
			return nil, nil, err
		}
		if ord.order != nil {
			note.set("walk", "id order")
			return walkIDOrder(ctx, ord, cc, w)
		}
		if cc.test != nil {
			// A lazy walk tests rows in memory only.
			return nil, nil, ErrNoOrderedIndex
		}
		note.set("walk", "id index")
		return walkIDs(ctx, src, cand, o, w)
	}
	kr, err := newKeyReader(ctx, src, o)
	if err != nil {
		return nil, nil, err
	}
	// The keys of a group are weighed from a temporary buffer; the rows
	// taken keep theirs, and one spare key is weighed in.
	defer kr.release()
	kr.slabRows = min(w.Limit+1, keySlabRows)
	// Room for the window up front, for the windows of pages at least.
	rows := make([]uint32, 0, min(w.Limit, maxLazyLimit))
	keys := make([]Key, 0, min(w.Limit, maxLazyLimit))
	full := func() bool { return len(rows) >= w.Limit }
	cmp := o.windowCompare(w)
	// byID is set when the rows of a group differ by their ids alone: the
	// order has one key, read from memory, and no random order. A group
	// is then ordered by ids, and weighed against the window's bounds by
	// its value once, its ids compared with a bound's only when it holds
	// the bound's value: on a cursor's page that is its first group,
	// whose rows up to the cursor are skipped before their keys are read.
	byID := len(o.Keys) == 1 && !o.Random && kr.vals[0] != nil && kr.ids != nil
	if byID {
		cmp = func(a, b Key) int { return strings.Compare(a.ID, b.ID) }
		if w.Reverse {
			cmp = func(a, b Key) int { return strings.Compare(b.ID, a.ID) }
		}
	}
	// ks holds a group's rows with their keys, reused from group to group
	// and from walk to walk.
	ks := kr.scratch().rows
	defer func() { kr.tmp.rows = ks }()
	// need is how many rows of the group the window can still take. Once
	// ks holds that many, it is a heap of the first ones by cmp (top the
	// last of them), and a row weighed after replaces the top when it
	// comes before it, its key copied into the top's room: a group of
	// many ties costs a key's room per row the window takes, not per row
	// weighed. spare is the room a row is weighed in then.
	var need int
	spare := kr.values()
	top := &rowHeap{cmp: cmp}
	room := func() []codec.Value {
		if len(ks) < need {
			return kr.tempValues()
		}
		return spare
	}
	offer := func(row uint32, k Key) {
		if len(ks) < need {
			ks = append(ks, keyedRow{row, k})
			if len(ks) == need {
				top.rows = ks
				heap.Init(top)
			}
			return
		}
		if cmp(k, ks[0].key) < 0 {
			copy(ks[0].key.Values, k.Values)
			ks[0].key.ID, ks[0].row = k.ID, row
			heap.Fix(top, 0)
		}
	}
	// after spares reading the keys of most rows of a large group.
	after := secondKeyAfter(kr, o, w, func() Key { return ks[0].key })
	// keep weighs the rows of a group within the window into ks.
	keep := func(group []uint32) error {
		for _, row := range group {
			if after != nil && len(ks) == need && need > 0 && after(row) {
				continue
			}
			k, ok, err := kr.fill(row, room())
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			if w.After != nil && o.compareKeys(k, *w.After) <= 0 {
				continue
			}
			if w.Before != nil && o.compareKeys(k, *w.Before) >= 0 {
				continue
			}
			offer(row, k)
		}
		return nil
	}
	// keepByID is keep for byID.
	keepByID := func(group []uint32) {
		if len(group) == 0 {
			return
		}
		v := kr.vals[0].Get(group[0])
		var afterTie, beforeTie bool
		if w.After != nil {
			c := o.compareValue(0, v, w.After.Values[0])
			if c < 0 {
				return
			}
			afterTie = c == 0
		}
		if w.Before != nil {
			c := o.compareValue(0, v, w.Before.Values[0])
			if c > 0 {
				return
			}
			beforeTie = c == 0
		}
		for _, row := range group {
			if afterTie || beforeTie {
				id := kr.ids.Get(row).Str
				if afterTie && id <= w.After.ID || beforeTie && id >= w.Before.ID {
					continue
				}
			}
			// Read from memory, a key is always there.
			k, _, _ := kr.fill(row, room())
			offer(row, k)
		}
	}
	// take adds a group of rows sharing one value of the first key, in
	// window order.
	take := func(group []uint32) (bool, error) {
		if cc.spent() {
			return false, errLazySpent
		}
		ks = ks[:0]
		kr.resetTemp()
		if need = w.Limit - len(rows); need <= 0 {
			return false, nil
		}
		if byID {
			keepByID(group)
		} else if err := keep(group); err != nil {
			return false, err
		}
		if len(ks) > 1 {
			// The keys are unique (they end with the id): any sort
			// orders them alike.
			slices.SortFunc(ks, func(x, y keyedRow) int { return cmp(x.key, y.key) })
		}
		for _, k := range ks {
			if full() {
				return false, nil
			}
			rows = append(rows, k.row)
			keys = append(keys, kr.own(k.key))
		}
		return !full(), nil
	}
	note.set("walk", "")
	sk := o.Keys[0]
	exists, err := src.Exists(sk.Column)
	if err != nil {
		return nil, nil, err
	}
	// The candidates without a value, read only when the walk gets to
	// them and only when there are any: a sort column rarely has nulls.
	nulls := func() []uint32 {
		if cand.AndCardinality(exists) == cand.GetCardinality() {
			return nil
		}
		rows := roaring.AndNot(cand, exists).ToArray()
		if cc.test != nil {
			rows = cc.keep(rows)
		}
		return rows
	}
	// Nulls sort last in both directions: in reverse they come first.
	if w.Reverse {
		if n := nulls(); len(n) > 0 {
			if more, err := take(n); err != nil || !more {
				return rows, keys, err
			}
		}
	}
	var b Bounds
	pos := w.After
	if w.Reverse {
		pos = w.Before
	}
	if pos != nil && !pos.Values[0].IsNull() {
		v := pos.Values[0]
		// Start the walk at the cursor's value (inclusive: ties on id).
		if sk.Desc != w.Reverse {
			b.Hi, b.HiIncl = &v, true
		} else {
			b.Lo, b.LoIncl = &v, true
		}
	}
	if pos != nil && pos.Values[0].IsNull() && !w.Reverse {
		// Past the non-null values already: only nulls are left.
		_, err := take(nulls())
		return rows, keys, err
	}
	if byID {
		served, err := walkByRow(src, kr, cc, o, w, pos, func(row uint32, k Key) bool {
			rows = append(rows, row)
			keys = append(keys, k)
			return !full()
		})
		if err != nil {
			return nil, nil, err
		}
		if served {
			note.set("walk", "column order")
			if !w.Reverse && !full() {
				if _, err := take(nulls()); err != nil {
					return nil, nil, err
				}
			}
			return rows, keys, nil
		}
	}
	var werr error
	err = scanColumn(src, sk.Column, b, sk.Desc != w.Reverse, cc, note, func(group []uint32) bool {
		more, err := take(group)
		if err != nil {
			werr = err
			return false
		}
		return more
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return nil, nil, err
	}
	if !w.Reverse && !full() {
		if _, err := take(nulls()); err != nil {
			return nil, nil, err
		}
	}
	return rows, keys, nil
}

// walkByRow walks the non-null rows of a one-key order whose column and
// ids the source keeps in memory, row by row in window order from past
// pos (walkRowsInMemory): the column's order keeps ties in id order, as
// the window does, so no group of ties is gathered or sorted. It calls fn
// with each candidate within the window and its key until fn returns
// false or a row reaches the window's far bound. served is false when the
// source keeps no such order.
func walkByRow(src Source, kr *keyReader, cc candidates, o Order, w Window, pos *Key, fn func(row uint32, k Key) bool) (served bool, err error) {
	dv, ok := kr.ids.(DenseValues)
	if !ok || dv.Strings().Len() == 0 {
		return false, nil
	}
	if pos != nil && pos.Values[0].IsNull() {
		pos = nil // every value comes before a null
	}
	far, stop := w.Before, 1
	if w.Reverse {
		far, stop = w.After, -1
	}
	sk := o.Keys[0]
	var spent error
	served, err = walkRowsInMemory(src, sk.Column, pos, sk.Desc != w.Reverse, w.Reverse, dv.Strings(), cc.has, func(row uint32) bool {
		if cc.spent() {
			spent = errLazySpent
			return false
		}
		// Read from memory, a key is always there.
		k, _, _ := kr.key(row)
		if far != nil && o.compareKeys(k, *far)*stop >= 0 {
			return false
		}
		return fn(row, k)
	})
	if err == nil {
		err = spent
	}
	return served, err
}

// scanColumn is src.Scan, served from the column's in-memory order when
// its value store keeps one; it notes on note which of the two walked.
func scanColumn(src Source, c *Column, b Bounds, desc bool, cand candidates, note *orderNote, fn func(rows []uint32) bool) error {
	served, err := scanInMemory(src, c, b, desc, cand.has, fn)
	if err != nil || served {
		note.set("walk", "column order")
		return err
	}
	note.set("walk", "ordered index")
	return src.Scan(c, b, desc, func(_ codec.Value, group *roaring.Bitmap) bool {
		var rows []uint32
		if cand.test != nil {
			rows = cand.keep(group.ToArray())
		} else {
			group.And(cand.set)
			rows = group.ToArray()
		}
		return len(rows) == 0 || fn(rows)
	})
}

// walkIDs produces the default order (ascending id) by walking the id
// index, keeping the candidates, until the window is full.
func walkIDs(ctx context.Context, src Source, cand *roaring.Bitmap, o Order, w Window) ([]uint32, []Key, error) {
	var b Bounds
	if w.After != nil {
		v := codec.String(w.After.ID)
		b.Lo = &v
	}
	if w.Before != nil {
		v := codec.String(w.Before.ID)
		b.Hi = &v
	}
	var rows []uint32
	var keys []Key
	var stopped error
	n := 0
	err := src.Scan(IDColumn, b, w.Reverse, func(v codec.Value, found *roaring.Bitmap) bool {
		n++
		if stopped = checkContext(ctx, n); stopped != nil {
			return false
		}
		row := found.Minimum()
		if !cand.Contains(row) {
			return true
		}
		rows = append(rows, row)
		keys = append(keys, Key{Values: []codec.Value{}, ID: v.Str})
		return len(rows) < w.Limit
	})
	if err == nil {
		err = stopped
	}
	return rows, keys, err
}

// selectByID is selectHeap for the default order (ascending id) when the
// id store hands out its array: it compares id strings, with no keys
// built but for the rows kept. ok is false when the order or store does
// not allow it.
func selectByID(kr *keyReader, cand *roaring.Bitmap, o Order, w Window) ([]uint32, bool) {
	if len(o.Keys) != 0 || o.Random || kr.ids == nil {
		return nil, false
	}
	dv, ok := kr.ids.(DenseValues)
	if !ok {
		return nil, false
	}
	strs := dv.Strings()
	if strs.Len() == 0 {
		return nil, false
	}
	have := roaring.And(cand, dv.Present())
	if !have.IsEmpty() && int(have.Maximum()) >= strs.Len() {
		return nil, false
	}
	// before reports whether id a comes first in the window's direction.
	before := func(a, b string) bool {
		if w.Reverse {
			return a > b
		}
		return a < b
	}
	// A max-heap in the window's direction keeps the first Limit rows.
	var h []uint32
	less := func(i, j int) bool { return before(strs.At(h[j]), strs.At(h[i])) }
	down := func(i int) {
		for {
			l, r, m := 2*i+1, 2*i+2, i
			if l < len(h) && less(l, m) {
				m = l
			}
			if r < len(h) && less(r, m) {
				m = r
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	var buf [256]uint32
	it := have.ManyIterator()
	for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
		for _, row := range buf[:n] {
			id := strs.At(row)
			if (w.After != nil && id <= w.After.ID) || (w.Before != nil && id >= w.Before.ID) {
				continue
			}
			if len(h) < w.Limit {
				h = append(h, row)
				for i := len(h) - 1; i > 0 && less(i, (i-1)/2); i = (i - 1) / 2 {
					h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
				}
				continue
			}
			if before(id, strs.At(h[0])) {
				h[0] = row
				down(0)
			}
		}
	}
	sort.Slice(h, func(i, j int) bool { return before(strs.At(h[i]), strs.At(h[j])) })
	return h, true
}

// selectDense is selectHeap for one numeric or datetime sort key whose
// values sit in a dense array: it compares array entries and reads ids only
// to break ties. ok is false when the order or store does not allow it.
func selectDense(kr *keyReader, cand *roaring.Bitmap, o Order, w Window) ([]uint32, bool) {
	if len(o.Keys) != 1 || o.Random || kr.vals[0] == nil || kr.ids == nil {
		return nil, false
	}
	dv, ok := kr.vals[0].(DenseValues)
	if !ok {
		return nil, false
	}
	switch o.Keys[0].Column.Type {
	case "int", "datetime":
		if arr := dv.Ints(); arr != nil {
			return selectTyped(kr, cand, o, w, arr, dv.Present(), func(v codec.Value) int64 { return v.Int }), true
		}
	case "float":
		if arr := dv.Floats(); arr != nil {
			return selectTyped(kr, cand, o, w, arr, dv.Present(), func(v codec.Value) float64 { return v.Float }), true
		}
	}
	return nil, false
}

// typedRow is a candidate with its sort value.
type typedRow[T int64 | float64] struct {
	v    T
	null bool
	row  uint32
}

func selectTyped[T int64 | float64](kr *keyReader, cand *roaring.Bitmap, o Order, w Window, arr []T, present *roaring.Bitmap, of func(codec.Value) T) []uint32 {
	desc := o.Keys[0].Desc
	id := func(row uint32) string { return kr.ids.Get(row).Str }
	// byValue orders two values as compareKeys does, nulls last and
	// reversed when desc; 0 is a tie, which the ids break.
	byValue := func(a, b typedRow[T]) int {
		switch {
		case a.null && b.null:
		case a.null:
			return 1
		case b.null:
			return -1
		case a.v < b.v:
			if desc {
				return 1
			}
			return -1
		case a.v > b.v:
			if desc {
				return -1
			}
			return 1
		}
		return 0
	}
	// cmp orders two candidates as compareKeys does; toBound orders a
	// candidate against a window's bound, whose id is the key's.
	cmp := func(a, b typedRow[T]) int {
		if c := byValue(a, b); c != 0 {
			return c
		}
		return strings.Compare(id(a.row), id(b.row))
	}
	toBound := func(a, b typedRow[T], bID string) int {
		if c := byValue(a, b); c != 0 {
			return c
		}
		return strings.Compare(id(a.row), bID)
	}
	fromKey := func(k *Key) typedRow[T] {
		v := k.Values[0]
		return typedRow[T]{v: of(v), null: v.IsNull()}
	}
	dir := 1
	if w.Reverse {
		dir = -1
	}
	// A max-heap on the window's order keeps the first Limit rows.
	h := make([]typedRow[T], 0, min(uint64(w.Limit), cand.GetCardinality()))
	less := func(i, j int) bool { return dir*cmp(h[i], h[j]) > 0 }
	down := func(i int) {
		for {
			l, r, m := 2*i+1, 2*i+2, i
			if l < len(h) && less(l, m) {
				m = l
			}
			if r < len(h) && less(r, m) {
				m = r
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	up := func(i int) {
		for i > 0 {
			p := (i - 1) / 2
			if !less(i, p) {
				return
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
	}
	var after, before typedRow[T]
	if w.After != nil {
		after = fromKey(w.After)
	}
	if w.Before != nil {
		before = fromKey(w.Before)
	}
	// Looking a row up in present costs more than the rest of weighing
	// it: skipped when every candidate has a value.
	nulls := cand.AndCardinality(present) != cand.GetCardinality()
	// weigh reports whether the row is in the window.
	weigh := func(row uint32) bool {
		r := typedRow[T]{row: row, null: nulls && !present.Contains(row)}
		if !r.null {
			r.v = arr[row]
		}
		if w.After != nil && toBound(r, after, w.After.ID) <= 0 {
			return false
		}
		if w.Before != nil && toBound(r, before, w.Before.ID) >= 0 {
			return false
		}
		if len(h) < w.Limit {
			h = append(h, r)
			up(len(h) - 1)
			return true
		}
		if dir*cmp(r, h[0]) < 0 {
			h[0] = r
			down(0)
		}
		return true
	}
	// Rows are mostly inserted in ascending order of a time or a counter,
	// so a window that runs from the largest values down has its rows at
	// the end of the candidates: fed from the front, every row would
	// replace the heap's top. The heap is seeded with the last Limit
	// candidates in the window instead, and the pass from the front stops
	// where they start, having rejected most rows with one comparison. A
	// cursor's window leaves out the rows of the pages before it, which
	// are the last candidates then: the seed reads past them, or the heap
	// would start from rows the window leaves out, and a page deep into
	// such an order would replace the heap's top at every row, as an
	// unseeded heap does. Only the seed is read backwards: a reverse
	// iterator costs about three times a forward one per row, more than a
	// rejected row's comparison, so the seed reads past at most a quarter
	// of the candidates (a window at the other end of an order the rows
	// were not inserted in would have it read them all); every row is
	// read once either way.
	end := uint64(math.MaxUint32) + 1 // the forward pass takes rows below end
	if desc != w.Reverse {
		rit := cand.ReverseIterator()
		skips := max(cand.GetCardinality()/4, 1)
		for kept := 0; kept < w.Limit && rit.HasNext(); {
			row := rit.Next()
			end = uint64(row)
			if weigh(row) {
				kept++
			} else if skips--; skips == 0 {
				break
			}
		}
	}
	// Once the heap is full, a row whose value comes strictly after the
	// top's in the window's order cannot enter it, whatever its id and
	// the window's bounds: with every candidate holding a value, most
	// rows of a large candidate set are turned away by this one compare
	// of array entries instead of being weighed. Ties, and NaN, which
	// compares false, are weighed.
	fast := !nulls && w.Limit > 0
	largerLast := desc == w.Reverse // the window takes smaller values first
	var buf [256]uint32
	it := cand.ManyIterator()
rows:
	for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
		for _, row := range buf[:n] {
			if uint64(row) >= end {
				break rows
			}
			if fast && len(h) == w.Limit {
				if v, top := arr[row], h[0].v; (largerLast && v > top) || (!largerLast && v < top) {
					continue
				}
			}
			weigh(row)
		}
	}
	slices.SortFunc(h, func(a, b typedRow[T]) int { return dir * cmp(a, b) })
	rows := make([]uint32, len(h))
	for i, r := range h {
		rows[i] = r.row
	}
	return rows
}

// secondKeyAfter returns a test of whether a row comes after top (the
// last of the rows a walk keeps of a group) in the window's order, from
// the second sort key's value array alone: the rows of a group tie on
// the first key, so the second decides unless it ties too. The test is
// false when it cannot tell (a null, a tie); it is nil when the order or
// the store keeps no such array.
func secondKeyAfter(kr *keyReader, o Order, w Window, top func() Key) func(row uint32) bool {
	if len(o.Keys) < 2 || kr.vals[1] == nil {
		return nil
	}
	dv, ok := kr.vals[1].(DenseValues)
	if !ok {
		return nil
	}
	// Larger values come after in an ascending window.
	larger := o.Keys[1].Desc == w.Reverse
	switch t := o.Keys[1].Column.Type; t {
	case TypeInt, TypeDatetime:
		if arr := dv.Ints(); arr != nil {
			return valueAfter(arr, dv.Present(), larger, top, intOfValue(t))
		}
	case TypeFloat:
		if arr := dv.Floats(); arr != nil {
			return valueAfter(arr, dv.Present(), larger, top, floatOfValue)
		}
	}
	return nil
}

// valueAfter is secondKeyAfter's test over one array type.
func valueAfter[T int64 | float64](arr []T, present *roaring.Bitmap, larger bool, top func() Key, of func(codec.Value) (T, bool)) func(row uint32) bool {
	return func(row uint32) bool {
		t, ok := of(top().Values[1])
		if !ok || int(row) >= len(arr) || !present.Contains(row) {
			return false
		}
		if larger {
			return arr[row] > t
		}
		return arr[row] < t
	}
}
