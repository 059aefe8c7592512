package engine_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// BenchmarkReadsUnderWrites times point reads through a record cache and
// the query mix (which reads through the engine's bitmap caches) on half
// of a table's records, "idle" and "writing": the latter while a writer
// updates the title and views of records of the other half, one command
// after the other. The engine does not sync, so that commands (and cache
// epochs) come as fast as in an ingest. It reports the share of point reads answered
// by the cached view and the writer's rate; a cache that survives writes
// of other rows keeps "writing" close to "idle".
func BenchmarkReadsUnderWrites(b *testing.B) {
	get := perSize(b, func(b *testing.B, env *benchEnv, n int) *writeFixture {
		env.load(b, n, "bench")
		f := &writeFixture{env: env, ref: env.ref("bench", "main"), ids: shuffledIDs(n)}
		warmUp(b, env.e, f.ids, f.ref)
		return f
	})
	for _, n := range benchSizes(b, 1e4, 1e5) {
		for _, load := range []string{"idle", "writing"} {
			b.Run(sizeLabel(n)+"/get/"+load, func(b *testing.B) {
				f := get(b, n)
				reads, others := f.ids[:n/2], f.ids[n/2:]
				c := engine.NewRecordCache(n * 2048)
				last := make([]*engine.RecordView, len(reads))
				for i, id := range reads {
					v, err := f.env.e.GetView(c, f.ref, benchTable, id)
					if err != nil {
						b.Fatal(err)
					}
					last[i] = v
				}
				stop := startWriter(b, f, others, load == "writing")
				b.ReportAllocs()
				b.ResetTimer()
				hits := 0
				for i := range b.N {
					k := i % len(reads)
					v, err := f.env.e.GetView(c, f.ref, benchTable, reads[k])
					if err != nil {
						b.Fatal(err)
					}
					if v == last[k] {
						hits++
					}
					last[k] = v
				}
				b.StopTimer()
				stop()
				b.ReportMetric(float64(hits)/float64(b.N), "hit-ratio")
			})
			b.Run(sizeLabel(n)+"/query/"+load, func(b *testing.B) {
				f := get(b, n)
				mix := benchQueryMix(b)
				for _, q := range mix {
					runBenchQuery(b, f.env.e, f.ref, q)
				}
				stop := startWriter(b, f, f.ids[n/2:], load == "writing")
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					runBenchQuery(b, f.env.e, f.ref, mix[i%len(mix)])
				}
				b.StopTimer()
				stop()
			})
		}
	}
}

// startWriter starts, when on, a goroutine that updates the title and views
// of the records ids, one command each, until the returned func is
// called; that func reports the writer's rate as writes/s.
func startWriter(b *testing.B, f *writeFixture, ids []string, on bool) (stop func()) {
	if !on {
		return func() {}
	}
	var (
		done   atomic.Bool
		wg     sync.WaitGroup
		writes int
		failed error
	)
	start := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !done.Load(); i++ {
			op := engine.Op{Kind: engine.OpUpdate, Table: benchTable, ID: ids[i%len(ids)],
				Values: map[string]any{"title": benchWords[i%len(benchWords)], "views": int64(i)}}
			if _, err := f.env.e.Write(context.Background(), f.ref, []engine.Op{op}); err != nil {
				failed = err
				return
			}
			writes++
		}
	}()
	return func() {
		done.Store(true)
		wg.Wait()
		if failed != nil {
			b.Fatal(failed)
		}
		b.ReportMetric(float64(writes)/time.Since(start).Seconds(), "writes/s")
	}
}
