package index

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestOrderedColumn compares ranges and walks over an in-memory order with
// comparing every value, for spans of every size.
func TestOrderedColumn(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	const n = 20000
	arr := make([]int64, n)
	present := roaring.New()
	for row := range arr {
		if rng.Intn(10) > 0 {
			arr[row] = int64(rng.Intn(2000))
			present.Add(uint32(row))
		}
	}
	order := present.ToArray()
	slices.SortStableFunc(order, func(a, b uint32) int { return int(arr[a] - arr[b]) })
	o := orderedColumn[int64]{arr: arr, order: order, present: present}
	randBounds := func() bounds[int64] {
		var b bounds[int64]
		if rng.Intn(4) > 0 {
			b.add([]Op{OpGt, OpGe}[rng.Intn(2)], int64(rng.Intn(2100)-50))
		}
		if rng.Intn(4) > 0 {
			b.add([]Op{OpLt, OpLe}[rng.Intn(2)], int64(rng.Intn(2100)-50))
		}
		return b
	}
	for range 120 {
		b := randBounds()
		var cand *roaring.Bitmap
		if rng.Intn(2) == 0 {
			cand = roaring.New()
			for range rng.Intn(n) {
				cand.Add(uint32(rng.Intn(n)))
			}
		}
		want := roaring.New()
		for row, v := range arr {
			if present.Contains(uint32(row)) && b.holds(v) && (cand == nil || cand.Contains(uint32(row))) {
				want.Add(uint32(row))
			}
		}
		if got := o.filter(cand, b); !got.Equals(want) {
			t.Fatalf("bounds %+v: %d rows, want %d", b, got.GetCardinality(), want.GetCardinality())
		}
		walkCand := cand
		if walkCand == nil {
			walkCand = present
		}
		for _, desc := range []bool{false, true} {
			var seen []int64
			rows := roaring.New()
			o.walk(b, desc, walkCand.Contains, func(r []uint32) bool {
				v := arr[r[0]]
				seen = append(seen, v)
				for _, row := range r {
					if arr[row] != v {
						t.Fatalf("row %d of value %d holds %d", row, v, arr[row])
					}
				}
				rows.AddMany(r)
				return true
			})
			if !slices.IsSortedFunc(seen, func(x, y int64) int {
				if desc {
					x, y = y, x
				}
				if x < y {
					return -1
				}
				return 1 // strictly ordered: equal neighbours fail too
			}) {
				t.Fatalf("walk (desc %v) out of order", desc)
			}
			if !rows.Equals(want) {
				t.Fatalf("walk (desc %v) of %+v: %d rows, want %d", desc, b, rows.GetCardinality(), want.GetCardinality())
			}
			// Stopped after a few values, the walk has tested each row of
			// the span up to the last value it handed over once, and no
			// other; it hands a value's rows in ascending order.
			tested := map[uint32]int{}
			count := func(row uint32) bool {
				tested[row]++
				return walkCand.Contains(row)
			}
			stopAt, values := 1+rng.Intn(5), 0
			var last int64
			o.walk(b, desc, count, func(r []uint32) bool {
				if !slices.IsSorted(r) {
					t.Fatalf("walk (desc %v) handed rows %v out of order", desc, r)
				}
				values++
				last = arr[r[0]]
				return values < stopAt
			})
			for row, v := range arr {
				inSpan := present.Contains(uint32(row)) && b.holds(v)
				reached := inSpan && (values < stopAt || v == last || (v < last) != desc)
				if n := tested[uint32(row)]; n != 0 && n != 1 || (n == 1) != reached {
					t.Fatalf("walk (desc %v) stopped at %d after %d values tested row %d of value %d %d times", desc, last, values, row, v, n)
				}
			}
		}
	}
}

