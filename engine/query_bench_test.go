package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
	"github.com/coppice-db/coppice/internal/proccpu"
)

// Query benchmarks (W3 of BENCHMARKS.md) on the generated dataset of
// bench/gen: users and docs, loaded like the other datasets of this package
// (BulkInsert in batches of 1000 with NoSync, then reopened with sync), once
// per size. Each sub-benchmark times one Engine.Query per op, in process,
// and reports the median and 99th latencyQuantile besides the mean.

// queryPage is the page size of every benchmarked query.
var queryPage = 20

// queryFixture is a durable engine holding the generated dataset at one
// size.
type queryFixture struct {
	env *benchEnv
	ref engine.Ref
	g   *gen.Gen
}

// buildQueryFixture loads n generated docs and their users, and reopens
// the engine durable.
func buildQueryFixture(b *testing.B, env *benchEnv, n int) *queryFixture {
	f := loadQueryFixture(b, env, n)
	t0 := time.Now()
	env.durable(b)
	b.Logf("reopened in %v", time.Since(t0).Round(time.Millisecond))
	return f
}

// loadQueryFixture loads n generated docs and their users into the open
// engine of env.
func loadQueryFixture(b *testing.B, env *benchEnv, n int) *queryFixture {
	g := gen.New(gen.Config{N: n, Seed: benchSeed})
	f := &queryFixture{env: env, ref: env.ref("docs", "main"), g: g}
	createGenDatabase(b, env, f.ref)
	t0 := time.Now()
	loadGenerated(b, env.e, f.ref, gen.UsersTable, g.Users)
	t1 := time.Now()
	loadGenerated(b, env.e, f.ref, gen.DocsTable, g.Docs)
	t2 := time.Now()
	b.Logf("loaded %d users in %v and %d docs in %v (%.0f docs/s, vocabulary of %d words)",
		gen.NumUsers, t1.Sub(t0).Round(time.Millisecond), n, t2.Sub(t1).Round(time.Millisecond),
		float64(n)/t2.Sub(t1).Seconds(), g.VocabSize())
	return f
}

// benchDirEnv names the variable that, when set, keeps the loaded datasets
// of the query and summarize benchmarks in a directory of one's choosing,
// so that later runs reopen them instead of loading again (minutes at 1e6).
// A dataset directory is reused only once its loading completed.
const benchDirEnv = "COPPICE_BENCH_DIR"

// keptDataset returns the directory of a named dataset under
// COPPICE_BENCH_DIR and the workspace recorded when its loading completed
// ("" while not loaded); dir is "" when the variable is unset.
func keptDataset(b *testing.B, name string) (dir, ws string) {
	root := os.Getenv(benchDirEnv)
	if root == "" {
		return "", ""
	}
	dir = filepath.Join(root, name)
	done, err := os.ReadFile(filepath.Join(dir, "loaded"))
	switch {
	case err == nil:
		return dir, string(done)
	case !errors.Is(err, fs.ErrNotExist):
		b.Fatal(err)
	}
	// A load that did not complete leaves a directory to start over in.
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	return dir, ""
}

// markLoaded records that the dataset in dir, of workspace ws, is complete.
func markLoaded(b *testing.B, dir, ws string) {
	if err := os.WriteFile(filepath.Join(dir, "loaded"), []byte(ws), 0o644); err != nil {
		b.Fatal(err)
	}
}

