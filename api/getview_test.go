package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// viewColumns name columns so that object paths and the fixed keys (id and
// the metadata key of either mode) interleave with plain columns in key
// order: "o-x" sorts after the object "o" as a key but before "o.x" as a
// path.
var viewColumns = []engine.ColumnDef{
	{Name: "a", Type: engine.TypeString},
	{Name: "a-b", Type: engine.TypeText},
	{Name: "ab", Type: engine.TypeEmail},
	{Name: "i", Type: engine.TypeInt},
	{Name: "ie", Type: engine.TypeFloat},
	{Name: "o", Type: engine.TypeObject, Columns: []engine.ColumnDef{
		{Name: "x", Type: engine.TypeBool},
		{Name: "x-y", Type: engine.TypeDatetime},
		{Name: "p", Type: engine.TypeObject, Columns: []engine.ColumnDef{
			{Name: "q", Type: engine.TypeMultiple},
			{Name: "q_r", Type: engine.TypeString},
		}},
		{Name: "z", Type: engine.TypeJSON},
	}},
	{Name: "o-x", Type: engine.TypeString},
	{Name: "o_x", Type: engine.TypeInt},
	{Name: "svb", Type: engine.TypeLink, Link: &engine.LinkDef{Table: "items"}},
	{Name: "svd", Type: engine.TypeVector, Vector: &engine.VectorDef{Dimension: 2}},
	{Name: "xat", Type: engine.TypeJSON},
	{Name: "xatb", Type: engine.TypeString},
	{Name: "y", Type: engine.TypeFile},
	{Name: "~", Type: engine.TypeFileArray},
}

// viewValues returns random values for viewColumns, each column present
// about half the time; links point to one of the first n records.
func viewValues(rng *rand.Rand, n int) map[string]any {
	strs := []string{"", "plain", "quote\"back\\slash", "ctl\x01\n\t", "<&>", "é ☃ 𝄞", "line\u2028sep"}
	str := func() string { return strs[rng.Intn(len(strs))] }
	all := map[string]any{
		"a":       str(),
		"a-b":     str() + " words",
		"ab":      "u" + strconv.Itoa(rng.Intn(100)) + "@example.com",
		"i":       rng.Int63() - rng.Int63(),
		"ie":      []float64{0, 1e21, 1e-7, -2.5, 0.1}[rng.Intn(5)],
		"o.x":     rng.Intn(2) == 0,
		"o.x-y":   "2024-02-03T04:05:06." + strconv.Itoa(100+rng.Intn(900)) + "Z",
		"o.p.q":   []any{str(), "t"},
		"o.p.q_r": str(),
		"o.z":     `{"k":[1,2,{"<":"&"}]}`,
		"o-x":     str(),
		"o_x":     int64(rng.Intn(1000)),
		"svb":     "it" + strconv.Itoa(rng.Intn(max(n, 1))),
		"svd":     []any{1.5, -2.0},
		"xat":     `"just a string"`,
		"xatb":    str(),
		"y":       map[string]any{"name": "a(b)!.txt", "mediaType": "text/plain"},
		"~":       []any{map[string]any{"name": "x.png"}},
	}
	out := map[string]any{}
	for k, v := range all {
		if rng.Intn(2) == 0 || k == "svb" && n == 0 {
			continue
		}
		m := out
		for {
			i := bytes.IndexByte([]byte(k), '.')
			if i < 0 {
				break
			}
			sub, _ := m[k[:i]].(map[string]any)
			if sub == nil {
				sub = map[string]any{}
				m[k[:i]] = sub
			}
			m, k = sub, k[i+1:]
		}
		m[k] = v
	}
	return out
}

// TestAppendViewMatchesAppendDoc: a point read encoded from the stored
// record writes exactly what the projecting path writes, in both metadata
// modes, for every column type and interleavings of object paths.
func TestAppendViewMatchesAppendDoc(t *testing.T) {
	for _, compat := range []string{CompatNone, CompatXata} {
		t.Run(compat, func(t *testing.T) { appendViewMatchesAppendDoc(t, compat) })
	}
}

