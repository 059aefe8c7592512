package memstore

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

// TestColIndexFollowsWrites builds the orders, dictionary and trigram index
// of columns, then writes, and checks them after every few writes against
// what a rebuild from the values gives.
func TestColIndexFollowsWrites(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	words := []string{"alpha", "Beta", "gamma", "ALPHA", "bét", "ab", "", "alphabet", "eta", "12-3", "K"}
	ints := &Column{kind: codec.KindInt}
	floats := &Column{kind: codec.KindFloat}
	strs := &Column{kind: codec.KindString}
	write := func(row uint32) {
		if rng.Intn(5) == 0 {
			ints.set(row, codec.Null())
			floats.set(row, codec.Null())
			strs.set(row, codec.Null())
			return
		}
		ints.set(row, codec.Int(int64(rng.Intn(20)-10)))
		floats.set(row, codec.Float(float64(rng.Intn(40))/4-5))
		strs.set(row, codec.String(words[rng.Intn(len(words))]+words[rng.Intn(len(words))]))
	}
	for row := range uint32(3000) {
		write(row)
	}
	check := func(step int) {
		t.Helper()
		for _, c := range []*Column{ints, floats, strs} {
			order := c.Order()
			want := c.present.ToArray()
			slices.SortStableFunc(want, func(a, b uint32) int {
				x, y := c.Get(a), c.Get(b)
				return codec.Compare(x, y)
			})
			if !slices.Equal(order, want) {
				t.Fatalf("step %d: order of %v column differs", step, c.kind)
			}
		}
		codes, vals, ok := strs.Codes()
		if !ok {
			t.Fatalf("step %d: no dictionary", step)
		}
		for row := range uint32(3200) {
			want := strs.Get(row)
			got := codec.Null()
			if int(row) < len(codes) && codes[row] > 0 {
				got = vals[codes[row]-1]
			}
			if codec.Compare(got, want) != 0 || got.IsNull() != want.IsNull() {
				t.Fatalf("step %d: row %d coded %v, holds %v", step, row, got, want)
			}
		}
		for _, sub := range []string{"alp", "ALPHA", "pha", "bét", "Bét", "etaal", "xyz", "ab", "2-3", "12-", "3al", "Ka"} {
			for _, fold := range []bool{false, true} {
				cand, sure, ok := strs.SubstringCandidates(sub, fold)
				if !ok {
					if len(sub) >= 3 && isASCII(sub) {
						t.Fatalf("step %d: %q not narrowed", step, sub)
					}
					continue
				}
				if sure != nil && !roaring.AndNot(sure, cand).IsEmpty() {
					t.Fatalf("step %d: %q (fold %v) sure of rows it does not offer", step, sub, fold)
				}
				if wantSure := len(sub) == 3 && (fold || !hasASCIILetter(sub)); (sure != nil) != wantSure {
					t.Fatalf("step %d: %q (fold %v) sure %v", step, sub, fold, sure)
				}
				it := strs.present.Iterator()
				for it.HasNext() {
					row := it.Next()
					s := strs.strs.get(row)
					match := strings.Contains(s, sub)
					if fold {
						match = strings.Contains(strings.ToUpper(s), strings.ToUpper(sub)) || !isASCII(s)
					}
					if match && !cand.Contains(row) {
						t.Fatalf("step %d: %q (fold %v) misses row %d %q", step, sub, fold, row, s)
					}
					if sure != nil && sure.Contains(row) && !strings.Contains(s, sub) &&
						!(fold && strings.Contains(strings.ToUpper(s), strings.ToUpper(sub))) {
						t.Fatalf("step %d: %q (fold %v) sure of row %d %q", step, sub, fold, row, s)
					}
				}
			}
		}
	}
	check(0)
	for step := 1; step <= 30; step++ {
		for range rng.Intn(50) + 1 {
			write(uint32(rng.Intn(3200)))
		}
		check(step)
	}
}

