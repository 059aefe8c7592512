package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
	"github.com/coppice-db/coppice/internal/proccpu"
)

// BenchmarkQueriesDuringIngest measures W7 of BENCHMARKS.md in process: the
// generator's filter mix, from one client, on the docs of the query
// dataset at 1e5 (and 1e6 when COPPICE_BENCH_MAX allows), idle and while a
// loader bulk-inserts new docs in batches of 1000, synced. The loader
// writes into the queried table ("same-table") or into another table of
// the database ("other-table", as the suite's W7 does). Each op is one
// query; the ops alternate in blocks of half a second between idle and
// busy (a busy block lasting until at least two batches committed in it),
// the loader pausing (its batch in flight done) for the idle blocks, so
// that drift of a shared machine hits both sides alike. It reports the
// p50, p99 and slowest query of each side and the ratios busy/idle of the
// first two (one client meets a commit that holds it back once: the
// slowest query shows that, the p99 may not), the bitmap caches'
// hit ratio on each side, and, of the loader's batches, how many the
// queried table's cache could not follow bitmap by bitmap
// (overflow-per-batch) and how many cached bitmaps a batch brought up to
// date (kept-per-batch).
func BenchmarkQueriesDuringIngest(b *testing.B) {
	get := queryFixtures(b)
	next := map[*queryFixture]*atomic.Int64{} // the next doc number to load
	for _, n := range benchSizes(b, 1e5, 1e6) {
		for _, into := range []string{"same-table", "other-table"} {
			b.Run(sizeLabel(n)+"/"+into, func(b *testing.B) {
				f := get(b, n)
				if next[f] == nil {
					next[f] = &atomic.Int64{}
					next[f].Store(int64(n))
					// A dataset kept from an earlier run (COPPICE_BENCH_DIR)
					// has the table already, and the docs loaded then.
					if _, err := f.env.e.Schema().CreateTable(f.ref, ingestTable); err == nil {
						if _, err := f.env.e.Schema().SetTableColumns(f.ref, ingestTable, gen.DocsColumns()); err != nil {
							b.Fatal(err)
						}
					} else if engine.CodeOf(err) != engine.CodeAlreadyExists {
						b.Fatal(err)
					}
				}
				table := gen.DocsTable
				if into == "other-table" {
					table = ingestTable
				}
				benchDuringIngest(b, f, table, next[f])
			})
		}
	}
}

// ingestTable is the table the loader of BenchmarkQueriesDuringIngest
// writes when it leaves the queried one alone.
const ingestTable = "ingest"

// runID names the docs the loader inserts in this run, apart from those
// of an earlier run into a kept dataset.
var runID = strconv.FormatInt(time.Now().UnixNano(), 36)

// ingestBlock is how long queries run in a row on one side: long enough
// for a busy block to see several of the loader's batches commit.
const ingestBlock = 500 * time.Millisecond

// minBusyBatches is how many of the loader's batches a busy block sees
// commit at least, however slow they are.
const minBusyBatches = 2

