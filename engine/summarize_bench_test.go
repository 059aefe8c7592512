package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// Benchmarks of summarize and aggregate on a table of sales, sized by
// powers of ten: 1e4 and 1e5 records, and 1e6 when COPPICE_BENCH_MAX is at
// least 1000000. Each reports the median latency of one request (p50-ms)
// next to the mean Go reports.

// salesColumns: a 20-value category, a high-cardinality sku, numbers, a
// datetime and a bool.
var salesColumns = []engine.ColumnDef{
	{Name: "category", Type: engine.TypeString},
	{Name: "sku", Type: engine.TypeString},
	{Name: "price", Type: engine.TypeFloat},
	{Name: "qty", Type: engine.TypeInt},
	{Name: "sold_at", Type: engine.TypeDatetime},
	{Name: "online", Type: engine.TypeBool},
}

// salesEpoch starts the four years sold_at spans.
var salesEpoch = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)

// salesRecord is record i of the dataset: a function of i alone, from a
// 64-bit mix of it.
func salesRecord(i int) map[string]any {
	h := uint64(i)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	h ^= h >> 31
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 29
	return map[string]any{
		"id":       fmt.Sprintf("s%08d", i),
		"category": "cat" + strconv.Itoa(int(h%20)),
		"sku":      "sku" + strconv.Itoa(i/4),
		"price":    float64((h>>16)%10000) / 100,
		"qty":      int64((h >> 32) % 50),
		"sold_at":  salesEpoch.Add(time.Duration((h>>20)%(4*365*24*3600)) * time.Second),
		"online":   (h>>40)%3 == 0,
	}
}

// salesSizes are the dataset sizes to run.
func salesSizes(b *testing.B) []int {
	limit := 100_000
	if s := os.Getenv("COPPICE_BENCH_MAX"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			b.Fatalf("COPPICE_BENCH_MAX=%q: %v", s, err)
		}
		limit = int(f)
	}
	var out []int
	for _, n := range []int{1e4, 1e5, 1e6} {
		if n <= limit {
			out = append(out, n)
		}
	}
	return out
}

