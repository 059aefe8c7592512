package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/bench/gen"
)

// Databases the Coppice server holds: the dataset, and a 1k-doc copy of
// its beginning for branch creation at a small size.
const (
	benchDB = "bench"
	smallDB = "small"
	smallN  = 1000
)

// runCoppice starts a server on an empty data directory and runs W1–W8
// against it over HTTP, one workload after another.
func (s *suite) runCoppice() error {
	dataDir := filepath.Join(s.cfg.work, "coppice")
	logPath := filepath.Join(s.cfg.work, "coppice.log")
	srv, err := startServer(s.cfg.bin, dataDir, logPath)
	if err != nil {
		return err
	}
	defer func() {
		if srv != nil {
			srv.stop()
		}
	}()
	if err := srv.ready(time.Minute); err != nil {
		return err
	}
	s.ws = srv.ws
	if _, err := s.coppiceLoad(srv, smallDB, smallN); err != nil {
		return fmt.Errorf("load %s: %w", smallDB, err)
	}
	load0 := loadAverage()
	load, err := s.coppiceLoad(srv, benchDB, s.ds.n)
	if err != nil {
		return fmt.Errorf("W1: %w", err)
	}
	loader := w1Conditions{load: [2]float64{load0, loadAverage()}, slices: load.slices}
	s.rep.add("W1", "bulk insert, everything indexed", sysCoppice, load.Summary,
		fmt.Sprintf("%d docs per request, %d requests in flight; latency per request; %s", batchSize, s.cfg.loaders, loader))
	s.coppiceDisk = dirSize(dataDir)
	s.rssAfterLoad = srv.peakRSS()
	settled := s.settleAfter(srv, "the W1 load")
	// The import runs on a server of its own, started on an empty data
	// directory as this one was: here it would write into a tree that
	// already holds the loader's docs, where its compactions take longer.
	s.try("W1 import", func() error { return s.coppiceImportW1(load.Summary, settled) })
	// One summary builds the docs table's column store, as the first
	// queries of a server that has been up for a while would have.
	// It may run out of its time limit before the store is built (a busy
	// machine): the build goes on in the background, which the wait
	// below lets finish.
	if err := srv.call("POST", s.tablePath(srv, benchDB, "main", gen.DocsTable, "/summarize"), summarizeBody(), 200, nil); err != nil {
		logf("warm-up summary: %v", err)
		s.rep.note("the warm-up summary failed (%v); the column store's build went on in the background", err)
	}
	s.settleAfter(srv, "a warm-up summary (the table's column store built)")

	s.try("W2", func() error { return s.coppiceW2(srv) })
	s.try("W3", func() error { return s.coppiceW3(srv) })
	s.try("W4", func() error { return s.coppiceW4(srv) })
	s.rep.add("W4", "group by category, 5 aggregates", sysCeiling, s.scanCeiling(s.cfg.reps*10).summary("q/s"),
		"one pass over plain column arrays in memory")
	s.try("W5", func() error { return s.coppiceW5(srv) })
	s.rssAfterQueries = srv.peakRSS()
	s.try("W6", func() error { return s.coppiceW6(srv) })
	s.try("W7", func() error { return s.coppiceW7(srv) })
	s.try("W7 import", func() error { return s.coppiceImportW7(srv) })
	// The single inserts run last, on a table of their own: the loads of
	// W7 leave compactions behind, which their CPU figure would count.
	s.settleAfter(srv, "W7")
	s.try("W1 single inserts", func() error { return s.coppiceSingleInserts(srv) })

	err = srv.stop()
	s.rssEnd = srv.peakKB
	srv = nil
	if err != nil {
		return fmt.Errorf("stop server: %w", err)
	}
	s.try("W8", func() error { return s.coppiceW8(dataDir, logPath) })
	return nil
}

// settleAfter waits for the server's background work (compactions,
// column-store builds) to stop after a load, and notes how long that took
// in the report; it also returns that note.
func (s *suite) settleAfter(srv *server, what string) string {
	waited, ok, err := srv.settle(5 * time.Minute)
	var note string
	switch {
	case err != nil:
		note = fmt.Sprintf("waiting for background work after %s: %v", what, err)
	case !ok:
		note = fmt.Sprintf("background work after %s still ran after %v; the next workloads ran during it", what, waited.Round(time.Second))
	default:
		logf("background work settled %v after %s", waited.Round(100*time.Millisecond), what)
		note = fmt.Sprintf("background work after %s settled in %v before the next workload", what, waited.Round(100*time.Millisecond))
	}
	s.rep.note("%s", note)
	return note
}

