package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/internal/proccpu"
)

// BenchmarkHTTPBulkLoad measures W1 of BENCHMARKS.md over HTTP in one
// process: COPPICE_HTTP_BENCH_RECORDS generated docs (default 2e4), every
// column indexed and the body searchable, posted in bulk requests of 1000
// with two requests in flight to a server that syncs every write. It
// reports docs/s, the process CPU per doc (server and load generator, both
// in this process) and the median and slowest request. Run it with -trace,
// -mutexprofile or -blockprofile to see what the requests wait on; with
// COPPICE_HTTP_BENCH_CPUPROFILE set to a path it writes a CPU profile of the
// load alone, without the dataset generation and the server's setup.
func BenchmarkHTTPBulkLoad(b *testing.B) {
	n := benchEnvInt(b, "COPPICE_HTTP_BENCH_RECORDS", 2e4)
	g := gen.New(gen.Config{N: n, Seed: 1})
	var bodies [][]byte
	var docs []json.RawMessage
	if err := g.Docs(func(d map[string]any) error {
		js, err := json.Marshal(d)
		docs = append(docs, js)
		if len(docs) == engine.MaxBulkRecords {
			bodies = append(bodies, bulkJSON(docs))
			docs = docs[:0]
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	if len(docs) > 0 {
		bodies = append(bodies, bulkJSON(docs))
	}
	for b.Loop() {
		b.StopTimer()
		addr, base := startBulkServer(b, g)
		stop := startLoadProfile(b)
		cpu0 := proccpu.Process()
		b.StartTimer()
		lat, elapsed := postBulk(b, addr, base, bodies, 2)
		b.StopTimer()
		cpu := proccpu.Process() - cpu0
		stop()
		b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/doc")
		slices.Sort(lat)
		b.ReportMetric(float64(n)/elapsed.Seconds(), "docs/s")
		b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
		b.ReportMetric(float64(lat[len(lat)-1].Milliseconds()), "max-ms")
		b.StartTimer()
	}
}

// startLoadProfile starts a CPU profile into the file that
// COPPICE_HTTP_BENCH_CPUPROFILE names, if set, and returns its stop.
func startLoadProfile(b *testing.B) (stop func()) {
	path := os.Getenv("COPPICE_HTTP_BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}

// bulkJSON is the body of a bulk request of docs.
func bulkJSON(docs []json.RawMessage) []byte {
	js, err := json.Marshal(map[string]any{"records": docs})
	if err != nil {
		panic(err)
	}
	return js
}

// startBulkServer serves an empty database with the users and docs tables
// of the generated dataset, users loaded, writes synced, and returns its
// address and the path prefix of its tables.
func startBulkServer(b *testing.B, g *gen.Gen) (addr, base string) {
	b.Helper()
	_, addr, base = startBulkServerOf(b, g)
	return addr, base
}

// startBulkServerOf is startBulkServer that also returns the server, and
// the database also has an empty table ingestTable of the docs' columns.
func startBulkServerOf(b *testing.B, g *gen.Gen) (srv *Server, addr, base string) {
	b.Helper()
	eng, err := engine.Open(b.TempDir(), engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	info, err := Bootstrap(eng, testKey)
	if err != nil {
		b.Fatal(err)
	}
	ref := engine.Ref{Workspace: info.Workspace, Database: "docs", Branch: "main"}
	if _, err := eng.CreateDatabase(engine.CreateDatabaseRequest{Workspace: info.Workspace, Name: "docs", Region: "local"}); err != nil {
		b.Fatal(err)
	}
	for _, t := range []struct {
		name string
		cols []engine.ColumnDef
	}{{gen.UsersTable, gen.UsersColumns()}, {gen.DocsTable, gen.DocsColumns()}, {ingestTable, gen.DocsColumns()}} {
		if _, err := eng.Schema().CreateTable(ref, t.name); err != nil {
			b.Fatal(err)
		}
		if _, err := eng.Schema().SetTableColumns(ref, t.name, t.cols); err != nil {
			b.Fatal(err)
		}
	}
	var users []map[string]any
	flush := func() {
		if _, err := eng.BulkInsert(context.Background(), ref, gen.UsersTable, users); err != nil {
			b.Fatal(err)
		}
		users = users[:0]
	}
	if err := g.Users(func(u map[string]any) error {
		if users = append(users, u); len(users) == engine.MaxBulkRecords {
			flush()
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	if len(users) > 0 {
		flush()
	}
	srv, err = New(eng, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		eng.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := eng.Close(); err != nil {
			b.Errorf("close engine: %v", err)
		}
	})
	return srv, serveBench(b, "server", srv.Serve, srv.Shutdown), "/ws/" + info.WorkspaceID + "/db/docs:main/tables/"
}

// postBulk posts bodies to the docs table with conns requests in flight
// and returns each request's latency and the elapsed time.
func postBulk(b *testing.B, addr, base string, bodies [][]byte, conns int) ([]time.Duration, time.Duration) {
	lat, elapsed, err := runTimedLoad(addr, conns, len(bodies), 200, time.Minute, func(req *fasthttp.Request, i int) {
		req.Header.SetMethod("POST")
		req.SetRequestURI(base + gen.DocsTable + "/bulk")
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(bodies[i])
	}, true)
	if err != nil {
		b.Error(err)
	}
	return lat, elapsed
}

// BenchmarkHTTPInsertDocs is the single-insert twin of BenchmarkHTTPBulkLoad
// (W1's single inserts in the suite): the same generated docs, each POSTed
// alone without its id to a server that syncs every write, from 1, 16 and
// 64 connections (or only COPPICE_HTTP_BENCH_CONNS when set), against the
// trivial handler answering a body of the server's size. Its
// server-cpu-ns/req set beside BenchmarkHTTPBulkLoad's cpu-µs/doc is what
// a doc costs alone and in bulk. COPPICE_HTTP_BENCH_INSERTS docs are sent
// per side and connection count (default 5e3).
func BenchmarkHTTPInsertDocs(b *testing.B) {
	cfg := loadHTTPBenchConfig(b)
	conns := []int{1, 16, 64}
	if os.Getenv("COPPICE_HTTP_BENCH_CONNS") != "" {
		conns = []int{cfg.conns}
	}
	// Enough docs for every side, warm-up and connection count without
	// sending one twice: each insert makes a new record.
	n := cfg.inserts
	g := gen.New(gen.Config{N: n, Seed: 1})
	var bodies [][]byte
	if err := g.Docs(func(d map[string]any) error {
		delete(d, "id")
		js, err := json.Marshal(d)
		bodies = append(bodies, js)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	srv, addr, base := startBulkServerOf(b, g)
	path := base + gen.DocsTable + "/data"
	fill := postBodies(path, bodies)
	trivial := startTrivialServer(b, 201, fetchOnce(b, addr, 201, fill))
	for _, c := range conns {
		b.Run(fmt.Sprintf("conns%d", c), func(b *testing.B) {
			cfg := cfg
			cfg.conns = c
			k := n
			if c == 1 {
				k = max(n/10, cfg.rounds)
			}
			reportWrites(b, srv.eng, func() { compareLoads(b, cfg, k, addr, trivial, 201, 201, fill) })
		})
	}
}
