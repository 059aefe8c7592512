package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// testKey is the fixed bootstrap key of test servers.
const testKey = "cpk_test_0123456789abcdefghijklmnop"

// testServer is a real server on a loopback port over a temporary data
// directory, bootstrapped with testKey.
type testServer struct {
	t    *testing.T
	eng  *engine.Engine
	srv  *Server
	info *BootstrapInfo
	addr string // host:port
	url  string // http://host:port
	base string // data-plane base: url + /ws/{workspace id}
	key  string // the key requests carry; "" sends none
	dir  string // the data directory
}

func startServer(t *testing.T, opts Options) *testServer {
	t.Helper()
	return startServerEngine(t, opts, engine.Options{})
}

// startServerEngine is startServer with engine options, such as a clock;
// writes are never synced.
func startServerEngine(t *testing.T, opts Options, eopts engine.Options) *testServer {
	t.Helper()
	eopts.NoSync = true
	eopts.Meta = MetaKey(opts.Compat)
	dir := t.TempDir()
	eng, err := engine.Open(dir, eopts)
	if err != nil {
		t.Fatal(err)
	}
	return serveEngine(t, opts, eng, dir)
}

// serveEngine bootstraps an engine open on dir and serves it as
// startServer does; the test's cleanup closes it, and a failure to close
// is one unless the engine's storage failed.
func serveEngine(t *testing.T, opts Options, eng *engine.Engine, dir string) *testServer {
	t.Helper()
	return serveEngineOn(t, opts, eng, dir, nil)
}

// serveEngineOn is serveEngine on the loopback listener wrap returns, when
// wrap is not nil, so that a test can watch the server's connections.
func serveEngineOn(t *testing.T, opts Options, eng *engine.Engine, dir string, wrap func(net.Listener) net.Listener) *testServer {
	t.Helper()
	info, err := Bootstrap(eng, testKey)
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := New(eng, opts)
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	var l net.Listener = ln
	if wrap != nil {
		l = wrap(ln)
	}
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		ln.Close()
		<-served
		if err := eng.Close(); err != nil && eng.Health() == nil {
			t.Errorf("close engine: %v", err)
		}
	})
	ts := &testServer{t: t, eng: eng, srv: srv, info: info, addr: ln.Addr().String(), key: testKey, dir: dir}
	ts.url = "http://" + ts.addr
	ts.base = ts.url + "/ws/" + info.WorkspaceID
	return ts
}

// response is a received response; JSON bodies are decoded into body.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   any
}

// obj returns the body as a JSON object.
func (r *response) obj() map[string]any {
	m, _ := r.body.(map[string]any)
	return m
}

// reqOpt adjusts a request before it is sent.
type reqOpt func(*http.Request)

func withHost(h string) reqOpt      { return func(r *http.Request) { r.Host = h } }
func withKey(k string) reqOpt       { return func(r *http.Request) { setKey(r, k) } }
func withHeader(k, v string) reqOpt { return func(r *http.Request) { r.Header.Set(k, v) } }

func setKey(r *http.Request, k string) {
	if k == "" {
		r.Header.Del("Authorization")
		return
	}
	r.Header.Set("Authorization", "Bearer "+k)
}

