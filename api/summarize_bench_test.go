package api

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
	"github.com/coppice-db/coppice/internal/proccpu"
)

// summarizeBenchBody is W4's request on the benchmark table: the cheapest
// 80% of records grouped by category, with five summaries.
const summarizeBenchBody = `{"filter":{"price":{"$lt":400}},"columns":["category"],"summaries":{` +
	`"n":{"count":"*"},"views":{"sum":"views"},"avg_price":{"average":"price"},` +
	`"min_price":{"min":"price"},"max_created":{"max":"created_at"}},"page":{"size":20}}`

// BenchmarkServeSummarize is the server's share of W4: one summary over
// loopback HTTP next to the same summary through engine.Summarize, so that
// the difference is what the HTTP layer and the server process add.
func BenchmarkServeSummarize(b *testing.B) {
	cfg := loadHTTPBenchConfig(b)
	srv := startHTTPBenchServer(b, cfg, cfg.records)
	fill := func(req *fasthttp.Request, _ int) {
		req.Header.SetMethod("POST")
		req.SetRequestURI(srv.base + "/summarize")
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.SetBodyRaw([]byte(summarizeBenchBody))
	}
	fetchOnce(b, srv.addr, 200, fill) // builds the column store
	b.Run("engine", func(b *testing.B) {
		var body summarizeBody
		if err := json.Unmarshal([]byte(summarizeBenchBody), &body); err != nil {
			b.Fatal(err)
		}
		var in engine.SummarizeRequest
		var err error
		in.Filter, err = index.ReadFilter(body.Filter)
		if err == nil {
			in.Columns, err = index.ReadGroupColumns(body.Columns)
		}
		if err == nil {
			in.Summaries, err = index.ReadSummaries(body.Summaries)
		}
		if err != nil {
			b.Fatal(err)
		}
		in.PageSize = body.Page.Size
		b.ReportAllocs()
		c0 := proccpu.Process()
		for b.Loop() {
			if _, err := srv.srv.eng.Summarize(context.Background(), srv.ref, httpBenchTable, in); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, c0)
	})
	b.Run("http", func(b *testing.B) {
		client := &fasthttp.HostClient{Addr: srv.addr}
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		fill(req, 0)
		req.URI().SetHost(srv.addr)
		b.ReportAllocs()
		c0 := proccpu.Process()
		for b.Loop() {
			if err := client.Do(req, resp); err != nil {
				b.Fatal(err)
			}
			if resp.StatusCode() != 200 {
				b.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
			}
		}
		reportCPU(b, c0)
	})
}