// tablePath is the path of a docs-table endpoint on a branch.
func (s *suite) tablePath(srv *server, db, branch, table, rest string) string {
	return srv.dataPath(db, branch, "/tables/"+table+rest)
}

// coppiceSchema creates database db with the users and docs tables.
func (s *suite) coppiceSchema(srv *server, db string) error {
	if err := srv.call("PUT", "/workspaces/"+srv.ws+"/dbs/"+db, map[string]any{"region": "local"}, 201, nil); err != nil {
		return err
	}
	for _, t := range []struct {
		name string
		cols any
	}{{gen.UsersTable, gen.UsersColumns()}, {gen.DocsTable, gen.DocsColumns()}} {
		if err := srv.call("PUT", s.tablePath(srv, db, "main", t.name, ""), nil, 201, nil); err != nil {
			return err
		}
		if err := srv.call("PUT", s.tablePath(srv, db, "main", t.name, "/schema"), map[string]any{"columns": t.cols}, 200, nil); err != nil {
			return err
		}
	}
	users := s.ds.users()
	for at := 0; at < len(users); at += batchSize {
		body := map[string]any{"records": users[at:min(len(users), at+batchSize)]}
		if err := srv.call("POST", s.tablePath(srv, db, "main", gen.UsersTable, "/bulk"), body, 200, nil); err != nil {
			return err
		}
	}
	return nil
}

// bulkLoad is a timed load of docs, with the server's CPU per doc, and
// the rate of each 100k docs of it.
type bulkLoad struct {
	Summary
	slices []float64
}

// coppiceLoad creates database db and bulk-loads the first n docs into
// it, timing the docs and charging them the server's CPU.
func (s *suite) coppiceLoad(srv *server, db string, n int) (bulkLoad, error) {
	if err := s.coppiceSchema(srv, db); err != nil {
		return bulkLoad{}, err
	}
	logf("coppice: loading %d docs into %s", n, db)
	res, err := withCPU(srv.cpu, func() (series, error) { return s.coppiceBulk(srv, db, gen.DocsTable, n, false, nil) })
	return bulkLoad{res.summary("docs/s"), res.slices}, err
}

// coppiceBulk inserts the first n docs into table in bulk requests, with
// the configured requests in flight, until done or until stop is closed;
// with wrap it goes on past n with renamed ids until stopped. It returns
// one latency per request and the docs written as units.
func (s *suite) coppiceBulk(srv *server, db, table string, n int, wrap bool, stop <-chan struct{}) (series, error) {
	done := make(chan struct{})
	defer close(done)
	lines := s.ds.lineBatches(n, wrap, done)
	type body struct {
		json []byte
		docs int
	}
	conc := s.cfg.loaders
	bodies := make(chan body, conc)
	go func() {
		defer close(bodies)
		for b := range lines {
			select {
			case bodies <- body{bulkBody(b), len(b)}:
			case <-done:
				return
			}
		}
	}()
	path := s.tablePath(srv, db, "main", table, "/bulk")
	var (
		mu      sync.Mutex
		out     series
		failed  error
		wg      sync.WaitGroup
		written atomic.Int64
	)
	start := time.Now()
	slices := sliceRates{at: start}
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var b body
				var ok bool
				select {
				case b, ok = <-bodies:
				case <-stop:
				}
				if !ok {
					return
				}
				t0 := time.Now()
				status, resp, err := srv.do("POST", path, b.json)
				d := time.Since(t0)
				if err == nil && status != 200 {
					err = fmt.Errorf("bulk: status %d: %s", status, trim(resp, 300))
				}
				mu.Lock()
				out.lat = append(out.lat, d)
				if err != nil && failed == nil {
					failed = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
				if n := written.Add(int64(b.docs)); n%100_000 < batchSize {
					mu.Lock()
					rate := slices.add(n)
					mu.Unlock()
					logf("coppice: %d docs into %s.%s, %.0f docs/s since the last line", n, db, table, rate)
				}
			}
		}()
	}
	wg.Wait()
	out.elapsed = time.Since(start)
	out.units = int(written.Load())
	out.slices = slices.rates
	return out, failed
}