// queryFixtures returns a getter of the query fixture of each size, built
// on first use like perSize does, or reopened from COPPICE_BENCH_DIR.
func queryFixtures(owner *testing.B) func(b *testing.B, n int) *queryFixture {
	built := map[int]*queryFixture{}
	return func(b *testing.B, n int) *queryFixture {
		if f, ok := built[n]; ok {
			return f
		}
		b.StopTimer()
		defer b.StartTimer()
		dir, ws := keptDataset(b, "query-"+sizeLabel(n))
		var f *queryFixture
		switch {
		case dir == "":
			f = buildQueryFixture(b, newBenchEnv(b, owner), n)
		case ws != "":
			e, err := engine.Open(dir, engine.Options{})
			if err != nil {
				b.Fatal(err)
			}
			owner.Cleanup(func() { e.Close() })
			env := &benchEnv{dir: dir, e: e, ws: ws}
			f = &queryFixture{env: env, ref: env.ref("docs", "main"), g: gen.New(gen.Config{N: n, Seed: benchSeed})}
		default:
			env := &benchEnv{dir: dir}
			var err error
			if env.e, err = engine.Open(dir, engine.Options{NoSync: true}); err != nil {
				b.Fatal(err)
			}
			owner.Cleanup(func() { env.e.Close() })
			u, err := env.e.Accounts().CreateUser(engine.NewUser{Email: "bench@example.com"})
			if err != nil {
				b.Fatal(err)
			}
			w, err := env.e.Accounts().CreateWorkspace(u.ID, "bench", "")
			if err != nil {
				b.Fatal(err)
			}
			env.ws = w.Core
			f = buildQueryFixture(b, env, n)
			markLoaded(b, dir, env.ws)
		}
		built[n] = f
		return f
	}
}

