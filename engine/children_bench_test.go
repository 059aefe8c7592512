package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// BenchmarkMainWithChildrenMix isolates what live children cost their
// parent on the query mix of the benchmark suite (bench/gen's filter
// queries), as W6 measures it over HTTP: two databases hold the same
// generated docs and receive the same single-record updates of main, five
// between forks, and one of them forks a live child after each group. The
// queries run on main of both, interleaved, through a record cache as the
// server runs them; the ratio with/alone is what main pays for its
// children (target ≤ 1.1).
func BenchmarkMainWithChildrenMix(b *testing.B) {
	type fixture struct {
		env         *benchEnv
		alone, with engine.Ref
		mix         []engine.QueryRequest
	}
	for _, children := range []int{20} {
		get := perSize(b, func(b *testing.B, env *benchEnv, n int) *fixture {
			f := &fixture{env: env, alone: env.ref("alone", "main"), with: env.ref("with", "main")}
			g := gen.New(gen.Config{N: n, Seed: benchSeed})
			for _, ref := range []engine.Ref{f.alone, f.with} {
				loadGenDatabase(b, env, g, ref)
			}
			env.durable(b)
			at := 0
			for k := range children {
				for range 5 {
					id := gen.DocID(at * 7919 % n)
					at++
					for _, ref := range []engine.Ref{f.alone, f.with} {
						ops := []engine.Op{{Kind: engine.OpUpdate, Table: gen.DocsTable, ID: id, Values: map[string]any{"views": int64(at)}}}
						if _, err := env.e.Write(context.Background(), ref, ops); err != nil {
							b.Fatalf("update %v %s: %v", ref, id, err)
						}
					}
				}
				child := env.ref("with", fmt.Sprintf("live%02d", k))
				if err := env.e.Branches().Create(child, engine.CreateBranchRequest{From: "main"}); err != nil {
					b.Fatal(err)
				}
			}
			for _, q := range g.Queries(40).Filter {
				req := engine.QueryRequest{Page: engine.PageInput{Size: &queryPage}}
				var err error
				if req.Filter, err = index.ReadFilter(q.Filter); err == nil {
					req.Sort, err = index.ReadSort(q.Sort)
				}
				if err != nil {
					b.Fatalf("%s %s: %v", q.Filter, q.Sort, err)
				}
				f.mix = append(f.mix, req)
			}
			return f
		})
		for _, n := range benchSizes(b, 1e4, 1e5, 1e6) {
			b.Run(fmt.Sprintf("%s/children=%d", sizeLabel(n), children), func(b *testing.B) {
				f := get(b, n)
				opts := engine.QueryOptions{Views: true, Records: engine.NewRecordCache(64 << 20)}
				warm := func() {
					for _, q := range f.mix {
						for _, ref := range []engine.Ref{f.alone, f.with} {
							if _, err := f.env.e.Query(context.Background(), ref, gen.DocsTable, q, opts); err != nil {
								b.Fatalf("query %v: %v", ref, err)
							}
						}
					}
				}
				// The first queries start the column stores' builds: time
				// once they are built.
				warm()
				waitForBuilds(b, f.env.e)
				warm()
				b.ResetTimer()
				reportSides(b, "query", "alone", fmt.Sprintf("with%d", children),
					interleavedGenQueries(b, f.env.e, f.alone, f.with, f.mix, opts))
			})
		}
	}
}

// createGenDatabase creates the database of ref with the generated users
// and docs tables, empty.
func createGenDatabase(b *testing.B, env *benchEnv, ref engine.Ref) {
	b.Helper()
	if _, err := env.e.CreateDatabase(engine.CreateDatabaseRequest{Workspace: env.ws, Name: ref.Database, Region: "local"}); err != nil {
		b.Fatal(err)
	}
	for _, t := range []struct {
		name string
		cols []engine.ColumnDef
	}{{gen.UsersTable, gen.UsersColumns()}, {gen.DocsTable, gen.DocsColumns()}} {
		if _, err := env.e.Schema().CreateTable(ref, t.name); err != nil {
			b.Fatal(err)
		}
		if _, err := env.e.Schema().SetTableColumns(ref, t.name, t.cols); err != nil {
			b.Fatal(err)
		}
	}
}

