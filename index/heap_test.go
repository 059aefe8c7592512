package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
)

// denseInts is a dense store of an int column: arr by row, present the
// rows with a value.
type denseInts struct {
	arr     []int64
	present *roaring.Bitmap
}

func (d denseInts) Get(row uint32) codec.Value {
	if !d.present.Contains(row) {
		return codec.Null()
	}
	return codec.Value{Kind: codec.KindInt, Int: d.arr[row]}
}
func (d denseInts) Present() *roaring.Bitmap { return d.present }
func (d denseInts) Ints() []int64            { return d.arr }
func (d denseInts) Floats() []float64        { return nil }
func (d denseInts) Strings() PackedStrings   { return PackedStrings{} }

// rowIDs is an id store: the id of a row is its number, zero-padded.
type rowIDs []string

func (ids rowIDs) Get(row uint32) codec.Value { return codec.String(ids[row]) }

// heapFixture is n rows of an int column whose values grow with the row
// (ascending) or are drawn at random, with ties, and every seventh row
// null when nulls; cand holds about share of the rows.
func heapFixture(n int, ascending, nulls bool, share float64, seed uint64) (*keyReader, *roaring.Bitmap, *Column) {
	r := rand.New(rand.NewPCG(seed, 3))
	col := &Column{Path: "n", ID: 1, Type: TypeInt}
	d := denseInts{arr: make([]int64, n), present: roaring.New()}
	cand := roaring.New()
	ids := make(rowIDs, n)
	for row := range n {
		ids[row] = fmt.Sprintf("r%08d", row)
		if ascending {
			d.arr[row] = int64(row / 3)
		} else {
			d.arr[row] = r.Int64N(int64(n / 3))
		}
		if !nulls || row%7 != 0 {
			d.present.Add(uint32(row))
		}
		if r.Float64() < share {
			cand.Add(uint32(row))
		}
	}
	kr := &keyReader{vals: []ColumnValues{d}, ids: ids}
	return kr, cand, col
}

// TestSelectTyped checks the heap over a dense int column against a sort
// of every candidate: first windows, windows after and before a key, in
// both directions, on ascending and random values, with and without
// nulls, and windows larger than the candidates.
func TestSelectTyped(t *testing.T) {
	f := func(ascending, nulls, desc, reverse bool, limit, after, before int) {
		t.Helper()
		kr, cand, col := heapFixture(3000, ascending, nulls, 0.3, 1)
		o := Order{Keys: []SortKey{{Column: col, Desc: desc}}}
		kr.order = o
		key := func(row uint32) Key {
			return Key{Values: []codec.Value{kr.vals[0].Get(row)}, ID: kr.ids.Get(row).Str}
		}
		all := cand.ToArray()
		slices.SortFunc(all, func(a, b uint32) int { return o.compareKeys(key(a), key(b)) })
		w := Window{Limit: limit, Reverse: reverse}
		want := all
		if after >= 0 {
			k := key(all[after])
			w.After, want = &k, want[after+1:]
		}
		if before >= 0 {
			k := key(all[before])
			w.Before, want = &k, want[:before-(len(all)-len(want))]
		}
		if reverse {
			want = slices.Clone(want)
			slices.Reverse(want)
		}
		want = want[:min(limit, len(want))]
		got := selectTyped(kr, cand, o, w, kr.vals[0].(denseInts).arr, kr.vals[0].(denseInts).present, func(v codec.Value) int64 { return v.Int })
		if !slices.Equal(got, want) {
			t.Errorf("ascending %v nulls %v desc %v reverse %v limit %d after %d before %d:\n got %v\nwant %v", ascending, nulls, desc, reverse, limit, after, before, got, want)
		}
	}
	for _, ascending := range []bool{true, false} {
		for _, nulls := range []bool{false, true} {
			for _, desc := range []bool{false, true} {
				for _, reverse := range []bool{false, true} {
					f(ascending, nulls, desc, reverse, 21, -1, -1)
					f(ascending, nulls, desc, reverse, 21, 40, -1)
					f(ascending, nulls, desc, reverse, 21, -1, 800)
					f(ascending, nulls, desc, reverse, 21, 5, 20)
					f(ascending, nulls, desc, reverse, 5000, -1, -1)
					f(ascending, nulls, desc, reverse, 1, 0, -1)
					// Deep cursors: the rows the window leaves out
					// are the last candidates when the values grow
					// with the row, fewer and more of them than the
					// seed reads past.
					f(ascending, nulls, desc, reverse, 21, 150, -1)
					f(ascending, nulls, desc, reverse, 21, 700, -1)
					f(ascending, nulls, desc, reverse, 21, -1, 150)
					f(ascending, nulls, desc, reverse, 21, -1, 700)
				}
			}
		}
	}
}

// countedIDs is an id store that counts the ids read.
type countedIDs struct {
	rowIDs
	reads *int
}

func (c countedIDs) Get(row uint32) codec.Value {
	*c.reads++
	return c.rowIDs.Get(row)
}

// TestSelectTypedCursorSeed checks that a cursor's window deep into an
// order the rows were inserted in, newest first, is seeded from its own
// rows: the pass from the front then rejects each row with one comparison
// of values, reading no ids but those of ties with the heap's top, where
// a heap seeded with rows outside the window replaces its top at every
// row and reads ids to break the ties among its rows.
func TestSelectTypedCursorSeed(t *testing.T) {
	kr, cand, col := heapFixture(30000, true, false, 0.3, 1)
	o := Order{Keys: []SortKey{{Column: col, Desc: true}}}
	kr.order = o
	d := kr.vals[0].(denseInts)
	key := func(row uint32) Key { return Key{Values: []codec.Value{d.Get(row)}, ID: kr.ids.Get(row).Str} }
	all := cand.ToArray()
	slices.SortFunc(all, func(a, b uint32) int { return o.compareKeys(key(a), key(b)) })
	// Page 50 of 20: after the 980th row.
	after := key(all[979])
	reads := 0
	kr.ids = countedIDs{kr.ids.(rowIDs), &reads}
	got := selectTyped(kr, cand, o, Window{Limit: 21, After: &after}, d.arr, d.present, func(v codec.Value) int64 { return v.Int })
	if want := all[980:1001]; !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	if reads > 100 {
		t.Errorf("%d ids read for a window of 21 rows over %d candidates", reads, len(all))
	}
}