// TestWalkIDOrder compares walks of the ids' in-memory order with the heap
// over the candidates' ids, on random ids that rows gain and lose between
// rounds, for random candidates, windows, cursors and both directions, the
// candidates given as a set and as a lazy test. Every other round the ids
// grow with the rows batch by batch, the batches in a random order, and
// the walk takes each batch's candidates in row order.
func TestWalkIDOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	const n = 5000
	ids := make([]string, n)
	present := roaring.New()
	used := map[string]bool{}
	// newID makes an id no row has held, of shared prefixes and varying
	// lengths, so that comparisons reach past the first bytes.
	newID := func() string {
		for {
			id := fmt.Sprintf("r%0*d", 1+rng.Intn(6), rng.Intn(200000))
			if !used[id] {
				used[id] = true
				return id
			}
		}
	}
	for row := range uint32(n) {
		if rng.Intn(8) > 0 {
			ids[row] = newID()
			present.Add(row)
		}
	}
	ctx := context.Background()
	random := ids
	for round := range 40 {
		ids = random
		// Inserts take free rows; deletes clear rows; updates change ids.
		for range rng.Intn(200) {
			row := uint32(rng.Intn(n))
			switch rng.Intn(3) {
			case 0:
				ids[row] = ""
				present.Remove(row)
			default:
				ids[row] = newID()
				present.Add(row)
			}
		}
		if round%2 == 1 {
			ids = batchIDs(rng, present, n, round%4 == 1)
		}
		order := present.ToArray()
		slices.SortStableFunc(order, func(a, b uint32) int { return strings.Compare(ids[a], ids[b]) })
		ord := idOrdering{order: order, ids: packStrings(ids), present: present}
		if round%2 == 1 {
			ord.runs = naiveRuns(order, present)
			if ord.runs == nil {
				t.Fatal("ids that grow with the rows batch by batch make no runs")
			}
		}
		kr := &keyReader{ids: memIndexed{&memDense{strs: ids, present: *present}}}
		for range 30 {
			cand := roaring.New()
			density := rng.Intn(n) + 1
			for range density {
				cand.Add(uint32(rng.Intn(n)))
			}
			cand.And(present)
			w := Window{Limit: 1 + rng.Intn(60), Reverse: rng.Intn(2) == 0}
			at := func() *Key {
				if rng.Intn(2) == 0 {
					return &Key{ID: ids[order[rng.Intn(len(order))]]}
				}
				return &Key{ID: newID()}
			}
			if rng.Intn(2) == 0 {
				w.After = at()
			}
			if rng.Intn(3) == 0 {
				w.Before = at()
			}
			want, ok := selectByID(kr, cand, Order{}, w)
			if !ok {
				t.Fatal("no heap over the ids")
			}
			name := fmt.Sprintf("round %d, %d candidates, window %+v", round, cand.GetCardinality(), w)
			got, keys, err := walkIDOrder(ctx, ord, candidates{set: cand}, w)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s: walk %v, heap %v", name, got, want)
			}
			for i, k := range keys {
				if k.ID != ids[got[i]] || k.Values == nil {
					t.Fatalf("%s: key %+v of row %d", name, k, got[i])
				}
			}
			test := &rowTest{kind: testBits, bits: cand}
			got, _, err = walkIDOrder(ctx, ord, candidates{set: present, test: test, budget: n}, w)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("%s: lazy walk %v (%v), heap %v", name, got, err, want)
			}
			if len(want) > 0 && test.tested == 0 {
				t.Fatalf("%s: a lazy walk that tested no row", name)
			}
			// A budget of rows spent before the window fills stops the
			// walk.
			if test.tested > 1 && len(want) == w.Limit {
				short := &rowTest{kind: testBits, bits: cand}
				_, _, err = walkIDOrder(ctx, ord, candidates{set: present, test: short, budget: test.tested / 2}, w)
				if !errors.Is(err, errLazySpent) {
					t.Fatalf("%s: a walk over budget ends with %v", name, err)
				}
			}
		}
	}
}

// batchIDs gives the present rows ids that grow with the rows within
// batches of rows, the batches' ids in a random order (one batch when
// whole), of varying lengths so that comparisons reach past the first
// bytes.
func batchIDs(rng *rand.Rand, present *roaring.Bitmap, n int, whole bool) []string {
	var starts []int
	for row := 0; row < n; row += 1 + rng.Intn(700) {
		starts = append(starts, row)
	}
	if whole {
		starts = []int{0}
	}
	rank := rng.Perm(len(starts))
	ids := make([]string, n)
	b := 0
	for row := range present.Iterate {
		for b+1 < len(starts) && int(row) >= starts[b+1] {
			b++
		}
		w := 4 + int(row)/1000
		ids[row] = fmt.Sprintf("b%03dr%d%0*d", rank[b], w, w, row)
	}
	return ids
}

// naiveRuns finds the runs of an order: rows that follow one another
// among present, each the next present row after the one before it.
func naiveRuns(order []uint32, present *roaring.Bitmap) []uint32 {
	runs := []uint32{0}
	for k := 1; k < len(order); k++ {
		if present.Rank(order[k]) != present.Rank(order[k-1])+1 {
			runs = append(runs, uint32(k))
		}
	}
	return runs
}

// TestMeanGroup checks the estimate of the group of ties a walk stops in:
// the mean size of the groups at evenly spaced positions of an order,
// exact when every group has one size, else between the smallest and the
// largest, and near the mean weighted by size.
func TestMeanGroup(t *testing.T) {
	if got := (orderedColumn[int64]{}).meanGroup(tieSamples); got != 0 {
		t.Errorf("empty order: %v", got)
	}
	for _, sizes := range [][]int{{1}, {7}, {1000}, {1, 1000}, {5, 3, 200, 1}} {
		var arr []int64
		for g := range 40 {
			for range sizes[g%len(sizes)] {
				arr = append(arr, int64(g))
			}
		}
		order := make([]uint32, len(arr))
		for i := range order {
			order[i] = uint32(i)
		}
		got := orderedColumn[int64]{arr: arr, order: order}.meanGroup(tieSamples)
		var weighted float64
		for g := range 40 {
			n := float64(sizes[g%len(sizes)])
			weighted += n * n / float64(len(arr))
		}
		lo, hi := float64(slices.Min(sizes)), float64(slices.Max(sizes))
		if got < lo || got > hi || (lo == hi && got != lo) || got < weighted/2 || got > 2*weighted {
			t.Errorf("groups of %v: estimate %v, weighted mean %.1f", sizes, got, weighted)
		}
	}
}