// loadGenDatabase creates the database of ref with the generated users and
// docs tables and loads them.
func loadGenDatabase(b *testing.B, env *benchEnv, g *gen.Gen, ref engine.Ref) {
	createGenDatabase(b, env, ref)
	loadGenerated(b, env.e, ref, gen.UsersTable, g.Users)
	loadGenerated(b, env.e, ref, gen.DocsTable, g.Docs)
}

// interleavedGenQueries times the queries of mix on the docs table of two
// branches as interleavedQueriesWith does on the table of benchColumns.
func interleavedGenQueries(b *testing.B, e *engine.Engine, x, y engine.Ref, mix []engine.QueryRequest, opts engine.QueryOptions) (side [2]sideCost) {
	refs := [2]engine.Ref{x, y}
	return interleavedOn(b, len(mix), func(s, i int) {
		if _, err := e.Query(context.Background(), refs[s], gen.DocsTable, mix[i], opts); err != nil {
			b.Fatalf("query %v: %v", refs[s], err)
		}
	})
}

// BenchmarkMainWithChildrenGets follows the W6 phase of the benchmark
// suite that compares main alone with main with 20 live children, in the
// suite's order, on one database of bench/gen's docs and through one
// record cache of the server's default size. Each op is one round: 100
// single-record updates of main, then main alone reads 10,000 ids and runs
// the query mix; then 20 groups of 5 updates of main each followed by a
// fork, and main with its 20 children reads the same ids and runs the
// same mix; then the children are deleted. Before a round main read its
// ids once, as the suite's gets on main against a child do, so that the
// cache's admission (a record is cached at its second read) sees them as
// it does over HTTP; before the first, point gets and query passes fill
// the cache as the suite's earlier workloads do. A garbage collection
// precedes each timed series, so that a cycle of a large heap landing in
// one side's series does not decide the ratio; the bytes each side
// allocates say whether the children make main's reads make more garbage,
// and the bytes its updates and the forks allocate and the heap in use
// before each series whether they make its writes do, or the process
// keep more. The ratios with/alone are what main pays for its children (target
// ≤ 1.1).
func BenchmarkMainWithChildrenGets(b *testing.B) {
	const (
		children = 20
		gets     = 10_000   // a series of point gets
		stride   = 20_000   // ids between rounds' series
		cache    = 32 << 20 // the server's default record cache
	)
	type fixture struct {
		env  *benchEnv
		main engine.Ref
		mix  []engine.QueryRequest
		// rounds counts the rounds run on the fixture: the next round
		// reads the ids after theirs.
		rounds int
	}
	get := perSize(b, func(b *testing.B, env *benchEnv, n int) *fixture {
		f := &fixture{env: env, main: env.ref("bench", "main")}
		g := gen.New(gen.Config{N: n, Seed: 1})
		loadGenDatabase(b, env, g, f.main)
		env.durable(b)
		for _, q := range g.Queries(160).Filter {
			f.mix = append(f.mix, mixRequest(b, q))
		}
		return f
	})
	for _, n := range benchSizes(b, 1e5, 1e6) {
		b.Run(sizeLabel(n), func(b *testing.B) {
			f := get(b, n)
			w := &w6Round{b: b, e: f.env.e, main: f.main, n: n, gets: gets, mix: f.mix,
				records: engine.NewRecordCache(cache)}
			// The suite's earlier workloads leave the cache full.
			for range 2 {
				w.read(1 << 30)
				w.queries()
			}
			waitForBuilds(b, w.e)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			for range b.N {
				from := f.rounds * stride
				b.StopTimer()
				w.read(from) // the suite's gets on main against a child
				b.StartTimer()
				w.round(f.env, f.rounds, from, children)
				f.rounds++
			}
			b.StopTimer()
			per := func(s [2]sideCost, k int) [2]sideCost {
				for i := range s {
					s[i].wall /= time.Duration(k)
					s[i].cpu /= time.Duration(k)
				}
				return s
			}
			with := fmt.Sprintf("with%d", children)
			reportSides(b, "get", "alone", with, per(w.getsCost, gets))
			reportSides(b, "query", "alone-mix", with+"-mix", per(w.mixes, len(f.mix)))
			for s, name := range []string{"alone", with} {
				b.ReportMetric(float64(w.alloc[s])/float64(b.N*gets), name+"-B/get")
			}
			b.ReportMetric(float64(w.collect.Milliseconds())/float64(w.collections), "gc-ms")
			for s, name := range []string{"alone", with} {
				b.ReportMetric(float64(w.updated[s])/float64(b.N*children*5), name+"-B/update")
				b.ReportMetric(float64(w.live[s])/float64(b.N)/(1<<20), name+"-live-MiB")
			}
			b.ReportMetric(float64(w.forked)/float64(b.N*children), "B/fork")
		})
	}
}

