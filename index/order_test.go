package index

import (
	"math/rand"
	"slices"
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
		}
	}
}
