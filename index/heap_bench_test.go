package index

import (
	"testing"

	"github.com/coppice-db/coppice/codec"
)

// BenchmarkSelectTyped times the heap's first window of 21 rows over a
// dense int column of 1e6 rows, for candidates of a third of them, in both
// directions, on values that grow with the row (a creation time) and on
// random ones; "page=50" is the window after the first 980 rows, as a
// cursor's fiftieth page of 20 asks.
func BenchmarkSelectTyped(b *testing.B) {
	for _, ascending := range []bool{true, false} {
		kr, cand, col := heapFixture(1e6, ascending, false, 0.35, 1)
		d := kr.vals[0].(denseInts)
		for _, desc := range []bool{false, true} {
			name := "random"
			if ascending {
				name = "ascending"
			}
			name += "/" + map[bool]string{false: "asc", true: "desc"}[desc]
			b.Run(name, func(b *testing.B) {
				o := Order{Keys: []SortKey{{Column: col, Desc: desc}}}
				kr.order = o
				b.ReportAllocs()
				for b.Loop() {
					selectTyped(kr, cand, o, Window{Limit: 21}, d.arr, d.present, func(v codec.Value) int64 { return v.Int })
				}
			})
			b.Run(name+"/page=50", func(b *testing.B) {
				o := Order{Keys: []SortKey{{Column: col, Desc: desc}}}
				kr.order = o
				first := selectTyped(kr, cand, o, Window{Limit: 980}, d.arr, d.present, func(v codec.Value) int64 { return v.Int })
				last := first[len(first)-1]
				after := Key{Values: []codec.Value{d.Get(last)}, ID: kr.ids.Get(last).Str}
				b.ReportAllocs()
				for b.Loop() {
					selectTyped(kr, cand, o, Window{Limit: 21, After: &after}, d.arr, d.present, func(v codec.Value) int64 { return v.Int })
				}
			})
		}
	}
}
