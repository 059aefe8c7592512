package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
)

// Search benchmarks (W5 of BENCHMARKS.md) on the generated dataset the
// query benchmarks load: top 20 with highlights, one query of a class per
// op in turn, in process. Targets at 1e6: one typo p50 ≤ 5 ms and p99 ≤
// 25 ms, two typos p50 ≤ 15 ms, a 3-letter prefix p50 ≤ 40 ms.

// searchQueries is how many queries of each class the benchmark cycles
// through.
const searchQueries = 50

func BenchmarkSearch(b *testing.B) {
	get := queryFixtures(b)
	for _, n := range benchSizes(b, 1e4, 1e5, 1e6) {
		label := sizeLabel(n)
		classes := func(f *queryFixture) []struct {
			name    string
			queries []string
			fuzz    float64
			prefix  string
		} {
			qs := f.g.Queries(searchQueries)
			var typo1, typo2, prefix3 []string
			for _, q := range qs.Typo1 {
				typo1 = append(typo1, q.Query)
			}
			for _, q := range qs.Typo2 {
				typo2 = append(typo2, q.Query)
			}
			for _, p := range qs.Prefix {
				if len(p) == 3 {
					prefix3 = append(prefix3, p)
				}
			}
			return []struct {
				name    string
				queries []string
				fuzz    float64
				prefix  string
			}{
				{"exact", qs.Exact, 0, "disabled"},
				{"typo1", typo1, 1, "disabled"},
				{"typo2", typo2, 2, "disabled"},
				{"prefix3", prefix3, 0, "phrase"},
				{"words", qs.Phrase, 1, "disabled"},
			}
		}
		for _, name := range []string{"exact", "typo1", "typo2", "prefix3", "words"} {
			b.Run(label+"/"+name, func(b *testing.B) {
				f := get(b, n)
				for _, c := range classes(f) {
					if c.name == name {
						benchSearchClass(b, f, c.queries, c.fuzz, c.prefix)
					}
				}
			})
		}
	}
}

// benchSearchClass runs the queries of one class in turn, one per op, and
// reports latency quantiles and how many records a query found on average.
func benchSearchClass(b *testing.B, f *queryFixture, queries []string, fuzz float64, prefix string) {
	b.StopTimer()
	size := 20
	run := func(q string) (*engine.SearchResult, time.Duration) {
		in := engine.SearchRequest{Query: &q, Fuzziness: &fuzz, Prefix: &prefix, Size: &size}
		t0 := time.Now()
		res, err := f.env.e.SearchTable(context.Background(), f.ref, gen.DocsTable, in, engine.SearchOptions{})
		d := time.Since(t0)
		if err != nil {
			b.Fatalf("search %q: %v", q, err)
		}
		return res, d
	}
	found := 0
	for _, q := range queries {
		if res, _ := run(q); len(res.Records) > 0 {
			found++
		}
	}
	if found < len(queries)/2 {
		b.Fatalf("only %d of %d queries found records: is the dataset indexed for search?", found, len(queries))
	}
	lat := make([]time.Duration, 0, b.N)
	total := 0
	b.ReportAllocs()
	b.ResetTimer()
	b.StartTimer()
	for i := range b.N {
		res, d := run(queries[i%len(queries)])
		lat = append(lat, d)
		total += res.TotalCount
	}
	b.StopTimer()
	reportLatency(b, "", lat)
	b.ReportMetric(float64(total)/float64(b.N), "matches")
}

// BenchmarkSearchIndexing bulk-inserts generated docs, 1000 per op, into a
// table whose title and body are indexed for search, and into one where
// they are plain json columns (stored, not analysed): the ratio is what
// indexing text costs.
func BenchmarkSearchIndexing(b *testing.B) {
	g := gen.New(gen.Config{N: 1 << 30, Seed: benchSeed})
	for _, mode := range []string{"text", "unindexed"} {
		b.Run(mode, func(b *testing.B) {
			env := newBenchEnv(b, b)
			ref := env.ref("idx", "main")
			if _, err := env.e.CreateDatabase(engine.CreateDatabaseRequest{Workspace: env.ws, Name: "idx", Region: "local"}); err != nil {
				b.Fatal(err)
			}
			if _, err := env.e.Schema().CreateTable(ref, "docs"); err != nil {
				b.Fatal(err)
			}
			cols := []engine.ColumnDef{{Name: "title", Type: engine.TypeString}, {Name: "body", Type: engine.TypeText}}
			if mode == "unindexed" {
				cols = []engine.ColumnDef{{Name: "title", Type: engine.TypeJSON}, {Name: "body", Type: engine.TypeJSON}}
			}
			if _, err := env.e.Schema().SetTableColumns(ref, "docs", cols); err != nil {
				b.Fatal(err)
			}
			next := 0
			batch := func() []map[string]any {
				out := make([]map[string]any, engine.MaxBulkRecords)
				for i := range out {
					d := g.Doc(next)
					next++
					if mode == "unindexed" {
						out[i] = map[string]any{"title": jsonString(d["title"].(string)), "body": jsonString(d["body"].(string))}
					} else {
						out[i] = map[string]any{"title": d["title"], "body": d["body"]}
					}
				}
				return out
			}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				recs := batch()
				b.StartTimer()
				if _, err := env.e.BulkInsert(context.Background(), ref, "docs", recs); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*engine.MaxBulkRecords)/b.Elapsed().Seconds(), "docs/s")
		})
	}
}

// jsonString is s as the text of a JSON string value.
func jsonString(s string) string {
	out, _ := json.Marshal(s)
	return string(out)
}