func appendViewMatchesAppendDoc(t *testing.T, compat string) {
	eng, err := engine.Open(t.TempDir(), engine.Options{NoSync: true, Meta: MetaKey(compat)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	info, err := Bootstrap(eng, testKey)
	if err != nil {
		t.Fatal(err)
	}
	ref := engine.Ref{Workspace: info.Workspace, Database: "db", Branch: "main"}
	if _, err := eng.CreateDatabase(engine.CreateDatabaseRequest{Workspace: info.Workspace, Name: "db", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Schema().CreateTable(ref, "items"); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Schema().SetTableColumns(ref, "items", viewColumns); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	const n = 300
	for i := range n {
		values := viewValues(rng, i)
		values["id"] = "it" + strconv.Itoa(i)
		if _, err := eng.WriteOne(ref, engine.Op{Kind: engine.OpInsert, Table: "items", Values: values}); err != nil {
			t.Fatalf("record %d %v: %v", i, values, err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := New(eng, Options{Compat: compat, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 { // the second round reads from the cache
		for i := range n {
			id := "it" + strconv.Itoa(i)
			rec, err := eng.Get(ref, "items", id)
			if err != nil {
				t.Fatal(err)
			}
			docs, err := s.project(ref, "items", []*engine.Record{rec}, index.Columns{})
			if err != nil {
				t.Fatal(err)
			}
			want := s.appendDoc(nil, docs[0])
			v, err := eng.GetView(s.records, ref, "items", id)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.appendView([]byte("prefix"), v); !bytes.Equal(got[6:], want) {
				t.Fatalf("round %d record %s:\n got %s\nwant %s", round, id, got[6:], want)
			}
			if got := s.encoded.appendEncoding(nil, v, s.appendView); !bytes.Equal(got, want) {
				t.Fatalf("round %d record %s: kept encoding\n got %s\nwant %s", round, id, got, want)
			}
		}
	}
}

// TestAppendTime: the hand-written timestamp writer agrees with
// time.Format for every year, in and out of the four-digit range.
func TestAppendTime(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	f := func(tm time.Time) {
		t.Helper()
		want := `"` + tm.UTC().Format(timeLayout) + `"`
		if got := string(appendTime(nil, tm)); got != want {
			t.Fatalf("%v: got %s, want %s", tm, got, want)
		}
	}
	f(time.Time{})
	f(time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC))
	f(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
	f(time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC))
	f(time.Date(2024, 2, 29, 12, 0, 0, 1e6, time.FixedZone("x", -7*3600)))
	for range 100000 {
		f(time.Unix(rng.Int63n(1<<38)-1<<37, rng.Int63n(2e9)-1e9))
	}
}

// TestPointGetRoute: serve's own match of point reads takes exactly the
// paths the router gives the route, with the same parameters, and stands
// down when another route could take some of them.
func TestPointGetRoute(t *testing.T) {
	s, err := New(nil, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if s.pointGet == nil {
		t.Fatal("the routes leave point reads to the router")
	}
	segs := []string{"db", "tables", "data", "x", "a:b", "", "%2F", "data "}
	rng := rand.New(rand.NewSource(1))
	for range 20000 {
		path := ""
		for n := 1 + rng.Intn(8); n > 0; n-- {
			path += "/" + segs[rng.Intn(len(segs))]
		}
		if rng.Intn(3) == 0 {
			path = "/db/" + segs[rng.Intn(len(segs))] + "/tables/" + segs[rng.Intn(len(segs))] + "/data/" + segs[rng.Intn(len(segs))]
		}
		path = collapseSlashes(path)
		var ctx fasthttp.RequestCtx
		h, _ := s.router.Lookup("GET", path, &ctx)
		id, routed := ctx.UserValue("id").(string)
		routed = routed && h != nil && strings.Count(path, "/") == 6 && strings.Contains(path, "/data/")
		dbb, table, gotID, ok := pointGetParams(path)
		if ok != routed {
			t.Fatalf("%q: matched %v, the router %v", path, ok, routed)
		}
		if ok && (dbb != ctx.UserValue("dbb") || table != ctx.UserValue("table") || gotID != id) {
			t.Fatalf("%q: %q %q %q, the router %v %v %q", path, dbb, table, gotID, ctx.UserValue("dbb"), ctx.UserValue("table"), id)
		}
		// servePointGet's match of the path up to the id, behind a
		// workspace prefix or not, agrees.
		label := ""
		if rng.Intn(2) == 0 {
			label = segs[rng.Intn(len(segs))]
		}
		full := path
		if label != "" {
			full = "/ws/" + label + path
		}
		i := strings.LastIndexByte(full, '/')
		prefix := parsePathPrefix(full[:i+1])
		if got := prefix != nil && i < len(full)-1; got != ok {
			t.Fatalf("%q: prefix matched %v (%+v), the route %v", full, got, prefix, ok)
		}
		if ok && (prefix.wsLabel != label || prefix.dbb != dbb || prefix.table != table || full[i+1:] != gotID) {
			t.Fatalf("%q: prefix %+v and id %q, want %q %q %q %q", full, prefix, full[i+1:], label, dbb, table, gotID)
		}
	}
	h := func(*fasthttp.RequestCtx) {}
	s.router.GET("/db/{dbb}/tables/{table}/columns/{column}/x", h)
	if s.pointGetHandler() == nil {
		t.Error("a route of other paths disabled the fast path")
	}
	s.router.GET("/db/{dbb}/tables/{table}/data/count", h)
	if s.pointGetHandler() != nil {
		t.Error("a static route among point-read paths left the fast path on")
	}
}

// TestViewEncodings: an encoding is made once per view, and the budget
// evicts other views' encodings.
func TestViewEncodings(t *testing.T) {
	c := newViewEncodings(viewEncodingShards * 1000)
	calls := 0
	enc := func(dst []byte, v *engine.RecordView) []byte {
		calls++
		return append(dst, v.ID...)
	}
	v := &engine.RecordView{ID: "a", Version: 1}
	if got := string(c.appendEncoding(nil, v, enc)); got != "a" || calls != 1 {
		t.Fatalf("first encoding %q after %d calls", got, calls)
	}
	if got := string(c.appendEncoding(nil, v, enc)); got != "a" || calls != 1 {
		t.Fatalf("second encoding %q after %d calls, want the kept one", got, calls)
	}
	if got := string(c.appendEncoding(nil, &engine.RecordView{ID: "a", Version: 1}, enc)); got != "a" || calls != 2 {
		t.Fatalf("another view: %q after %d calls, want a new encoding", got, calls)
	}
	// Appended after a response's first bytes, the kept encoding is the
	// record's alone.
	w := &engine.RecordView{ID: "b", Version: 1}
	if got := string(c.appendEncoding([]byte(`[a,`), w, enc)); got != "[a,b" || calls != 3 {
		t.Fatalf("appended to a prefix: %q after %d calls", got, calls)
	}
	if got := string(c.appendEncoding([]byte(`[`), w, enc)); got != "[b" || calls != 3 {
		t.Fatalf("kept encoding after a prefix: %q after %d calls", got, calls)
	}
	for i := range 10000 {
		c.appendEncoding(nil, &engine.RecordView{ID: strconv.Itoa(i), Version: 1}, enc)
	}
	for i := range c.shards {
		s := &c.shards[i]
		if s.bytes > c.limit+encodingSize(make([]byte, 0, 8)) || len(s.m) > c.limit/64+1 {
			t.Fatalf("shard %d holds %d bytes in %d entries, over its %d", i, s.bytes, len(s.m), c.limit)
		}
	}
}

// TestNewChecksMeta: a server answers with the metadata key of its
// compatibility mode, which must be the key its engine reads requests
// with.
func TestNewChecksMeta(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		meta, compat string
		ok           bool
	}{{"svc", CompatNone, true}, {"xata", CompatXata, true}, {"svc", CompatXata, false}, {"xata", CompatNone, false}} {
		eng, err := engine.Open(t.TempDir(), engine.Options{NoSync: true, Meta: c.meta})
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(eng, Options{Compat: c.compat, Logger: log})
		eng.Close()
		if (err == nil) != c.ok {
			t.Errorf("engine %s, compat %s: error %v", c.meta, c.compat, err)
		}
	}
}

// TestPointGetRecordCacheOff: a server with the record cache turned off
// answers point gets as one with the cache does, before and after writes.
func TestPointGetRecordCacheOff(t *testing.T) {
	on := startServer(t, Options{})
	off := startServer(t, Options{RecordCacheSize: -1})
	if off.srv.records != nil || off.srv.encoded != nil || on.srv.records == nil {
		t.Fatalf("record cache of the servers: on %v, off %v", on.srv.records != nil, off.srv.records != nil)
	}
	for _, ts := range []*testServer{on, off} {
		ts.createDB("d")
		ts.createTable("d", "t", map[string]any{"name": "s", "type": "string"}, map[string]any{"name": "n", "type": "int"})
		ts.expect(201, "PUT", "/db/d:main/tables/t/data/r1", map[string]any{"s": "one", "n": 1})
	}
	answer := func(ts *testServer) string {
		r := ts.expect(200, "GET", "/db/d:main/tables/t/data/r1", nil)
		m := r.obj() // the metadata's times differ between the servers
		return keys(m) + " " + m["s"].(string) + " " + fmt.Sprint(m["n"])
	}
	for round, want := range []string{"id,n,s,svc one 1", "id,n,s,svc one 1", "id,n,s,svc two 2"} {
		if round == 2 {
			for _, ts := range []*testServer{on, off} {
				ts.expect(200, "PATCH", "/db/d:main/tables/t/data/r1", map[string]any{"s": "two", "n": 2})
			}
		}
		if a, b := answer(on), answer(off); a != want || b != want {
			t.Fatalf("round %d: with the cache %q, without %q, want %q", round, a, b, want)
		}
	}
}

// TestQueryPagesRecordCache: query pages served through the record cache
// (whole records, and some columns) answer as a server without the cache
// does, page after page, after point reads of the same records, and after
// writes to some of them.
func TestQueryPagesRecordCache(t *testing.T) {
	on := startServer(t, Options{})
	off := startServer(t, Options{RecordCacheSize: -1})
	for _, ts := range []*testServer{on, off} {
		ts.createDB("d")
		ts.createTable("d", "t", map[string]any{"name": "s", "type": "string"}, map[string]any{"name": "n", "type": "int"})
		for i := range 6 {
			ts.expect(201, "PUT", fmt.Sprintf("/db/d:main/tables/t/data/r%d", i), map[string]any{"s": fmt.Sprint("v", i), "n": i % 3})
		}
	}
	// answer is a page's records without their metadata, whose times
	// differ between the servers, and the version of each.
	answer := func(ts *testServer, body map[string]any) string {
		r := ts.expect(200, "POST", "/db/d:main/tables/t/query", body)
		var out []string
		for _, rec := range r.obj()["records"].([]any) {
			m := rec.(map[string]any)
			meta, _ := m["svc"].(map[string]any)
			delete(m, "svc")
			out = append(out, fmt.Sprint(m, " v", meta["version"]))
		}
		return strings.Join(out, "; ")
	}
	queries := []map[string]any{
		{"filter": map[string]any{"n": 1}},
		{"sort": map[string]any{"s": "desc"}, "page": map[string]any{"size": 4}},
		{"columns": []any{"s"}, "filter": map[string]any{"n": map[string]any{"$ge": 1}}},
		{"columns": []any{"n", "svc.version"}},
	}
	for round := range 4 {
		switch round {
		case 2:
			for _, ts := range []*testServer{on, off} {
				ts.expect(200, "GET", "/db/d:main/tables/t/data/r4", nil)
				ts.expect(200, "PATCH", "/db/d:main/tables/t/data/r1", map[string]any{"s": "w1", "n": 2})
				ts.expect(204, "DELETE", "/db/d:main/tables/t/data/r3", nil)
			}
		case 3:
			for _, ts := range []*testServer{on, off} {
				ts.expect(201, "PUT", "/db/d:main/tables/t/data/r3", map[string]any{"s": "again", "n": 1})
			}
		}
		for _, q := range queries {
			if a, b := answer(on, q), answer(off, q); a != b || a == "" {
				t.Fatalf("round %d, query %v: with the cache %q, without %q", round, q, a, b)
			}
		}
	}
}

// TestQueryViewsMatchDocs: a query page encoded from the stored records
// (QueryOptions.Views) writes exactly what the projecting path writes, for
// column lists that allow it and, falling back, for those that do not.
func TestQueryViewsMatchDocs(t *testing.T) {
	for _, compat := range []string{CompatNone, CompatXata} {
		t.Run(compat, func(t *testing.T) { queryViewsMatchDocs(t, compat) })
	}
}

func queryViewsMatchDocs(t *testing.T, compat string) {
	ts := startServer(t, Options{Compat: compat})
	eng, s := ts.eng, ts.srv
	ref := engine.Ref{Workspace: ts.info.Workspace, Database: "db", Branch: "main"}
	if _, err := eng.CreateDatabase(engine.CreateDatabaseRequest{Workspace: ts.info.Workspace, Name: "db", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Schema().CreateTable(ref, "items"); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Schema().SetTableColumns(ref, "items", viewColumns); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(2))
	const n = 120
	for i := range n {
		values := viewValues(rng, i)
		values["id"] = "it" + strconv.Itoa(i)
		if _, err := eng.WriteOne(ref, engine.Op{Kind: engine.OpInsert, Table: "items", Values: values}); err != nil {
			t.Fatalf("record %d %v: %v", i, values, err)
		}
	}
	meta := MetaKey(compat)
	size := 50
	for _, c := range []struct {
		columns string
		plain   bool // answered from views
	}{
		{``, false}, // every column: the file columns need their reads
		{`["a","a-b","ab","i","ie","o","o-x","o_x","svd","xat","xatb"]`, true},
		{`["svb"]`, false}, // a link named is expanded
		{`["o.p.q","o.x-y","a"]`, true},
		{`["o.*"]`, true},
		{`["id"]`, true},
		{`["` + meta + `.version","i"]`, true},
		{`["svb.a"]`, false}, // an expanded link
		{`["y"]`, false},     // a file
	} {
		cols, err := index.ReadColumns([]byte(c.columns))
		if err != nil {
			t.Fatalf("%s: %v", c.columns, err)
		}
		for _, sort := range []string{``, `{"i":"desc"}`, `{"o.x-y":"asc"}`} {
			srt, err := index.ReadSort([]byte(sort))
			if err != nil {
				t.Fatal(err)
			}
			in := engine.QueryRequest{Columns: cols, Sort: srt, Page: engine.PageInput{Size: &size}}
			opts := s.queryOptions()
			docs, err := eng.Query(context.Background(), ref, "items", in, opts)
			if err != nil {
				t.Fatalf("%s %s: %v", c.columns, sort, err)
			}
			opts.Views = true
			views, err := eng.Query(context.Background(), ref, "items", in, opts)
			if err != nil {
				t.Fatalf("%s %s: %v", c.columns, sort, err)
			}
			if plain := views.Records == nil; plain != c.plain || len(docs.Views) != 0 {
				t.Fatalf("%s: answered from views %v, want %v", c.columns, plain, c.plain)
			}
			if len(docs.Records) != size || len(views.Records)+len(views.Views) != size {
				t.Fatalf("%s: %d records, %d with views", c.columns, len(docs.Records), len(views.Records)+len(views.Views))
			}
			for i, d := range docs.Records {
				want := s.appendDoc(nil, d)
				var got []byte
				if views.Records != nil {
					got = s.appendDoc(nil, views.Records[i])
				} else {
					got = s.appendView(nil, views.Views[i])
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s %s record %d:\n got %s\nwant %s", c.columns, sort, i, got, want)
				}
			}
		}
	}
	// Over HTTP the page is the same whichever way it was encoded.
	r := ts.expect(200, "POST", "/db/db:main/tables/items/query", map[string]any{
		"columns": []any{"a", "i", "o"}, "sort": map[string]any{"i": "asc"}, "page": map[string]any{"size": 3}})
	var out struct {
		Records []map[string]any `json:"records"`
	}
	if err := json.Unmarshal(r.raw, &out); err != nil || len(out.Records) != 3 {
		t.Fatalf("query over HTTP: %v: %s", err, r.raw)
	}
}

// TestPointGetPaths: point reads answer the same whichever way their path
// is spelled, the first time and again once serve knows the path's
// prefix; paths that need normalizing or decoding take the general route.
func TestPointGetPaths(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("d")
	ts.createTable("d", "t", map[string]any{"name": "s", "type": "string"})
	ts.expect(201, "PUT", "/db/d:main/tables/t/data/r1", map[string]any{"s": "one"})
	ts.expect(201, "PUT", "/db/d:main/tables/t/data/a~b", map[string]any{"s": "two"})
	ws := ts.base
	for round := range 2 {
		for _, c := range []struct {
			url, want string
			status    int
		}{
			{ws + "/db/d:main/tables/t/data/r1", "r1 one", 200},
			{ts.url + "/db/d:main/tables/t/data/r1", "r1 one", 200}, // the key's only workspace
			{ws + "/db/d:main/tables/t/data/r%31", "r1 one", 200},
			{ws + "//db/d:main//tables/t/data/r1", "r1 one", 200},
			{ws + "/db/d:main/tables/t/data/a%7Eb", "a~b two", 200},
			{ws + "/db/d:main/tables/t/data/a~b", "a~b two", 200},
			{ws + "/db/d:main/tables/t/data/r2", "record [r2] not found", 404},
			{ws + "/db/d:main/tables/u/data/r1", "table [u] not found", 404},
			{ws + "/db/d/tables/t/data/r1", "expected {db}:{branch}", 400},
			{ts.url + "/ws/nope/db/d:main/tables/t/data/r1", "", 401},
		} {
			r := ts.expect(c.status, "GET", c.url, nil)
			m := r.obj()
			got := fmt.Sprint(m["id"], " ", m["s"])
			if c.status != 200 {
				got = errMessage(r)
			}
			if !strings.Contains(got, c.want) {
				t.Errorf("round %d: GET %s: %q, want %q", round, c.url, got, c.want)
			}
		}
	}
}

// TestPointGetRevokedKey: a key stops reading records the moment it is
// revoked, however often it was used before.
func TestPointGetRevokedKey(t *testing.T) {
	ts := startServer(t, Options{Limits: Limits{AuthFailLimit: -1}})
	ts.createDB("d")
	ts.createTable("d", "t", map[string]any{"name": "s", "type": "string"})
	ts.expect(201, "PUT", "/db/d:main/tables/t/data/r1", map[string]any{"s": "one"})
	key := str(ts.call(ts.admin(), 201, "POST", "/user/keys/reader", nil).obj()["key"])
	for _, opt := range []reqOpt{withKey(key), withHeader("Authorization", "bearer  "+key+" ")} {
		for range 3 {
			ts.expect(200, "GET", "/db/d:main/tables/t/data/r1", nil, opt)
		}
	}
	ts.call(ts.admin(), 204, "DELETE", "/user/keys/reader", nil)
	for _, opt := range []reqOpt{withKey(key), withHeader("Authorization", "bearer  "+key+" ")} {
		if r := ts.expect(401, "GET", "/db/d:main/tables/t/data/r1", nil, opt); errMessage(r) != "invalid API key" {
			t.Errorf("revoked key: %s", r.raw)
		}
	}
	ts.expect(200, "GET", "/db/d:main/tables/t/data/r1", nil)
}

// TestPointGetCacheHitAllocs: a point read the record cache answers
// allocates nothing, from its request to its response, without an access
// log.
func TestPointGetCacheHitAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ts := startServer(t, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	ts.createDB("d")
	ts.createTable("d", "t", map[string]any{"name": "s", "type": "string"})
	ts.expect(201, "PUT", "/db/d:main/tables/t/data/r1", map[string]any{"s": "one"})
	var ctx fasthttp.RequestCtx
	path := "/ws/" + ts.info.WorkspaceID + "/db/d:main/tables/t/data/r1"
	auth := "Bearer " + testKey
	var got []byte
	serve := func() {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod("GET")
		ctx.Request.SetRequestURI(path)
		ctx.Request.Header.Set("Authorization", auth)
		ts.srv.serve(&ctx)
		ctx.ResetUserValues()
		got = ctx.Response.Body()
	}
	for range 3 { // read, cached, then answered from the cache
		serve()
	}
	if ctx.Response.StatusCode() != 200 || !bytes.Contains(got, []byte(`"s":"one"`)) {
		t.Fatalf("status %d: %s", ctx.Response.StatusCode(), got)
	}
	if n := testing.AllocsPerRun(100, serve); n != 0 {
		t.Errorf("%v allocations per cached point read, want 0", n)
	}
}
