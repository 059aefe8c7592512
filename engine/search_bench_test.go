package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/internal/proccpu"
)

// Search benchmarks (W5 of BENCHMARKS.md) on the generated dataset the
// query benchmarks load: top 20 with highlights, one query of a class per
// op in turn, in process, after the table's column store is built (a
// restarted engine builds it in the background). The classes are those of
// the suite's W5 and a few more:
//
//   - exact: vocabulary words, fuzziness 0; exact-f1 the same words with the
//     default fuzziness 1;
//   - typo1, typo2: words misspelt by one and two edits, that fuzziness;
//   - prefix: the first 1, 2 or 3 letters of words, prefix "phrase";
//   - words: 2 to 4 words of a body, fuzziness 0 (any word matches);
//     words-f1 the same with fuzziness 1;
//   - phrase: the same words as a phrase (prefix "phrase", the last word a
//     prefix).
//
// Targets at 1e6: one typo p50 ≤ 5 ms, 2–4 words p99 ≤ 25 ms, prefix p99 ≤
// 60 ms.

// searchQueries is how many queries of each class the benchmark cycles
// through.
const searchQueries = 50

// searchClass is one benchmarked class of search queries.
type searchClass struct {
	name    string
	queries []string
	fuzz    float64
	prefix  string
}

// searchClasses returns the benchmarked classes over the generator's
// query files.
func searchClasses(g *gen.Gen) []searchClass {
	qs := g.Queries(searchQueries)
	var typo1, typo2 []string
	for _, q := range qs.Typo1 {
		typo1 = append(typo1, q.Query)
	}
	for _, q := range qs.Typo2 {
		typo2 = append(typo2, q.Query)
	}
	return []searchClass{
		{"exact", qs.Exact, 0, "disabled"},
		{"exact-f1", qs.Exact, 1, "disabled"},
		{"typo1", typo1, 1, "disabled"},
		{"typo2", typo2, 2, "disabled"},
		{"prefix", qs.Prefix, 0, "phrase"},
		{"words", qs.Phrase, 0, "disabled"},
		{"words-f1", qs.Phrase, 1, "disabled"},
		{"phrase", qs.Phrase, 0, "phrase"},
	}
}

func BenchmarkSearch(b *testing.B) {
	get := queryFixtures(b)
	names := []string{}
	for _, c := range searchClasses(gen.New(gen.Config{Seed: benchSeed})) {
		names = append(names, c.name)
	}
	for _, n := range benchSizes(b, 1e4, 1e5, 1e6) {
		for _, name := range names {
			b.Run(sizeLabel(n)+"/"+name, func(b *testing.B) {
				f := get(b, n)
				waitForStore(b, f)
				for _, c := range searchClasses(f.g) {
					if c.name == name {
						benchSearchClass(b, f, c)
					}
				}
			})
		}
	}
}

// waitForStore returns once the docs table's column store is built: a
// summary waits for it, where a search would answer from storage.
func waitForStore(b *testing.B, f *queryFixture) {
	b.StopTimer()
	defer b.StartTimer()
	if _, err := f.env.e.Summarize(context.Background(), f.ref, gen.DocsTable, engine.SummarizeRequest{}); err != nil {
		b.Fatal(err)
	}
}

// benchSearchClass runs the queries of one class in turn, one per op, and
// reports latency quantiles and how many records a query found on average.
func benchSearchClass(b *testing.B, f *queryFixture, c searchClass) {
	b.StopTimer()
	size := 20
	run := func(q string) (*engine.SearchResult, time.Duration) {
		in := engine.SearchRequest{Query: &q, Fuzziness: &c.fuzz, Prefix: &c.prefix, Size: &size}
		t0 := time.Now()
		res, err := f.env.e.SearchTable(context.Background(), f.ref, gen.DocsTable, in, engine.SearchOptions{})
		d := time.Since(t0)
		if err != nil {
			b.Fatalf("search %q: %v", q, err)
		}
		return res, d
	}
	found := 0
	for _, q := range c.queries {
		if res, _ := run(q); len(res.Records) > 0 {
			found++
		}
	}
	if found < len(c.queries)/2 {
		b.Fatalf("only %d of %d queries found records: is the dataset indexed for search?", found, len(c.queries))
	}
	lat := make([]time.Duration, 0, b.N)
	total := 0
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := proccpu.Process()
	b.StartTimer()
	for i := range b.N {
		res, d := run(c.queries[i%len(c.queries)])
		lat = append(lat, d)
		total += res.TotalCount
	}
	b.StopTimer()
	reportLatency(b, "", lat)
	b.ReportMetric(float64(proccpu.Process()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(total)/float64(b.N), "matches")
}

// BenchmarkSearchIndexing bulk-inserts generated docs, 1000 per op, into a
// table whose title and body are indexed for search, and into one where
// they are plain json columns (stored, not analysed): the ratio is what
// indexing text costs. Every bulk insert is synced, as in W1.
// text-clients4 inserts the text docs from 4 concurrent clients, whose
// bulk inserts share batches while others wait for a sync. The docs are
// generated before the timer starts; cpu-µs/doc is the process's CPU,
// background work included, per doc.
func BenchmarkSearchIndexing(b *testing.B) {
	g := gen.New(gen.Config{N: 1 << 30, Seed: benchSeed})
	for _, mode := range []string{"text", "unindexed", "text-clients4"} {
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
			env.durable(b)
			batches := make([][]map[string]any, b.N)
			next := 0
			for n := range batches {
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
				batches[n] = out
			}
			clients := 1
			if mode == "text-clients4" {
				clients = 4
			}
			cost := startWriteCost(b, env.e)
			cpu := proccpu.Process()
			runClients(b, clients, func(i int) error {
				_, err := env.e.BulkInsert(context.Background(), ref, "docs", batches[i])
				return err
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N*engine.MaxBulkRecords)/b.Elapsed().Seconds(), "docs/s")
			b.ReportMetric(float64((proccpu.Process()-cpu).Microseconds())/float64(b.N*engine.MaxBulkRecords), "cpu-µs/doc")
			cost.report(b, b.N*engine.MaxBulkRecords)
		})
	}
}

// jsonString is s as the text of a JSON string value.
func jsonString(s string) string {
	out, _ := json.Marshal(s)
	return string(out)
}
