package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine"
)

// dumpOf fetches GET /dbs/{db}/dump and splits it into its header and its
// body, which must verify.
func dumpOf(t *testing.T, ts *testServer, db string) (codec.DumpHeader, []byte) {
	t.Helper()
	r := ts.raw("GET", "/dbs/"+db+"/dump", nil, "", true)
	if r.status != 200 || r.ctype != "application/octet-stream" {
		t.Fatalf("dump %s: %d %s %.200s", db, r.status, r.ctype, r.body)
	}
	line, body, ok := bytes.Cut(r.body, []byte("\n"))
	if !ok {
		t.Fatalf("dump %s: no header line", db)
	}
	h, err := codec.DecodeDumpHeader(line)
	if err != nil {
		t.Fatalf("dump %s: %v", db, err)
	}
	if err := engine.VerifyBackup(bytes.NewReader(body)); err != nil {
		t.Fatalf("dump %s: %v", db, err)
	}
	return h, body
}

// TestDumpLoad dumps a database with two branches, a file and a git
// mapping, loads it under another name, and reads it all back; the loaded
// copy dumps to the same bytes. Bad dumps, names and regions create
// nothing.
func TestDumpLoad(t *testing.T) {
	// A body limit below the dump's size: loads stream their bodies.
	ts := startServer(t, Options{MaxBody: 4096})
	ts.createDB("app")
	ts.createTable("app", "users", map[string]any{"name": "name", "type": "string"}, map[string]any{"name": "photo", "type": "file"})
	ts.expect(201, "PUT", "/db/app:main/tables/users/data/ann", map[string]any{"name": "Ann",
		"photo": map[string]any{"name": "a.txt", "mediaType": "text/plain", "base64Content": b64("hello")}})
	for i := range 50 {
		ts.expect(201, "POST", "/db/app:main/tables/users/data", map[string]any{"name": strings.Repeat("x", 100) + string(rune('a'+i%26))})
	}
	ts.expect(201, "PUT", "/db/app:dev", map[string]any{"from": "main"})
	ts.expect(200, "PATCH", "/db/app:dev/tables/users/data/ann", map[string]any{"name": "Ann on dev"})
	ts.expect(204, "POST", "/dbs/app/gitBranches", map[string]any{"gitBranch": "feature", "xataBranch": "dev"})

	h, body := dumpOf(t, ts, "app")
	if h.Database != "app" || h.Region != ts.region() || h.DumpedAt.IsZero() || h.CreatedAt.IsZero() {
		t.Errorf("header %+v", h)
	}
	dump := ts.raw("GET", "/dbs/app/dump", nil, "", true).body
	if len(dump) <= 4096 {
		t.Fatalf("dump of %d bytes: not above the body limit", len(dump))
	}
	load := func(want int, name, query string, b []byte) rawResponse {
		t.Helper()
		return ts.expectRaw(want, "POST", "/dbs/"+name+"/load"+query, b, "application/octet-stream", true)
	}
	r := load(201, "copy", "", dump)
	if !strings.Contains(string(r.body), `"name":"copy"`) || !strings.Contains(string(r.body), `"region":"`+ts.region()+`"`) {
		t.Errorf("load answer: %s", r.body)
	}
	if got := ts.expect(200, "GET", "/db/copy:dev/tables/users/data/ann", nil).obj()["name"]; got != "Ann on dev" {
		t.Errorf("copy:dev/ann: %v", got)
	}
	if got := ts.expect(200, "GET", "/db/copy:main/tables/users/data/ann", nil).obj()["name"]; got != "Ann" {
		t.Errorf("copy:main/ann: %v", got)
	}
	if f := ts.expectRaw(200, "GET", "/db/copy:main/tables/users/data/ann/column/photo/file", nil, "", true); string(f.body) != "hello" {
		t.Errorf("file: %q", f.body)
	}
	if m := ts.expect(200, "GET", "/dbs/copy/gitBranches", nil); !strings.Contains(string(m.raw), `"gitBranch":"feature","xataBranch":"dev"`) {
		t.Errorf("git mapping: %s", m.raw)
	}
	if _, copyBody := dumpOf(t, ts, "copy"); !bytes.Equal(copyBody, body) {
		t.Error("the loaded copy dumps to other bytes")
	}
	// The copy is a database of its own.
	ts.expect(204, "DELETE", "/db/copy:main/tables/users/data/ann", nil)
	ts.expect(200, "GET", "/db/app:main/tables/users/data/ann", nil)

	errMsg := func(r rawResponse) string {
		var m struct{ Message string }
		_ = json.Unmarshal(r.body, &m)
		return m.Message
	}
	if m := errMsg(load(422, "app", "", dump)); !strings.Contains(m, "already exists") {
		t.Errorf("existing name: %s", m)
	}
	bad := bytes.Clone(dump)
	bad[len(bad)-100] ^= 0xff
	if m := errMsg(load(400, "broken", "", bad)); !strings.Contains(m, "checksum") {
		t.Errorf("corrupt dump: %s", m)
	}
	if m := errMsg(load(400, "broken", "", dump[:len(dump)/2])); !strings.Contains(m, "truncated") {
		t.Errorf("half a dump: %s", m)
	}
	if m := errMsg(load(400, "broken", "", []byte("id,name\n1,Ann\n"))); !strings.Contains(m, "not a Coppice dump") {
		t.Errorf("not a dump: %s", m)
	}
	if m := errMsg(load(400, "broken", "", nil)); !strings.Contains(m, "not a Coppice dump") {
		t.Errorf("no body: %s", m)
	}
	if m := errMsg(load(400, "broken", "?region=mars", dump)); !strings.Contains(m, "region [mars] is not available") {
		t.Errorf("unknown region: %s", m)
	}
	if m := errMsg(load(400, "bad:name", "", dump)); m == "" {
		t.Error("bad name")
	}
	ts.expect(404, "GET", ts.url+"/workspaces/"+ts.info.WorkspaceID+"/dbs/broken", nil)
	if r := ts.raw("GET", "/dbs/none/dump", nil, "", true); r.status != 404 {
		t.Errorf("dump of a missing database: %d", r.status)
	}
	if r := ts.raw("GET", "/dbs/app/dump", nil, "", false); r.status != 401 {
		t.Errorf("dump without a key: %d", r.status)
	}
	if r := ts.raw("POST", "/dbs/other/load", dump, "", false); r.status != 401 {
		t.Errorf("load without a key: %d", r.status)
	}
	// A user of another workspace is not let in (plain URL: no workspace
	// of theirs holds the database either).
	bob := ts.newUser("bob@example.com")
	ts.expect(401, "GET", ts.base+"/dbs/app/dump", nil, withKey(bob.key))
	ts.expect(401, "POST", ts.base+"/dbs/bobs/load", string(dump), withKey(bob.key))
	ts.srv.ops.loading.Lock()
	load(503, "other", "", dump)
	ts.srv.ops.loading.Unlock()
	// The server still serves the connection-closing answers above well.
	load(201, "other", "", dump)
}

