package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
)

// BenchmarkImport measures Import of the benchmark dataset's docs
// (bench/gen, as NDJSON) over HTTP into a server with synced writes, every
// index and search on, next to the benchmark suite's loader in the same
// run: the same lines posted as prebuilt bulk bodies of 1000 with the same
// requests in flight. docs/s of the two is the comparison; the suite's
// loader keeps 2 requests in flight by default. Each run loads a fresh
// server (its users table filled beforehand, untimed). Sizes are 1e3 and
// 1e4; COPPICE_BENCH_MAX=100000 adds 1e5.
//
//	go test -tags pebblegozstd -run '^$' -bench Import -benchtime 1x ./cmd/coppice/internal/transfer/
func BenchmarkImport(b *testing.B) {
	sizes := []int{1_000, 10_000}
	if m, _ := strconv.Atoi(os.Getenv("COPPICE_BENCH_MAX")); m >= 100_000 {
		sizes = append(sizes, 100_000)
	}
	words := gen.ShippedWords()
	var users []map[string]any
	gen.New(gen.Config{N: 1, Seed: 1, Words: words}).Users(func(u map[string]any) error {
		users = append(users, u)
		return nil
	})
	// fresh starts a server with the users and an empty docs table,
	// untimed; the returned func stops it.
	fresh := func(b *testing.B) (*testServer, func()) {
		b.StopTimer()
		defer b.StartTimer()
		ts := startServer(b, b.TempDir(), true)
		ts.createTable(gen.UsersTable, gen.UsersColumns())
		for at := 0; at < len(users); at += engine.MaxBulkRecords {
			if _, err := ts.eng.BulkInsert(context.Background(), ts.ref(), gen.UsersTable, users[at:min(at+engine.MaxBulkRecords, len(users))]); err != nil {
				b.Fatal(err)
			}
		}
		ts.createTable(gen.DocsTable, gen.DocsColumns())
		return ts, func() {
			b.StopTimer()
			defer b.StartTimer()
			ts.stop()
		}
	}
	for _, n := range sizes {
		docs := ndjsonOf(b, gen.New(gen.Config{N: n, Seed: 1, Words: words}).Docs)
		label := "1e" + strconv.Itoa(len(strconv.Itoa(n))-1)
		for _, conc := range []int{2, 4} {
			b.Run(fmt.Sprintf("import/%s/conc%d", label, conc), func(b *testing.B) {
				b.SetBytes(int64(len(docs)))
				for range b.N {
					ts, stop := fresh(b)
					o := ImportOptions{Target: ts.target(gen.DocsTable), InputName: "docs.ndjson", Input: bytes.NewReader(docs),
						InputSize: int64(len(docs)), Concurrency: conc, Log: io.Discard}
					sum, err := Import(context.Background(), o)
					if err != nil || sum.Imported != int64(n) {
						b.Fatalf("import: %v %+v", err, sum)
					}
					stop()
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "docs/s")
			})
			b.Run(fmt.Sprintf("loader/%s/conc%d", label, conc), func(b *testing.B) {
				b.SetBytes(int64(len(docs)))
				for range b.N {
					ts, stop := fresh(b)
					suiteLoad(b, ts, gen.DocsTable, docs, conc)
					stop()
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "docs/s")
			})
		}
	}
}

// ndjsonOf writes the records each calls back with, one JSON line each.
func ndjsonOf(b *testing.B, each func(func(map[string]any) error) error) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := each(func(m map[string]any) error { return enc.Encode(m) }); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// suiteLoad loads NDJSON the way the benchmark suite's loader does: the
// lines cut into bulk bodies of engine.MaxBulkRecords ahead of time, posted
// by conc workers.
func suiteLoad(b *testing.B, ts *testServer, table string, docs []byte, conc int) {
	lines := bytes.Split(bytes.TrimSuffix(docs, []byte("\n")), []byte("\n"))
	bodies := make(chan []byte, conc)
	go func() {
		defer close(bodies)
		for at := 0; at < len(lines); at += engine.MaxBulkRecords {
			body := []byte(`{"records":[`)
			body = append(body, bytes.Join(lines[at:min(at+engine.MaxBulkRecords, len(lines))], []byte(","))...)
			bodies <- append(body, "]}"...)
		}
	}()
	url := ts.url + "/ws/" + ts.ws + "/db/app:main/tables/" + table + "/bulk"
	var wg sync.WaitGroup
	var failed sync.Once
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for body := range bodies {
				req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+testKey)
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					failed.Do(func() { b.Error(err) })
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkImportClient measures the importer's own cost: the same docs
// imported into a trivial handler that reads each bulk body and answers
// 200, after the schema from a real server's branch details. Its docs/s
// is the most the importer can feed a server on this machine.
func BenchmarkImportClient(b *testing.B) {
	ts := startServer(b, b.TempDir(), false)
	ts.createTable(gen.UsersTable, gen.UsersColumns())
	ts.createTable(gen.DocsTable, gen.DocsColumns())
	details, err := ts.eng.Branches().Details(ts.ref())
	if err != nil {
		b.Fatal(err)
	}
	schema, _ := json.Marshal(map[string]any{"schema": details.Schema})
	trivial := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method == "GET" {
			w.Write(schema)
			return
		}
		w.Write([]byte(`{"recordIDs":[]}`))
	}))
	defer trivial.Close()
	const n = 10_000
	docs := ndjsonOf(b, gen.New(gen.Config{N: n, Seed: 1, Words: gen.ShippedWords()}).Docs)
	b.SetBytes(int64(len(docs)))
	b.ResetTimer()
	for range b.N {
		o := ImportOptions{Target: Target{URL: trivial.URL, Database: "app", Table: gen.DocsTable}, InputName: "-",
			Input: bytes.NewReader(docs), Log: io.Discard}
		if sum, err := Import(context.Background(), o); err != nil || sum.Imported != n {
			b.Fatalf("import: %v %+v", err, sum)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "docs/s")
}