// httpLoad sends n requests with conns connections in a closed loop; fill
// sets up request i. Every answer must have status want.
func httpLoad(client *fasthttp.HostClient, n, conns, want int, fill func(req *fasthttp.Request, i int)) (series, error) {
	reqs := make([]*fasthttp.Request, conns)
	resps := make([]*fasthttp.Response, conns)
	for i := range reqs {
		reqs[i], resps[i] = fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	}
	defer func() {
		for i := range reqs {
			fasthttp.ReleaseRequest(reqs[i])
			fasthttp.ReleaseResponse(resps[i])
		}
	}()
	return measure(n, conns, func(w, i int) error {
		req, resp := reqs[w], resps[w]
		req.Reset()
		fill(req, i)
		req.URI().SetHost(client.Addr)
		if err := client.Do(req, resp); err != nil {
			return err
		}
		if resp.StatusCode() != want {
			return fmt.Errorf("%s %s: status %d: %s", req.Header.Method(), req.URI().Path(), resp.StatusCode(), trim(resp.Body(), 200))
		}
		return nil
	})
}

// docIndex spreads load request i over the n docs.
func docIndex(i, n int) int { return int(uint64(i) * 7919 % uint64(n)) }

// pointGets runs n point gets on a branch of the bench database with the
// suite's connections, starting at request offset.
func (s *suite) pointGets(srv *server, branch string, n, offset int) (series, error) {
	prefix := s.tablePath(srv, benchDB, branch, gen.DocsTable, "/data/")
	return withCPU(srv.cpu, func() (series, error) {
		return httpLoad(srv.client, n, s.cfg.conns, 200, func(req *fasthttp.Request, i int) {
			srv.fill(req, "GET", prefix+gen.DocID(docIndex(offset+i, s.ds.n)), nil)
		})
	})
}

// coppiceW2 alternates rounds of point gets on the server with the same
// load on a trivial handler answering a record of the same size.
func (s *suite) coppiceW2(srv *server) error {
	var sample []byte
	status, sample, err := srv.do("GET", s.tablePath(srv, benchDB, "main", gen.DocsTable, "/data/"+gen.DocID(0)), nil)
	if err != nil || status != 200 {
		return fmt.Errorf("get %s: status %d, %v", gen.DocID(0), status, err)
	}
	triv, err := startTrivial(sample)
	if err != nil {
		return err
	}
	defer triv.close()
	trivLoad := func(n int) (series, error) {
		return httpLoad(triv.client, n, s.cfg.conns, 200, func(req *fasthttp.Request, i int) {
			req.Header.SetMethod("GET")
			req.SetRequestURI("/ws/x/db/bench:main/tables/docs/data/" + gen.DocID(docIndex(i, s.ds.n)))
			req.Header.Set("Authorization", "Bearer "+benchKey)
		})
	}
	warm := min(s.cfg.gets/10, 5000)
	if _, err := trivLoad(warm); err != nil {
		return err
	}
	if _, err := s.pointGets(srv, "main", warm, 0); err != nil {
		return err
	}
	const rounds = 3
	var cs, ts series
	offset := warm
	for range rounds {
		t, err := trivLoad(s.cfg.gets / rounds)
		if err != nil {
			return err
		}
		ts.add(t)
		c, err := s.pointGets(srv, "main", s.cfg.gets/rounds, offset)
		if err != nil {
			return err
		}
		cs.add(c)
		offset += s.cfg.gets / rounds
	}
	note := fmt.Sprintf("%d connections, closed loop, %d rounds alternating", s.cfg.conns, rounds)
	s.rep.add("W2", "point get", sysCoppice, cs.summary("req/s"), note)
	s.rep.add("W2", "point get", sysCeiling, ts.summary("req/s"), "trivial fasthttp handler, same load tool, same body size")
	return nil
}

// singleInserts is how many single-record inserts coppiceSingleInserts
// sends to each system, at most.
const singleInserts = 20_000

