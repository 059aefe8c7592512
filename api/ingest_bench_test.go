package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
)

// ingestTable is the table the loader of BenchmarkHTTPQueriesDuringBulk
// writes, next to the queried docs.
const ingestTable = "ingest"

// BenchmarkHTTPQueriesDuringBulk measures W7 of BENCHMARKS.md over HTTP in
// one process: the generator's filter mix, from one client, on
// COPPICE_HTTP_BENCH_RECORDS docs (default 2e4), idle and while a loader
// posts bulk inserts of 1000 generated docs, two in flight, into another
// table of the database. The busy side runs twice: with bulk inserts
// taking turns while reads are served ("turns", the default
// --max-bulk-during-reads) and without ("no-turns": a limit above the
// loader's requests in flight). Each op is one query; the three sides
// alternate in blocks of half a second, a busy block lasting until at
// least two of the loader's requests were answered in it, and the loader
// pauses (its requests in flight answered) for the idle blocks, so that
// drift of a shared machine hits every side alike. It reports each side's
// p50 and p99, each busy side's p99 over the idle one, and the loader's
// docs/s on each busy side.
func BenchmarkHTTPQueriesDuringBulk(b *testing.B) {
	n := benchEnvInt(b, "COPPICE_HTTP_BENCH_RECORDS", 2e4)
	g := gen.New(gen.Config{N: n, Seed: 1})
	srv, addr, base := startBulkServerOf(b, g)
	var docs []json.RawMessage
	var loads, ingest [][]byte
	add := func(to *[][]byte, d map[string]any) {
		js, err := json.Marshal(d)
		if err != nil {
			b.Fatal(err)
		}
		if docs = append(docs, js); len(docs) == engine.MaxBulkRecords {
			*to = append(*to, bulkJSON(docs))
			docs = docs[:0]
		}
	}
	for i := range n {
		add(&loads, g.Doc(i))
	}
	if len(docs) > 0 {
		loads = append(loads, bulkJSON(docs))
		docs = docs[:0]
	}
	for i := range 8 * engine.MaxBulkRecords {
		d := g.Doc(i)
		delete(d, "id") // the server makes one: the bodies are posted again and again
		add(&ingest, d)
	}
	postBulk(b, addr, base, loads, 2)

	c := &fasthttp.HostClient{Addr: addr, MaxConns: 4, ReadTimeout: time.Minute}
	post := func(path string, body []byte) error {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod("POST")
		req.SetRequestURI("http://" + addr + base + path)
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(body)
		if err := c.Do(req, resp); err != nil {
			return err
		}
		if resp.StatusCode() != 200 {
			return fmt.Errorf("%s: status %d: %.300s", path, resp.StatusCode(), resp.Body())
		}
		return nil
	}
	var mix [][]byte
	for _, q := range g.Queries(40).Filter {
		body := map[string]any{"filter": q.Filter, "page": map[string]any{"size": 20}}
		if string(q.Sort) != "null" {
			body["sort"] = q.Sort
		}
		js, _ := json.Marshal(body)
		mix = append(mix, js)
	}
	run := func(i int) time.Duration {
		t0 := time.Now()
		if err := post(gen.DocsTable+"/query", mix[i%len(mix)]); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	for i := range mix {
		run(i) // caches as a steady reader has them
	}

	// The loader posts while it holds gate for reading: an idle block
	// holds it for writing, which waits for the requests in flight.
	var (
		gate    sync.RWMutex
		done    atomic.Bool
		wg      sync.WaitGroup
		answers atomic.Int64
		failed  atomic.Value
		next    atomic.Int64
	)
	gate.Lock()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				gate.RLock()
				if done.Load() {
					gate.RUnlock()
					return
				}
				err := post(ingestTable+"/bulk", ingest[int(next.Add(1))%len(ingest)])
				answers.Add(1)
				gate.RUnlock()
				if err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}

	type side struct {
		lat     []time.Duration
		busy    time.Duration // how long the loader ran in it
		batches int64
	}
	var idle, turns, free side
	limit := srv.bulk.limit
	b.ResetTimer()
	for i, block := 0, 0; i < b.N; block++ {
		s := &idle
		switch block % 3 {
		case 1:
			s = &turns
			srv.bulk.limit = limit
		case 2:
			s = &free
			srv.bulk.limit = 1 << 20
		}
		on := s != &idle
		if on {
			gate.Unlock()
		}
		a0, t0 := answers.Load(), time.Now()
		for ; i < b.N && (time.Since(t0) < ingestBlock || on && answers.Load()-a0 < minBusyBatches); i++ {
			s.lat = append(s.lat, run(i))
		}
		if on {
			gate.Lock()
			s.busy += time.Since(t0)
			s.batches += answers.Load() - a0
		}
	}
	b.StopTimer()
	done.Store(true)
	gate.Unlock()
	wg.Wait()
	srv.bulk.limit = limit
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	q := func(lat []time.Duration) (p50, p99 float64) {
		if len(lat) == 0 {
			return 0, 0
		}
		s := slices.Clone(lat)
		slices.Sort(s)
		return float64(s[len(s)/2]), float64(s[min(len(s)-1, len(s)*99/100)])
	}
	_, idle99 := q(idle.lat)
	for _, x := range []struct {
		name string
		s    side
	}{{"idle", idle}, {"turns", turns}, {"no-turns", free}} {
		p50, p99 := q(x.s.lat)
		b.ReportMetric(p50/1e3, x.name+"-p50-µs")
		b.ReportMetric(p99/1e3, x.name+"-p99-µs")
		if x.s.busy > 0 {
			if idle99 > 0 {
				b.ReportMetric(p99/idle99, x.name+"-p99-ratio")
			}
			b.ReportMetric(float64(x.s.batches*engine.MaxBulkRecords)/x.s.busy.Seconds(), x.name+"-docs/s")
		}
	}
}

// ingestBlock is how long queries run in a row on one side.
const ingestBlock = 500 * time.Millisecond

// minBusyBatches is how many of the loader's requests a busy block sees
// answered at least.
const minBusyBatches = 2
