package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// slowQuery is a query that runs for seconds unless its request ends: a
// $pattern whose segment with `?` (40,000 runes, 626 state words) is
// searched through a text value of 4 million runes.
type slowQuery struct {
	path string
	body []byte
}

// newSlowQuery creates db "slow" with table t holding the one long value.
func newSlowQuery(ts *testServer) slowQuery {
	ts.t.Helper()
	ts.createDB("slow")
	ts.createTable("slow", "t", map[string]any{"name": "txt", "type": "text"})
	ts.expect(201, "PUT", "/db/slow:main/tables/t/data/r1", map[string]any{"txt": strings.Repeat("a", 4<<20)})
	pattern := "*" + strings.Repeat("a?", 20000) + "b*"
	body, _ := json.Marshal(map[string]any{"filter": map[string]any{"txt": map[string]any{"$pattern": pattern}}})
	return slowQuery{path: "/db/slow:main/tables/t/query", body: body}
}

// rawRequest is the HTTP/1.1 text of the slow query.
func (q slowQuery) rawRequest(ts *testServer) string {
	return "POST /ws/" + ts.info.WorkspaceID + q.path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testKey +
		"\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(q.body)) + "\r\n\r\n" + string(q.body)
}

// start sends the slow query on a connection of its own and returns the
// connection, from which its response can be read.
func (q slowQuery) start(ts *testServer) net.Conn {
	ts.t.Helper()
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		ts.t.Fatal(err)
	}
	if _, err := io.WriteString(c, q.rawRequest(ts)); err != nil {
		ts.t.Fatal(err)
	}
	return c
}