// coppiceSingleInserts inserts docs one per request (POST …/data, each
// synced before its answer) with the suite's connections into a table of
// their own, alternating rounds with the same load on a trivial handler
// that answers a body of the same size.
func (s *suite) coppiceSingleInserts(srv *server) error {
	const table = "singles"
	if err := srv.call("PUT", s.tablePath(srv, benchDB, "main", table, ""), nil, 201, nil); err != nil {
		return err
	}
	if err := srv.call("PUT", s.tablePath(srv, benchDB, "main", table, "/schema"), map[string]any{"columns": gen.DocsColumns()}, 200, nil); err != nil {
		return err
	}
	n := min(singleInserts, s.ds.n)
	var bodies [][]byte
	stop := make(chan struct{})
	defer close(stop)
	for batch := range s.ds.lineBatches(n, false, stop) {
		for _, line := range batch {
			doc, err := decodeDoc(line)
			if err != nil {
				return err
			}
			delete(doc, "id") // the server makes one
			js, err := json.Marshal(doc)
			if err != nil {
				return err
			}
			bodies = append(bodies, js)
		}
	}
	path := s.tablePath(srv, benchDB, "main", table, "/data")
	status, sample, err := srv.do("POST", path, bodies[0])
	if err != nil || status != 201 {
		return fmt.Errorf("insert: status %d, %v: %s", status, err, trim(sample, 200))
	}
	triv, err := startTrivial(sample)
	if err != nil {
		return err
	}
	defer triv.close()
	load := func(client *fasthttp.HostClient, want, from, k int) (series, error) {
		return httpLoad(client, k, s.cfg.conns, want, func(req *fasthttp.Request, i int) {
			srv.fill(req, "POST", path, bodies[(from+i)%len(bodies)])
		})
	}
	const rounds = 2
	var cs, ts series
	for r := range rounds {
		t, err := load(triv.client, 200, r*n/rounds, n/rounds)
		if err != nil {
			return err
		}
		ts.add(t)
		c, err := withCPU(srv.cpu, func() (series, error) { return load(srv.client, 201, r*n/rounds, n/rounds) })
		if err != nil {
			return err
		}
		cs.add(c)
	}
	note := fmt.Sprintf("one record per POST, synced; %d connections, closed loop, %d rounds alternating", s.cfg.conns, rounds)
	s.rep.add("W1", "single inserts", sysCoppice, cs.summary("inserts/s"), note)
	s.rep.add("W1", "single inserts", sysCeiling, ts.summary("inserts/s"), "trivial fasthttp handler, same load tool, same bodies")
	return nil
}

// mixQuery is one query of the W3 mix as a Coppice request body.
type mixQuery struct {
	kind string
	body []byte
}

// mix returns the filter queries of the run as request bodies.
func (s *suite) mix() []mixQuery {
	out := make([]mixQuery, 0, len(s.ds.q.Filter))
	for _, q := range s.ds.q.Filter {
		body := map[string]any{"filter": q.Filter, "page": map[string]any{"size": pageSize}}
		if string(q.Sort) != "null" {
			body["sort"] = q.Sort
		}
		js, _ := json.Marshal(body)
		out = append(out, mixQuery{q.Kind, js})
	}
	return out
}

// kindOrder lists the kinds of the mix in the order they recur.
func (s *suite) kindOrder() []string {
	var kinds []string
	seen := map[string]bool{}
	for _, q := range s.ds.q.Filter {
		if !seen[q.Kind] {
			seen[q.Kind] = true
			kinds = append(kinds, q.Kind)
		}
	}
	return kinds
}

// runMix runs every query of the mix once with op, then reps more times
// timed, and returns the latencies by kind and over all; with cpu, each
// timed query is also charged the server CPU time cpu reports across it.
func (s *suite) runMix(reps int, cpu func() time.Duration, op func(kind string, i int) error) (map[string]*series, series, error) {
	filters := s.ds.q.Filter
	for i, q := range filters {
		if err := op(q.Kind, i); err != nil {
			return nil, series{}, fmt.Errorf("%s query %d: %w", q.Kind, i, err)
		}
	}
	byKind := map[string]*series{}
	var all series
	for range reps {
		for i, q := range filters {
			one, err := withCPU(cpu, func() (series, error) {
				t0 := time.Now()
				err := op(q.Kind, i)
				d := time.Since(t0)
				return series{lat: []time.Duration{d}, elapsed: d}, err
			})
			if err != nil {
				return nil, series{}, fmt.Errorf("%s query %d: %w", q.Kind, i, err)
			}
			if byKind[q.Kind] == nil {
				byKind[q.Kind] = &series{}
			}
			byKind[q.Kind].add(one)
			all.add(one)
		}
	}
	return byKind, all, nil
}

// coppiceMix runs the W3 mix over HTTP on a branch of the bench database.
func (s *suite) coppiceMix(srv *server, branch string, reps int) (map[string]*series, series, error) {
	mix := s.mix()
	path := s.tablePath(srv, benchDB, branch, gen.DocsTable, "/query")
	return s.runMix(reps, srv.cpu, func(_ string, i int) error {
		status, body, err := srv.do("POST", path, mix[i].body)
		if err == nil && status != 200 {
			err = fmt.Errorf("status %d: %s", status, trim(body, 300))
		}
		return err
	})
}

// addMix reports the rows of a mix run.
func (s *suite) addMix(system string, byKind map[string]*series, note string) {
	for _, k := range s.kindOrder() {
		if sr := byKind[k]; sr != nil {
			s.rep.add("W3", k, system, sr.summary("q/s"), note)
		}
	}
}