// loadGenerated bulk-inserts the records of a generator stream into a
// table, in batches of MaxBulkRecords.
func loadGenerated(b *testing.B, e *engine.Engine, ref engine.Ref, table string, walk func(func(map[string]any) error) error) {
	batch := make([]map[string]any, 0, engine.MaxBulkRecords)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := e.BulkInsert(context.Background(), ref, table, batch)
		batch = batch[:0]
		return err
	}
	err := walk(func(rec map[string]any) error {
		if batch = append(batch, rec); len(batch) == engine.MaxBulkRecords {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		b.Fatalf("load %s: %v", table, err)
	}
}

// queryJSON marshals v for a query body.
func queryJSON(b *testing.B, v any) json.RawMessage {
	out, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// queryCase is one benchmarked query: its filter and sort (nil for the
// default order), with parameters from the dataset's known distributions
// so that its selectivity holds at every size.
type queryCase struct {
	name string
	body func(g *gen.Gen) (filter, sort any)
}

type jsonObj = map[string]any

// queryCases are the single-page queries of W3.
var queryCases = []queryCase{
	// The most common category (about 35% of docs), default order.
	{"eq", func(*gen.Gen) (any, any) {
		return jsonObj{"category": gen.Categories[0]}, nil
	}},
	// A category of about 2% of docs, default order: fewer candidates
	// than the eq case, as most categories of the filter mix are.
	{"eq-2pct", func(*gen.Gen) (any, any) {
		return jsonObj{"category": gen.Categories[9]}, nil
	}},
	// 5% of docs by price, default order.
	{"range-5pct", func(*gen.Gen) (any, any) {
		return jsonObj{"price": jsonObj{"$ge": gen.PriceQuantile(0.40), "$lt": gen.PriceQuantile(0.45)}}, nil
	}},
	// About 1.75% of docs (a category of 2.5%, active), newest first.
	{"eq-active-sort", func(*gen.Gen) (any, any) {
		return jsonObj{"category": gen.Categories[8], "active": true}, jsonObj{"created_at": "desc"}
	}},
	// 60% × 50% × 40% ≈ 12% of docs, most viewed first.
	{"3ranges-sort", func(*gen.Gen) (any, any) {
		return jsonObj{
			"price":      jsonObj{"$ge": gen.PriceQuantile(0.2), "$lt": gen.PriceQuantile(0.8)},
			"rating":     jsonObj{"$ge": 2.0, "$lt": 4.5},
			"created_at": jsonObj{"$ge": gen.DateQuantile(0.6).Format(time.RFC3339)},
		}, jsonObj{"views": "desc"}
	}},
	// The filter mix's sorted classes with broad filters, where a walk of
	// the sort order stops long before it has seen every match. The most
	// common category, active (about 25% of docs), newest first.
	{"eq-sort", func(*gen.Gen) (any, any) {
		return jsonObj{"category": gen.Categories[0], "active": true}, jsonObj{"created_at": "desc"}
	}},
	// 48% × 50% × 40% ≈ 10% of docs, most viewed first.
	{"ranges-sort", func(*gen.Gen) (any, any) {
		return jsonObj{
			"price":      jsonObj{"$ge": gen.PriceQuantile(0.26), "$lt": gen.PriceQuantile(0.74)},
			"rating":     jsonObj{"$ge": 1.0, "$lt": 3.5},
			"created_at": jsonObj{"$ge": gen.DateQuantile(0.3).Format(time.RFC3339), "$lt": gen.DateQuantile(0.7).Format(time.RFC3339)},
		}, jsonObj{"views": "desc"}
	}},
	// The filter mix's any-sort class: one category or a views threshold,
	// best rated first, then oldest: a broad union under a sort of two keys.
	{"any-sort", func(*gen.Gen) (any, any) {
		return jsonObj{"$any": []any{
			jsonObj{"category": gen.Categories[3]},
			jsonObj{"views": jsonObj{"$ge": 5000}},
		}}, []any{jsonObj{"rating": "desc"}, jsonObj{"created_at": "asc"}}
	}},
	// The most common tag, cheapest first.
	{"includes-sort", func(*gen.Gen) (any, any) {
		return jsonObj{"tags": jsonObj{"$includes": gen.Tag(0)}}, jsonObj{"price": "asc"}
	}},
	// A substring of titles, default order: a frequent word of at least 5
	// letters, past the very top of the ranking.
	{"contains", func(g *gen.Gen) (any, any) {
		for rank := 50; ; rank++ {
			if w := g.Word(rank); len(w) >= 5 {
				return jsonObj{"title": jsonObj{"$contains": w}}, nil
			}
		}
	}},
}

// queryBody is a query as a request body carries it: filter and sort as
// JSON.
type queryBody struct {
	Filter, Sort json.RawMessage
	Page         engine.PageInput
	// Opts are the query's settings: the zero value, as the benchmark
	// suite's in-process rows run, or apiQueryOptions.
	Opts engine.QueryOptions
}

// apiQueryOptions are the settings the API queries with: the page as
// views of the stored values, read through a record cache of the API's
// default size.
func apiQueryOptions() engine.QueryOptions {
	return engine.QueryOptions{Views: true, Records: engine.NewRecordCache(32 << 20)}
}

// timeQuery reads and runs one query, as the API does, and returns how
// long it took.
func timeQuery(b *testing.B, f *queryFixture, in queryBody) (*engine.QueryResult, time.Duration) {
	t0 := time.Now()
	req := engine.QueryRequest{Page: in.Page}
	var err error
	if req.Filter, err = index.ReadFilter(in.Filter); err == nil {
		if req.Sort, err = index.ReadSort(in.Sort); err == nil {
			var res *engine.QueryResult
			res, err = f.env.e.Query(context.Background(), f.ref, gen.DocsTable, req, in.Opts)
			d := time.Since(t0)
			if err == nil {
				return res, d
			}
		}
	}
	b.Fatalf("query %s %s: %v", in.Filter, in.Sort, err)
	return nil, 0
}

// pageLen is the number of records of a page, as records or as views.
func pageLen(res *engine.QueryResult) int { return len(res.Records) + len(res.Views) }

// latencyQuantile returns the q-quantile (0 ≤ q ≤ 1) of sorted durations, in
// nanoseconds.
func latencyQuantile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[min(len(sorted)-1, int(q*float64(len(sorted))))].Nanoseconds())
}

// reportLatency reports the p50 and p99 of per-op durations, each metric
// name prefixed by prefix; it returns the p50.
func reportLatency(b *testing.B, prefix string, d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	p50 := latencyQuantile(s, 0.50)
	b.ReportMetric(p50, prefix+"p50-ns")
	b.ReportMetric(latencyQuantile(s, 0.99), prefix+"p99-ns")
	return p50
}