// benchDuringIngest runs b.N queries of the filter mix on f's docs,
// alternating blocks idle and busy while a loader inserts docs numbered
// from next on into table.
func benchDuringIngest(b *testing.B, f *queryFixture, table string, next *atomic.Int64) {
	b.StopTimer()
	var mix []engine.QueryRequest
	for _, q := range f.g.Queries(40).Filter {
		req := engine.QueryRequest{Page: engine.PageInput{Size: &queryPage}}
		var err error
		if req.Filter, err = index.ReadFilter(q.Filter); err == nil {
			req.Sort, err = index.ReadSort(q.Sort)
		}
		if err != nil {
			b.Fatalf("query %s %s: %v", q.Filter, q.Sort, err)
		}
		mix = append(mix, req)
	}
	run := func(q engine.QueryRequest) time.Duration {
		t0 := time.Now()
		if _, err := f.env.e.Query(context.Background(), f.ref, gen.DocsTable, q, engine.QueryOptions{}); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	for _, q := range mix {
		run(q) // caches and column stores as a steady reader has them
	}

	// The loader runs while it holds gate for reading: an idle block holds
	// it for writing, which waits for the batch in flight.
	var (
		gate    sync.RWMutex
		done    atomic.Bool
		wg      sync.WaitGroup
		batches atomic.Int64
		failed  error
	)
	gate.Lock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		batch := make([]map[string]any, 0, engine.MaxBulkRecords)
		for {
			gate.RLock()
			if done.Load() {
				gate.RUnlock()
				return
			}
			batch = batch[:0]
			first := int(next.Add(engine.MaxBulkRecords)) - engine.MaxBulkRecords
			for i := range engine.MaxBulkRecords {
				doc := f.g.Doc(first + i)
				doc["id"] = fmt.Sprintf("%s-%d", runID, first+i)
				batch = append(batch, doc)
			}
			_, err := f.env.e.BulkInsert(context.Background(), f.ref, table, batch)
			batches.Add(1)
			gate.RUnlock()
			if err != nil {
				failed = err
				return
			}
		}
	}()

	type side struct {
		lat          []time.Duration
		hits, misses int64
	}
	var idle, busy side
	_, _, w0, o0, k0 := engine.BitmapCacheCounts(f.env.e)
	b.ResetTimer()
	for i, block := 0, 0; i < b.N; block++ {
		s, on := &idle, block%2 == 1
		if on {
			s = &busy
			gate.Unlock()
		}
		h0, m0, _, _, _ := engine.BitmapCacheCounts(f.env.e)
		n0 := batches.Load()
		b.StartTimer()
		// A busy block also lasts until batches commit in it: a batch
		// slower than a block would otherwise commit while the block
		// waits for it, and no query would meet a commit.
		for t0 := time.Now(); i < b.N && (time.Since(t0) < ingestBlock || on && batches.Load()-n0 < minBusyBatches); i++ {
			s.lat = append(s.lat, run(mix[i%len(mix)]))
		}
		b.StopTimer()
		h1, m1, _, _, _ := engine.BitmapCacheCounts(f.env.e)
		s.hits, s.misses = s.hits+h1-h0, s.misses+m1-m0
		if on {
			gate.Lock()
		}
	}
	done.Store(true)
	gate.Unlock()
	wg.Wait()
	if failed != nil {
		b.Fatal(failed)
	}
	_, _, w1, o1, k1 := engine.BitmapCacheCounts(f.env.e)
	idle50, idle99 := quantiles(idle.lat)
	busy50, busy99 := quantiles(busy.lat)
	b.ReportMetric(idle50, "idle-p50-ns")
	b.ReportMetric(idle99, "idle-p99-ns")
	b.ReportMetric(busy50, "busy-p50-ns")
	b.ReportMetric(busy99, "busy-p99-ns")
	for _, s := range []struct {
		side side
		unit string
	}{{idle, "idle-max-ns"}, {busy, "busy-max-ns"}} {
		if len(s.side.lat) > 0 {
			b.ReportMetric(float64(slices.Max(s.side.lat)), s.unit)
		}
	}
	if idle50 > 0 && idle99 > 0 {
		b.ReportMetric(busy50/idle50, "p50-ratio")
		b.ReportMetric(busy99/idle99, "p99-ratio")
	}
	ratio := func(s side) float64 {
		if s.hits+s.misses == 0 {
			return 0
		}
		return float64(s.hits) / float64(s.hits+s.misses)
	}
	b.ReportMetric(ratio(idle), "idle-hit-ratio")
	b.ReportMetric(ratio(busy), "busy-hit-ratio")
	if n := batches.Load(); n > 0 {
		b.ReportMetric(float64(n), "batches")
		if w1 > w0 {
			b.ReportMetric(float64(o1-o0)/float64(n), "overflow-per-batch")
			b.ReportMetric(float64(k1-k0)/float64(n), "kept-per-batch")
		}
	}
}

// quantiles returns the p50 and p99 of durations, in nanoseconds.
func quantiles(d []time.Duration) (p50, p99 float64) {
	s := append([]time.Duration(nil), d...)
	slices.Sort(s)
	return latencyQuantile(s, 0.5), latencyQuantile(s, 0.99)
}

// BenchmarkBulkLoadDocs measures W1 of BENCHMARKS.md in process: an op is
// one synced bulk insert of 1000 generated docs (every column indexed, the
// body searchable) into a fresh database holding the generator's users,
// from 1 and 2 concurrent loaders. The docs are generated before the
// timer starts; -benchtime 100x loads 1e5. Besides docs/s it reports the
// CPU per doc and the time per doc the database's writer lock was held,
// the part of a write no other write of the database overlaps.
func BenchmarkBulkLoadDocs(b *testing.B) {
	for _, clients := range []int{1, 2} {
		b.Run(fmt.Sprintf("clients%d", clients), func(b *testing.B) {
			env := newBenchEnv(b, b)
			env.durable(b)
			g := gen.New(gen.Config{N: b.N * engine.MaxBulkRecords, Seed: benchSeed})
			ref := env.ref("docs", "main")
			createGenDatabase(b, env, ref)
			loadGenerated(b, env.e, ref, gen.UsersTable, g.Users)
			batches := make([][]map[string]any, b.N)
			for i := range batches {
				batches[i] = make([]map[string]any, engine.MaxBulkRecords)
				for j := range batches[i] {
					batches[i][j] = g.Doc(i*engine.MaxBulkRecords + j)
				}
			}
			st0, err := env.e.Stats(0)
			if err != nil {
				b.Fatal(err)
			}
			cpu := proccpu.Process()
			runClients(b, clients, func(i int) error {
				_, err := env.e.BulkInsert(context.Background(), ref, gen.DocsTable, batches[i])
				batches[i] = nil
				return err
			})
			b.StopTimer()
			docs := float64(b.N * engine.MaxBulkRecords)
			st, err := env.e.Stats(0)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(docs/b.Elapsed().Seconds(), "docs/s")
			b.ReportMetric(float64((proccpu.Process()-cpu).Microseconds())/docs, "cpu-µs/doc")
			b.ReportMetric(float64((st.Storage.WriterLockHeld-st0.Storage.WriterLockHeld).Microseconds())/docs, "lock-µs/doc")
		})
	}
}