// coppiceW3 runs the filter/sort mix and the cursor walks over HTTP.
func (s *suite) coppiceW3(srv *server) error {
	byKind, _, err := s.coppiceMix(srv, "main", s.cfg.reps)
	if err != nil {
		return err
	}
	s.addMix(sysCoppice, byKind, "HTTP, one client")
	path := s.tablePath(srv, benchDB, "main", gen.DocsTable, "/query")
	return s.cursorWalks(sysCoppice, func(q cursorQuery) (time.Duration, time.Duration, error) {
		return coppiceWalk(srv, path, q, wallClock)
	}, func(q cursorQuery) (time.Duration, time.Duration, error) {
		return coppiceWalk(srv, path, q, srv.cpu)
	})
}

// walksPerQuery is how many times each cursor query is walked and timed,
// after a warm-up walk. A walk times each page once. On a shared
// two-core machine the p50 of page 50 over that of page 1 moved by 8–10%
// (one standard deviation) between sets of forty walks; two hundred bring
// that to 4–5%, for about four seconds a walk kind and system at 1e6.
const walksPerQuery = 200

// cpuWalksPerQuery is how many walks of each cursor query read the
// server's CPU across pages 1 and 50. A mean needs fewer walks than a p50.
const cpuWalksPerQuery = 40

// cursorWalks times page 1 and page 50 of each cursor query with walk.
// The timed walks follow one another, so that both pages follow the
// client's reading of the page before: page 50 that of page 49, page 1
// that of the previous walk's page 50. A page that follows a longer pause
// takes longer, as the idle threads that serve and read it are woken (a
// millisecond's pause before every page added about 100 µs to each on a
// two-core virtual machine), so a page 1 timed after other work would be
// charged a wake-up that page 50 is not. With cpuWalk, which returns the
// server CPU of a walk's pages 1 and 50, cpuWalksPerQuery walks whose
// CPU is read come after the timed ones, and each timed page is charged
// their mean: reading the server's CPU takes the client a while, and the
// timed walks read nothing.
func (s *suite) cursorWalks(system string, walk, cpuWalk func(q cursorQuery) (time.Duration, time.Duration, error)) error {
	for _, q := range cursorQueries {
		var p1, p50 series
		for r := range walksPerQuery + 1 {
			a, b, err := walk(q)
			if err != nil {
				return fmt.Errorf("cursor walk %s: %w", q.name, err)
			}
			if r == 0 {
				continue
			}
			p1.add(series{lat: []time.Duration{a}, elapsed: a})
			p50.add(series{lat: []time.Duration{b}, elapsed: b})
		}
		if cpuWalk != nil {
			var cpu1, cpu50 time.Duration
			for range cpuWalksPerQuery {
				a, b, err := cpuWalk(q)
				if err != nil {
					return fmt.Errorf("cursor walk %s: %w", q.name, err)
				}
				cpu1, cpu50 = cpu1+a, cpu50+b
			}
			p1.cpu, p1.cpuN = cpu1*walksPerQuery/cpuWalksPerQuery, walksPerQuery
			p50.cpu, p50.cpuN = cpu50*walksPerQuery/cpuWalksPerQuery, walksPerQuery
		}
		s.rep.add("W3", q.name+" page 1", system, p1.summary("q/s"), "")
		s.rep.add("W3", q.name+" page 50", system, p50.summary("q/s"), "following cursors")
	}
	return nil
}

// coppiceWalk fetches page 1 of q, then follows page.after cursors to
// page 50, and returns what clock counted across page 1 and across
// page 50: their times with wallClock, the server's CPU with srv.cpu
// (one client, one request at a time: that page's, and whatever the
// server did in the background meanwhile). Like the PostgreSQL walk,
// which prepares its statements first, it encodes the request of page 1
// before it starts the clock; a page's time covers sending the request,
// reading the whole answer (readPage) and taking the cursor from it.
func coppiceWalk(srv *server, path string, q cursorQuery, clock func() time.Duration) (time.Duration, time.Duration, error) {
	body, err := json.Marshal(map[string]any{"filter": q.filter, "sort": q.sortJSON(), "page": map[string]any{"size": pageSize}})
	if err != nil {
		return 0, 0, err
	}
	var first, last time.Duration
	var out pageAnswer
	for page := 1; page <= cursorPages; page++ {
		t0 := clock()
		if page > 1 {
			body = nextPageBody(out.cursor)
		}
		status, resp, err := srv.do("POST", path, body)
		if err == nil && status != 200 {
			err = fmt.Errorf("status %d: %s", status, trim(resp, 300))
		}
		if err == nil {
			out, err = readPage(resp)
		}
		d := clock() - t0
		if err != nil {
			return 0, 0, fmt.Errorf("page %d: %w", page, err)
		}
		if page == 1 {
			first = d
		}
		last = d
		if page < cursorPages && (!out.more || out.cursor == "" || len(out.records) < pageSize) {
			return 0, 0, fmt.Errorf("only %d pages", page)
		}
	}
	return first, last, nil
}