// salesEngine opens an engine holding n sales records, loaded with
// BulkInsert in batches of 1000 without syncing, then reopened (which
// flushes what was loaded) and warmed up. The engine lives as long as
// owner.
func salesEngine(b, owner *testing.B, n int) (*engine.Engine, engine.Ref) {
	b.Helper()
	dir, kept := keptDataset(b, "sales-"+sizeName(n))
	if kept != "" {
		e, err := engine.Open(dir, engine.Options{})
		if err != nil {
			b.Fatal(err)
		}
		owner.Cleanup(func() { e.Close() })
		ref := engine.Ref{Workspace: kept, Database: "sales", Branch: "main"}
		if _, err := e.Summarize(context.Background(), ref, "sales", engine.SummarizeRequest{}); err != nil {
			b.Fatal(err)
		}
		return e, ref
	}
	if dir == "" {
		dir = owner.TempDir()
	}
	e, err := engine.Open(dir, engine.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	u, err := e.Accounts().CreateUser(engine.NewUser{Email: "sales@example.com"})
	if err != nil {
		b.Fatal(err)
	}
	ws, err := e.Accounts().CreateWorkspace(u.ID, "sales", "")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.CreateDatabase(engine.CreateDatabaseRequest{Workspace: ws.Core, Name: "sales", Region: "local"}); err != nil {
		b.Fatal(err)
	}
	ref := engine.Ref{Workspace: ws.Core, Database: "sales", Branch: "main"}
	if _, err := e.Schema().CreateTable(ref, "sales"); err != nil {
		b.Fatal(err)
	}
	if _, err := e.Schema().SetTableColumns(ref, "sales", salesColumns); err != nil {
		b.Fatal(err)
	}
	batch := make([]map[string]any, 0, engine.MaxBulkRecords)
	for start := 0; start < n; start += engine.MaxBulkRecords {
		batch = batch[:0]
		for i := start; i < min(n, start+engine.MaxBulkRecords); i++ {
			batch = append(batch, salesRecord(i))
		}
		if _, err := e.BulkInsert(context.Background(), ref, "sales", batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	if e, err = engine.Open(dir, engine.Options{}); err != nil {
		b.Fatal(err)
	}
	owner.Cleanup(func() { e.Close() })
	if _, err := e.Summarize(context.Background(), ref, "sales", engine.SummarizeRequest{}); err != nil {
		b.Fatal(err)
	}
	if os.Getenv(benchDirEnv) != "" {
		markLoaded(b, dir, ws.Core)
	}
	return e, ref
}

// runP50 times op b.N times and reports the median latency.
func runP50(b *testing.B, op func() error) {
	b.Helper()
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
}

func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }

// summarizeBody is a summarize request as a request body carries it.
type summarizeBody struct {
	Filter, Columns, Summaries, Sort json.RawMessage
}

// summarize reads and runs a summarize request, as the API does.
func summarize(e *engine.Engine, ref engine.Ref, table string, body summarizeBody) (*engine.SummarizeResult, error) {
	var in engine.SummarizeRequest
	var err error
	if in.Filter, err = index.ReadFilter(body.Filter); err != nil {
		return nil, err
	}
	if in.Columns, err = index.ReadGroupColumns(body.Columns); err != nil {
		return nil, err
	}
	if in.Summaries, err = index.ReadSummaries(body.Summaries); err != nil {
		return nil, err
	}
	if in.Sort, err = index.ReadSort(body.Sort); err != nil {
		return nil, err
	}
	return e.Summarize(context.Background(), ref, table, in)
}

// aggregate reads and runs an aggregate request, as the API does.
func aggregate(e *engine.Engine, ref engine.Ref, table string, filter, aggs json.RawMessage) (*engine.AggregateResult, error) {
	var in engine.AggregateRequest
	var err error
	if in.Filter, err = index.ReadFilter(filter); err != nil {
		return nil, err
	}
	if in.Aggs, err = index.ReadAggs(aggs); err != nil {
		return nil, err
	}
	return e.Aggregate(context.Background(), ref, table, in)
}

// BenchmarkSummarize: a range filter, then groups of a 20-value column
// with count, sum, average, min and max (walking postings); the same after
// an equality filter (a posting); groups of a column with n/4 values
// (reading values); and an aggregate's topValues and monthly
// dateHistogram.
func BenchmarkSummarize(b *testing.B) {
	owner := b
	for _, n := range salesSizes(b) {
		var e *engine.Engine
		var ref engine.Ref
		setup := func(b *testing.B) {
			if e == nil {
				b.StopTimer()
				e, ref = salesEngine(b, owner, n)
				b.StartTimer()
			}
		}
		grouped := summarizeBody{
			Filter:  rawJSON(`{"price":{"$lt":80}}`),
			Columns: rawJSON(`["category"]`),
			Summaries: rawJSON(`{"n":{"count":"*"},"qty":{"sum":"qty"},"avgPrice":{"average":"price"},` +
				`"cheapest":{"min":"price"},"last":{"max":"sold_at"}}`),
		}
		b.Run("group20/"+sizeName(n), func(b *testing.B) {
			setup(b)
			runP50(b, func() error {
				out, err := summarize(e, ref, "sales", grouped)
				if err == nil && len(out.Rows) != 20 {
					err = fmt.Errorf("%d groups", len(out.Rows))
				}
				return err
			})
		})
		b.Run("group20eq/"+sizeName(n), func(b *testing.B) {
			setup(b)
			in := grouped
			in.Filter = rawJSON(`{"online":true}`)
			runP50(b, func() error {
				_, err := summarize(e, ref, "sales", in)
				return err
			})
		})
		b.Run("groupSku/"+sizeName(n), func(b *testing.B) {
			setup(b)
			in := summarizeBody{
				Filter: rawJSON(`{"online":true}`), Columns: rawJSON(`["sku"]`),
				Summaries: rawJSON(`{"n":{"count":"*"},"qty":{"sum":"qty"}}`), Sort: rawJSON(`{"n":"desc"}`),
			}
			runP50(b, func() error {
				_, err := summarize(e, ref, "sales", in)
				return err
			})
		})
		b.Run("topValues/"+sizeName(n), func(b *testing.B) {
			setup(b)
			aggs := rawJSON(`{"top":{"topValues":{"column":"category","size":5,"aggs":{"qty":{"sum":{"column":"qty"}}}}}}`)
			runP50(b, func() error {
				_, err := aggregate(e, ref, "sales", nil, aggs)
				return err
			})
		})
		b.Run("dateHistogram/"+sizeName(n), func(b *testing.B) {
			setup(b)
			aggs := rawJSON(`{"h":{"dateHistogram":{"column":"sold_at","calendarInterval":"month","aggs":{"avg":{"average":{"column":"price"}}}}}}`)
			runP50(b, func() error {
				_, err := aggregate(e, ref, "sales", rawJSON(`{"online":true}`), aggs)
				return err
			})
		})
	}
}

// sizeName writes 10000 as 1e4.
func sizeName(n int) string {
	k := 0
	for m := n; m >= 10 && m%10 == 0; m /= 10 {
		k++
	}
	return "1e" + strconv.Itoa(k)
}
