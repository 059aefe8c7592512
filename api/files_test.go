package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// filesFixture creates db:main with a table docs: a string, a file column
// "photo" and a file[] column "att" whose files are public by default.
func filesFixture(t *testing.T, opts Options) *testServer {
	ts := startServer(t, opts)
	ts.createDB("db")
	ts.createTable("db", "docs",
		map[string]any{"name": "title", "type": "string"},
		map[string]any{"name": "photo", "type": "file"},
		map[string]any{"name": "att", "type": "file[]", "file[]": map[string]any{"defaultPublicAccess": true}},
	)
	return ts
}

// rawResponse is a response whose body may be anything.
type rawResponse struct {
	status int
	ctype  string
	body   []byte
}

// raw sends a request with a raw body and content type; without auth it
// sends no Authorization header.
func (ts *testServer) raw(method, url string, body []byte, ctype string, auth bool) rawResponse {
	ts.t.Helper()
	if !strings.HasPrefix(url, "http") {
		url = ts.base + url
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if auth {
		setKey(req, ts.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return rawResponse{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: data}
}

// expectRaw is raw that fails the test unless the status is want.
func (ts *testServer) expectRaw(want int, method, url string, body []byte, ctype string, auth bool) rawResponse {
	ts.t.Helper()
	r := ts.raw(method, url, body, ctype, auth)
	if r.status != want {
		ts.t.Fatalf("%s %s: status %d, want %d; body %.300s", method, url, r.status, want, r.body)
	}
	return r
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestFileValuesHTTP(t *testing.T) {
	ts := filesFixture(t, Options{Compat: CompatXata})
	T := "/db/db:main/tables/docs"
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 5, 7))); err != nil {
		t.Fatal(err)
	}
	r := ts.expect(201, "PUT", T+"/data/d1?columns=*", map[string]any{
		"title": "one",
		"photo": map[string]any{"name": "p.png", "mediaType": "image/png", "base64Content": base64.StdEncoding.EncodeToString(img.Bytes())},
		"att":   []any{map[string]any{"name": "a.txt", "mediaType": "text/plain", "base64Content": b64("alpha")}},
	})
	photo := r.obj()["photo"].(map[string]any)
	if keys(photo) != "attributes,enablePublicUrl,mediaType,name,signedUrlTimeout,size,uploadUrlTimeout,url,version" {
		t.Errorf("photo keys %s", keys(photo))
	}
	jsonEq(t, "photo attributes", photo["attributes"], `{"width":5,"height":7}`)
	url, _ := photo["url"].(string)
	if !strings.HasPrefix(url, ts.url+"/file/") || !regexp.MustCompile(`^[A-Za-z0-9_-]+$`).MatchString(strings.TrimPrefix(url, ts.url+"/file/")) {
		t.Errorf("photo url %q", url)
	}
	if photo["size"] != json.Number(strconv.Itoa(img.Len())) || photo["enablePublicUrl"] != false || photo["version"] != json.Number("1") {
		t.Errorf("photo %v", photo)
	}
	att := r.obj()["att"].([]any)[0].(map[string]any)
	attID, _ := att["id"].(string)
	if !regexp.MustCompile(`^[a-z0-9]{26}$`).MatchString(attID) || att["enablePublicUrl"] != true || att["size"] != json.Number("5") {
		t.Errorf("att item %v", att)
	}
	jsonEq(t, "att attributes", att["attributes"], `{}`)

	// A point read (encoded from the stored record) shows the same files.
	got := ts.expect(200, "GET", T+"/data/d1", nil).obj()
	jsonEq(t, "point read photo", got["photo"], fileJSONText(photo))
	jsonEq(t, "point read att", got["att"], fileJSONText([]any{att}))
	q := ts.expect(200, "POST", T+"/query", map[string]any{"columns": []any{"photo", "att"}}).obj()
	jsonEq(t, "query photo", q["records"].([]any)[0].(map[string]any)["photo"], fileJSONText(photo))

	// Content and URLs only when named.
	r = ts.expect(200, "GET", T+"/data/d1?columns=*,photo.base64Content,photo.signedUrl,att.uploadUrl", nil)
	p2 := r.obj()["photo"].(map[string]any)
	if p2["base64Content"] != base64.StdEncoding.EncodeToString(img.Bytes()) || !strings.HasPrefix(p2["signedUrl"].(string), url+"?verify=") ||
		p2["uploadUrl"] != nil || p2["name"] != "p.png" {
		t.Errorf("named photo fields %v", keys(p2))
	}
	a2 := r.obj()["att"].([]any)[0].(map[string]any)
	if up, _ := a2["uploadUrl"].(string); !strings.Contains(up, "/file/") || a2["signedUrl"] != nil || a2["base64Content"] != nil {
		t.Errorf("named att fields %v", a2)
	}
	r = ts.expect(200, "GET", T+"/data/d1?columns=photo.name,photo.size", nil)
	jsonEq(t, "sub-fields", r.obj()["photo"], `{"name":"p.png","size":`+photo["size"].(json.Number).String()+`}`)
	ts.expect(400, "GET", T+"/data/d1?columns=title.base64Content", nil)

	// Validation: 400.
	f := func(body map[string]any) {
		t.Helper()
		ts.expect(400, "POST", T+"/data", body)
	}
	f(map[string]any{"photo": map[string]any{"mediaType": "text/plain"}})
	f(map[string]any{"photo": map[string]any{"name": "has space"}})
	f(map[string]any{"photo": map[string]any{"name": strings.Repeat("n", 1025)}})
	f(map[string]any{"photo": map[string]any{"name": "a", "mediaType": "nope"}})
	f(map[string]any{"photo": map[string]any{"name": "a", "base64Content": "***"}})
	f(map[string]any{"photo": map[string]any{"name": "a", "signedUrlTimeout": 86401}})
	f(map[string]any{"photo": map[string]any{"name": "a", "uploadUrlTimeout": 90000}})
	f(map[string]any{"photo": []any{}})
	f(map[string]any{"att": []any{map[string]any{"name": "a", "id": "x"}, map[string]any{"name": "b", "id": "x"}}})
	many := make([]any, 51)
	for i := range many {
		many[i] = map[string]any{"name": "f"}
	}
	f(map[string]any{"att": many})

	// file[] replaces the column; a known id without content keeps it.
	r = ts.expect(200, "PATCH", T+"/data/d1?columns=att", map[string]any{"att": []any{
		map[string]any{"id": attID, "name": "renamed.txt"},
		map[string]any{"name": "empty.txt", "base64Content": ""},
	}})
	items := r.obj()["att"].([]any)
	if len(items) != 2 || items[0].(map[string]any)["id"] != attID || items[0].(map[string]any)["size"] != json.Number("5") ||
		items[1].(map[string]any)["size"] != json.Number("0") {
		t.Fatalf("att after patch %v", items)
	}
	body := ts.expectRaw(200, "GET", T+"/data/d1/column/att/file/"+attID, nil, "", true)
	if string(body.body) != "alpha" || body.ctype != "text/plain" {
		t.Errorf("kept item %q %q", body.body, body.ctype)
	}

	// Bulk inserts and transactions: 400 with the messages of §3.4.
	r = ts.expect(400, "POST", T+"/bulk", map[string]any{"records": []any{
		map[string]any{"title": "fine"},
		map[string]any{"photo": map[string]any{"name": "a"}},
		map[string]any{"att": []any{map[string]any{"name": "a"}}},
	}})
	jsonEq(t, "bulk errors", r.obj(), `{"errors":[
		{"message":"column [photo]: file upload not permitted in transaction","status":400},
		{"message":"column [att]: file entry [0]: file upload not permitted in transaction","status":400}]}`)
	r = ts.expect(400, "POST", "/db/db:main/transaction", map[string]any{"operations": []any{
		map[string]any{"insert": map[string]any{"table": "docs", "record": map[string]any{"photo": map[string]any{"name": "a"}}}},
	}})
	if errs, _ := r.obj()["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["message"] != "column [photo]: file upload not permitted in transaction" {
		t.Errorf("transaction: %s", r.raw)
	}
}

// fileJSONText encodes v for jsonEq.
func fileJSONText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestFileBinaryEndpoints(t *testing.T) {
	ts := filesFixture(t, Options{})
	T := "/db/db:main/tables/docs"
	ts.expect(201, "PUT", T+"/data/d1", map[string]any{"title": "x"})
	F := T + "/data/d1/column/photo/file"
	A := T + "/data/d1/column/att/file"
	version := func() string {
		return checkMeta(t, ts.expect(200, "GET", T+"/data/d1", nil).obj(), "svc")
	}

	// file column.
	ts.expectRaw(204, "GET", F, nil, "", true)
	ts.expectRaw(204, "GET", F+"/", nil, "", true)
	r := ts.expect(201, "PUT", F, "hello", withHeader("Content-Type", "text/plain"))
	fr := r.obj()
	if keys(fr) != "attributes,enablePublicUrl,mediaType,name,signedUrl,signedUrlTimeout,size,uploadUrl,uploadUrlTimeout,url,version" ||
		fr["name"] != "" || fr["mediaType"] != "text/plain" || fr["size"] != json.Number("5") {
		t.Errorf("FileResponse %s", r.raw)
	}
	r = ts.expect(200, "PUT", F+"/", "hello again", withHeader("Content-Type", "application/x-thing"))
	if r.obj()["version"] != json.Number("2") || r.obj()["mediaType"] != "application/x-thing" {
		t.Errorf("replace: %s", r.raw)
	}
	got := ts.expectRaw(200, "GET", F, nil, "", true)
	if string(got.body) != "hello again" || got.ctype != "application/x-thing" {
		t.Errorf("GET F: %q %q", got.body, got.ctype)
	}
	if got := ts.expectRaw(200, "GET", F+"/", nil, "", true); string(got.body) != "hello again" {
		t.Errorf("GET F/: %q", got.body)
	}
	if v := version(); v != "2" {
		t.Errorf("version after two binary writes: %s", v)
	}
	ts.expect(400, "GET", F+"/someid", nil)
	r = ts.expect(200, "DELETE", F, nil)
	if r.obj()["size"] != json.Number("11") {
		t.Errorf("delete: %s", r.raw)
	}
	if rec := ts.expect(200, "GET", T+"/data/d1", nil).obj(); rec["photo"] != nil {
		t.Errorf("photo after delete: %v", rec)
	}
	ts.expectRaw(204, "GET", F, nil, "", true)
	ts.expect(404, "DELETE", F+"/", nil)

	// file[] column.
	ts.expect(400, "GET", A, nil)
	ts.expect(400, "GET", A+"/", nil)
	ts.expect(400, "PUT", A, "x")
	ts.expect(400, "DELETE", A, nil)
	ts.expect(400, "DELETE", A+"/", nil)
	r = ts.expect(201, "PUT", A+"/", "new item", withHeader("Content-Type", "text/plain"))
	newID, _ := r.obj()["id"].(string)
	if len(newID) != 26 || r.obj()["enablePublicUrl"] != true {
		t.Errorf("append: %s", r.raw)
	}
	ts.expect(201, "PUT", A+"/mine", "mine")
	r = ts.expect(200, "PUT", A+"/mine", "mine v2")
	if r.obj()["id"] != "mine" || r.obj()["version"] != json.Number("2") {
		t.Errorf("replace item: %s", r.raw)
	}
	if got := ts.expectRaw(200, "GET", A+"/"+newID, nil, "", true); string(got.body) != "new item" || got.ctype != "text/plain" {
		t.Errorf("GET item: %q %q", got.body, got.ctype)
	}
	r = ts.expect(200, "DELETE", A+"/"+newID, nil)
	if r.obj()["id"] != newID {
		t.Errorf("delete item: %s", r.raw)
	}
	ts.expect(404, "GET", A+"/"+newID, nil)
	ts.expect(404, "DELETE", A+"/"+newID, nil)
	ts.expect(400, "PUT", A+"/bad%2Fid", "x")

	// Missing record, column, table; a column that holds no files; no key.
	ts.expect(404, "GET", T+"/data/nope/column/photo/file", nil)
	ts.expect(404, "PUT", T+"/data/nope/column/att/file/x", "x")
	ts.expect(404, "GET", T+"/data/d1/column/nope/file", nil)
	ts.expect(404, "GET", "/db/db:main/tables/nope/data/d1/column/photo/file", nil)
	ts.expect(400, "GET", T+"/data/d1/column/title/file", nil)
	ts.expect(400, "PUT", T+"/data/d1/column/title/file/", "x")
	ts.expect(401, "GET", F, nil, withKey(""))
	ts.expect(401, "PUT", A+"/", "x", withKey(""))
	if v := version(); v != "7" {
		t.Errorf("version after seven binary writes: %s", v)
	}
}

func TestFileAccessURLs(t *testing.T) {
	ts := filesFixture(t, Options{})
	T := "/db/db:main/tables/docs"
	r := ts.expect(201, "PUT", T+"/data/d1?columns=*,photo.signedUrl,photo.uploadUrl,att.signedUrl", map[string]any{
		"photo": map[string]any{"name": "secret.txt", "mediaType": "text/plain", "base64Content": b64("private"), "signedUrlTimeout": 1},
		"att": []any{
			map[string]any{"name": "open.txt", "mediaType": "text/plain", "base64Content": b64("public")},
			map[string]any{"name": "closed.txt", "base64Content": b64("closed"), "enablePublicUrl": false},
		},
	})
	photo := r.obj()["photo"].(map[string]any)
	items := r.obj()["att"].([]any)
	open, closed := items[0].(map[string]any), items[1].(map[string]any)

	// Public files need no key; private ones a signature.
	got := ts.expectRaw(200, "GET", open["url"].(string), nil, "", false)
	if string(got.body) != "public" || got.ctype != "text/plain" {
		t.Errorf("public file: %q %q", got.body, got.ctype)
	}
	ts.expectRaw(403, "GET", closed["url"].(string), nil, "", false)
	ts.expectRaw(403, "GET", photo["url"].(string), nil, "", false)
	if got := ts.expectRaw(200, "GET", closed["signedUrl"].(string), nil, "", false); string(got.body) != "closed" {
		t.Errorf("signed private item: %q", got.body)
	}
	signed := photo["signedUrl"].(string)
	if got := ts.expectRaw(200, "GET", signed, nil, "", false); string(got.body) != "private" {
		t.Errorf("signed photo: %q", got.body)
	}
	// Forgery: another signature, a changed one, a signature for upload.
	ts.expectRaw(403, "GET", photo["url"].(string)+"?verify="+strings.SplitN(closed["signedUrl"].(string), "?verify=", 2)[1], nil, "", false)
	forged := []byte(signed)
	if forged[len(forged)-1] == 'A' {
		forged[len(forged)-1] = 'B'
	} else {
		forged[len(forged)-1] = 'A'
	}
	ts.expectRaw(403, "GET", string(forged), nil, "", false)
	ts.expectRaw(403, "GET", photo["uploadUrl"].(string), nil, "", false)
	ts.expectRaw(404, "GET", ts.url+"/file/AAAA", nil, "", false)
	ts.expectRaw(403, "PUT", photo["signedUrl"].(string), []byte("x"), "", false)
	ts.expectRaw(403, "PUT", photo["url"].(string), []byte("x"), "", false)

	// Upload URLs: 201 with a FileResponse, without a key.
	up := ts.expectRaw(201, "PUT", photo["uploadUrl"].(string), []byte("uploaded!"), "text/markdown", false)
	var resp map[string]any
	d := json.NewDecoder(bytes.NewReader(up.body))
	d.UseNumber()
	if err := d.Decode(&resp); err != nil || up.ctype != "application/json" {
		t.Fatalf("upload response %q: %v", up.body, err)
	}
	if resp["size"] != json.Number("9") || resp["mediaType"] != "text/markdown" || resp["version"] != json.Number("2") || resp["url"] == photo["url"] {
		t.Errorf("upload response %s", up.body)
	}
	if got := ts.expectRaw(200, "GET", resp["signedUrl"].(string), nil, "", false); string(got.body) != "uploaded!" {
		t.Errorf("after upload: %q", got.body)
	}
	ts.expectRaw(404, "GET", signed, nil, "", false) // names the old version

	// The configured public base.
	ts2 := filesFixture(t, Options{PublicURL: "https://files.example.com/base/"})
	r = ts2.expect(201, "PUT", "/db/db:main/tables/docs/data/d1?columns=photo", map[string]any{"photo": map[string]any{"name": "a"}})
	if u := r.obj()["photo"].(map[string]any)["url"].(string); !strings.HasPrefix(u, "https://files.example.com/base/file/") {
		t.Errorf("url with PublicURL: %s", u)
	}
}

// TestSignedURLExpiry checks that a signed URL serves while now < signedAt
// + signedUrlTimeout, to the millisecond, and an upload URL likewise with
// uploadUrlTimeout.
func TestSignedURLExpiry(t *testing.T) {
	var now atomic.Int64 // the clock, in Unix nanoseconds
	now.Store(time.Date(2026, 3, 1, 12, 0, 0, 900_000_000, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	ts := startServerEngine(t, Options{}, engine.Options{Clock: clock})
	ts.createDB("db")
	ts.createTable("db", "docs", map[string]any{"name": "photo", "type": "file"})
	r := ts.expect(201, "PUT", "/db/db:main/tables/docs/data/d1?columns=photo.signedUrl,photo.uploadUrl", map[string]any{
		"photo": map[string]any{"name": "p.txt", "base64Content": b64("private"), "signedUrlTimeout": 1, "uploadUrlTimeout": 2},
	})
	photo := r.obj()["photo"].(map[string]any)
	signed, upload := photo["signedUrl"].(string), photo["uploadUrl"].(string)
	signedAt := now.Load()
	at := func(after time.Duration) { now.Store(signedAt + int64(after)) }

	at(999 * time.Millisecond)
	ts.expectRaw(200, "GET", signed, nil, "", false)
	at(time.Second) // signedAt + ttl: no longer valid
	ts.expectRaw(403, "GET", signed, nil, "", false)
	at(1100 * time.Millisecond) // within the same whole second as the expiry
	ts.expectRaw(403, "GET", signed, nil, "", false)

	at(2 * time.Second)
	ts.expectRaw(403, "PUT", upload, []byte("late"), "text/plain", false)
	at(2*time.Second - time.Millisecond)
	ts.expectRaw(201, "PUT", upload, []byte("in time"), "text/plain", false)
}