// wallClock is the time since the suite started, for coppiceWalk.
func wallClock() time.Duration { return time.Since(suiteStart) }

// suiteStart is wallClock's origin.
var suiteStart = time.Now()

// nextPageBody is the request of the page after cursor.
func nextPageBody(cursor string) []byte {
	c, _ := json.Marshal(cursor) // a string always encodes
	b := append([]byte(`{"page":{"after":`), c...)
	return append(b, `,"size":`+strconv.Itoa(pageSize)+`}}`...)
}

// coppiceW4 times the summarize request.
func (s *suite) coppiceW4(srv *server) error {
	path := s.tablePath(srv, benchDB, "main", gen.DocsTable, "/summarize")
	body, _ := json.Marshal(summarizeBody())
	var groups int
	summarize := func() error {
		var out struct {
			Summaries []map[string]any `json:"summaries"`
		}
		err := srv.call("POST", path, body, 200, &out)
		groups = len(out.Summaries)
		return err
	}
	if err := summarize(); err != nil { // warm-up
		return err
	}
	sr, err := withCPU(srv.cpu, func() (series, error) {
		return sequential(s.cfg.reps*10, func(int) error { return summarize() })
	})
	if err != nil {
		return err
	}
	s.rep.add("W4", "group by category, 5 aggregates", sysCoppice, sr.summary("q/s"), fmt.Sprintf("HTTP; %d groups", groups))
	return nil
}

// timeReps runs op once to warm up, then n times timed.
func (s *suite) timeReps(n int, op func() error) (series, error) {
	if err := op(); err != nil {
		return series{}, err
	}
	return sequential(n, func(int) error { return op() })
}

// coppiceW5 runs each search class over HTTP, or reports the endpoint
// missing.
func (s *suite) coppiceW5(srv *server) error {
	path := s.tablePath(srv, benchDB, "main", gen.DocsTable, "/search")
	classes := s.ds.searchClasses()
	probe := classes[0].searchBody(classes[0].queries[0])
	if err := srv.call("POST", path, probe, 200, nil); err != nil {
		why := "not available: " + err.Error()
		if st := statusOf(err); st == 404 || st == 405 {
			why = fmt.Sprintf("not available (the search endpoint answers %d)", st)
		}
		for _, c := range classes {
			s.rep.missing("W5", c.name, sysCoppice, why)
		}
		return nil
	}
	for _, c := range classes {
		qs := c.queries[:min(len(c.queries), s.cfg.search)]
		bodies := make([][]byte, len(qs))
		for i, q := range qs {
			bodies[i], _ = json.Marshal(c.searchBody(q))
		}
		for _, b := range bodies { // warm-up
			srv.do("POST", path, b)
		}
		sr, err := withCPU(srv.cpu, func() (series, error) {
			return sequential(len(bodies), func(i int) error {
				status, body, err := srv.do("POST", path, bodies[i])
				if err == nil && status != 200 {
					err = fmt.Errorf("search %s: status %d: %s", qs[i], status, trim(body, 300))
				}
				return err
			})
		})
		if err != nil {
			s.rep.missing("W5", c.name, sysCoppice, "failed: "+err.Error())
			continue
		}
		s.rep.add("W5", c.name, sysCoppice, sr.summary("q/s"), fmt.Sprintf("HTTP, top %d, highlight", pageSize))
	}
	return nil
}