// BenchmarkQuery times filter + sort + page 20 queries of W3 at 1e4 and 1e5
// docs (and 1e6 when COPPICE_BENCH_MAX allows), and cursor walks
// (cursorCases, those of the benchmark suite among them): page 1 against
// page 50 of the same filter and sort (target: page 50 ≤ 1.0× page 1). Each case reports "matches", the rows its filter selects, and
// "cpu-ns/op", the process's CPU time per query, and "thread-cpu-p50-ns",
// the p50 of each query's own thread CPU.
func BenchmarkQuery(b *testing.B) {
	get := queryFixtures(b)
	for _, n := range benchSizes(b, 1e4, 1e5, 1e6) {
		label := sizeLabel(n)
		for _, c := range queryCases {
			b.Run(label+"/"+c.name, func(b *testing.B) {
				f := get(b, n)
				filter, sort := c.body(f.g)
				in := queryBody{Filter: queryJSON(b, filter), Page: engine.PageInput{Size: &queryPage}}
				if sort != nil {
					in.Sort = queryJSON(b, sort)
				}
				benchQueryCase(b, f, in)
			})
			// The same query as the API runs it.
			b.Run(label+"/"+c.name+"/api", func(b *testing.B) {
				f := get(b, n)
				filter, sort := c.body(f.g)
				in := queryBody{Filter: queryJSON(b, filter), Page: engine.PageInput{Size: &queryPage}, Opts: apiQueryOptions()}
				if sort != nil {
					in.Sort = queryJSON(b, sort)
				}
				benchQueryCase(b, f, in)
			})
		}
		for _, c := range cursorCases {
			b.Run(label+"/"+c.name, func(b *testing.B) {
				benchCursorPages(b, get(b, n), c, engine.QueryOptions{})
			})
			b.Run(label+"/"+c.name+"/api", func(b *testing.B) {
				benchCursorPages(b, get(b, n), c, apiQueryOptions())
			})
		}
	}
}

// BenchmarkQueryContainsMix replays the $contains queries of the
// benchmark suite's filter mix (bench/gen Queries, kind "contains"), one
// per op in turn, page 20 in the default order: words of every rank of
// the draw, so that its p99 and CPU per op show the expensive ones the
// single word of BenchmarkQuery's contains case does not.
func BenchmarkQueryContainsMix(b *testing.B) {
	get := queryFixtures(b)
	for _, n := range benchSizes(b, 1e4, 1e5, 1e6) {
		b.Run(sizeLabel(n), func(b *testing.B) {
			f := get(b, n)
			var ins []queryBody
			for _, q := range f.g.Queries(800).Filter {
				if q.Kind == "contains" {
					ins = append(ins, queryBody{Filter: q.Filter, Page: engine.PageInput{Size: &queryPage}})
				}
			}
			timeQueryTurns(b, f, ins)
		})
	}
}

// BenchmarkQueryMixKinds replays the queries of the benchmark suite's
// filter mix (bench/gen Queries, as many as the suite draws) of one kind
// at a time, page 20, one per op in turn: the parameters of every draw
// (categories of every frequency, price windows over the whole range),
// where BenchmarkQuery's cases hold one each. "/api" runs them as the API
// does, through one record cache shared by the kinds, as the server's is.
func BenchmarkQueryMixKinds(b *testing.B) {
	get := queryFixtures(b)
	for _, n := range benchSizes(b, 1e4, 1e5, 1e6) {
		records := apiQueryOptions()
		for _, kind := range []string{"eq", "range", "eq-sort", "ranges-sort", "contains", "includes-sort", "link-sort", "any-sort"} {
			for _, api := range []bool{false, true} {
				name := sizeLabel(n) + "/" + kind
				if api {
					name += "/api"
				}
				b.Run(name, func(b *testing.B) {
					f := get(b, n)
					var ins []queryBody
					for _, q := range f.g.Queries(160).Filter {
						if q.Kind != kind {
							continue
						}
						in := queryBody{Filter: q.Filter, Sort: q.Sort, Page: engine.PageInput{Size: &queryPage}}
						if api {
							in.Opts = records
						}
						ins = append(ins, in)
					}
					timeQueryTurns(b, f, ins)
				})
			}
		}
	}
}

