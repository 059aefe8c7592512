package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// logBuffer collects a server's log output; it is safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines decodes the JSON log lines.
func (b *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// loggedServer starts a server whose JSON log goes to the returned buffer.
func loggedServer(t *testing.T, opts Options) (*testServer, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	log, err := NewLoggerTo(logs, "info", LogFormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = log
	return startServer(t, opts), logs
}

// rawRequest sends bytes on a new connection and returns the response.
func rawRequest(t *testing.T, addr, req string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp
}

// TestAccessLog checks the access-log line of a set of requests, failures
// included, and that no secret reaches the log: API keys good and bad,
// invite keys, file signatures and record values.
func TestAccessLog(t *testing.T) {
	ts, logs := loggedServer(t, Options{MaxBody: 4096})
	ts.createDB("app")
	ts.createTable("app", "users", map[string]any{"name": "secret", "type": "string"})
	start := len(logs.lines(t))

	const (
		badKey    = "cpk_bad_key_that_must_not_be_logged_31337"
		value     = "record-value-that-must-not-be-logged"
		inviteKey = "ik_invite_key_that_must_not_be_logged"
		signature = "signature_that_must_not_be_logged"
	)
	type sent struct {
		id, method, route string
		status            int
		ws, db            string
		rejected          bool // by fasthttp, before serve: no duration
	}
	var reqs []sent
	note := func(r *response, method, route string, status int, ws, db string) {
		t.Helper()
		if r.status != status {
			t.Fatalf("%s %s: status %d, want %d: %s", method, route, r.status, status, r.raw)
		}
		reqs = append(reqs, sent{id: r.header.Get("x-request-id"), method: method, route: route, status: status, ws: ws, db: db})
	}
	wsCore := coreOf(ts.info.WorkspaceID)
	r := ts.do("POST", "/db/app:main/tables/users/data", map[string]any{"secret": value})
	note(r, "POST", "/db/{db_branch_name}/tables/{table_name}/data", 201, wsCore, "app")
	id := str(r.obj()["id"])
	note(ts.do("GET", "/db/app:main/tables/users/data/"+id, nil), "GET", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}", 200, wsCore, "app")
	note(ts.do("POST", "/db/app:main/tables/users/query", map[string]any{"filter": map[string]any{"secret": value}}),
		"POST", "/db/{db_branch_name}/tables/{table_name}/query", 200, wsCore, "app")
	note(ts.do("GET", ts.url+"/user", nil, withKey(badKey)), "GET", "/user", 401, "", "")
	note(ts.do("GET", "/db/app:main", nil, withKey(badKey)), "GET", "/db/{db_branch_name}", 401, wsCore, "app")
	note(ts.do("GET", ts.url+"/workspaces/"+ts.info.WorkspaceID+"/dbs/app", nil), "GET", "/workspaces/{workspace_id}/dbs/{db_name}", 200, wsCore, "app")
	note(ts.do("POST", ts.url+"/workspaces/"+ts.info.WorkspaceID+"/invites/"+inviteKey+"/accept", nil),
		"POST", "/workspaces/{workspace_id}/invites/{invite_id}/accept", 404, wsCore, "")
	note(ts.do("GET", ts.url+"/file/nope?verify="+signature, nil, withKey("")), "GET", "/file/{access_id}", 404, "", "")
	note(ts.do("POST", "/db/app:main/tables/users/query", `{"filter":`), "POST", "/db/{db_branch_name}/tables/{table_name}/query", 400, wsCore, "app")
	note(ts.do("GET", ts.url+"/nowhere", nil), "GET", unmatchedRoute, 404, "", "")
	note(ts.do("GET", ts.url+"/healthz", nil, withKey("")), "GET", "/healthz", 200, "", "")
	r = ts.do("POST", "/db/app:main/tables/users/data", strings.Repeat("x", 5000))
	// The body is read after the path: its workspace is known, its route
	// is not.
	note(r, "POST", unmatchedRoute, 413, wsCore, "")

	// A malformed request, key and all: fasthttp rejects it before any
	// handler runs.
	resp := rawRequest(t, ts.addr, "GET /user HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+testKey+
		"\r\nBroken header without a colon\r\n\r\n")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || strings.Contains(string(body), testKey) {
		t.Errorf("malformed request: status %d, body %s", resp.StatusCode, body)
	}
	reqs = append(reqs, sent{id: resp.Header.Get("x-request-id"), method: "GET", route: unmatchedRoute, status: 400, rejected: true})

	lines := logs.lines(t)[start:]
	byID := map[string][]map[string]any{}
	for _, l := range lines {
		if l["msg"] == "request" {
			id, _ := l["request"].(string)
			byID[id] = append(byID[id], l)
		}
	}
	for _, q := range reqs {
		got := byID[q.id]
		if len(got) != 1 {
			t.Errorf("%s %s (%s): %d access lines, want 1", q.method, q.route, q.id, len(got))
			continue
		}
		l := got[0]
		if l["level"] != "INFO" || l["method"] != q.method || l["route"] != q.route || l["status"] != float64(q.status) {
			t.Errorf("%s %s: access line %v", q.method, q.route, l)
		}
		if d, ok := l["duration_ms"].(float64); !q.rejected && (!ok || d < 0) {
			t.Errorf("%s %s: duration_ms %v", q.method, q.route, l["duration_ms"])
		}
		if _, ok := l["bytes_out"].(float64); !ok {
			t.Errorf("%s %s: no bytes_out: %v", q.method, q.route, l)
		}
		if ws, _ := l["workspace"].(string); ws != q.ws {
			t.Errorf("%s %s: workspace %q, want %q", q.method, q.route, ws, q.ws)
		}
		if db, _ := l["database"].(string); db != q.db {
			t.Errorf("%s %s: database %q, want %q", q.method, q.route, db, q.db)
		}
	}
	if l := byID[reqs[0].id]; len(l) == 1 && l[0]["bytes_in"].(float64) < float64(len(value)) {
		t.Errorf("insert: bytes_in %v", l[0]["bytes_in"])
	}
	all := logs.String()
	for _, secret := range []string{testKey, badKey, value, inviteKey, signature} {
		if strings.Contains(all, secret) {
			t.Errorf("the log holds %q:\n%s", secret, all)
		}
	}
}

// TestSlowRequestLog checks the slow-request line: every request over the
// threshold gets one at warn level, with the plan summary a handler left;
// requests under it get none.
func TestSlowRequestLog(t *testing.T) {
	ts, logs := loggedServer(t, Options{SlowRequest: time.Nanosecond})
	ts.createDB("app")
	r := ts.expect(200, "GET", "/dbs/app", nil)
	id := r.header.Get("x-request-id")
	var slow []map[string]any
	for _, l := range logs.lines(t) {
		if l["msg"] == "slow request" {
			slow = append(slow, l)
		}
	}
	if len(slow) < 2 {
		t.Fatalf("%d slow-request lines for every request over 1ns", len(slow))
	}
	found := false
	for _, l := range slow {
		if l["request"] != id {
			continue
		}
		found = true
		if l["level"] != "WARN" || l["route"] != "/dbs/{db_name}" || l["status"] != float64(200) || l["threshold"] == nil {
			t.Errorf("slow line %v", l)
		}
		if _, ok := l["plan"]; ok {
			t.Errorf("a plan without a query: %v", l)
		}
	}
	if !found {
		t.Errorf("no slow line for request %s", id)
	}

	// Under the default threshold nothing is slow.
	ts, logs = loggedServer(t, Options{})
	ts.createDB("app")
	ts.expect(200, "GET", "/dbs/app", nil)
	if strings.Contains(logs.String(), "slow request") {
		t.Errorf("slow lines under the default threshold:\n%s", logs.String())
	}
	// A negative threshold turns the log off.
	ts, logs = loggedServer(t, Options{SlowRequest: -1})
	ts.createDB("app")
	if strings.Contains(logs.String(), "slow request") {
		t.Errorf("slow lines with the log off:\n%s", logs.String())
	}
}

// TestSlowAggregatePlan checks that a slow aggregate logs its plan, as a
// query, a summarize and a search do: the aggregations by name, kind and
// column, and the filter's steps, with no value of the request.
func TestSlowAggregatePlan(t *testing.T) {
	ts, logs := loggedServer(t, Options{SlowRequest: time.Nanosecond})
	ts.createDB("app")
	ts.createTable("app", "people", map[string]any{"name": "age", "type": "int"}, map[string]any{"name": "city", "type": "string"})
	for i, city := range []string{"Lyon", "Oslo", "Lyon"} {
		ts.expect(201, "PUT", fmt.Sprintf("/db/app:main/tables/people/data/p%d", i), map[string]any{"age": 20 + 10*i, "city": city})
	}
	r := ts.expect(200, "POST", "/db/app:main/tables/people/aggregate", map[string]any{
		"filter": map[string]any{"age": map[string]any{"$ge": 25}},
		"aggs": map[string]any{
			"cities": map[string]any{"topValues": map[string]any{"column": "city",
				"aggs": map[string]any{"oldest": map[string]any{"max": map[string]any{"column": "age"}}}}},
			"from_lyon": map[string]any{"count": map[string]any{"filter": map[string]any{"city": "Lyon"}}},
		},
	})
	if got := fmt.Sprint(r.obj()["aggs"].(map[string]any)["from_lyon"]); got != "1" {
		t.Fatalf("from_lyon = %v, want 1: %s", got, r.body)
	}
	id := r.header.Get("x-request-id")
	const want = "aggregate cities = topValues(city){oldest = max(age)}, from_lyon = count(* where city = ?)(range age >= ?)"
	found := false
	for _, l := range logs.lines(t) {
		if l["request"] == id && l["msg"] == "slow request" {
			found = true
			if l["plan"] != want {
				t.Errorf("plan %q, want %q", l["plan"], want)
			}
		}
	}
	if !found {
		t.Errorf("no slow-request line for %s:\n%s", id, logs.String())
	}

	// Without aggregations it counts the rows of the filter.
	r = ts.expect(200, "POST", "/db/app:main/tables/people/aggregate", map[string]any{})
	id = r.header.Get("x-request-id")
	for _, l := range logs.lines(t) {
		if l["request"] == id && l["msg"] == "slow request" && l["plan"] != "aggregate count = count(*)(live)" {
			t.Errorf("plan %q", l["plan"])
		}
	}
}

// planText is a PlanSummary for TestSlowRequestPlan.
type planText string

func (p planText) String() string { return string(p) }

// TestSlowRequestPlan checks that the plan summary a handler hands to
// setPlan reaches the slow-request line, and only that line.
func TestSlowRequestPlan(t *testing.T) {
	logs := &logBuffer{}
	log, _ := NewLoggerTo(logs, "info", LogFormatJSON)
	s := unstartedServer(t, CompatNone)
	s.log, s.slow = log, 10*time.Millisecond
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("POST")
	ctx.SetStatusCode(200)
	r := &request{ctx: &ctx, s: s, id: "req_plan"}
	r.route = s.router.routes[0]
	r.setPlan(planText("postings(age ≥ 30) → heap(20)"))
	s.finish(&ctx, r, time.Now().Add(-time.Second))
	lines := logs.lines(t)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want an access line and a slow line:\n%s", len(lines), logs.String())
	}
	if _, ok := lines[0]["plan"]; ok || lines[0]["msg"] != "request" {
		t.Errorf("access line %v", lines[0])
	}
	if lines[1]["msg"] != "slow request" || lines[1]["plan"] != "postings(age ≥ 30) → heap(20)" {
		t.Errorf("slow line %v", lines[1])
	}
}

// TestLogFormats checks both formats and the option errors.
func TestLogFormats(t *testing.T) {
	for _, f := range []struct{ format, want string }{
		{"", `msg=request request=req_`},
		{LogFormatText, `msg=request request=req_`},
		{LogFormatJSON, `"msg":"request","request":`},
	} {
		var buf logBuffer
		log, err := NewLoggerTo(&buf, "info", f.format)
		if err != nil {
			t.Fatal(err)
		}
		ts := startServer(t, Options{Logger: log})
		ts.key = ""
		ts.expect(200, "GET", ts.url+"/healthz", nil)
		if !strings.Contains(buf.String(), f.want) || !strings.Contains(buf.String(), "/healthz") {
			t.Errorf("format %q: no %s in\n%s", f.format, f.want, buf.String())
		}
	}
	for _, bad := range [][2]string{{"info", "xml"}, {"loud", "text"}} {
		if _, err := NewLoggerTo(io.Discard, bad[0], bad[1]); err == nil {
			t.Errorf("level %q format %q: no error", bad[0], bad[1])
		}
	}
	// At warn level there is no access log.
	var buf logBuffer
	log, _ := NewLoggerTo(&buf, "warn", LogFormatText)
	ts := startServer(t, Options{Logger: log})
	ts.expect(200, "GET", ts.url+"/healthz", nil)
	if strings.Contains(buf.String(), "msg=request") {
		t.Errorf("access line at warn level: %s", buf.String())
	}
}