// coppiceW6 times branch creation at 1k and at N docs, compares reads and
// queries on a child with main, and main with 20 live children with main
// alone.
func (s *suite) coppiceW6(srv *server) error {
	create := func(db, prefix string, reps int) (series, error) {
		return sequential(reps, func(i int) error {
			return srv.call("PUT", srv.dataPath(db, prefix+strconv.Itoa(i), ""), map[string]any{"from": "main"}, 201, nil)
		})
	}
	small, err := create(smallDB, "b", 10)
	if err != nil {
		return err
	}
	big, err := create(benchDB, "b", 10)
	if err != nil {
		return err
	}
	s.rep.add("W6", "create branch at 1k", sysCoppice, small.summary("req/s"), "")
	s.rep.add("W6", fmt.Sprintf("create branch at %d", s.ds.n), sysCoppice, big.summary("req/s"), "")

	// Child against main: the branch b0 was forked from main above.
	gets := s.cfg.gets / 3
	var mainGets, childGets, mainQ, childQ series
	for r := range 2 {
		m, err := s.pointGets(srv, "main", gets/2, r*gets)
		if err != nil {
			return err
		}
		c, err := s.pointGets(srv, "b0", gets/2, r*gets)
		if err != nil {
			return err
		}
		mainGets.add(m)
		childGets.add(c)
		_, mq, err := s.coppiceMix(srv, "main", 1)
		if err != nil {
			return err
		}
		_, cq, err := s.coppiceMix(srv, "b0", 1)
		if err != nil {
			return err
		}
		mainQ.add(mq)
		childQ.add(cq)
	}
	s.rep.add("W6", "point get on main", sysCoppice, mainGets.summary("req/s"), "alternating with the child")
	s.rep.add("W6", "point get on child", sysCoppice, childGets.summary("req/s"), "")
	s.rep.add("W6", "query mix on main", sysCoppice, mainQ.summary("q/s"), "alternating with the child")
	s.rep.add("W6", "query mix on child", sysCoppice, childQ.summary("q/s"), "")

	// Main alone against main with 20 live children forked at different
	// times (main written between forks), in alternating rounds: the
	// children are deleted after each round. Main alone gets the same
	// writes before it is measured, so that the two sides differ by the
	// children only: a write makes main's cached records and bitmaps stale
	// whether or not it has children.
	for i := range 10 {
		if err := srv.call("DELETE", srv.dataPath(benchDB, "b"+strconv.Itoa(i), ""), nil, 200, nil); err != nil {
			return err
		}
	}
	// writes updates 5 docs of main, group i of round r and side.
	writes := func(r, side, i int) error {
		for k := range 5 {
			id := gen.DocID(docIndex(i*5+k+1, s.ds.n))
			if err := srv.call("PATCH", s.tablePath(srv, benchDB, "main", gen.DocsTable, "/data/"+id),
				map[string]any{"views": r*10000 + side*1000 + i*10 + k}, 200, nil); err != nil {
				return err
			}
		}
		return nil
	}
	// quiet waits for the flushes and compactions the writes before a
	// series leave, so that neither side is timed during the other's.
	unsettled := 0
	quiet := func() {
		if _, ok, err := srv.settle(time.Minute); err != nil || !ok {
			unsettled++
		}
	}
	defer func() {
		if unsettled > 0 {
			s.rep.note("W6: background work still ran when %d of the series of main alone and with 20 children began", unsettled)
		} else {
			s.rep.note("W6: background work settled before each series of main alone and with 20 children")
		}
	}()
	var alone, with, aloneQ, withQ series
	// A garbage collection of a large heap takes one of the two cores
	// while it marks: the cycles each side's series ran through say
	// whether a difference is the side's or the collector's.
	var gcs [2]float64
	counted := func(side int, fn func() error) error {
		g0 := srv.gcCycles()
		err := fn()
		if g1 := srv.gcCycles(); g0 >= 0 && g1 >= 0 {
			gcs[side] += g1 - g0
		}
		return err
	}
	defer func() {
		s.rep.note("W6: garbage collections during the point gets and queries of main alone: %.0f, of main with 20 children: %.0f", gcs[0], gcs[1])
	}()
	// Each side's series: the writes it follows, then the point gets and
	// the query mix on main. The two sides read the same ids in a round,
	// so the side that reads second finds records the first cached; the
	// order flips each round, and the rounds are short, so that neither
	// this nor a collection falling in one series decides the ratio.
	const rounds = 4
	aloneSeries := func(r int) error {
		for i := range 20 {
			if err := writes(r, 0, i); err != nil {
				return err
			}
		}
		quiet()
		return counted(0, func() error {
			g, err := s.pointGets(srv, "main", gets/rounds, r*gets)
			if err != nil {
				return err
			}
			alone.add(g)
			_, q, err := s.coppiceMix(srv, "main", 1)
			aloneQ.add(q)
			return err
		})
	}
	withSeries := func(r int) error {
		for i := range 20 {
			if err := writes(r, 1, i); err != nil {
				return err
			}
			if err := srv.call("PUT", srv.dataPath(benchDB, "live"+strconv.Itoa(i), ""), map[string]any{"from": "main"}, 201, nil); err != nil {
				return err
			}
		}
		quiet()
		if err := counted(1, func() error {
			g, err := s.pointGets(srv, "main", gets/rounds, r*gets)
			if err != nil {
				return err
			}
			with.add(g)
			_, q, err := s.coppiceMix(srv, "main", 1)
			withQ.add(q)
			return err
		}); err != nil {
			return err
		}
		for i := range 20 {
			if err := srv.call("DELETE", srv.dataPath(benchDB, "live"+strconv.Itoa(i), ""), nil, 200, nil); err != nil {
				return err
			}
		}
		return nil
	}
	for r := range rounds {
		first, second := aloneSeries, withSeries
		if r%2 == 1 {
			first, second = withSeries, aloneSeries
		}
		if err := first(r); err != nil {
			return err
		}
		if err := second(r); err != nil {
			return err
		}
	}
	s.rep.add("W6", "point get, main alone", sysCoppice, alone.summary("req/s"), "after the same 100 updates on main")
	s.rep.add("W6", "point get, main with 20 children", sysCoppice, with.summary("req/s"), "5 updates on main between forks; 4 rounds alternating with main alone, each side first in two")
	s.rep.add("W6", "query mix, main alone", sysCoppice, aloneQ.summary("q/s"), "")
	s.rep.add("W6", "query mix, main with 20 children", sysCoppice, withQ.summary("q/s"), "")
	return nil
}