// TestLoadLimit: a load over Limits.MaxLoad is a 413, whether its length is
// announced or not, and creates nothing.
func TestLoadLimit(t *testing.T) {
	ts := startServer(t, Options{Limits: Limits{MaxLoad: 1000}})
	ts.createDB("app")
	ts.createTable("app", "t", map[string]any{"name": "s", "type": "string"})
	for range 20 {
		ts.expect(201, "POST", "/db/app:main/tables/t/data", map[string]any{"s": strings.Repeat("y", 100)})
	}
	dump := ts.raw("GET", "/dbs/app/dump", nil, "", true).body
	if r := ts.raw("POST", "/dbs/big/load", dump, "", true); r.status != 413 || !strings.Contains(string(r.body), "exceeds the limit of 1000 bytes") {
		t.Errorf("announced length: %d %s", r.status, r.body)
	}
	// Chunked: no length announced; the limit stops the read.
	req, _ := http.NewRequest("POST", ts.base+"/dbs/big/load", bufio.NewReader(bytes.NewReader(dump)))
	setKey(req, ts.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked: %d", resp.StatusCode)
	}
	ts.expect(404, "GET", ts.url+"/workspaces/"+ts.info.WorkspaceID+"/dbs/big", nil)
}

// TestDumpStreamShutdown shuts the server down while a client takes a
// dump slowly: the stream ends at once, cut off so that the client sees it
// incomplete, and the engine closes cleanly after it.
func TestDumpStreamShutdown(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("app")
	ts.createTable("app", "t", map[string]any{"name": "s", "type": "string"})
	ref := engine.Ref{Workspace: ts.info.Workspace, Database: "app", Branch: "main"}
	recs := make([]map[string]any, 1000)
	for batch := range 40 {
		for i := range recs {
			recs[i] = map[string]any{"id": fmt.Sprintf("r%02d-%04d", batch, i), "s": strings.Repeat("v", 400)}
		}
		if _, err := ts.eng.BulkInsert(t.Context(), ref, "t", recs); err != nil {
			t.Fatal(err)
		}
	}
	req, _ := http.NewRequest("GET", ts.base+"/dbs/app/dump", nil)
	setKey(req, ts.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("dump: %d", resp.StatusCode)
	}
	// The dump (16 MB) stalls in the buffers while the client waits.
	time.Sleep(100 * time.Millisecond)
	if n := ts.srv.InFlight(); n != 1 {
		t.Errorf("in flight during the stream: %d", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("shutdown took %v", took)
	}
	if n := ts.srv.InFlight(); n != 0 {
		t.Errorf("in flight after the shutdown: %d", n)
	}
	got, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Errorf("the cut dump (%d bytes) read without an error", len(got))
	}
	if _, body, _ := bytes.Cut(got, []byte("\n")); engine.VerifyBackup(bytes.NewReader(body)) == nil {
		t.Error("the cut dump verifies")
	}
}