// timeQueryTurns times the queries of ins in turn, one per op, after a
// summary has the column store built and one pass has warmed the caches.
func timeQueryTurns(b *testing.B, f *queryFixture, ins []queryBody) {
	b.StopTimer()
	if _, err := f.env.e.Summarize(context.Background(), f.ref, gen.DocsTable, engine.SummarizeRequest{}); err != nil {
		b.Fatal(err)
	}
	for _, in := range ins {
		timeQuery(b, f, in)
	}
	lat := make([]time.Duration, 0, b.N)
	cpu := make([]time.Duration, 0, b.N)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	cpu0 := proccpu.Process()
	b.StartTimer()
	b.ResetTimer()
	for i := range b.N {
		c0 := threadCPU()
		_, d := timeQuery(b, f, ins[i%len(ins)])
		cpu = append(cpu, threadCPU()-c0)
		lat = append(lat, d)
	}
	b.StopTimer()
	b.ReportMetric(float64(proccpu.Process()-cpu0)/float64(b.N), "cpu-ns/op")
	reportLatency(b, "", lat)
	reportThreadCPU(b, cpu)
}

// reportThreadCPU reports the p50 of per-query thread CPU ("thread-cpu-p50-ns"):
// the query's own work, which neither the waits for a core of a loaded
// machine nor the background work of other threads count in, as wall time
// and the process's CPU do.
func reportThreadCPU(b *testing.B, cpu []time.Duration) {
	slices.Sort(cpu)
	b.ReportMetric(latencyQuantile(cpu, 0.5), "thread-cpu-p50-ns")
}

// BenchmarkQueryAfterWrite times the contains query of BenchmarkQuery
// right after a write it must see: "write" replaces one doc of main
// before each query on main; "fork-write" forks main, writes one doc on
// the fork, waits for the fork's own column store and times the fork's
// first $contains. Both report the plain query on main beside them as
// "plain".
func BenchmarkQueryAfterWrite(b *testing.B) {
	get := queryFixtures(b)
	var contains func(*gen.Gen) (any, any)
	for _, c := range queryCases {
		if c.name == "contains" {
			contains = c.body
		}
	}
	for _, n := range benchSizes(b, 1e4, 1e5, 1e6) {
		label := sizeLabel(n)
		for _, fork := range []bool{false, true} {
			name := label + "/write"
			if fork {
				name = label + "/fork-write"
			}
			b.Run(name, func(b *testing.B) {
				f := get(b, n)
				filter, _ := contains(f.g)
				in := queryBody{Filter: queryJSON(b, filter), Page: engine.PageInput{Size: &queryPage}}
				benchQueryAfterWrite(b, f, in, fork)
			})
		}
	}
}