// TestOrderTiesByID builds the orders of a store's columns of few values,
// whose rows' ids do not follow the rows, then writes rows (new ids,
// values, removals) in the store and in a copy of it, and checks the
// orders of both after every few writes: rows of equal value are in
// order of their ids.
func TestOrderTiesByID(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	s := &TableStore{cols: map[uint32]*Column{
		index.MetaIDColumn: {kind: codec.KindString},
		1:                  {kind: codec.KindInt},
		2:                  {kind: codec.KindFloat},
		3:                  {kind: codec.KindString},
	}}
	for _, c := range s.cols {
		c.store = s
	}
	// write changes a row as a store's apply does: every column.
	write := func(s *TableStore, row uint32) {
		if rng.Intn(6) == 0 {
			for _, c := range s.cols {
				c.set(row, codec.Null())
			}
			return
		}
		s.cols[index.MetaIDColumn].set(row, codec.String(fmt.Sprintf("id%06d", rng.Intn(1e6))))
		s.cols[1].set(row, codec.Int(int64(rng.Intn(4))))
		s.cols[2].set(row, codec.Float(float64(rng.Intn(3))/2))
		s.cols[3].set(row, codec.String([]string{"a", "b", "c"}[rng.Intn(3)]))
	}
	// More rows than minIDOrderRows: the first sort takes them from the
	// id column's order.
	for row := range uint32(6000) {
		write(s, row)
	}
	check := func(s *TableStore, step int) {
		t.Helper()
		ids := s.cols[index.MetaIDColumn]
		for col := uint32(1); col <= 3; col++ {
			c := s.cols[col]
			want := c.present.ToArray()
			slices.SortFunc(want, func(a, b uint32) int {
				if x := codec.Compare(c.Get(a), c.Get(b)); x != 0 {
					return x
				}
				if x := strings.Compare(ids.strs.get(a), ids.strs.get(b)); x != 0 {
					return x
				}
				return int(a) - int(b)
			})
			if got := c.Order(); !slices.Equal(got, want) {
				t.Fatalf("step %d: order of column %d is not by value and id", step, col)
			}
		}
	}
	check(s, 0)
	var fork *TableStore
	for step := 1; step <= 20; step++ {
		if step == 10 {
			fork = s.clone()
		}
		for range rng.Intn(40) + 1 {
			write(s, uint32(rng.Intn(6100)))
			if fork != nil {
				write(fork, uint32(rng.Intn(6100)))
			}
		}
		check(s, step)
		if fork != nil {
			check(fork, step)
		}
	}
}

// TestOrderMemo computes a column's memo once per order: again after a
// write changed the order, not on every call.
func TestOrderMemo(t *testing.T) {
	c := &Column{kind: codec.KindInt}
	for row := range uint32(100) {
		c.set(row, codec.Int(int64(row%7)))
	}
	calls := 0
	estimate := func(order []uint32) float64 {
		calls++
		return float64(len(order))
	}
	f := func(want float64, wantCalls int) {
		t.Helper()
		if got := c.OrderMemo(estimate); got != want || calls != wantCalls {
			t.Fatalf("memo %v after %d estimates, want %v after %d", got, calls, want, wantCalls)
		}
	}
	f(100, 1)
	f(100, 1)
	c.set(100, codec.Int(3))
	f(101, 2)
	f(101, 2)
	c.set(5, codec.Null())
	f(100, 3)
}

// TestDictionaryLimit drops a column's dictionary when it outgrows
// maxDictValues, and never builds one for a column with more values.
func TestDictionaryLimit(t *testing.T) {
	c := &Column{kind: codec.KindString}
	for row := range uint32(maxDictValues) {
		c.set(row, codec.String(fmt.Sprint(row)))
	}
	if _, _, ok := c.Codes(); !ok {
		t.Fatal("no dictionary at the limit")
	}
	c.set(maxDictValues, codec.String("one more"))
	if _, _, ok := c.Codes(); ok {
		t.Fatal("dictionary past the limit")
	}
	d := &Column{kind: codec.KindString}
	for row := range uint32(maxDictValues + 1) {
		d.set(row, codec.String(fmt.Sprint(row)))
	}
	if _, _, ok := d.Codes(); ok {
		t.Fatal("dictionary built past the limit")
	}
}

