package index

import (
	"math/rand"
	"slices"
	"strconv"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// BenchmarkOrderedWalk times walks of an in-memory order of distinct
// values that stop after 21 candidates, for candidates of several shares of
// the rows, each walk starting at a random value so that the value array
// is read cold as a query mix reads it.
func BenchmarkOrderedWalk(b *testing.B) {
	for _, n := range []int{1e5, 1e6} {
		rng := rand.New(rand.NewSource(1))
		arr := make([]int64, n)
		for row := range arr {
			arr[row] = rng.Int63()
		}
		present := roaring.New()
		present.AddRange(0, uint64(n))
		order := present.ToArray()
		slices.SortFunc(order, func(x, y uint32) int {
			switch {
			case arr[x] < arr[y]:
				return -1
			case arr[x] > arr[y]:
				return 1
			}
			return 0
		})
		o := orderedColumn[int64]{arr: arr, order: order, present: present}
		for _, pct := range []int{2, 12, 50} {
			cand := roaring.New()
			for row := range n {
				if rng.Intn(100) < pct {
					cand.Add(uint32(row))
				}
			}
			b.Run(strconv.Itoa(n)+"/"+strconv.Itoa(pct)+"pct", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var bd bounds[int64]
					bd.add(OpLe, arr[order[rng.Intn(n/2)+n/2]])
					taken := 0
					o.walk(bd, true, cand.Contains, func(rows []uint32) bool {
						taken += len(rows)
						return taken < 21
					})
				}
			})
		}
	}
}