// w7Passes is how many timed passes over the query mix each W7 side
// runs. W7 judges a p99: over one pass (160 queries at the default
// -queries) it is the second-slowest query of half a second of load, and
// one pause in that window decides it; ten passes spread it over a few
// seconds of load.
const w7Passes = 10

// coppiceW7 runs the query mix idle, then again while a bulk ingest
// writes into another table of the same database.
func (s *suite) coppiceW7(srv *server) error {
	_, idle, err := s.coppiceMix(srv, "main", w7Passes)
	if err != nil {
		return err
	}
	if err := srv.call("PUT", s.tablePath(srv, benchDB, "main", "ingest", ""), nil, 201, nil); err != nil {
		return err
	}
	if err := srv.call("PUT", s.tablePath(srv, benchDB, "main", "ingest", "/schema"), map[string]any{"columns": gen.DocsColumns()}, 200, nil); err != nil {
		return err
	}
	stop := make(chan struct{})
	ingested := make(chan series, 1)
	var ingestErr error
	go func() {
		sr, err := s.coppiceBulk(srv, benchDB, "ingest", s.ds.n, true, stop)
		ingestErr = err
		ingested <- sr
	}()
	time.Sleep(2 * time.Second) // the ingest is under way
	_, busy, err := s.coppiceMix(srv, "main", w7Passes)
	close(stop)
	in := <-ingested
	if err != nil {
		return err
	}
	if ingestErr != nil {
		return fmt.Errorf("ingest: %w", ingestErr)
	}
	s.rep.add("W7", "query mix, idle", sysCoppice, idle.summary("q/s"), "")
	s.rep.add("W7", "query mix during bulk ingest", sysCoppice, busy.summary("q/s"), "")
	s.rep.add("W7", "the bulk ingest", sysCoppice, in.summary("docs/s"), "into another table of the database")
	return nil
}

// coppiceW8 restarts the server on the loaded data directory and times
// until a query on the docs table is answered.
func (s *suite) coppiceW8(dataDir, logPath string) error {
	var best series
	for range 3 {
		t0 := time.Now()
		srv, err := startServer(s.cfg.bin, dataDir, logPath)
		if err != nil {
			return err
		}
		if err := func() error {
			// The workspace id is the one the first start created; the
			// first answered query is the mark, whatever readiness says.
			srv.ws = s.ws
			path := s.tablePath(srv, benchDB, "main", gen.DocsTable, "/query")
			body := []byte(`{"filter":{"category":"books"},"page":{"size":20}}`)
			for {
				status, _, err := srv.do("POST", path, body)
				if err == nil && status == 200 {
					break
				}
				select {
				case err := <-srv.exited:
					return fmt.Errorf("server exited: %v", err)
				default:
				}
				if time.Since(t0) > 5*time.Minute {
					return fmt.Errorf("no answer after 5 minutes (status %d, %v)", status, err)
				}
				time.Sleep(2 * time.Millisecond)
			}
			d := time.Since(t0)
			best.add(series{lat: []time.Duration{d}, elapsed: d})
			return nil
		}(); err != nil {
			srv.stop()
			return err
		}
		if err := srv.stop(); err != nil {
			return err
		}
	}
	s.rep.add("W8", "restart to first query answered", sysCoppice, best.summary("starts/s"), fmt.Sprintf("%d docs; process start included", s.ds.n))
	return nil
}
