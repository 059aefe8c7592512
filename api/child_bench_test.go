package api

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/internal/proccpu"
)

// BenchmarkServeQueryChild is W6's query mix on a child against main over
// loopback HTTP (target: child ≤ 1.3× main): a fork of the benchmark
// table's branch made after the load, and the eq, eq-sort and range
// classes of BenchmarkServeQuery sent to main and to the child in turns,
// one request at a time, the side that goes first alternating. It reports
// the wall and process CPU time per query of each side and their ratios
// child/main, which hold on a shared machine where the times drift.
func BenchmarkServeQueryChild(b *testing.B) {
	cfg := loadHTTPBenchConfig(b)
	srv := startHTTPBenchServer(b, cfg, cfg.records)
	child := srv.ref
	child.Branch = "child"
	if err := srv.srv.eng.Branches().Create(child, engine.CreateBranchRequest{From: srv.ref.Branch}); err != nil {
		b.Fatal(err)
	}
	bases := [2]string{srv.base, strings.Replace(srv.base, ":main/", ":child/", 1)}
	var bodies [][]byte
	for _, q := range serveQueryClasses() {
		for i := range q.filters {
			bodies = append(bodies, q.body(i))
		}
	}
	client := &fasthttp.HostClient{Addr: srv.addr}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	send := func(path string, body []byte) {
		req.Reset()
		req.Header.SetMethod("POST")
		req.SetRequestURI(path)
		req.URI().SetHost(srv.addr)
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.SetBodyRaw(body)
		if err := client.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != 200 {
			b.Fatalf("%s: status %d: %s", path, resp.StatusCode(), resp.Body())
		}
	}
	// A summary builds the column store both branches read, as the
	// suite's warm-up does; two passes of the mix then warm the caches.
	send(srv.base+"/summarize", []byte(`{"columns":["category"],"summaries":{"n":{"count":"*"}}}`))
	for range 2 {
		for _, body := range bodies {
			send(bases[0]+"/query", body)
			send(bases[1]+"/query", body)
		}
	}
	var wall, cpu [2]time.Duration
	run := func(side int, body []byte) {
		t0, c0 := time.Now(), proccpu.Process()
		send(bases[side]+"/query", body)
		wall[side] += time.Since(t0)
		cpu[side] += proccpu.Process() - c0
	}
	b.ResetTimer()
	for i := range b.N {
		body := bodies[i%len(bodies)]
		first := (i / len(bodies)) % 2
		run(first, body)
		run(1-first, body)
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(wall[0]), "main-ns/query")
	b.ReportMetric(per(wall[1]), "child-ns/query")
	b.ReportMetric(per(wall[1])/per(wall[0]), "child/main")
	if cpu[0] > 0 {
		b.ReportMetric(per(cpu[0]), "main-cpu-ns/query")
		b.ReportMetric(per(cpu[1]), "child-cpu-ns/query")
		b.ReportMetric(per(cpu[1])/per(cpu[0]), "child/main-cpu")
	}
}
