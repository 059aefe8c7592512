package api

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
	"github.com/coppice-db/coppice/internal/proccpu"
)

// The HTTP benchmarks measure W2 of BENCHMARKS.md and its write twin: the
// server against a trivial fasthttp handler on another loopback port, both
// driven by the same load loop in the same run, so the ratio holds on a
// shared machine where absolute figures drift. The load loop runs in this
// process: on a 2-core machine client and server share the cores, for the
// trivial handler as for the server.
//
// Sizes come from the environment:
//
//	COPPICE_HTTP_BENCH_RECORDS   records loaded for point gets (default 1e4)
//	COPPICE_HTTP_BENCH_GETS      point gets per side and iteration (default 2e4)
//	COPPICE_HTTP_BENCH_INSERTS   inserts per side and iteration (default 5e3)
//	COPPICE_HTTP_BENCH_CONNS     connections, one goroutine each (default 64;
//	                             inserts: 1, 16 and 64 unless set)
//	COPPICE_HTTP_BENCH_ROUNDS    alternations of the two sides (default 4)
//	COPPICE_HTTP_BENCH_NOSYNC=1  acknowledge writes before they reach the disk
//	COPPICE_HTTP_BENCH_BODY      words of a record's body (default 12; the
//	                             suite's dataset has 30–200)
//	COPPICE_HTTP_BENCH_VOCAB     distinct words of titles and bodies, drawn
//	                             Zipf-distributed when more than the 26 of
//	                             the default list (the suite's dataset draws
//	                             from tens of thousands)
//	COPPICE_HTTP_BENCH_RECORD_CACHE  the server's RecordCacheSize in bytes
//	                             (default the server's; -1 turns it off, so
//	                             that every record is read and encoded)
//	COPPICE_HTTP_BENCH_BLOCK_CACHE  the storage block cache in bytes (default
//	                             the engine's; smaller than the loaded
//	                             records, gets read blocks from the disk)
//	COPPICE_HTTP_BENCH_DIR       a data directory kept between runs: loaded
//	                             once for a number of records and body size,
//	                             then served again (for reads: writes change
//	                             it)
//
// Run them with: go test -run '^$' -bench HTTP -benchtime 1x ./api/

// httpBenchConfig is the sizing of a run.
type httpBenchConfig struct {
	records, gets, inserts, conns, rounds int
	noSync                                bool
	bodyWords, vocab                      int
	recordCache                           int // Options.RecordCacheSize; 0: the default
	blockCache                            int // engine.Options.CacheSize; 0: the default
}

// benchEnvInt reads a positive integer from the environment; "1e4" works.
func benchEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 1 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return int(f)
}

// loadHTTPBenchConfig reads the sizing from the environment.
func loadHTTPBenchConfig(b *testing.B) httpBenchConfig {
	cfg := httpBenchConfig{
		records: benchEnvInt(b, "COPPICE_HTTP_BENCH_RECORDS", 1e4),
		gets:    benchEnvInt(b, "COPPICE_HTTP_BENCH_GETS", 2e4),
		inserts: benchEnvInt(b, "COPPICE_HTTP_BENCH_INSERTS", 5e3),
		conns:   benchEnvInt(b, "COPPICE_HTTP_BENCH_CONNS", 64),
		rounds:  benchEnvInt(b, "COPPICE_HTTP_BENCH_ROUNDS", 4),
		noSync:  os.Getenv("COPPICE_HTTP_BENCH_NOSYNC") == "1",
		// The body is the bulk of a record's bytes.
		bodyWords:  benchEnvInt(b, "COPPICE_HTTP_BENCH_BODY", 12),
		vocab:      benchEnvInt(b, "COPPICE_HTTP_BENCH_VOCAB", len(httpBenchWords)),
		blockCache: benchEnvInt(b, "COPPICE_HTTP_BENCH_BLOCK_CACHE", int(engine.DefaultCacheSize)),
	}
	if v := os.Getenv("COPPICE_HTTP_BENCH_RECORD_CACHE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n == 0 {
			b.Fatalf("COPPICE_HTTP_BENCH_RECORD_CACHE=%q: want a nonzero number of bytes, or -1", v)
		}
		cfg.recordCache = n
	}
	return cfg
}

// Names of the benchmark database and table.
const (
	httpBenchDB    = "bench"
	httpBenchTable = "items"
)