// TestTrigramIndexCloneAfterWrites: a copy of a built trigram index and
// the original share its frozen bytes, and the writes to each change
// neither the other nor the bytes.
func TestTrigramIndexCloneAfterWrites(t *testing.T) {
	a := &Column{kind: codec.KindString}
	for row := range uint32(200) {
		a.set(row, codec.String(fmt.Sprint("value ", row)))
	}
	if _, _, ok := a.SubstringCandidates("lue", false); !ok {
		t.Fatal("no trigram index")
	}
	b := &Column{kind: codec.KindString}
	b.strs = a.strs
	b.present = *a.present.Clone()
	b.ix.tri = a.ix.tri.clone()
	a.set(7, codec.String("other"))
	b.set(9, codec.String("zzz"))
	b.set(300, codec.String("new value"))
	f := func(c *Column, sub string, want ...uint32) {
		t.Helper()
		rows, _, ok := c.SubstringCandidates(sub, false)
		if !ok {
			t.Fatalf("%q: no candidates", sub)
		}
		got := rows.ToArray()
		if len(got) > 8 {
			got = got[:8]
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: rows %v, want %v", sub, got, want)
		}
	}
	f(a, "lue", 0, 1, 2, 3, 4, 5, 6, 8)
	f(b, "lue", 0, 1, 2, 3, 4, 5, 6, 7)
	f(a, "the", 7)
	f(b, "the")
	f(b, "zzz", 9)
	f(a, "zzz")
	f(b, "new", 300)
	f(a, "new")
}

// TestOrderRuns finds the runs of an order that the ids of batches make,
// through the writes that make and break them, against a count by hand.
func TestOrderRuns(t *testing.T) {
	c := &Column{kind: codec.KindString}
	check := func(step string, want []uint32) {
		t.Helper()
		order, runs := c.OrderRuns()
		if !slices.Equal(order, c.Order()) {
			t.Fatalf("%s: OrderRuns and Order differ", step)
		}
		if !slices.Equal(runs, want) || (runs == nil) != (want == nil) {
			t.Fatalf("%s: runs %v, want %v (order %v)", step, runs, want, order)
		}
	}
	// Three batches of 100 rows, the second's ids first.
	for row := range uint32(300) {
		batch := []int{1, 0, 2}[row/100]
		c.set(row, codec.String(fmt.Sprintf("b%d-%03d", batch, row)))
	}
	check("batches", []uint32{0, 100, 200})
	c.set(150, codec.Null())
	check("a removal", []uint32{0, 99, 199})
	c.set(150, codec.String("b0-150"))
	check("its return", []uint32{0, 100, 200})
	c.set(40, codec.String("b2-400"))
	check("an id moved to the end", []uint32{0, 100, 140, 199, 299})
	c.set(40, codec.String("b1-040"))
	check("moved back", []uint32{0, 100, 200})
	c.set(300, codec.String("b3"))
	check("a new batch", []uint32{0, 100, 200})
	c.set(301, codec.String("a"))
	check("an id before all", []uint32{0, 1, 101, 201})
	// Rows in no order: more runs than maxRunShare allows.
	for row := range uint32(302) {
		c.set(row, codec.String(fmt.Sprintf("%03d", (row*7919)%302)))
	}
	check("scattered", nil)
	ints := &Column{kind: codec.KindInt}
	for row := range uint32(10) {
		ints.set(row, codec.Int(int64(row)))
	}
	if _, runs := ints.OrderRuns(); !slices.Equal(runs, []uint32{0}) {
		t.Fatalf("ascending ints: runs %v", runs)
	}
}

// BenchmarkRowRuns finds the runs of an order of a million ids loaded in
// batches of a thousand, every tenth batch's ids before the one before
// it: what every rebuild of the ids' order pays on top of the merge.
func BenchmarkRowRuns(b *testing.B) {
	const n, batch = 1_000_000, 1000
	order := make([]uint32, 0, n)
	for start := 0; start < n; start += batch {
		k := start
		if start/batch%10 == 9 {
			k = start - batch // swapped with the batch before
			order = order[:len(order)-batch]
			for row := start; row < start+batch; row++ {
				order = append(order, uint32(row))
			}
		}
		for row := k; row < k+batch; row++ {
			order = append(order, uint32(row))
		}
	}
	var present roaring.Bitmap
	present.AddRange(0, n)
	b.ReportAllocs()
	for b.Loop() {
		if rowRuns(order, &present) == nil {
			b.Fatal("no runs")
		}
	}
}
