package engine_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// BenchmarkReadAfterLoad compares reads of a freshly bulk-loaded table,
// whose bitmaps are still deltas waiting for compactions to fold them,
// with the same reads once the store is compacted (Engine.Compact): the
// filter mix of W3 and exact-word searches. Each side is read from a
// reopened engine, so that no cache carries over: "cold" is the first run
// of every query, "warm" the median of three more. The ratios are after
// the load over after compaction (target: ≤ 1.1). After the load the
// engine stays open, as a server would, until its background work has
// settled (settleAfterLoad), and the time that took is reported.
func BenchmarkReadAfterLoad(b *testing.B) {
	for _, n := range benchSizes(b, 1e4, 1e5) {
		b.Run(sizeLabel(n), func(b *testing.B) {
			var settled time.Duration
			load := func() *queryFixture {
				f := loadQueryFixture(b, newBenchEnv(b, b), n)
				settled += settleAfterLoad(b, f.env.e)
				return f
			}
			f := load()
			var queries []queryBody
			for _, c := range queryCases {
				filter, sort := c.body(f.g)
				in := queryBody{Filter: queryJSON(b, filter), Page: engine.PageInput{Size: &queryPage}}
				if sort != nil {
					in.Sort = queryJSON(b, sort)
				}
				queries = append(queries, in)
			}
			words := f.g.Queries(searchQueries).Exact
			var coldLoad, warmLoad, coldComp, warmComp time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				f.env.durable(b)
				b.StartTimer()
				c, w := readPass(b, f, queries, words)
				coldLoad += c
				warmLoad += w
				b.StopTimer()
				if err := f.env.e.Compact(context.Background()); err != nil {
					b.Fatal(err)
				}
				f.env.durable(b)
				b.StartTimer()
				c, w = readPass(b, f, queries, words)
				coldComp += c
				warmComp += w
				b.StopTimer()
				if b.N > 1 {
					// A fresh load for the next round: the same n docs again.
					f = load()
				}
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(settled.Seconds()/float64(b.N), "settle-s")
			b.ReportMetric(float64(coldLoad.Nanoseconds())/float64(b.N), "cold-load-ns")
			b.ReportMetric(float64(coldComp.Nanoseconds())/float64(b.N), "cold-compacted-ns")
			b.ReportMetric(float64(coldLoad)/float64(coldComp), "cold-ratio")
			b.ReportMetric(float64(warmLoad)/float64(warmComp), "warm-ratio")
		})
	}
}

// readPass runs every query and search once (cold), then three more times,
// and returns the total of the first run and the median total of the rest.
func readPass(b *testing.B, f *queryFixture, queries []queryBody, words []string) (cold, warm time.Duration) {
	once := func() time.Duration {
		var total time.Duration
		for _, q := range queries {
			t0 := time.Now()
			req := engine.QueryRequest{Page: q.Page}
			var err error
			if req.Filter, err = index.ReadFilter(q.Filter); err == nil {
				if req.Sort, err = index.ReadSort(q.Sort); err == nil {
					_, err = f.env.e.Query(context.Background(), f.ref, gen.DocsTable, req, engine.QueryOptions{})
				}
			}
			if err != nil {
				b.Fatalf("query %s: %v", q.Filter, err)
			}
			total += time.Since(t0)
		}
		size, fuzz, prefix := 20, 0.0, "disabled"
		for _, w := range words {
			t0 := time.Now()
			in := engine.SearchRequest{Query: &w, Fuzziness: &fuzz, Prefix: &prefix, Size: &size}
			if _, err := f.env.e.SearchTable(context.Background(), f.ref, gen.DocsTable, in, engine.SearchOptions{}); err != nil {
				b.Fatalf("search %q: %v", w, err)
			}
			total += time.Since(t0)
		}
		return total
	}
	cold = once()
	runs := []time.Duration{once(), once(), once()}
	slices.Sort(runs)
	return cold, runs[1]
}

// settleAfterLoad waits, the engine open and idle, for longer than the
// default pause after which loaded tables are compacted (8 s), and then
// until no compaction and no store build has run for two seconds in a row,
// at most five minutes; it returns how long it waited.
func settleAfterLoad(b *testing.B, e *engine.Engine) time.Duration {
	const least, quietFor, poll, limit = 8 * time.Second, 2 * time.Second, 100 * time.Millisecond, 5 * time.Minute
	t0 := time.Now()
	var quietSince time.Time
	for {
		st, err := e.Stats(0)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		switch {
		case st.Storage.CompactionsInProgress > 0 || st.BuildsInProgress > 0:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = now
		case now.Sub(t0) >= least && now.Sub(quietSince) >= quietFor:
			return now.Sub(t0)
		}
		if now.Sub(t0) > limit {
			b.Fatalf("background work still running after %v", limit)
		}
		time.Sleep(poll)
	}
}