// benchQueryAfterWrite times in after one write per op, untimed, that
// changes the title of doc 0 back and forth; with fork, on a new fork of
// main each op, dropped after.
func benchQueryAfterWrite(b *testing.B, f *queryFixture, in queryBody, fork bool) {
	b.StopTimer()
	doc := f.g.Doc(0)
	title := doc["title"].(string)
	plain := make([]time.Duration, 0, b.N)
	lat := make([]time.Duration, 0, b.N)
	for i := range b.N {
		_, d := timeQuery(b, f, in)
		plain = append(plain, d)
		ref := f.ref
		if fork {
			ref = f.env.ref("docs", fmt.Sprintf("w%d", i))
			if err := f.env.e.Branches().Create(ref, engine.CreateBranchRequest{From: "main"}); err != nil {
				b.Fatal(err)
			}
		}
		doc["title"] = title
		if i%2 == 0 {
			doc["title"] = title + " rewritten"
		}
		if _, err := f.env.e.WriteOne(ref, engine.Op{Kind: engine.OpInsert, Table: gen.DocsTable, ID: gen.DocID(0), Values: doc}); err != nil {
			b.Fatal(err)
		}
		q := f
		if fork {
			// A summary waits for the fork's column store, which the
			// write started apart from main's: the query then times the
			// store's trigram index, not a storage scan meanwhile.
			if _, err := f.env.e.Summarize(context.Background(), ref, gen.DocsTable, engine.SummarizeRequest{}); err != nil {
				b.Fatal(err)
			}
			c := *f
			c.ref = ref
			q = &c
		}
		b.StartTimer()
		_, d = timeQuery(b, q, in)
		b.StopTimer()
		lat = append(lat, d)
		if fork {
			if err := f.env.e.Branches().Delete(ref); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportLatency(b, "", lat)
	reportLatency(b, "plain-", plain)
}

// benchQueryCase times one query per op, after checking that it matches
// rows and warming the caches it reads, the column store included.
func benchQueryCase(b *testing.B, f *queryFixture, in queryBody) {
	b.StopTimer()
	filter, err := index.ReadFilter(in.Filter)
	if err != nil {
		b.Fatal(err)
	}
	rows, err := f.env.e.FilterRows(f.ref, gen.DocsTable, filter)
	if err != nil {
		b.Fatal(err)
	}
	// A summary waits for the column store, which queries only use once it
	// is built in the background: time the queries with it in place.
	if _, err := f.env.e.Summarize(context.Background(), f.ref, gen.DocsTable, engine.SummarizeRequest{}); err != nil {
		b.Fatal(err)
	}
	for range 3 {
		if res, _ := timeQuery(b, f, in); pageLen(res) == 0 {
			b.Fatalf("query %s matches nothing", in.Filter)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	cpu := make([]time.Duration, 0, b.N)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	cpu0 := proccpu.Process()
	b.StartTimer()
	b.ResetTimer()
	for range b.N {
		c0 := threadCPU()
		_, d := timeQuery(b, f, in)
		cpu = append(cpu, threadCPU()-c0)
		lat = append(lat, d)
	}
	b.StopTimer()
	b.ReportMetric(float64(proccpu.Process()-cpu0)/float64(b.N), "cpu-ns/op")
	reportLatency(b, "", lat)
	reportThreadCPU(b, cpu)
	b.ReportMetric(float64(rows.GetCardinality()), "matches")
}

// cursorCases are the filters and sorts of the cursor walks: a category
// newest first, and the two walks of the benchmark suite's W3.
var cursorCases = []queryCase{
	{"cursor-page50", func(*gen.Gen) (any, any) {
		return jsonObj{"category": gen.Categories[1]}, jsonObj{"created_at": "desc"}
	}},
	// The most common category, active, newest first.
	{"cursor-eq-sort", func(*gen.Gen) (any, any) {
		return jsonObj{"category": gen.Categories[0], "active": true}, jsonObj{"created_at": "desc"}
	}},
	// The most common tag, cheapest first.
	{"cursor-includes-sort", func(*gen.Gen) (any, any) {
		return jsonObj{"tags": jsonObj{"$includes": gen.Tag(0)}}, jsonObj{"price": "asc"}
	}},
}

// benchCursorPages compares page 1 and page 50 (rows 981 to 1000) of the
// filter and sort of c, following page.after cursors. The walk to page 49
// is done once, untimed; cursors are self-contained, so each op then times
// a page 1 request and a request continuing from page 49's cursor, in
// turns of which goes first. It reports both latencies, the p50 of each
// page's CPU (its thread's) and their ratios; a CPU profile of it tells
// the pages apart by the label "page" (pprof -tagfocus 'page=^50$').
func benchCursorPages(b *testing.B, f *queryFixture, c queryCase, opts engine.QueryOptions) {
	b.StopTimer()
	if _, err := f.env.e.Summarize(context.Background(), f.ref, gen.DocsTable, engine.SummarizeRequest{}); err != nil {
		b.Fatal(err)
	}
	filter, sort := c.body(f.g)
	first := queryBody{
		Filter: queryJSON(b, filter),
		Sort:   queryJSON(b, sort),
		Page:   engine.PageInput{Size: &queryPage},
		Opts:   opts,
	}
	res, _ := timeQuery(b, f, first)
	for page := 2; page < 50; page++ {
		if !res.More || pageLen(res) != queryPage {
			b.Fatalf("page %d of %s has %d records, more=%v: the filter matches too few rows", page-1, first.Filter, pageLen(res), res.More)
		}
		cursor := res.Cursor
		res, _ = timeQuery(b, f, queryBody{Page: engine.PageInput{After: &cursor}, Opts: opts})
	}
	cursor49 := res.Cursor
	page50 := queryBody{Page: engine.PageInput{After: &cursor49}, Opts: opts}
	for range 3 {
		timeQuery(b, f, first)
		if res, _ := timeQuery(b, f, page50); pageLen(res) != queryPage {
			b.Fatalf("page 50 has %d records", pageLen(res))
		}
	}
	lat1 := make([]time.Duration, 0, b.N)
	lat50 := make([]time.Duration, 0, b.N)
	// The CPU of each page is its thread's (the query runs on the
	// benchmark's goroutine), and a CPU profile tells the pages apart by
	// the label "page".
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu1 := make([]time.Duration, 0, b.N)
	cpu50 := make([]time.Duration, 0, b.N)
	labels1, labels50 := pprof.WithLabels(context.Background(), pprof.Labels("page", "1")), pprof.WithLabels(context.Background(), pprof.Labels("page", "50"))
	timePage := func(in queryBody, labels context.Context, cpu *[]time.Duration) time.Duration {
		pprof.SetGoroutineLabels(labels)
		c0 := threadCPU()
		_, d := timeQuery(b, f, in)
		*cpu = append(*cpu, threadCPU()-c0)
		return d
	}
	b.ReportAllocs()
	b.StartTimer()
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			d1 := timePage(first, labels1, &cpu1)
			d50 := timePage(page50, labels50, &cpu50)
			lat1, lat50 = append(lat1, d1), append(lat50, d50)
		} else {
			d50 := timePage(page50, labels50, &cpu50)
			d1 := timePage(first, labels1, &cpu1)
			lat1, lat50 = append(lat1, d1), append(lat50, d50)
		}
	}
	b.StopTimer()
	pprof.SetGoroutineLabels(context.Background())
	p1 := reportLatency(b, "page1-", lat1)
	p50 := reportLatency(b, "page50-", lat50)
	b.ReportMetric(p50/p1, "page50/page1")
	// The p50 of the CPU too: a mean takes in the collections that
	// happen to run on the thread during some pages.
	slices.Sort(cpu1)
	slices.Sort(cpu50)
	c1, c50 := latencyQuantile(cpu1, 0.5), latencyQuantile(cpu50, 0.5)
	b.ReportMetric(c1, "page1-cpu-p50-ns")
	b.ReportMetric(c50, "page50-cpu-p50-ns")
	b.ReportMetric(c50/max(c1, 1), "cpu50/cpu1")
	var sum1, sum50 time.Duration
	for i := range lat1 {
		sum1, sum50 = sum1+lat1[i], sum50+lat50[i]
	}
	b.Logf("page 1 p50 %s, page 50 p50 %s, ratio of medians %.2f, of means %.2f (N=%d)",
		time.Duration(p1), time.Duration(p50), p50/p1, float64(sum50)/float64(sum1), b.N)
}
