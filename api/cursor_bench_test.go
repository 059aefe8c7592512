package api

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
)

// cursorWalkPages is how deep the W3 cursor walks go: page 50.
const cursorWalkPages = 50

// cursorWalkClasses are the walks of BenchmarkServeCursor: W3's eq-sort
// (one category, active, newest first: a twentieth of the rows, ordered
// by a heap over them), the same over most rows (a lazy walk of the
// order), and a range sorted on its own column (the benchmark table has
// no multiple column for includes-sort).
func cursorWalkClasses() []serveQueryClass {
	return []serveQueryClass{
		{name: "eq-sort", filters: []string{`{"category":"cat3","active":true}`}, sort: `{"created_at":"desc"}`},
		{name: "active-sort", filters: []string{`{"active":true}`}, sort: `{"views":"desc"}`},
		{name: "range-sort", filters: []string{`{"price":{"$ge":100}}`}, sort: `{"price":"asc"}`},
	}
}

// cursorPoster returns a function that posts a query body to srv's table
// over one kept connection and returns the answer's cursor, failing b
// unless the answer is 200 with more pages.
func cursorPoster(b *testing.B, srv *httpBenchServer) func(body []byte) string {
	post := queryPoster(b, srv)
	return func(body []byte) string {
		var out struct {
			Meta struct {
				Page struct {
					Cursor string `json:"cursor"`
					More   bool   `json:"more"`
				} `json:"page"`
			} `json:"meta"`
		}
		if err := json.Unmarshal(post(body), &out); err != nil {
			b.Fatal(err)
		}
		if !out.Meta.Page.More {
			b.Fatal("no page after this one")
		}
		return out.Meta.Page.Cursor
	}
}

// afterBody is the body of the page after cursor, as the W3 client sends it.
func afterBody(cursor string) []byte {
	return []byte(`{"page":{"after":` + strconv.Quote(cursor) + `,"size":20}}`)
}

// BenchmarkServeCursor is W3's cursor walks over loopback HTTP: page 1 of
// a query against page 50, reached by following the cursors of pages 1 to
// 49. "page=1" posts the first page; "page=50" posts the page after the
// 49th page's cursor of one of 40 walks made before the timer, in turns,
// so that, as in the suite, every walk's cursor is its own (a page's
// cursor carries a seed of its own). "walk" times whole walks, reporting
// the median of their first and fiftieth pages (p1-µs, p50-µs) and their
// ratio. allocs/op and cpu-ns/op count the client's too; a CPU profile
// tells the server's samples apart with -tagfocus side=server. Needs at
// least 1e5 records (COPPICE_HTTP_BENCH_RECORDS) for 50 pages of eq-sort,
// and is skipped with fewer.
func BenchmarkServeCursor(b *testing.B) {
	cfg := loadHTTPBenchConfig(b)
	if cfg.records < 1e5 {
		b.Skipf("cursor walks of %d pages need COPPICE_HTTP_BENCH_RECORDS of at least 100000 (set: %d)", cursorWalkPages, cfg.records)
	}
	srv := startHTTPBenchServer(b, cfg, cfg.records)
	classes := cursorWalkClasses()
	warmQueries(b, srv, classes)
	post := cursorPoster(b, srv)
	// walk follows the cursors of q to the page before page, returning
	// the cursor that reaches it.
	walk := func(q serveQueryClass, page int) string {
		c := post(q.body(0))
		for range page - 2 {
			c = post(afterBody(c))
		}
		return c
	}
	for _, q := range classes {
		first := q.body(0)
		b.Run(q.name+"/page=1", func(b *testing.B) {
			walk(q, cursorWalkPages)
			loopCPU(b, func(int) { post(first) })
		})
		b.Run(q.name+"/page=50", func(b *testing.B) {
			bodies := make([][]byte, 40)
			for i := range bodies {
				bodies[i] = afterBody(walk(q, cursorWalkPages))
			}
			loopCPU(b, func(i int) { post(bodies[i%len(bodies)]) })
		})
		b.Run(q.name+"/walk", func(b *testing.B) {
			var p1, p50 []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				c := post(first)
				p1 = append(p1, time.Since(t0))
				for page := 2; page <= cursorWalkPages; page++ {
					t0 = time.Now()
					body := afterBody(c)
					c = post(body)
					if page == cursorWalkPages {
						p50 = append(p50, time.Since(t0))
					}
				}
			}
			a, z := medianDuration(p1), medianDuration(p50)
			b.ReportMetric(float64(a.Nanoseconds())/1e3, "p1-µs")
			b.ReportMetric(float64(z.Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(z)/float64(a), "p50/p1")
		})
	}
}
