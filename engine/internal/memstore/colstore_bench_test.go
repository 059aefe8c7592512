package memstore_test

import (
	"runtime"
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