// w6Round runs the rounds of BenchmarkMainWithChildrenGets and adds up
// what each side took: side 0 is main alone, side 1 main with children.
type w6Round struct {
	b       *testing.B
	e       *engine.Engine
	main    engine.Ref
	n, gets int
	mix     []engine.QueryRequest
	records *engine.RecordCache

	getsCost, mixes [2]sideCost
	alloc           [2]uint64 // bytes the gets allocated
	// updated is what each side's updates of main allocated, forked
	// what the forks did, live the heap in use after the collection
	// before each side's series: what the children make main's writes
	// allocate and the process keep.
	updated [2]uint64
	forked  uint64
	live    [2]uint64
	// collect is the time the collections before the series took, what
	// one cycle costs when it lands in a series instead.
	collect     time.Duration
	collections int
}

// id is the suite's i-th id of a series: a stride through the docs.
func (w *w6Round) id(i int) string { return gen.DocID(int(uint64(i) * 7919 % uint64(w.n))) }

// read reads the series of ids from from on main, as the server does.
func (w *w6Round) read(from int) {
	for i := range w.gets {
		if _, err := w.e.GetView(w.records, w.main, gen.DocsTable, w.id(from+i)); err != nil {
			w.b.Fatalf("get %s: %v", w.id(from+i), err)
		}
	}
}

// queries runs the query mix on main once, as the server does.
func (w *w6Round) queries() {
	opts := engine.QueryOptions{Views: true, Records: w.records}
	for _, q := range w.mix {
		if _, err := w.e.Query(context.Background(), w.main, gen.DocsTable, q, opts); err != nil {
			w.b.Fatalf("query: %v", err)
		}
	}
}

// update writes the k-th of the 100 updates of main of a round's side.
func (w *w6Round) update(r, side, k int) {
	ops := []engine.Op{{Kind: engine.OpUpdate, Table: gen.DocsTable, ID: w.id(k + 1),
		Values: map[string]any{"views": int64(r*10000 + side*1000 + k)}}}
	if _, err := w.e.Write(context.Background(), w.main, ops); err != nil {
		w.b.Fatalf("update %s: %v", w.id(k+1), err)
	}
}

// series times one side's gets from from, after a collection, then runs
// the mix once untimed and once timed, as the suite's warm-up and pass.
func (w *w6Round) series(side, from int) {
	t0 := time.Now()
	runtime.GC()
	w.collect += time.Since(t0)
	w.collections++
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	w.live[side] += m0.HeapAlloc
	t0, c0 := time.Now(), threadCPU()
	w.read(from)
	w.getsCost[side].wall += time.Since(t0)
	w.getsCost[side].cpu += threadCPU() - c0
	runtime.ReadMemStats(&m1)
	w.alloc[side] += m1.TotalAlloc - m0.TotalAlloc
	w.queries()
	t0, c0 = time.Now(), threadCPU()
	w.queries()
	w.mixes[side].wall += time.Since(t0)
	w.mixes[side].cpu += threadCPU() - c0
}

