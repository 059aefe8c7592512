package memstore_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine/internal/memstore"
)

// liveStore keeps the store of BenchmarkColumnStoreHeap reachable until
// the heap is measured.
var liveStore *memstore.TableStore

// BenchmarkColumnStoreHeap builds the store of 1e5 generated docs and
// reports the heap objects and bytes it holds and the time of a full
// collection while it is live: the marking work every collection pays for
// the store.
func BenchmarkColumnStoreHeap(b *testing.B) {
	const n = 100_000
	var ms runtime.MemStats
	for b.Loop() {
		liveStore = nil
		runtime.GC()
		runtime.ReadMemStats(&ms)
		objs0, bytes0 := ms.HeapObjects, ms.HeapAlloc
		liveStore = memstore.GenStore(b, n, gen.New(gen.Config{N: n, Seed: 1}).Doc)
		runtime.GC()
		runtime.ReadMemStats(&ms)
		t0 := time.Now()
		runtime.GC()
		gc := time.Since(t0)
		b.ReportMetric(float64(ms.HeapObjects-objs0), "heap-objs")
		b.ReportMetric(float64(ms.HeapAlloc-bytes0)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(gc.Microseconds()), "gc-µs")
		b.ReportMetric(float64(liveStore.Size())/(1<<20), "size-MiB")
	}
}

// BenchmarkColumnReads times the reads of a string and a multiple column
// that sorts, filters and summaries make, on the store of 1e5 generated
// docs: ordering every title, testing every title for a substring, and
// reading every row's tags.
func BenchmarkColumnReads(b *testing.B) {
	const n = 100_000
	s := memstore.GenStore(b, n, gen.New(gen.Config{N: n, Seed: 1}).Doc)
	titles, tags := s.Column(memstore.GenTitle), s.Column(memstore.GenTags)
	b.Run("sort-titles", func(b *testing.B) {
		for b.Loop() {
			s.SortStrings(memstore.GenTitle)
		}
	})
	b.Run("contains-titles", func(b *testing.B) {
		for b.Loop() {
			k := 0
			for row := range uint32(n) {
				if strings.Contains(titles.Get(row).Str, "the") {
					k++
				}
			}
		}
	})
	b.Run("get-tags", func(b *testing.B) {
		for b.Loop() {
			k := 0
			for row := range uint32(n) {
				k += len(tags.Get(row).Strs)
			}
		}
	})
}