// readResponse reads one response from c.
func readResponse(t *testing.T, c net.Conn) (*http.Response, string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestRequestDeadline: a query past its time limit stops and answers 503
// naming the limit; the server serves on.
func TestRequestDeadline(t *testing.T) {
	ts := startServer(t, Options{Limits: Limits{RequestTimeout: 300 * time.Millisecond}})
	q := newSlowQuery(ts)
	start := time.Now()
	r := ts.expect(503, "POST", q.path, string(q.body))
	took := time.Since(start)
	if msg := errMessage(r); msg != "request exceeded its time limit of 300ms" {
		t.Errorf("message %q", msg)
	}
	if r.header.Get("Retry-After") != "" {
		t.Errorf("a request past its deadline has Retry-After %q: retrying it would fail again", r.header.Get("Retry-After"))
	}
	if took > 3*time.Second {
		t.Errorf("answered after %v", took)
	}
	ts.expect(200, "GET", "/db/slow:main/tables/t/data/r1?columns=id", nil)
}

// TestInflightCapAndClientGone: with one execution slot and no queue, a
// request beyond the slot gets 503 and Retry-After while health checks
// still answer; a client that closes its connection cancels its query,
// which frees the slot.
func TestInflightCapAndClientGone(t *testing.T) {
	ts := startServer(t, Options{Limits: Limits{MaxInflight: 1, MaxQueue: -1}})
	q := newSlowQuery(ts)
	c := q.start(ts)
	defer c.Close()
	waitBusy(t, ts)
	r := ts.expect(503, "GET", "/db/slow:main/tables/t/data/r1?columns=id", nil)
	if r.header.Get("Retry-After") != "1" || !strings.Contains(errMessage(r), "busy") {
		t.Errorf("busy answer: Retry-After %q, %s", r.header.Get("Retry-After"), r.raw)
	}
	ts.key = ""
	ts.expect(200, "GET", ts.url+"/healthz", nil)
	ts.key = testKey

	c.Close()
	start := time.Now()
	for {
		r := ts.do("GET", "/db/slow:main/tables/t/data/r1?columns=id", nil)
		if r.status == 200 {
			break
		}
		if time.Since(start) > 3*time.Second {
			t.Fatalf("the slot is still taken %v after the client left: %d %s", time.Since(start), r.status, r.raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("slot free %v after the client closed its connection", time.Since(start))
}

// TestHeavyCap: heavy requests have slots of their own, fewer than the
// execution slots: with the one heavy slot taken by a slow query, other
// heavy requests are refused (no queue here) while point gets and writes
// are served at once; the query's end frees the heavy slot.
func TestHeavyCap(t *testing.T) {
	ts := startServer(t, Options{Limits: Limits{MaxInflight: 4, MaxInflightHeavy: 1, MaxQueue: -1}})
	q := newSlowQuery(ts)
	ts.createDB("other")
	ts.createTable("other", "t", map[string]any{"name": "txt", "type": "text"})
	c := q.start(ts)
	defer c.Close()
	waitTaken(t, ts.srv.heavy, "the slow query never took the heavy slot")
	ts.expect(503, "POST", q.path, map[string]any{})
	for _, heavy := range []struct {
		path string
		body any
	}{
		{"/db/slow:main/tables/t/search", map[string]any{"query": "a"}},
		{"/db/slow:main/tables/t/summarize", map[string]any{}},
		{"/db/slow:main/tables/t/aggregate", map[string]any{}},
		{"/db/slow:main/search", map[string]any{"query": "a"}},
	} {
		if r := ts.expect(503, "POST", heavy.path, heavy.body); !strings.Contains(errMessage(r), "busy") {
			t.Errorf("%s: %s", heavy.path, r.raw)
		}
	}
	// Writes, to the slow query's branch too, do not wait for it.
	start := time.Now()
	ts.expect(200, "GET", "/db/slow:main/tables/t/data/r1?columns=id", nil)
	ts.expect(201, "PUT", "/db/slow:main/tables/t/data/r2", map[string]any{"txt": "b"})
	ts.expect(200, "PATCH", "/db/slow:main/tables/t/data/r2", map[string]any{"txt": "c"})
	ts.expect(201, "PUT", "/db/other:main/tables/t/data/r2", map[string]any{"txt": "b"})
	ts.expect(200, "PATCH", "/db/other:main/tables/t/data/r2", map[string]any{"txt": "c"})
	ts.expect(200, "POST", "/db/other:main/tables/t/bulk", map[string]any{"records": []any{map[string]any{"txt": "d"}}})
	ts.expect(200, "POST", "/db/other:main/transaction", map[string]any{"operations": []any{}})
	ts.expect(200, "GET", "/db/slow:main", nil)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cheap requests took %v next to the heavy one", d)
	}
	if len(ts.srv.heavy.free) != 0 {
		t.Error("the slow query ended before the writes were done")
	}
	c.Close()
	deadline := time.Now().Add(3 * time.Second)
	for ts.do("POST", "/db/slow:main/tables/t/query", map[string]any{"columns": []string{"id"}}).status != 200 {
		if time.Now().After(deadline) {
			t.Fatal("the heavy slot is still taken after the slow query's client left")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHeavyRequest: which requests take a heavy slot.
func TestHeavyRequest(t *testing.T) {
	f := func(method, path string, want bool) {
		t.Helper()
		if got := heavyRequest(method, path); got != want {
			t.Errorf("%s %s: heavy %v, want %v", method, path, got, want)
		}
	}
	for _, p := range []string{"/tables/t/query", "/tables/t/search", "/tables/t/summarize", "/tables/t/aggregate",
		"/tables/t/vectorSearch"} {
		f("POST", "/db/db:main"+p, true)
		f("GET", "/db/db:main"+p, false)
	}
	f("POST", "/db/db:main/transaction", false)
	f("POST", "/db/db:main/tables/t/bulk", false)
	f("POST", "/db/db:main/search", true)
	f("POST", "/db/db:main/tables/t/data", false)
	f("POST", "/db/db:main/tables/t/data/r1", false)
	f("GET", "/db/db:main/tables/t/data/query", false)
	f("POST", "/db/db:main/tables/t/columns", false)
	f("POST", "/db/db:main/sql", false)
	f("PUT", "/workspaces/w/dbs/query", false)
	f("POST", "/", false)
	f("POST", "", false)
}

// waitBusy waits until the server's only slot is taken: requests get 503.
func waitBusy(t *testing.T, ts *testServer) {
	t.Helper()
	waitTaken(t, ts.srv.slots, "the slow query never took the slot")
}

// waitTaken waits until every slot of s is taken. It looks at the slots
// themselves: a probe request could take the slot before the request it
// waits for, which would then be refused.
func waitTaken(t *testing.T, s *slots, failure string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(s.free) > 0 {
		if time.Now().After(deadline) {
			t.Fatal(failure)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestQueueWait: a request that finds every slot taken waits in the queue
// and gets 503 after the longest wait; with room in the queue but none in
// its bound, at once.
func TestQueueWait(t *testing.T) {
	// A long wait, so that "at once" holds on a loaded machine too.
	const wait = 1500 * time.Millisecond
	ts := startServer(t, Options{Limits: Limits{MaxInflight: 1, MaxQueue: 1, MaxQueueWait: wait}})
	q := newSlowQuery(ts)
	c := q.start(ts)
	defer c.Close()
	waitBusy(t, ts)
	// Two requests at once: one takes the queue's place and waits, the
	// other finds it taken and is refused at once.
	type answer struct {
		status int
		took   time.Duration
	}
	answers := make(chan answer, 2)
	for range 2 {
		go func() {
			start := time.Now()
			answers <- answer{ts.do("GET", "/db/slow:main/tables/t/data/r1?columns=id", nil).status, time.Since(start)}
		}()
	}
	a, b := <-answers, <-answers
	if a.took > b.took {
		a, b = b, a
	}
	if a.status != 503 || b.status != 503 || a.took > wait*2/3 || b.took < wait-50*time.Millisecond || b.took > 4*wait {
		t.Errorf("answers %+v and %+v: want one 503 at once and one after the %v wait", a, b, wait)
	}
}

// TestBodyBudget: body bytes in flight are bounded. A body that does not
// fit next to a slow upload waits, then gets 503 and the connection is
// closed; once the upload ends, bodies fit again. Bodies over the limit
// are 413 without being read.
func TestBodyBudget(t *testing.T) {
	ts := startServer(t, Options{MaxBody: 1 << 20, Limits: Limits{MaxBodyInflight: 1 << 20, MaxQueueWait: 300 * time.Millisecond}})
	ts.createDB("db")
	ts.createTable("db", "t", map[string]any{"name": "txt", "type": "text"})
	// A slow upload announces a full budget's body and sends a little.
	up, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	fmt.Fprintf(up, "PUT /ws/%s/db/db:main/tables/t/data/slow HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"txt\":\"%s", ts.info.WorkspaceID, testKey, 1<<20,
		strings.Repeat("a", 16<<10)) // more than the transport reads with the headers
	body := `{"txt":"` + strings.Repeat("b", 100<<10) + `"}`
	deadline := time.Now().Add(5 * time.Second)
	for {
		start := time.Now()
		r := ts.do("PUT", "/db/db:main/tables/t/data/early", body)
		if r.status == 503 {
			if r.header.Get("Retry-After") != "1" {
				t.Errorf("headers %v", r.header)
			}
			if d := time.Since(start); d < 250*time.Millisecond {
				t.Errorf("answered after %v, before the queue wait", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upload never took the budget: %d %s", r.status, r.raw)
		}
	}
	// Once the upload is gone, the body fits.
	up.Close()
	for deadline := time.Now().Add(5 * time.Second); ; {
		r := ts.do("PUT", "/db/db:main/tables/t/data/r2", body)
		if r.status == 201 {
			break
		}
		if r.status != 503 || time.Now().After(deadline) {
			t.Fatalf("after the upload: %d %s", r.status, r.raw)
		}
	}

	r := ts.expect(413, "PUT", "/db/db:main/tables/t/data/r3", `{"txt":"`+strings.Repeat("c", 1<<20)+`"}`)
	if msg := errMessage(r); msg != "request body exceeds the limit of 1048576 bytes" {
		t.Errorf("413 message %q", msg)
	}
	// A chunked body is held to the same limit.
	req, _ := http.NewRequest("PUT", ts.base+"/db/db:main/tables/t/data/r4",
		io.MultiReader(strings.NewReader(`{"txt":"`), strings.NewReader(strings.Repeat("c", 1<<20)), strings.NewReader(`"}`)))
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 || resp.ContentLength == 0 {
		t.Errorf("chunked body over the limit: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest("PUT", ts.base+"/db/db:main/tables/t/data/r5",
		io.MultiReader(strings.NewReader(`{"txt":`), strings.NewReader(`"small"}`)))
	req.Header.Set("Authorization", "Bearer "+testKey)
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != 201 {
		t.Fatalf("chunked body: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestRefusedBodyAnswerArrives: a client that sends the whole of a body
// the server refuses before reading it still reads the answer: the server
// goes on reading what is sent after its answer instead of resetting the
// connection, which would discard the answer from the client's socket.
func TestRefusedBodyAnswerArrives(t *testing.T) {
	ts := startServer(t, Options{MaxBody: 1 << 20})
	ts.createDB("db")
	ts.createTable("db", "t", map[string]any{"name": "txt", "type": "text"})
	cases := []struct {
		name, key string
		size      int
		status    int
		message   string
	}{
		{"over the limit", testKey, 8 << 20, 413, "request body exceeds the limit of 1048576 bytes"},
		{"over the limit, bad key", "cpk_not_a_key_0123456789", 4 << 20, 413, "request body exceeds the limit of 1048576 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			body := `{"txt":"` + strings.Repeat("a", c.size-10) + `"}`
			req := fmt.Sprintf("PUT /ws/%s/db/db:main/tables/t/data/big HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
				"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", ts.info.WorkspaceID, c.key, len(body), body)
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatalf("sending the body: %v", err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || !resp.Close {
				t.Fatalf("answer %d (close %v): %s", resp.StatusCode, resp.Close, raw)
			}
			var e struct{ Message string }
			if err := json.Unmarshal(raw, &e); err != nil || e.Message == "" || (c.message != "" && e.Message != c.message) {
				t.Fatalf("answer body %s", raw)
			}
		})
	}
	// Nothing was written.
	ts.expect(404, "GET", "/db/db:main/tables/t/data/big", "")
}

// TestConnectionLimits: connections beyond the total or per-address cap
// get a 503 and are closed; closing one makes room.
func TestConnectionLimits(t *testing.T) {
	f := func(opts Limits, n int) {
		t.Helper()
		ts := startServer(t, Options{Limits: opts})
		var open []net.Conn
		defer func() {
			for _, c := range open {
				c.Close()
			}
		}()
		for range n {
			c, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			open = append(open, c)
			// An answer shows the server accepted the connection.
			io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp, _ := readResponse(t, c); resp.StatusCode != 200 {
				t.Fatalf("healthz %d", resp.StatusCode)
			}
		}
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		resp, body := readResponse(t, c)
		c.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(body, "too many connections") {
			t.Errorf("connection %d: %d %v %s", n+1, resp.StatusCode, resp.Header, body)
		}
		open[0].Close()
		open = open[1:]
		time.Sleep(100 * time.Millisecond)
		ts.key = ""
		ts.expect(200, "GET", ts.url+"/healthz", nil)
	}
	f(Limits{MaxConns: 3}, 3)
	f(Limits{MaxConnsPerIP: 2}, 2)
}

// TestHeaderAndIdleTimeouts: a connection that sends nothing, or only part
// of its headers, is closed at the header timeout; a kept-alive one at the
// idle timeout.
func TestHeaderAndIdleTimeouts(t *testing.T) {
	ts := startServer(t, Options{Limits: Limits{ReadHeaderTimeout: 300 * time.Millisecond, IdleTimeout: 400 * time.Millisecond}})
	closedWithin := func(c net.Conn, d time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		c.SetReadDeadline(time.Now().Add(d))
		_, err := io.Copy(io.Discard, c)
		if err != nil {
			t.Errorf("connection still open after %v: %v", d, err)
		}
		return time.Since(start)
	}
	silent, _ := net.Dial("tcp", ts.addr)
	defer silent.Close()
	partial, _ := net.Dial("tcp", ts.addr)
	defer partial.Close()
	io.WriteString(partial, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
	idle, _ := net.Dial("tcp", ts.addr)
	defer idle.Close()
	io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, _ := readResponse(t, idle)
	if resp.StatusCode != 200 {
		t.Fatalf("healthz %d", resp.StatusCode)
	}
	idle.SetReadDeadline(time.Time{})
	t.Logf("silent connection closed after %v", closedWithin(silent, 3*time.Second))
	t.Logf("half-sent request closed after %v", closedWithin(partial, 3*time.Second))
	t.Logf("idle connection closed after %v", closedWithin(idle, 3*time.Second))
}

// TestBodyReadTimeout: a body is read within RequestTimeout, not within
// the header timeout: a body sent after a pause longer than the latter is
// taken, and the connection serves on.
func TestBodyReadTimeout(t *testing.T) {
	ts := startServer(t, Options{Limits: Limits{ReadHeaderTimeout: 200 * time.Millisecond, RequestTimeout: 10 * time.Second}})
	ts.createDB("b")
	ts.createTable("b", "t", map[string]any{"name": "s", "type": "string"})
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	path := "/ws/" + ts.info.WorkspaceID + "/db/b:main/tables/t/data/r1"
	body := `{"s":"late"}`
	fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		path, testKey, len(body))
	time.Sleep(600 * time.Millisecond)
	io.WriteString(c, body)
	if resp, raw := readResponse(t, c); resp.StatusCode != 201 {
		t.Fatalf("PUT after a pause: %d %s", resp.StatusCode, raw)
	}
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", path, testKey)
	if resp, raw := readResponse(t, c); resp.StatusCode != 200 || !strings.Contains(raw, "late") {
		t.Fatalf("GET on the same connection: %d %s", resp.StatusCode, raw)
	}
}

// TestShutdownCancels: Shutdown cancels a running query, closes idle and
// half-sent connections at once, and returns long before its timeout; the
// engine then closes with no snapshot left open.
func TestShutdownCancels(t *testing.T) {
	eng, err := engine.Open(t.TempDir(), engine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	info, err := Bootstrap(eng, testKey)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(eng, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ts := &testServer{t: t, eng: eng, info: info, addr: ln.Addr().String(), key: testKey}
	ts.url = "http://" + ts.addr
	ts.base = ts.url + "/ws/" + info.WorkspaceID
	q := newSlowQuery(ts)
	c := q.start(ts)
	defer c.Close()
	idle, _ := net.Dial("tcp", ts.addr)
	defer idle.Close()
	partial, _ := net.Dial("tcp", ts.addr)
	defer partial.Close()
	io.WriteString(partial, "POST /user HTTP/1.1\r\nHost: x\r\n")
	// A slow upload: its handler has started and waits for the body.
	upload, _ := net.Dial("tcp", ts.addr)
	defer upload.Close()
	fmt.Fprintf(upload, "POST /user/keys/k HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s",
		testKey, 1<<20, strings.Repeat(" ", 16<<10))
	for deadline := time.Now().Add(5 * time.Second); srv.InFlight() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests in flight, want the query and the upload", srv.InFlight())
		}
	}

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	took := time.Since(start)
	<-served
	resp, body := readResponse(t, c)
	if resp.StatusCode != 503 || !strings.Contains(body, "shutting down") {
		t.Errorf("query during shutdown: %d %s", resp.StatusCode, body)
	}
	if resp, body := readResponse(t, upload); resp.StatusCode != 503 || !strings.Contains(body, "shutting down") {
		t.Errorf("upload during shutdown: %d %s", resp.StatusCode, body)
	}
	if took > 3*time.Second {
		t.Errorf("shutdown took %v", took)
	}
	t.Logf("shutdown took %v", took)
	if err := eng.Close(); err != nil {
		t.Errorf("close engine: %v", err)
	}
	if srv.InFlight() != 0 {
		t.Errorf("%d requests in flight after shutdown", srv.InFlight())
	}
}

// TestTransportErrorsHideCredentials: requests the HTTP layer cannot parse
// (a malformed header line, a bad request line, headers too large, a
// half-sent request) carrying an API key leave no trace of it in the log
// or the response.
func TestTransportErrorsHideCredentials(t *testing.T) {
	var logs syncBuffer
	eng, err := engine.Open(t.TempDir(), engine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if _, err := Bootstrap(eng, testKey); err != nil {
		t.Fatal(err)
	}
	srv, err := New(eng, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Limits: Limits{ReadHeaderTimeout: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	const secret = "cpk_SECRETsecretSECRETsecret0123456789"
	auth := "Authorization: Bearer " + secret + "\r\n"
	var responses bytes.Buffer
	for _, raw := range []string{
		"GET /user HTTP/1.1\r\nHost: x\r\n" + auth + "Bad header line\r\n\r\n",
		"GET /user HTTP/1.1\r\nHost: x\r\n" + auth + "X-Junk: \x00\x01\r\n\r\n",
		"GET /user HTTP/1.1 extra " + secret + "\r\nHost: x\r\n" + auth + "\r\n",
		"BAD LINE " + secret + "\r\n" + auth + "\r\n",
		"GET /user HTTP/9.9\r\nHost: x\r\n" + auth + "\r\n",
		"GET /user HTTP/1.1\r\nHost: x\r\n" + auth + "X-Big: " + strings.Repeat("z", 20000) + "\r\n\r\n",
		"POST /user HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: chunked\r\n\r\nzz\r\n" + secret + "\r\n",
		"POST /user HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 100\r\n\r\n{\"a\":",
		"GET /user HTTP/1.1\r\nHost: x\r\n" + auth, // half-sent: never finished
		"GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + auth + "\r\n",
		"GET /user HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer cpk_wrong" + secret + "\r\n\r\n",
	} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, raw)
		if tc, ok := c.(*net.TCPConn); ok && strings.HasPrefix(raw, "POST /user HTTP/1.1\r\nHost: x\r\n"+auth+"Content-Length") {
			tc.CloseWrite() // the body is cut off
		}
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		io.Copy(&responses, c)
		c.Close()
	}
	time.Sleep(100 * time.Millisecond)
	if strings.Contains(responses.String(), "SECRET") {
		t.Errorf("a response holds the key:\n%s", responses.String())
	}
	if !strings.Contains(responses.String(), "400 Bad Request") || !strings.Contains(responses.String(), "431") {
		t.Errorf("responses lack the expected errors:\n%s", responses.String())
	}
	if strings.Contains(logs.String(), "SECRET") || strings.Contains(logs.String(), "Bearer") {
		t.Errorf("the log holds the key:\n%s", logs.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestKeepAlive: one connection carries request after request, bodies or
// not, pipelined or not: bodies are read to their end and no further.
func TestKeepAlive(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("db")
	ts.createTable("db", "t", map[string]any{"name": "txt", "type": "text"})
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	auth := "Authorization: Bearer " + testKey + "\r\n"
	put := func(id, txt string) string {
		body := `{"txt":"` + txt + `"}`
		return fmt.Sprintf("PUT /ws/%s/db/db:main/tables/t/data/%s HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n%s",
			ts.info.WorkspaceID, id, auth, len(body), body)
	}
	br := bufio.NewReader(c)
	read := func(want int) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("status %d, want %d: %s", resp.StatusCode, want, b)
		}
	}
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	read(200)
	time.Sleep(50 * time.Millisecond)
	io.WriteString(c, put("a", "small"))
	read(201)
	io.WriteString(c, put("b", strings.Repeat("x", 100<<10))+"GET /user HTTP/1.1\r\nHost: x\r\n"+auth+"\r\n"+put("c", "y"))
	read(201)
	read(200)
	read(201)
	io.WriteString(c, "GET /user HTTP/1.1\r\nHost: x\r\n"+auth+"\r\n")
	read(200)
}

// TestWriteGivesSlotBack checks what a write does with its execution slot
// once it waits to be committed with the others: a single-record write and
// a bulk insert give it back while there is room among the writes waiting
// so (MaxSyncWaiting), and take a place there until released; beyond it,
// and for a transaction of several operations, the slot is kept.
func TestWriteGivesSlotBack(t *testing.T) {
	ts := startServer(t, Options{Limits: Limits{MaxInflight: 3, MaxSyncWaiting: 2}})
	ts.createDB("app")
	ts.createTable("app", "t", map[string]any{"name": "n", "type": "int"})
	s := ts.srv
	ref := engine.Ref{Workspace: ts.info.Workspace, Database: "app", Branch: "main"}
	admitted := func() *request {
		t.Helper()
		if !s.slots.tryAcquire() {
			t.Fatal("no free slot")
		}
		return &request{s: s, slot: true}
	}
	free := func(want int) {
		t.Helper()
		if n := len(s.slots.free); n != want {
			t.Errorf("%d free slots, want %d", n, want)
		}
	}
	one := admitted()
	if _, err := s.eng.WriteOneContext(s.writeContext(one, context.Background()), ref,
		engine.Op{Kind: engine.OpInsert, Table: "t", Values: map[string]any{"n": 1}}); err != nil {
		t.Fatal(err)
	}
	bulk := admitted()
	if _, err := s.eng.BulkInsert(s.writeContext(bulk, context.Background()), ref, "t",
		[]map[string]any{{"n": 2}, {"n": 3}}); err != nil {
		t.Fatal(err)
	}
	if one.slot || !one.syncWaiting || bulk.slot || !bulk.syncWaiting {
		t.Errorf("single write: slot %v, waiting %v; bulk: slot %v, waiting %v, want both false, true",
			one.slot, one.syncWaiting, bulk.slot, bulk.syncWaiting)
	}
	free(3)
	full := admitted()
	if _, err := s.eng.WriteOneContext(s.writeContext(full, context.Background()), ref,
		engine.Op{Kind: engine.OpInsert, Table: "t", Values: map[string]any{"n": 4}}); err != nil {
		t.Fatal(err)
	}
	if !full.slot || full.syncWaiting {
		t.Error("a write beyond MaxSyncWaiting gave its slot back")
	}
	s.release(one)
	tx := admitted()
	if _, err := s.eng.Write(s.writeContext(tx, context.Background()), ref, []engine.Op{
		{Kind: engine.OpInsert, Table: "t", Values: map[string]any{"n": 5}},
		{Kind: engine.OpInsert, Table: "t", Values: map[string]any{"n": 6}},
	}); err != nil {
		t.Fatal(err)
	}
	if !tx.slot || tx.syncWaiting {
		t.Error("a transaction of two operations gave its slot back")
	}
	free(1)
	for _, r := range []*request{bulk, full, tx} {
		s.release(r)
	}
	free(3)
	if n := s.syncWaiting.n.Load(); n != 0 {
		t.Errorf("%d writes counted as waiting after release", n)
	}
	if n, err := s.eng.RecordCount(ref); err != nil || n != 6 {
		t.Errorf("%d records (%v), want 6", n, err)
	}
}

// TestBulkTurnsDuringReads: while a read executes, no more bulk inserts
// compute than --max-bulk-during-reads; the next waits for a turn, holding
// no execution slot, and is applied whole once it has one. Without reads
// bulk inserts do not wait for turns.
func TestBulkTurnsDuringReads(t *testing.T) {
	ts := startServer(t, Options{Limits: Limits{MaxBulkDuringReads: 1}})
	q := newSlowQuery(ts)
	ts.createDB("other")
	ts.createTable("other", "t", map[string]any{"name": "txt", "type": "text"})
	bulk := func() <-chan int {
		status := make(chan int, 1)
		go func() {
			status <- ts.do("POST", "/db/other:main/tables/t/bulk", map[string]any{"records": []any{
				map[string]any{"txt": "a"}, map[string]any{"txt": "b"},
			}}).status
		}()
		return status
	}
	c := q.start(ts)
	defer c.Close()
	waitTaken(t, ts.srv.heavy, "the slow query never took the heavy slot")
	// A bulk insert computing holds the one turn.
	if err := ts.srv.bulk.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := bulk()
	select {
	case s := <-done:
		t.Fatalf("a bulk insert computed next to another while a read executed: status %d", s)
	case <-time.After(300 * time.Millisecond):
	}
	free := len(ts.srv.slots.free)
	if free != cap(ts.srv.slots.free)-1 { // the slow query's
		t.Errorf("%d of %d execution slots free while a bulk insert waits for its turn", free, cap(ts.srv.slots.free))
	}
	ts.srv.bulk.release()
	if s := <-done; s != 200 {
		t.Fatalf("bulk insert after its turn came: status %d", s)
	}

	// Reads over (and their linger), turns are not counted.
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for ts.srv.bulk.reads.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the slow query is still counted as a read after its client left")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, _ := ts.do("POST", "/db/other:main/tables/t/query", map[string]any{}).obj()["records"].([]any); len(got) != 2 {
		t.Fatalf("%d records after the bulk insert of 2", len(got))
	}
	time.Sleep(readsLinger)
	if err := ts.srv.bulk.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer ts.srv.bulk.release()
	select {
	case s := <-bulk():
		if s != 200 {
			t.Fatalf("bulk insert without reads: status %d", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a bulk insert waited for a turn with no read served")
	}
}

// TestBulkGateYield: a bulk insert computing when reads begin gives its
// turn back once more compute than the reads allow, and waits for one.
func TestBulkGateYield(t *testing.T) {
	g := newBulkGate(1)
	ctx := context.Background()
	for range 2 {
		if err := g.acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if g.over() {
		t.Fatal("over the limit without reads")
	}
	g.readBegins()
	if !g.over() {
		t.Fatal("two computing during a read, limit 1, not over")
	}
	g.release()
	if g.over() {
		t.Fatal("one computing during a read, limit 1, over")
	}
	waited := make(chan error, 1)
	go func() { waited <- g.acquire(ctx) }()
	select {
	case err := <-waited:
		t.Fatalf("took a second turn during a read: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	g.release()
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	g.readEnds()
	if g.over() {
		t.Fatal("over with the one turn taken")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := g.acquire(cctx); err == nil {
		t.Fatal("took a second turn within the linger of the reads")
	}
}

// TestPollNudge: a nudge returns once its pipe's reader woke, or at the
// latest after nudgeWait; after close it only yields.
func TestPollNudge(t *testing.T) {
	var p pollNudge
	start := time.Now()
	for range 100 {
		p.nudge()
	}
	if p.w == nil {
		t.Fatal("no pipe")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("100 nudges took %v", d)
	}
	p.close()
	p.close()
	done := make(chan struct{})
	go func() {
		p.nudge()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a nudge after close blocked")
	}
}