// round runs round r on the ids from from: main alone, then main with
// children forked between groups of updates, which go afterwards.
func (w *w6Round) round(env *benchEnv, r, from, children int) {
	a0 := totalAlloc()
	for k := range children * 5 {
		w.update(r, 0, k)
	}
	w.updated[0] += totalAlloc() - a0
	w.series(0, from)
	for k := range children * 5 {
		a0 := totalAlloc()
		w.update(r, 1, k)
		w.updated[1] += totalAlloc() - a0
		if k%5 == 4 {
			a0 := totalAlloc()
			child := env.ref("bench", fmt.Sprintf("live%02d", k/5))
			if err := w.e.Branches().Create(child, engine.CreateBranchRequest{From: "main"}); err != nil {
				w.b.Fatal(err)
			}
			w.forked += totalAlloc() - a0
		}
	}
	w.series(1, from)
	for k := range children {
		if err := w.e.Branches().Delete(env.ref("bench", fmt.Sprintf("live%02d", k))); err != nil {
			w.b.Fatal(err)
		}
	}
}

// BenchmarkRecordCountWithChildren counts the records of every branch of a
// database, as every metrics scrape does (engine.Stats): main alone, and
// main with 20 live children forked with updates of main between forks.
// Main's count comes from its bitmap cache once a query filled it; a
// child that has not written is counted from storage once, and its count
// is then remembered while its rows cannot change, so the children add
// next to nothing to a scrape however large the table.
func BenchmarkRecordCountWithChildren(b *testing.B) {
	const children = 20
	type fixture struct {
		env         *benchEnv
		alone, with engine.Ref
	}
	get := perSize(b, func(b *testing.B, env *benchEnv, n int) *fixture {
		env.load(b, n, "alone", "with")
		env.durable(b)
		f := &fixture{env: env, alone: env.ref("alone", "main"), with: env.ref("with", "main")}
		for k := range children {
			env.updateRows(b, f.alone, []int{k * 7 % n, (k*7 + 1) % n}, k+1)
			env.updateRows(b, f.with, []int{k * 7 % n, (k*7 + 1) % n}, k+1)
			child := env.ref("with", fmt.Sprintf("live%02d", k))
			if err := env.e.Branches().Create(child, engine.CreateBranchRequest{From: "main"}); err != nil {
				b.Fatal(err)
			}
		}
		for _, ref := range []engine.Ref{f.alone, f.with} {
			runBenchQuery(b, env.e, ref, engine.QueryRequest{}) // fills main's bitmap cache
		}
		return f
	})
	for _, n := range benchSizes(b, 1e4, 1e5, 1e6) {
		for _, side := range []string{"alone", fmt.Sprintf("with%d", children)} {
			b.Run(sizeLabel(n)+"/"+side, func(b *testing.B) {
				f := get(b, n)
				ref := f.alone
				if side != "alone" {
					ref = f.with
				}
				branches, err := f.env.e.Branches().List(ref.Workspace, ref.Database)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					for _, br := range branches {
						ref.Branch = br.Name
						if _, err := f.env.e.RecordCount(ref); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// totalAlloc reads the bytes the process allocated so far.
func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// BenchmarkChildQueryMix compares the query mix of the benchmark suite
// (bench/gen's filter kinds) on a fresh child, forked from main with no
// write on either since, with the same queries on main, as W6 measures
// them over HTTP (target: child ≤ 1.3× main). Before the first op, point
// reads and passes of the mix on main fill the record cache of the
// server's default size, as the suite's earlier workloads do. Each op
// forks a child, runs three passes of the mix, each query on main and on
// the child in turn (which side goes first alternates every eight queries,
// one of each kind, and every pass), and deletes the
// child. The first pass, where the child's reads are new to every cache
// that keys them by branch, is reported apart from the later ones, each
// as the child ÷ main ratio of the thread CPU time per query, over all
// and by kind.
func BenchmarkChildQueryMix(b *testing.B) {
	const (
		passes = 3
		cache  = 32 << 20 // the server's default record cache
		gets   = 20_000   // point reads on main before the first op
	)
	type query struct {
		kind string
		req  engine.QueryRequest
	}
	type fixture struct {
		f       *queryFixture
		mix     []query
		records *engine.RecordCache
		forks   int
	}
	fixtures := queryFixtures(b)
	built := map[int]*fixture{}
	for _, n := range benchSizes(b, 1e4, 1e5, 1e6) {
		b.Run(sizeLabel(n), func(b *testing.B) {
			fx := built[n]
			if fx == nil {
				fx = &fixture{f: fixtures(b, n), records: engine.NewRecordCache(cache)}
				for _, q := range fx.f.g.Queries(160).Filter {
					fx.mix = append(fx.mix, query{q.Kind, mixRequest(b, q)})
				}
				built[n] = fx
			}
			e, main := fx.f.env.e, fx.f.ref
			opts := engine.QueryOptions{Views: true, Records: fx.records}
			run := func(ref engine.Ref, q query) {
				if _, err := e.Query(context.Background(), ref, gen.DocsTable, q.req, opts); err != nil {
					b.Fatalf("query %v %s: %v", ref, q.kind, err)
				}
			}
			b.StopTimer()
			if fx.forks == 0 {
				for range 2 {
					for i := range gets {
						id := gen.DocID(int(uint64(i) * 7919 % uint64(n)))
						if _, err := e.GetView(fx.records, main, gen.DocsTable, id); err != nil {
							b.Fatalf("get %s: %v", id, err)
						}
					}
				}
				for _, q := range fx.mix {
					run(main, q)
				}
				waitForBuilds(b, e)
				for range 2 {
					for _, q := range fx.mix {
						run(main, q)
					}
				}
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			// cost[later][side] by kind, "" for all; side 0 is main.
			cost := [2]map[string]*[2]sideCost{{}, {}}
			add := func(later int, kind string, s int, wall, cpu time.Duration) {
				for _, k := range []string{"", kind} {
					c := cost[later][k]
					if c == nil {
						c = new([2]sideCost)
						cost[later][k] = c
					}
					c[s].wall += wall
					c[s].cpu += cpu
				}
			}
			b.StartTimer()
			for range b.N {
				child := engine.Ref{Workspace: main.Workspace, Database: main.Database, Branch: fmt.Sprintf("kid%04d", fx.forks)}
				fx.forks++
				if err := e.Branches().Create(child, engine.CreateBranchRequest{From: main.Branch}); err != nil {
					b.Fatal(err)
				}
				for pass := range passes {
					later := min(pass, 1)
					for i, q := range fx.mix {
						refs := [2]engine.Ref{main, child}
						for k := range 2 {
							s := (k + i/8 + pass) % 2
							t0, c0 := time.Now(), threadCPU()
							pprof.Do(context.Background(), pprof.Labels("side", [2]string{"main", "child"}[s], "pass", [2]string{"first", "later"}[later]), func(context.Context) {
								run(refs[s], q)
							})
							add(later, q.kind, s, time.Since(t0), threadCPU()-c0)
						}
					}
				}
				if err := e.Branches().Delete(child); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			queries := func(later int) float64 {
				if later == 0 {
					return float64(b.N * len(fx.mix))
				}
				return float64(b.N * (passes - 1) * len(fx.mix))
			}
			for later, name := range []string{"first", "later"} {
				all := cost[later][""]
				b.ReportMetric(float64(all[0].cpu.Nanoseconds())/queries(later), name+"-main-cpu-ns/query")
				b.ReportMetric(float64(all[1].cpu.Nanoseconds())/queries(later), name+"-child-cpu-ns/query")
				b.ReportMetric(float64(all[1].cpu)/float64(all[0].cpu), name+"-child/main-cpu")
				b.ReportMetric(float64(all[1].wall)/float64(all[0].wall), name+"-child/main")
				for kind, c := range cost[later] {
					if kind != "" {
						b.ReportMetric(float64(c[1].cpu)/float64(c[0].cpu), name+"-"+kind+"-child/main-cpu")
					}
				}
			}
		})
	}
}

// mixRequest is the engine's request of a query of the suite's mix, a page
// of queryPage records.
func mixRequest(b *testing.B, q gen.FilterQuery) engine.QueryRequest {
	req := engine.QueryRequest{Page: engine.PageInput{Size: &queryPage}}
	var err error
	if req.Filter, err = index.ReadFilter(q.Filter); err == nil && string(q.Sort) != "null" {
		req.Sort, err = index.ReadSort(q.Sort)
	}
	if err != nil {
		b.Fatalf("%s %s: %v", q.Filter, q.Sort, err)
	}
	return req
}