// do sends a request; body is sent as is when it is a string, else as
// JSON. Every response must carry x-request-id, and every non-204 response
// a JSON body.
func (ts *testServer) do(method, url string, body any, opts ...reqOpt) *response {
	ts.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			ts.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	if !strings.HasPrefix(url, "http") {
		url = ts.base + url
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	setKey(req, ts.key)
	for _, o := range opts {
		o(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	out := &response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if resp.Header.Get("x-request-id") == "" {
		ts.t.Errorf("%s %s: no x-request-id header", method, url)
	}
	if resp.StatusCode == http.StatusNoContent {
		if len(raw) != 0 {
			ts.t.Errorf("%s %s: 204 with a body %q", method, url, raw)
		}
		return out
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		ts.t.Errorf("%s %s: content type %q, body %s", method, url, ct, raw)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&out.body); err != nil {
		ts.t.Errorf("%s %s: body is not JSON: %q", method, url, raw)
	}
	if resp.StatusCode >= 400 {
		m := out.obj()
		if _, ok := m["errors"]; !ok {
			if msg, _ := m["message"].(string); msg == "" {
				ts.t.Errorf("%s %s: error without message: %s", method, url, raw)
			}
		}
	}
	return out
}

// expect sends a request and fails the test unless the status is want.
func (ts *testServer) expect(want int, method, url string, body any, opts ...reqOpt) *response {
	ts.t.Helper()
	r := ts.do(method, url, body, opts...)
	if r.status != want {
		ts.t.Fatalf("%s %s: status %d, want %d; body %s", method, url, r.status, want, r.raw)
	}
	return r
}

// createDB creates a database in the bootstrap workspace.
func (ts *testServer) createDB(name string) {
	ts.t.Helper()
	ts.expect(201, "PUT", ts.url+"/workspaces/"+ts.info.WorkspaceID+"/dbs/"+name, map[string]any{"region": ts.region()})
}

func (ts *testServer) region() string {
	r := ts.do("GET", ts.url+"/workspaces/"+ts.info.WorkspaceID+"/regions", nil)
	return r.obj()["regions"].([]any)[0].(map[string]any)["id"].(string)
}

// createTable creates a table with columns in db:main.
func (ts *testServer) createTable(db, table string, cols ...map[string]any) {
	ts.t.Helper()
	ts.expect(201, "PUT", "/db/"+db+":main/tables/"+table, nil)
	for _, c := range cols {
		ts.expect(200, "POST", "/db/"+db+":main/tables/"+table+"/columns", c)
	}
}

// keys returns the sorted keys of a JSON object, joined by commas.
func keys(v any) string {
	m, _ := v.(map[string]any)
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sortStrings(ks)
	return strings.Join(ks, ",")
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// jsonEq fails unless got encodes to the same JSON as want (a JSON text).
func jsonEq(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON %q: %v", want, err)
	}
	gb, _ := json.Marshal(got)
	var g any
	json.Unmarshal(gb, &g)
	wb, _ := json.Marshal(w)
	gb, _ = json.Marshal(g)
	if string(gb) != string(wb) {
		t.Errorf("%s:\n got %s\nwant %s", what, gb, wb)
	}
}

func TestHealthz(t *testing.T) {
	ts := startServer(t, Options{})
	ts.key = ""
	r := ts.expect(200, "GET", ts.url+"/healthz", nil)
	jsonEq(t, "healthz", r.body, `{"status":"ok"}`)
}

func TestAuthentication(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("db")
	f := func(opt reqOpt) {
		t.Helper()
		r := ts.expect(401, "GET", "/dbs/db", nil, opt)
		if msg := r.obj()["message"]; msg != "invalid API key" {
			t.Errorf("message %q", msg)
		}
	}
	f(withKey(""))
	f(withKey("cpk_wrong"))
	f(withHeader("Authorization", "Basic "+testKey))
	f(withHeader("Authorization", "Bearer"))
	ts.expect(200, "GET", "/dbs/db", nil, withHeader("Authorization", "bearer "+testKey))
	// Control-plane database operations authenticate too.
	ts.expect(401, "GET", ts.url+"/workspaces/"+ts.info.WorkspaceID+"/dbs", nil, withKey("nope"))
}

func TestRequestIDAndErrorShape(t *testing.T) {
	ts := startServer(t, Options{})
	r := ts.expect(404, "GET", "/dbs/missing", nil)
	id := r.header.Get("x-request-id")
	if r.obj()["id"] != id {
		t.Errorf("error id %v, header %q", r.obj()["id"], id)
	}
	if keys(r.body) != "id,message" {
		t.Errorf("error keys %s", keys(r.body))
	}
	r2 := ts.expect(404, "GET", "/dbs/missing", nil)
	if r2.header.Get("x-request-id") == id {
		t.Error("request ids repeat")
	}
}

func TestRouting(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("db")
	ts.createTable("db", "t", map[string]any{"name": "s", "type": "string"})
	ts.expect(201, "PUT", "/db/db:main/tables/t/data/a:b", map[string]any{"s": "x"})

	// Unknown path and wrong method.
	ts.expect(404, "GET", "/nothing/here", nil)
	ts.expect(405, "POST", "/db/db:main/metadata", nil)
	// Empty record id.
	ts.expect(404, "GET", "/db/db:main/tables/t/data/", nil)
	// Doubled slashes collapse.
	ts.expect(200, "GET", ts.base+"//db/db:main//tables/t/data/a:b", nil)
	// Segments are percent-decoded one by one.
	r := ts.expect(200, "GET", "/db/db%3Amain/tables/t/data/a%3Ab", nil)
	if r.obj()["id"] != "a:b" {
		t.Errorf("id %v", r.obj()["id"])
	}
	// {db}:{branch} needs a colon; an encoded slash stays inside its segment.
	ts.expect(400, "GET", "/db/db/tables/t/data/x", nil)
	ts.expect(404, "GET", "/db/db:main/tables/t%2Fx/data/a", nil)
}

func TestWorkspaceResolution(t *testing.T) {
	ts := startServer(t, Options{Domains: []string{"example.test"}})
	ts.createDB("db")
	ws := ts.info.WorkspaceID
	core := ts.info.Workspace

	// Path prefix: the public id or the bare core.
	ts.expect(200, "GET", ts.url+"/ws/"+ws+"/dbs/db", nil)
	ts.expect(200, "GET", ts.url+"/ws/"+core+"/dbs/db", nil)
	ts.expect(200, "GET", ts.url+"/ws/anything-"+core+"/dbs/db", nil)
	// Host form, case-insensitive, with and without the upload label.
	ts.expect(200, "GET", ts.url+"/dbs/db", nil, withHost(strings.ToUpper(ws)+".LOCAL.example.test"))
	ts.expect(200, "GET", ts.url+"/dbs/db", nil, withHost(core+".local.upload.example.test:1234"))
	// Plain form: the user belongs to one workspace.
	ts.expect(200, "GET", ts.url+"/dbs/db", nil)

	// Unknown workspaces and workspaces of others are 401.
	ts.expect(401, "GET", ts.url+"/ws/zzzzzz/dbs/db", nil)
	ts.expect(401, "GET", ts.url+"/ws/not-a-workspace/dbs/db", nil)
	ts.expect(401, "GET", ts.url+"/dbs/db", nil, withHost("zzzzzz.local.example.test"))
	other, err := ts.eng.Accounts().CreateUser(engine.NewUser{Email: "other@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	otherWS, err := ts.eng.Accounts().CreateWorkspace(other.ID, "other", "")
	if err != nil {
		t.Fatal(err)
	}
	ts.expect(401, "GET", ts.url+"/ws/"+otherWS.ID()+"/dbs/db", nil)
	ts.expect(401, "GET", ts.url+"/workspaces/"+otherWS.ID()+"/dbs", nil)
	ts.expect(401, "PUT", ts.url+"/workspaces/"+otherWS.ID()+"/dbs/x", map[string]any{"region": "local"})

	// A user with two workspaces: the plain form finds a database that
	// exists in exactly one of them (and in none of other users').
	second, err := ts.eng.Accounts().CreateWorkspace(ts.info.UserID, "second", "")
	if err != nil {
		t.Fatal(err)
	}
	createIn := func(wsID, db string) {
		t.Helper()
		ts.expect(201, "PUT", ts.url+"/workspaces/"+wsID+"/dbs/"+db, map[string]any{"region": "local"})
	}
	createIn(second.ID(), "only2")
	createIn(second.ID(), "shared")
	createIn(ws, "shared")
	if _, err := ts.eng.CreateDatabase(engine.CreateDatabaseRequest{Workspace: otherWS.Core, Name: "only2", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	r := ts.expect(200, "GET", ts.url+"/dbs/db", nil)
	r2 := ts.expect(200, "GET", ts.url+"/dbs/only2", nil)
	if r.obj()["databaseName"] != "db" || r2.obj()["databaseName"] != "only2" {
		t.Errorf("plain form: %s %s", r.raw, r2.raw)
	}
	ts.expect(201, "PUT", ts.url+"/db/only2:main/tables/t", nil)
	ts.expect(200, "GET", ts.base+"/db/db:main", nil)
	ts.expect(404, "GET", ts.base+"/db/only2:main/tables/t/schema", nil) // only2 is not in ws
	ts.expect(200, "GET", ts.url+"/ws/"+second.ID()+"/db/only2:main/tables/t/schema", nil)
	// A database in both, or in neither, leaves the workspace open.
	for _, path := range []string{"/dbs/shared", "/db/shared:main", "/dbs/nowhere", "/db/nowhere:main/tables/t/query"} {
		method := "GET"
		if strings.HasSuffix(path, "/query") {
			method = "POST"
		}
		r = ts.expect(400, method, ts.url+path, nil)
		if msg := r.obj()["message"]; msg != "workspace cannot be determined; use /ws/{id} or a workspace host name" {
			t.Errorf("%s: message %q", path, msg)
		}
	}
	ts.expect(200, "GET", ts.url+"/ws/"+ws+"/dbs/shared", nil)

	// A key scoped to a workspace resolves the plain form and reaches only
	// that workspace.
	cred, err := ts.eng.Accounts().CreateAPIKey(ts.info.UserID, "scoped", core, "")
	if err != nil {
		t.Fatal(err)
	}
	ts.expect(200, "GET", ts.url+"/dbs/db", nil, withKey(cred.Secret))
	ts.expect(401, "GET", ts.url+"/ws/"+otherWS.ID()+"/dbs/db", nil, withKey(cred.Secret))
}

// TestHostRegion checks that the host form answers only for the databases
// of the region it names, as the legacy service's regional hosts did.
func TestHostRegion(t *testing.T) {
	ts := startServer(t, Options{Regions: []string{"us-east-1", "eu-west-1"}, Domains: []string{"example.test"}})
	ws := ts.info.WorkspaceID
	for db, region := range map[string]string{"east": "us-east-1", "west": "eu-west-1"} {
		ts.expect(201, "PUT", ts.url+"/workspaces/"+ws+"/dbs/"+db, map[string]any{"region": region})
		ts.expect(201, "PUT", ts.base+"/db/"+db+":main/tables/t", nil)
		ts.expect(201, "PUT", ts.base+"/db/"+db+":main/tables/t/data/x", map[string]any{})
	}
	f := func(status int, host, method, path string) {
		t.Helper()
		r := ts.expect(status, method, ts.url+path, nil, withHost(host))
		if status == 404 {
			db, _, _ := strings.Cut(strings.Split(path, "/")[2], ":")
			region := strings.Split(host, ".")[1]
			if want := "database [" + db + "] not found in region [" + region + "]"; r.obj()["message"] != want {
				t.Errorf("%s %s: message %v, want %q", host, path, r.obj()["message"], want)
			}
		}
	}
	east, west := ws+".us-east-1.example.test", ws+".eu-west-1.upload.example.test:8080"
	for _, c := range []struct{ method, path string }{
		{"GET", "/dbs/%s"}, {"GET", "/db/%s:main"}, {"GET", "/db/%s:main/tables/t/schema"},
		{"POST", "/db/%s:main/tables/t/query"}, {"GET", "/db/%s:main/tables/t/data/x"},
		{"GET", "/dbs/%s/gitBranches"},
	} {
		f(200, east, c.method, fmt.Sprintf(c.path, "east"))
		f(404, east, c.method, fmt.Sprintf(c.path, "west"))
		f(200, west, c.method, fmt.Sprintf(c.path, "west"))
		f(404, west, c.method, fmt.Sprintf(c.path, "east"))
		f(404, ws+".ap-south-9.example.test", c.method, fmt.Sprintf(c.path, "east"))
	}
	ts.expect(200, "GET", ts.url+"/dbs/east", nil, withHost(strings.ToUpper(east)))
	// The path and plain forms name no region.
	ts.expect(200, "GET", ts.base+"/dbs/west", nil)
	ts.expect(200, "GET", ts.url+"/dbs/west", nil)
	ts.expect(200, "GET", ts.base+"/dbs/west", nil, withHost(east))
	// A database that exists nowhere is not found, whatever the host.
	r := ts.expect(404, "GET", ts.url+"/dbs/gone", nil, withHost(east))
	if r.obj()["message"] != "database [gone] not found" {
		t.Errorf("message %v", r.obj()["message"])
	}
}

func TestBodyLimit(t *testing.T) {
	ts := startServer(t, Options{MaxBody: 1024})
	ts.createDB("db")
	r := ts.expect(413, "PUT", ts.url+"/workspaces/"+ts.info.WorkspaceID+"/dbs/big",
		`{"region":"local","pad":"`+strings.Repeat("x", 4096)+`"}`)
	if !strings.Contains(fmt.Sprint(r.obj()["message"]), "1024") {
		t.Errorf("message %v", r.obj()["message"])
	}
	ts.expect(404, "GET", ts.url+"/workspaces/"+ts.info.WorkspaceID+"/dbs/big", nil)
}