// httpBenchColumns is the schema of the benchmark table: the scalar column
// types of the BENCHMARKS.md dataset, with a short text for the search
// index.
var httpBenchColumns = []engine.ColumnDef{
	{Name: "title", Type: engine.TypeString},
	{Name: "body", Type: engine.TypeText},
	{Name: "category", Type: engine.TypeString},
	{Name: "price", Type: engine.TypeFloat},
	{Name: "views", Type: engine.TypeInt},
	{Name: "active", Type: engine.TypeBool},
	{Name: "created_at", Type: engine.TypeDatetime},
}

// httpBenchWords is the vocabulary of titles and bodies.
var httpBenchWords = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima
	mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu`)

// httpBenchRecord returns record i of the table, as JSON and as the values
// a JSON decoder would give (numbers as json.Number).
func httpBenchRecord(i int, cfg httpBenchConfig) (string, map[string]any) {
	bodyWords := cfg.bodyWords
	w := func(k int) string { return httpBenchWords[(i*7+k*13)%len(httpBenchWords)] }
	if cfg.vocab > len(httpBenchWords) {
		r := rand.New(rand.NewPCG(uint64(i), 18))
		z := rand.NewZipf(r, 1.1, 1, uint64(cfg.vocab-1))
		w = func(int) string { return httpBenchWord(z.Uint64()) }
	}
	title := w(0) + " " + w(1) + " " + w(2)
	var body []string
	for k := range bodyWords {
		body = append(body, w(k+3))
	}
	cat := "cat" + strconv.Itoa(i%20)
	price := strconv.Itoa(i%500) + "." + strconv.Itoa(i%100)
	views := strconv.Itoa(i * 37 % 100000)
	active := i%10 < 7
	created := time.Unix(1.6e9+int64(i)*3607, 0).UTC().Format(time.RFC3339)
	js := fmt.Sprintf(`{"title":%q,"body":%q,"category":%q,"price":%s,"views":%s,"active":%t,"created_at":%q}`,
		title, strings.Join(body, " "), cat, price, views, active, created)
	values, err := decodeRecordJSON(js)
	if err != nil {
		panic(err)
	}
	return js, values
}

// decodeRecordJSON decodes a record body the way the server does.
func decodeRecordJSON(js string) (map[string]any, error) {
	var v map[string]any
	return v, decodeStrict([]byte(js), &v)
}

// httpBenchWord spells word k of a large vocabulary in letters, so that
// the text analyzer keeps it whole.
func httpBenchWord(k uint64) string {
	w := []byte{'w'}
	for {
		w = append(w, byte('a'+k%26))
		if k /= 26; k == 0 {
			return string(w)
		}
	}
}

// httpBenchID is the id of loaded record i.
func httpBenchID(i int) string { return fmt.Sprintf("it%06d", i) }

// httpBenchServer is a real server on a loopback port over a benchmark
// table.
type httpBenchServer struct {
	srv  *Server
	ref  engine.Ref
	addr string
	base string // path prefix of the table: /ws/{ws}/db/bench:main/tables/items
}

// startHTTPBenchServer loads n records without sync, reopens the data with
// the production write settings (unless cfg.noSync) and serves it.
func startHTTPBenchServer(b *testing.B, cfg httpBenchConfig, n int) *httpBenchServer {
	b.Helper()
	dir, loaded := httpBenchDir(b, cfg, n)
	eng, err := engine.Open(dir, engine.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	info, ok := BootstrappedWith(eng, testKey)
	if !ok {
		if loaded {
			b.Fatalf("%s: loaded, but not bootstrapped with the benchmark's key", dir)
		}
		if info, err = Bootstrap(eng, testKey); err != nil {
			b.Fatal(err)
		}
	}
	ref := engine.Ref{Workspace: info.Workspace, Database: httpBenchDB, Branch: "main"}
	if !loaded {
		loadHTTPBench(b, eng, ref, cfg, n)
		markHTTPBenchDir(b, cfg, n)
	}
	if err := eng.Close(); err != nil {
		b.Fatal(err)
	}
	if eng, err = engine.Open(dir, engine.Options{NoSync: cfg.noSync, CacheSize: int64(cfg.blockCache)}); err != nil {
		b.Fatal(err)
	}
	// At warn and with metrics, as the benchmark suite runs the server:
	// no access log, every request counted.
	srv, err := New(eng, Options{
		RecordCacheSize: cfg.recordCache,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Metrics:         NewMetrics(),
	})
	if err != nil {
		eng.Close()
		b.Fatal(err)
	}
	addr := serveBench(b, "server", srv.Serve, srv.Shutdown)
	b.Cleanup(func() {
		if err := eng.Close(); err != nil {
			b.Errorf("close engine: %v", err)
		}
	})
	if n > 0 {
		awaitColumnStore(b, eng, ref)
	}
	return &httpBenchServer{
		srv:  srv,
		ref:  ref,
		addr: addr,
		base: "/ws/" + info.WorkspaceID + "/db/" + httpBenchDB + ":main/tables/" + httpBenchTable,
	}
}

// loadHTTPBench creates the benchmark table of ref and loads n records.
func loadHTTPBench(b *testing.B, eng *engine.Engine, ref engine.Ref, cfg httpBenchConfig, n int) {
	b.Helper()
	if _, err := eng.CreateDatabase(engine.CreateDatabaseRequest{Workspace: ref.Workspace, Name: httpBenchDB, Region: "local"}); err != nil {
		b.Fatal(err)
	}
	if _, err := eng.Schema().CreateTable(ref, httpBenchTable); err != nil {
		b.Fatal(err)
	}
	if _, err := eng.Schema().SetTableColumns(ref, httpBenchTable, httpBenchColumns); err != nil {
		b.Fatal(err)
	}
	batch := make([]map[string]any, 0, engine.MaxBulkRecords)
	for start := 0; start < n; start += engine.MaxBulkRecords {
		batch = batch[:0]
		for i := start; i < min(n, start+engine.MaxBulkRecords); i++ {
			_, rec := httpBenchRecord(i, cfg)
			rec["id"] = httpBenchID(i)
			batch = append(batch, rec)
		}
		if _, err := eng.BulkInsert(context.Background(), ref, httpBenchTable, batch); err != nil {
			b.Fatalf("load: %v", err)
		}
	}
}

// httpBenchDir returns the data directory of a run, and whether it holds
// the n records of cfg already: COPPICE_HTTP_BENCH_DIR when set, else a
// new temporary one.
func httpBenchDir(b *testing.B, cfg httpBenchConfig, n int) (string, bool) {
	dir := os.Getenv("COPPICE_HTTP_BENCH_DIR")
	if dir == "" {
		return b.TempDir(), false
	}
	_, err := os.Stat(filepath.Join(dir, httpBenchMark(cfg, n)))
	return dir, err == nil
}

// markHTTPBenchDir notes in COPPICE_HTTP_BENCH_DIR what it was loaded with.
func markHTTPBenchDir(b *testing.B, cfg httpBenchConfig, n int) {
	dir := os.Getenv("COPPICE_HTTP_BENCH_DIR")
	if dir == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, httpBenchMark(cfg, n)), nil, 0o644); err != nil {
		b.Fatal(err)
	}
}

// httpBenchMark names the file that says a directory holds n records with
// cfg's body size.
func httpBenchMark(cfg httpBenchConfig, n int) string {
	return fmt.Sprintf("bench-loaded-%d-%d", n, cfg.bodyWords)
}

// awaitColumnStore builds the table's column store with a summary and
// waits for it, as the benchmark suite does before its reads, and as a
// server up for a while has: point gets find their rows in it.
func awaitColumnStore(b *testing.B, eng *engine.Engine, ref engine.Ref) {
	b.Helper()
	sum := engine.SummarizeRequest{Summaries: []engine.Summary{{Name: "c", Function: "count", Column: "*"}}}
	if _, err := eng.Summarize(context.Background(), ref, httpBenchTable, sum); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		st, err := eng.Stats(0)
		if err != nil {
			b.Fatal(err)
		}
		if st.BuildsInProgress == 0 {
			return
		}
	}
	b.Fatal("the column store was not built within a minute")
}

// serveBench serves on a free loopback port until the benchmark ends and
// returns the address. Cleanups run last-in first-out, so a server stops
// before the engine it serves is closed. The server's goroutines carry the
// profiler label side=name, so that a CPU profile of the benchmark tells
// the two servers and the load loop apart (pprof -tagfocus side=server).
func serveBench(b *testing.B, name string, serve func(net.Listener) error, shutdown func(context.Context) error) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go pprof.Do(context.Background(), pprof.Labels("side", name), func(context.Context) { served <- serve(ln) })
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			b.Errorf("shutdown: %v", err)
		}
		ln.Close()
		<-served
	})
	return ln.Addr().String()
}

// startTrivialServer serves a fixed status and JSON body for every request
// on a free loopback port: the ceiling of the HTTP layer.
func startTrivialServer(b *testing.B, status int, body []byte) string {
	b.Helper()
	body = append([]byte(nil), body...)
	srv := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			ctx.SetStatusCode(status)
			ctx.SetContentType("application/json")
			ctx.SetBody(body)
		},
		Name: "trivial",
	}
	return serveBench(b, "trivial", srv.Serve, srv.ShutdownWithContext)
}

// loadRequest fills req with request i of a load; the URI's host is set by
// the caller.
type loadRequest func(req *fasthttp.Request, i int)

// runLoad sends n requests to addr over conns keep-alive connections, one
// goroutine each, and returns the elapsed time. Every response must have
// status want.
func runLoad(addr string, conns, n, want int, fill loadRequest) (time.Duration, error) {
	_, elapsed, err := runTimedLoad(addr, conns, n, want, 30*time.Second, fill, false)
	return elapsed, err
}

// runTimedLoad is runLoad with a timeout per request's read and write; when
// timed, it also returns each request's latency, in no particular order.
func runTimedLoad(addr string, conns, n, want int, timeout time.Duration, fill loadRequest, timed bool) ([]time.Duration, time.Duration, error) {
	c := &fasthttp.HostClient{
		Addr:                addr,
		MaxConns:            conns,
		ReadTimeout:         timeout,
		WriteTimeout:        timeout,
		MaxIdleConnDuration: time.Minute,
	}
	defer c.CloseIdleConnections()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		lat      []time.Duration
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) { errOnce.Do(func() { firstErr = err }) }
	start := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			var mine []time.Duration
			defer func() {
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				req.Reset()
				fill(req, i)
				req.URI().SetHost(addr)
				t0 := time.Now()
				if err := c.Do(req, resp); err != nil {
					fail(err)
					return
				}
				if timed {
					mine = append(mine, time.Since(t0))
				}
				if resp.StatusCode() != want {
					fail(fmt.Errorf("%s %s: status %d, want %d: %.300s", req.Header.Method(), req.URI().Path(),
						resp.StatusCode(), want, resp.Body()))
					return
				}
			}
		}()
	}
	wg.Wait()
	return lat, time.Since(start), firstErr
}

// compareLoads runs the same load against the server and the trivial
// handler, alternating in rounds after a warm-up of each, and reports
// server-rps, trivial-rps and their ratio, and the process's CPU time per
// request of each side (client and server together: the client's share is
// the same on both sides), which waits for a core on a shared machine do
// not inflate as they do the rates.
func compareLoads(b *testing.B, cfg httpBenchConfig, n int, server, trivial string, wantServer, wantTrivial int, fill loadRequest) {
	b.Helper()
	warm := max(cfg.conns, min(n/10, 2000))
	offset := 0 // indexes run on across calls: each call reads other records
	run := func(addr string, count, want int, cpu *time.Duration) time.Duration {
		from := offset
		offset += count
		c0 := proccpu.Process()
		d, err := runLoad(addr, cfg.conns, count, want, func(req *fasthttp.Request, i int) { fill(req, from+i) })
		if err != nil {
			b.Fatal(err)
		}
		*cpu += proccpu.Process() - c0
		return d
	}
	var cServer, cTrivial time.Duration
	run(trivial, warm, wantTrivial, &cTrivial)
	run(server, warm, wantServer, &cServer)
	cServer, cTrivial = 0, 0
	var tServer, tTrivial time.Duration
	done := 0
	for b.Loop() {
		for r := range cfg.rounds {
			count := n/cfg.rounds + boolInt(r < n%cfg.rounds)
			tTrivial += run(trivial, count, wantTrivial, &cTrivial)
			tServer += run(server, count, wantServer, &cServer)
		}
		done += n
	}
	serverRPS := float64(done) / tServer.Seconds()
	trivialRPS := float64(done) / tTrivial.Seconds()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(serverRPS, "server-rps")
	b.ReportMetric(trivialRPS, "trivial-rps")
	b.ReportMetric(serverRPS/trivialRPS, "ratio")
	if cServer > 0 && cTrivial > 0 {
		b.ReportMetric(float64(cServer.Nanoseconds())/float64(done), "server-cpu-ns/req")
		b.ReportMetric(float64(cTrivial.Nanoseconds())/float64(done), "trivial-cpu-ns/req")
	}
}

// boolInt is 1 for true: a round takes one of the leftover requests.
func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

// BenchmarkHTTPPointGet is W2: GET T/data/{id} with 64 connections against
// the server over a loaded table and against a trivial handler answering a
// record of the same size.
func BenchmarkHTTPPointGet(b *testing.B) {
	cfg := loadHTTPBenchConfig(b)
	srv := startHTTPBenchServer(b, cfg, cfg.records)
	paths := make([]string, cfg.records)
	for i := range paths {
		paths[i] = srv.base + "/data/" + httpBenchID(i)
	}
	// Record i of the load reads a record spread over the table.
	fill := func(req *fasthttp.Request, i int) {
		req.Header.SetMethod("GET")
		req.SetRequestURI(paths[i*7919%len(paths)])
		req.Header.Set("Authorization", "Bearer "+testKey)
	}
	body := fetchOnce(b, srv.addr, 200, fill)
	trivial := startTrivialServer(b, 200, body)
	compareLoads(b, cfg, cfg.gets, srv.addr, trivial, 200, 200, fill)
}

// BenchmarkHTTPServerOverhead is W2's load on requests of the server that
// read nothing from storage, against the trivial handler answering the
// same body: what the server costs a request outside its storage read
// (connection, admission, authentication, routing, metrics, statistics,
// response). "hot" gets one record over and over, which the record cache
// answers from its encoding after the first; "healthz" is the health
// check, which skips admission and authentication.
func BenchmarkHTTPServerOverhead(b *testing.B) {
	cfg := loadHTTPBenchConfig(b)
	srv := startHTTPBenchServer(b, cfg, min(cfg.records, 1000))
	hot := srv.base + "/data/" + httpBenchID(0)
	routes := []struct {
		name string
		fill loadRequest
	}{
		{"hot", func(req *fasthttp.Request, _ int) {
			req.Header.SetMethod("GET")
			req.SetRequestURI(hot)
			req.Header.Set("Authorization", "Bearer "+testKey)
		}},
		{"healthz", func(req *fasthttp.Request, _ int) {
			req.Header.SetMethod("GET")
			req.SetRequestURI("/healthz")
		}},
	}
	for _, rt := range routes {
		b.Run(rt.name, func(b *testing.B) {
			body := fetchOnce(b, srv.addr, 200, rt.fill)
			trivial := startTrivialServer(b, 200, body)
			compareLoads(b, cfg, cfg.gets, srv.addr, trivial, 200, 200, rt.fill)
		})
	}
}

// postBodies fills request i of a load as a POST of bodies[i mod len] to
// path, with the benchmark's key.
func postBodies(path string, bodies [][]byte) func(*fasthttp.Request, int) {
	return func(req *fasthttp.Request, i int) {
		req.Header.SetMethod("POST")
		req.SetRequestURI(path)
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(bodies[i%len(bodies)])
	}
}

// BenchmarkHTTPInsert is W9, the write twin of W2: POST T/data of one
// record with a generated id from 1, 16 and 64 connections (or only
// COPPICE_HTTP_BENCH_CONNS when set), against the server (synced writes,
// shared among concurrent writers) and against a trivial handler answering
// 201 with a body of the server's size. One connection waits for a sync
// per insert: it sends a tenth of the inserts, so that it takes about as
// long as the others.
func BenchmarkHTTPInsert(b *testing.B) {
	cfg := loadHTTPBenchConfig(b)
	srv := startHTTPBenchServer(b, cfg, 0)
	bodies := make([][]byte, 1024)
	for i := range bodies {
		js, _ := httpBenchRecord(i, cfg)
		bodies[i] = []byte(js)
	}
	path := srv.base + "/data"
	fill := postBodies(path, bodies)
	body := fetchOnce(b, srv.addr, 201, fill)
	trivial := startTrivialServer(b, 201, body)
	conns := []int{1, 16, 64}
	if os.Getenv("COPPICE_HTTP_BENCH_CONNS") != "" {
		conns = []int{cfg.conns}
	}
	for _, c := range conns {
		b.Run(fmt.Sprintf("conns%d", c), func(b *testing.B) {
			cfg := cfg
			cfg.conns = c
			n := cfg.inserts
			if c == 1 {
				n = max(n/10, cfg.rounds)
			}
			reportWrites(b, srv.srv.eng, func() { compareLoads(b, cfg, n, srv.addr, trivial, 201, 201, fill) })
		})
	}
}

// reportWrites runs load and reports how its writes were committed: the
// writes per group and per WAL sync, the storage keys per write and, what
// bounds the rate when the cores are not all busy, the writer lock held
// per write and the time of one WAL sync.
func reportWrites(b *testing.B, eng *engine.Engine, load func()) {
	st0, _ := eng.Stats(0)
	load()
	st1, _ := eng.Stats(0)
	g, w := st1.Storage.WriteGroups-st0.Storage.WriteGroups, st1.Storage.GroupedWrites-st0.Storage.GroupedWrites
	syncs := max(st1.Storage.WALSyncs-st0.Storage.WALSyncs, 1)
	b.ReportMetric(float64(w)/float64(max(g, 1)), "writes/group")
	b.ReportMetric(float64(w)/float64(syncs), "writes/sync")
	b.ReportMetric(float64(st1.Storage.KeysWritten-st0.Storage.KeysWritten)/float64(max(w, 1)), "keys/write")
	b.ReportMetric(float64((st1.Storage.WriterLockHeld-st0.Storage.WriterLockHeld).Microseconds())/float64(max(w, 1)), "lock-µs/write")
	b.ReportMetric(float64((st1.Storage.WALSyncTime-st0.Storage.WALSyncTime).Microseconds())/float64(syncs), "µs/sync")
}

// BenchmarkServePointGet is the server's share of W2 without the network:
// the handler answering point gets of records spread over the table, in
// this goroutine, each record read twice before (a record is cached the
// second time it is read, as after the HTTP benchmark's first passes). Its
// ns/op and allocs/op are what the HTTP ratio loses to the trivial handler.
func BenchmarkServePointGet(b *testing.B) { benchServePointGets(b, 2) }

// BenchmarkServePointGetOnce is BenchmarkServePointGet as the suite's W2
// asks: with the server's record cache, each record is read once (ids go
// through the table in steps of 7919, so none recurs before every record
// was read), and every get is a miss of that cache.
func BenchmarkServePointGetOnce(b *testing.B) { benchServePointGets(b, 0) }

// benchServePointGets times the handler's point gets after reading every
// record warm times.
func benchServePointGets(b *testing.B, warm int) {
	cfg := loadHTTPBenchConfig(b)
	srv := startHTTPBenchServer(b, cfg, cfg.records)
	paths := make([]string, cfg.records)
	for i := range paths {
		paths[i] = srv.base + "/data/" + httpBenchID(i)
	}
	var ctx fasthttp.RequestCtx
	auth := "Bearer " + testKey
	serve := func(i int) {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod("GET")
		ctx.Request.SetRequestURI(paths[i*7919%len(paths)])
		ctx.Request.Header.Set("Authorization", auth)
		srv.srv.serve(&ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
		ctx.ResetUserValues()
	}
	for range warm {
		for i := range paths {
			serve(i)
		}
	}
	loopCPU(b, serve)
}

// loopCPU runs op(0), op(1), … for the benchmark's iterations, reporting
// allocations and the process's CPU time per op.
func loopCPU(b *testing.B, op func(i int)) {
	b.ReportAllocs()
	c0 := proccpu.Process()
	i := 0
	for b.Loop() {
		op(i)
		i++
	}
	reportCPU(b, c0)
}

// reportCPU reports the process's CPU time per op since c0, which waits
// for a core on a shared machine do not inflate as they do ns/op.
func reportCPU(b *testing.B, c0 time.Duration) {
	if c := proccpu.Process() - c0; c > 0 {
		b.ReportMetric(float64(c.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// fetchOnce sends request 0 of a load and returns the response body.
func fetchOnce(b *testing.B, addr string, want int, fill loadRequest) []byte {
	b.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	fill(req, 0)
	req.URI().SetHost(addr)
	if err := fasthttp.DoTimeout(req, resp, 10*time.Second); err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode() != want {
		b.Fatalf("status %d, want %d: %s", resp.StatusCode(), want, resp.Body())
	}
	return append([]byte(nil), resp.Body()...)
}

// serveQueryClass is one shape of the W3 filter mix in BenchmarkServeQuery:
// the filters and sort of its queries, taken in turns.
type serveQueryClass struct {
	name    string
	filters []string
	sort    string // "" is the default order
}

// serveQueryClasses are W3's eq, eq-sort and range classes over the
// benchmark table. The equality classes cycle through the 20 categories,
// as the suite's draws do, so a page recurs; the range windows move over
// the prices, so pages rarely recur.
func serveQueryClasses() []serveQueryClass {
	var eq, eqSort, rng []string
	for c := range 20 {
		eq = append(eq, fmt.Sprintf(`{"category":"cat%d"}`, c))
		eqSort = append(eqSort, fmt.Sprintf(`{"category":"cat%d","active":true}`, c))
	}
	for lo := 0; lo < 475; lo += 7 {
		rng = append(rng, fmt.Sprintf(`{"price":{"$ge":%d,"$lt":%d}}`, lo, lo+25))
	}
	return []serveQueryClass{
		{name: "eq", filters: eq},
		{name: "eq-sort", filters: eqSort, sort: `{"created_at":"desc"}`},
		{name: "range", filters: rng},
	}
}

// body is the HTTP body of query i of the class.
func (q serveQueryClass) body(i int) []byte {
	b := `{"filter":` + q.filters[i%len(q.filters)]
	if q.sort != "" {
		b += `,"sort":` + q.sort
	}
	return []byte(b + `,"page":{"size":20}}`)
}

// warmQueries readies srv for timed query pages: a summary builds the
// table's column store, as the suite's warm-up does before W3, and two
// passes of every class warm the caches.
func warmQueries(b *testing.B, srv *httpBenchServer, classes []serveQueryClass) {
	b.Helper()
	fetchOnce(b, srv.addr, 200, func(req *fasthttp.Request, _ int) {
		req.Header.SetMethod("POST")
		req.SetRequestURI(srv.base + "/summarize")
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.SetBodyRaw([]byte(`{"columns":["category"],"summaries":{"n":{"count":"*"},"p":{"sum":"price"},"v":{"max":"views"},"c":{"min":"created_at"}}}`))
	})
	for range 2 {
		for _, q := range classes {
			for i := range q.filters {
				fetchOnce(b, srv.addr, 200, func(req *fasthttp.Request, _ int) {
					req.Header.SetMethod("POST")
					req.SetRequestURI(srv.base + "/query")
					req.Header.Set("Authorization", "Bearer "+testKey)
					req.SetBodyRaw(q.body(i))
				})
			}
		}
	}
}

// BenchmarkServeQuery is the server's share of W3's eq, eq-sort and range
// classes: a page of 20 over loopback HTTP, next to the same queries
// through engine.Query, so that the difference is what the HTTP layer adds
// (request decoding, response encoding, the socket); allocs/op and
// cpu-ns/op of "http" count the client's too.
func BenchmarkServeQuery(b *testing.B) {
	cfg := loadHTTPBenchConfig(b)
	srv := startHTTPBenchServer(b, cfg, cfg.records)
	classes := serveQueryClasses()
	warmQueries(b, srv, classes)
	for _, q := range classes {
		b.Run(q.name+"/engine", func(b *testing.B) {
			size := 20
			sort, err := index.ReadSort([]byte(cmp.Or(q.sort, "null")))
			if err != nil {
				b.Fatal(err)
			}
			opts := srv.srv.queryOptions()
			opts.Views, opts.Records = true, srv.srv.records // as the handler asks
			b.ReportAllocs()
			c0 := proccpu.Process()
			i := 0
			for b.Loop() {
				// Reading the filter is part of the query, as in the handler.
				f, err := index.ReadFilter([]byte(q.filters[i%len(q.filters)]))
				if err != nil {
					b.Fatal(err)
				}
				i++
				in := engine.QueryRequest{Filter: f, Sort: sort, Page: engine.PageInput{Size: &size}}
				if _, err := srv.srv.eng.Query(context.Background(), srv.ref, httpBenchTable, in, opts); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, c0)
		})
		b.Run(q.name+"/http", func(b *testing.B) {
			// The server over loopback, one request at a time, as the W3
			// client sends them.
			post := queryPoster(b, srv)
			bodies := make([][]byte, len(q.filters))
			for i := range bodies {
				bodies[i] = q.body(i)
			}
			loopCPU(b, func(i int) { post(bodies[i%len(bodies)]) })
		})
	}
}

// queryPoster returns a function that posts a query body to srv's table
// over one kept connection, as the W3 client does, and returns the answer's
// body (valid until the next call), failing b unless the answer is 200.
// The request's deadline needs the arrival time that only a served
// connection stamps.
func queryPoster(b *testing.B, srv *httpBenchServer) func(body []byte) []byte {
	client := &fasthttp.HostClient{Addr: srv.addr}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	b.Cleanup(func() {
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	})
	req.Header.SetMethod("POST")
	req.SetRequestURI(srv.base + "/query")
	req.URI().SetHost(srv.addr)
	req.Header.Set("Authorization", "Bearer "+testKey)
	return func(body []byte) []byte {
		req.SetBodyRaw(body)
		if err := client.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != 200 {
			b.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
		}
		return resp.Body()
	}
}

// BenchmarkServeQueryMix is W3's eq class over loopback HTTP alone and
// right after other classes, in turns within one run, so that their ratio
// says what the others cost an eq page (cache evictions, their garbage,
// work they leave running) on a shared machine: "after=mix" follows the
// eq-sort, range, ranges-sort and any-sort classes, "after=any-sort" the
// any-sort class alone, which the suite's mix sends right before eq. Each
// iteration is one eq request, timed; in the mix phase the other classes'
// requests precede it untimed. It reports the median of each phase
// (alone-µs, mix-µs), their ratio and the collections per eq request.
func BenchmarkServeQueryMix(b *testing.B) {
	cfg := loadHTTPBenchConfig(b)
	srv := startHTTPBenchServer(b, cfg, cfg.records)
	// W3's ranges-sort class: three range predicates over wide windows and
	// a sort, the heaviest of the mix in the suite.
	var ranges []string
	for lo := 0; lo < 400; lo += 13 {
		ranges = append(ranges, fmt.Sprintf(`{"price":{"$ge":%d},"views":{"$lt":%d},"active":true}`, lo, 1000+lo*5))
	}
	// W3's any-sort class: a union of an equality and a range, sorted on
	// two columns; the suite sends it right before eq.
	var anys []string
	for c := range 20 {
		anys = append(anys, fmt.Sprintf(`{"$any":[{"category":"cat%d"},{"views":{"$ge":%d}}]}`, c, 90000+c*97))
	}
	anySort := serveQueryClass{name: "any-sort", filters: anys, sort: `[{"price":"desc"},{"created_at":"asc"}]`}
	classes := append(serveQueryClasses(), serveQueryClass{name: "ranges-sort", filters: ranges, sort: `{"price":"asc"}`}, anySort)
	post := queryPoster(b, srv)
	send := func(q serveQueryClass, i int) { post(q.body(i)) }
	warmQueries(b, srv, classes)
	b.Run("after=mix", func(b *testing.B) { benchEqAfter(b, classes[0], classes[1:], send) })
	b.Run("after=any-sort", func(b *testing.B) { benchEqAfter(b, classes[0], []serveQueryClass{anySort}, send) })
}

// benchEqAfter times eq requests alone and, in alternate phases, each
// right after the requests of others, untimed.
func benchEqAfter(b *testing.B, eq serveQueryClass, others []serveQueryClass, send func(serveQueryClass, int)) {
	// A phase is long enough for the mix to evict what eq alone keeps.
	const phase = 200
	var alone, mix []time.Duration
	// Collections are counted at phase boundaries and charged to the phase
	// that ends there.
	var gcAlone, gcMix, lastGC uint32
	var ms runtime.MemStats
	countGC := func(endsMix bool) {
		runtime.ReadMemStats(&ms)
		if endsMix {
			gcMix += ms.NumGC - lastGC
		} else {
			gcAlone += ms.NumGC - lastGC
		}
		lastGC = ms.NumGC
	}
	runtime.ReadMemStats(&ms)
	lastGC = ms.NumGC
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		inMix := (i/phase)%2 == 1
		if i > 0 && i%phase == 0 {
			countGC(!inMix)
		}
		if inMix {
			for _, q := range others {
				send(q, i)
			}
		}
		t0 := time.Now()
		send(eq, i)
		d := time.Since(t0)
		if inMix {
			mix = append(mix, d)
		} else {
			alone = append(alone, d)
		}
		i++
	}
	countGC((i-1)/phase%2 == 1)
	if len(alone) == 0 || len(mix) == 0 {
		return // too few iterations for both phases
	}
	a, m := medianDuration(alone), medianDuration(mix)
	b.ReportMetric(float64(a.Nanoseconds())/1e3, "alone-µs")
	b.ReportMetric(float64(m.Nanoseconds())/1e3, "mix-µs")
	b.ReportMetric(float64(m)/float64(a), "mix/alone")
	b.ReportMetric(float64(gcAlone)/float64(len(alone)), "gc/alone-eq")
	b.ReportMetric(float64(gcMix)/float64(len(mix)), "gc/mix-eq")
}

// medianDuration returns the median of ds, which it sorts.
func medianDuration(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
