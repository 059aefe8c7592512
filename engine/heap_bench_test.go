package engine_test

import (
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// heapProfileEnv names the file BenchmarkDerivedHeap writes a heap
// profile of the structures to, when set.
const heapProfileEnv = "COPPICE_BENCH_HEAP"

// BenchmarkDerivedHeap measures what the structures a served database
// keeps in memory cost the garbage collector: one database of bench/gen's
// docs after point gets through a record cache of the server's default
// size, the query mix, a summary and searches have built its column
// stores, orders, dictionaries, trigram indexes, search stores and cached
// records. Each op is one forced collection; it reports the live heap,
// its objects, the bytes of it that may hold pointers (what a collection
// scans) and the wall time of a collection, which is what a cycle adds to
// the series of requests it lands in.
func BenchmarkDerivedHeap(b *testing.B) {
	loaded := queryFixtures(b)
	caches := map[int]*engine.RecordCache{}
	// warm builds the structures with the requests, twice, so that the
	// second time finds them built and fills the cache.
	warm := func(b *testing.B, f *queryFixture, records *engine.RecordCache, n int) {
		env := f.env
		ctx := context.Background()
		qs := f.g.Queries(40)
		opts := engine.QueryOptions{Views: true, Records: records}
		for range 2 {
			for i := range 20_000 {
				id := gen.DocID(i * 7919 % n)
				if _, err := env.e.GetView(records, f.ref, gen.DocsTable, id); err != nil {
					b.Fatalf("get %s: %v", id, err)
				}
			}
			for _, q := range qs.Filter {
				req := engine.QueryRequest{Page: engine.PageInput{Size: &queryPage}}
				var err error
				if req.Filter, err = index.ReadFilter(q.Filter); err == nil && string(q.Sort) != "null" {
					req.Sort, err = index.ReadSort(q.Sort)
				}
				if err == nil {
					_, err = env.e.Query(ctx, f.ref, gen.DocsTable, req, opts)
				}
				if err != nil {
					b.Fatalf("%s %s: %v", q.Filter, q.Sort, err)
				}
			}
			sum := engine.SummarizeRequest{Columns: []string{"category"},
				Summaries: []engine.Summary{{Name: "c", Function: "count", Column: "*"}, {Name: "p", Function: "average", Column: "price"}}}
			if _, err := env.e.Summarize(ctx, f.ref, gen.DocsTable, sum); err != nil {
				b.Fatal(err)
			}
			for _, w := range append(qs.Exact, qs.Prefix...) {
				if _, err := env.e.SearchTable(ctx, f.ref, gen.DocsTable, engine.SearchRequest{Query: &w}, engine.SearchOptions{}); err != nil {
					b.Fatalf("search %q: %v", w, err)
				}
			}
			waitForBuilds(b, env.e)
		}
	}
	for _, n := range benchSizes(b, 1e5, 1e6) {
		b.Run(sizeLabel(n), func(b *testing.B) {
			f := loaded(b, n)
			// One cache per size: a cache stays under the engine's memory
			// budget once it holds records.
			records := caches[n]
			if records == nil {
				records = engine.NewRecordCache(32 << 20)
				caches[n] = records
				warm(b, f, records, n)
			}
			runtime.GC()
			b.ResetTimer()
			var wall time.Duration
			for range b.N {
				t0 := time.Now()
				runtime.GC()
				wall += time.Since(t0)
			}
			b.StopTimer()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "live-MiB")
			b.ReportMetric(float64(ms.HeapObjects), "objects")
			scan := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
			metrics.Read(scan)
			b.ReportMetric(float64(scan[0].Value.Uint64())/(1<<20), "scan-MiB")
			b.ReportMetric(float64(wall.Microseconds())/1e3/float64(b.N), "gc-ms")
			if path := os.Getenv(heapProfileEnv); path != "" {
				out, err := os.Create(path)
				if err == nil {
					err = pprof.WriteHeapProfile(out)
					out.Close()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			runtime.KeepAlive(records)
		})
	}
}
