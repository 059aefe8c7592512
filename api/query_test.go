package api

import (
	"fmt"
	"strings"
	"testing"
)

// queryFixture creates db with teams, users and posts: objects, links,
// multiple and json columns, and seven users u1..u7 whose ages rise with
// the id except for u4.
func queryFixture(t *testing.T, opts Options) *testServer {
	ts := startServer(t, opts)
	ts.createDB("db")
	ts.createTable("db", "teams", map[string]any{"name": "name", "type": "string"})
	ts.createTable("db", "users",
		map[string]any{"name": "name", "type": "string"},
		map[string]any{"name": "age", "type": "int"},
		map[string]any{"name": "tags", "type": "multiple"},
		map[string]any{"name": "config", "type": "json"},
		map[string]any{"name": "team", "type": "link", "link": map[string]any{"table": "teams"}},
		map[string]any{"name": "address", "type": "object", "columns": []any{
			map[string]any{"name": "city", "type": "string"}, map[string]any{"name": "zip", "type": "string"},
		}},
	)
	ts.createTable("db", "posts",
		map[string]any{"name": "title", "type": "string"},
		map[string]any{"name": "author", "type": "link", "link": map[string]any{"table": "users"}},
	)
	ts.expect(201, "PUT", "/db/db:main/tables/teams/data/t1", map[string]any{"name": "red"})
	ts.expect(201, "PUT", "/db/db:main/tables/teams/data/t2", map[string]any{"name": "blue"})
	users := []map[string]any{
		{"name": "ann", "age": 31, "tags": []string{"a", "b"}, "team": "t1", "address": map[string]any{"city": "Oslo", "zip": "0150"}},
		{"name": "bob", "age": 32, "tags": []string{"b"}, "team": "t2", "config": map[string]any{"x": 1}},
		{"name": "cat", "age": 33, "team": "t1", "address": map[string]any{"city": "Bergen"}},
		{"name": "dan", "age": 10},
		{"name": "eve", "age": 35, "tags": []string{"c"}},
		{"name": "fay", "age": 36, "team": "t2"},
		{"name": "gus", "age": 37},
	}
	// Inserted out of order: the default order is by id, not insertion.
	for _, i := range []int{6, 0, 3, 1, 5, 2, 4} {
		ts.expect(201, "PUT", fmt.Sprintf("/db/db:main/tables/users/data/u%d", i+1), users[i])
	}
	ts.expect(201, "PUT", "/db/db:main/tables/posts/data/p1", map[string]any{"title": "first", "author": "u1"})
	ts.expect(201, "PUT", "/db/db:main/tables/posts/data/p2", map[string]any{"title": "second", "author": "u1"})
	ts.expect(201, "PUT", "/db/db:main/tables/posts/data/p3", map[string]any{"title": "third", "author": "u2"})
	return ts
}

// queryUsers is the query endpoint of the fixture's users table.
const queryUsers = "/db/db:main/tables/users/query"

// ids returns the ids of a query response's records, joined by commas.
func ids(t *testing.T, r *response) string {
	t.Helper()
	recs, ok := r.obj()["records"].([]any)
	if !ok {
		t.Fatalf("no records list: %s", r.raw)
	}
	out := make([]string, len(recs))
	for i, rec := range recs {
		out[i], _ = rec.(map[string]any)["id"].(string)
	}
	return strings.Join(out, ",")
}

// pageMeta returns meta.page of a query response, checking its shape.
func pageMeta(t *testing.T, r *response) (cursor string, more bool, size string) {
	t.Helper()
	if keys(r.body) != "meta,records" {
		t.Errorf("response keys %s", keys(r.body))
	}
	meta, _ := r.obj()["meta"].(map[string]any)
	p, _ := meta["page"].(map[string]any)
	if keys(p) != "cursor,more,size" {
		t.Fatalf("meta.page: %s", r.raw)
	}
	cursor, ok := p["cursor"].(string)
	if !ok || cursor == "" {
		t.Errorf("cursor %v", p["cursor"])
	}
	more, ok = p["more"].(bool)
	if !ok {
		t.Errorf("more %v", p["more"])
	}
	return cursor, more, fmt.Sprint(p["size"])
}

// spaced joins values with spaces, as fmt.Sprintln does.
func spaced(a ...any) string { return strings.TrimSuffix(fmt.Sprintln(a...), "\n") }

// message returns the message of an error response.
func message(r *response) string {
	s, _ := r.obj()["message"].(string)
	return s
}

func TestQueryBasics(t *testing.T) {
	ts := queryFixture(t, Options{Domains: []string{"example.test"}})

	// Empty body: every record, ascending id, default size 20.
	for _, body := range []any{nil, "", "  ", map[string]any{}, `{"filter":null,"sort":null,"columns":null,"page":null,"consistency":null}`,
		map[string]any{"page": map[string]any{"size": nil, "offset": nil, "after": nil, "before": nil, "start": nil, "end": nil}}} {
		r := ts.expect(200, "POST", queryUsers, body)
		if got := ids(t, r); got != "u1,u2,u3,u4,u5,u6,u7" {
			t.Errorf("body %v: ids %s", body, got)
		}
		if _, more, size := pageMeta(t, r); more || size != "20" {
			t.Errorf("body %v: more %v size %s", body, more, size)
		}
	}
	// Records follow the record JSON rules: nulls omitted, links {id},
	// json as text, metadata.
	r := ts.expect(200, "POST", queryUsers, map[string]any{"filter": map[string]any{"id": "u2"}})
	rec := r.obj()["records"].([]any)[0].(map[string]any)
	checkMeta(t, rec, "svc")
	delete(rec, "svc")
	jsonEq(t, "record", rec, `{"id":"u2","name":"bob","age":32,"tags":["b"],"team":{"id":"t2"},"config":"{\"x\":1}"}`)

	// The same through the host form and the plain form.
	ts.expect(200, "POST", ts.url+queryUsers, nil, withHost(ts.info.WorkspaceID+"."+ts.region()+".example.test"))
	ts.expect(200, "POST", ts.url+queryUsers, nil)

	ts.expect(200, "POST", queryUsers, map[string]any{"consistency": "eventual"})
	ts.expect(200, "POST", queryUsers, map[string]any{"consistency": "strong"})
	ts.expect(400, "POST", queryUsers, map[string]any{"consistency": "sometimes"})
	if r := ts.expect(400, "POST", queryUsers, map[string]any{"limit": 5}); message(r) != "invalid JSON body: unknown field [limit]" {
		t.Errorf("unknown key: %s", r.raw)
	}
	ts.expect(400, "POST", queryUsers, map[string]any{"page": map[string]any{"sise": 5}})
	ts.expect(400, "POST", queryUsers, map[string]any{"page": map[string]any{"size": "5"}})
	ts.expect(400, "POST", queryUsers, `{"page":`)
	ts.expect(400, "POST", queryUsers, `[]`)
	ts.expect(404, "POST", "/db/db:main/tables/nope/query", nil)
	ts.expect(404, "POST", "/db/db:gone/tables/users/query", nil)
	ts.expect(405, "GET", queryUsers, nil)
}

func TestQueryFilterSortPage(t *testing.T) {
	ts := queryFixture(t, Options{})
	f := func(body, want string) {
		t.Helper()
		r := ts.expect(200, "POST", queryUsers, body)
		if got := ids(t, r); got != want {
			t.Errorf("%s: ids %s, want %s", body, got, want)
		}
	}
	f(`{"filter":{"age":{"$ge":32}},"sort":{"age":"desc"},"page":{"size":3}}`, "u7,u6,u5")
	f(`{"sort":[{"age":"asc"}]}`, "u4,u1,u2,u3,u5,u6,u7")
	f(`{"sort":["name"]}`, "u1,u2,u3,u4,u5,u6,u7")
	f(`{"filter":{"name":{"$contains":"a"}}}`, "u1,u3,u4,u6")
	f(`{"filter":{"tags":{"$includes":"b"}}}`, "u1,u2")
	f(`{"filter":{"tags":{"$includesAll":[{"$is":"b"}]}}}`, "u2")
	f(`{"filter":{"$exists":"tags"}}`, "u1,u2,u5")
	f(`{"filter":{"$existsNot":"tags"}}`, "u3,u4,u6,u7")
	f(`{"filter":{"$notExists":"team"}}`, "u4,u5,u7")
	f(`{"filter":{"$exists":"address.city"}}`, "u1,u3")
	f(`{"filter":{"address.city":"Oslo"}}`, "u1")
	f(`{"filter":{"address":{"city":"Bergen"}}}`, "u3")
	// Filters through links.
	f(`{"filter":{"team.name":"red"}}`, "u1,u3")
	f(`{"filter":{"team":{"name":"blue"}}}`, "u2,u6")
	f(`{"filter":{"team":"t2"}}`, "u2,u6")
	f(`{"filter":{"$any":[{"team.name":"blue"},{"age":10}]},"sort":{"age":"desc"}}`, "u6,u2,u4")
	f(`{"filter":{"config->x":1}}`, "u2")
	f(`{"filter":{}}`, "u1,u2,u3,u4,u5,u6,u7")
	f(`{"filter":{"svc.version":0},"sort":{"svc.createdAt":"desc"},"page":{"size":2}}`, "u5,u3")

	// Offset.
	f(`{"page":{"size":2,"offset":3}}`, "u4,u5")
	f(`{"page":{"offset":6}}`, "u7")
	f(`{"page":{"offset":7}}`, "")

	// Invalid input is a 400 with the engine's message.
	bad := func(body, want string) {
		t.Helper()
		r := ts.expect(400, "POST", queryUsers, body)
		if want != "" && message(r) != want {
			t.Errorf("%s: message %q, want %q", body, message(r), want)
		}
	}
	bad(`{"filter":{"nope":1}}`, "")
	bad(`{"filter":{"team.nope":1}}`, "")
	bad(`{"filter":{"age":{"$bogus":1}}}`, "")
	bad(`{"filter":[1]}`, "")
	bad(`{"sort":{"nope":"asc"}}`, "")
	bad(`{"sort":{"age":"sideways"}}`, "")
	bad(`{"sort":{"config":"asc"}}`, "")
	bad(`{"page":{"size":0}}`, "page size must be at least 1")
	bad(`{"page":{"offset":-1}}`, "page offset must not be negative")
}

func TestQueryLimits(t *testing.T) {
	f := func(ts *testServer, page string, status int, want string) {
		t.Helper()
		r := ts.expect(status, "POST", queryUsers, `{"page":`+page+`}`)
		if status == 400 && message(r) != want {
			t.Errorf("page %s: message %q, want %q", page, message(r), want)
		}
		if status == 200 {
			if _, _, size := pageMeta(t, r); size != want {
				t.Errorf("page %s: size %s, want %s", page, size, want)
			}
		}
	}
	// Spec mode: size ≤ 200, offset ≤ 800, size + offset ≤ 1000.
	ts := queryFixture(t, Options{})
	f(ts, `{"size":200}`, 200, "200")
	f(ts, `{"size":200,"offset":800}`, 200, "200")
	f(ts, `{"size":201}`, 400, "page size exceeds max limit of 200")
	f(ts, `{"offset":801}`, 400, "page offset must not exceed 800")
	f(ts, `{"size":1000}`, 400, "page size exceeds max limit of 200")
	f(ts, `{"offset":49000}`, 400, "page offset must not exceed 800")

	// Compat mode: size ≤ 1000, offset ≤ 49000, no sum rule.
	ts = queryFixture(t, Options{Compat: CompatXata})
	f(ts, `{"size":1000}`, 200, "1000")
	f(ts, `{"size":1000,"offset":49000}`, 200, "1000")
	f(ts, `{"size":201,"offset":801}`, 200, "201")
	f(ts, `{"size":1001}`, 400, "page size exceeds max limit of 1000")
	f(ts, `{"offset":49001}`, 400, "page offset must not exceed 49000")
}

func TestQueryCursors(t *testing.T) {
	ts := queryFixture(t, Options{})
	// q sends a query and returns the ids, cursor, more and size.
	q := func(body string) (string, string, bool, string) {
		t.Helper()
		r := ts.expect(200, "POST", queryUsers, body)
		c, more, size := pageMeta(t, r)
		return ids(t, r), c, more, size
	}
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %s, want %s", what, got, want)
		}
	}
	page := func(k, c string, rest ...string) string {
		return `{"page":{"` + k + `":"` + c + `"` + strings.Join(rest, "") + `}}`
	}

	// Forward: after the cursor of each page comes the next; more is
	// exact (false when the page ends exactly at the last record).
	got, c1, more, size := q(`{"page":{"size":3}}`)
	check("page 1", spaced(got, more, size), "u1,u2,u3 true 3")
	got, c2, more, size := q(page("after", c1))
	check("page 2", spaced(got, more, size), "u4,u5,u6 true 3")
	got, c3, more, _ := q(page("after", c2))
	check("page 3", spaced(got, more), "u7 false")
	got, _, more, _ = q(page("after", c2, `,"size":1`))
	check("page 3 of one", spaced(got, more), "u7 false")
	got, _, more, _ = q(page("after", c1, `,"size":4`))
	check("exact end", spaced(got, more), "u4,u5,u6,u7 false")

	// After the last page: empty, a cursor, the same size; a record added
	// later follows that cursor.
	got, c4, more, size := q(page("after", c3))
	check("past the end", spaced(got, more, size), " false 3")
	ts.expect(201, "PUT", "/db/db:main/tables/users/data/u8", map[string]any{"name": "hal", "age": 38})
	got, c5, more, _ := q(page("after", c4))
	check("tail", spaced(got, more), "u8 false")

	// Backward: before a page's cursor comes the previous page.
	got, _, more, _ = q(page("before", c2))
	check("before page 2", spaced(got, more), "u1,u2,u3 false")
	got, _, more, _ = q(page("before", c5, `,"size":2`))
	check("before u8", spaced(got, more), "u6,u7 true")

	// start and end: the first and last page of the cursor's query.
	got, _, _, size = q(page("start", c2))
	check("start", spaced(got, size), "u1,u2,u3 3")
	got, _, _, size = q(page("end", c2))
	check("end", spaced(got, size), "u6,u7,u8 3")

	// Special cursors: after=end tails, before=end is the last page; both
	// take a filter and sort.
	got, ce, more, size := q(`{"page":{"after":"end"}}`)
	check("after=end", spaced(got, more, size), " false 20")
	ts.expect(201, "PUT", "/db/db:main/tables/users/data/u9", map[string]any{"name": "ivy", "age": 39})
	got, _, _, _ = q(page("after", ce))
	check("after the end cursor", got, "u9")
	got, _, more, _ = q(`{"page":{"before":"end","size":2}}`)
	check("before=end", spaced(got, more), "u8,u9 true")
	got, _, _, _ = q(`{"filter":{"age":{"$lt":35}},"sort":{"age":"desc"},"page":{"before":"end","size":2}}`)
	check("before=end with filter and sort", got, "u1,u4")
	got, ce, _, _ = q(`{"filter":{"name":"jon"},"page":{"after":"end"}}`)
	check("after=end with filter", got, "")
	ts.expect(201, "PUT", "/db/db:main/tables/users/data/z0", map[string]any{"name": "kim"})
	ts.expect(201, "PUT", "/db/db:main/tables/users/data/z1", map[string]any{"name": "jon"})
	got, _, _, _ = q(page("after", ce))
	check("tail keeps the filter", got, "z1")

	// Range: after one cursor and before another.
	_, ca, _, _ := q(`{"page":{"size":2}}`)            // u1,u2
	_, cb, _, _ := q(`{"page":{"size":2,"offset":6}}`) // u7,u8
	got, cr, more, _ := q(`{"page":{"after":"` + ca + `","before":"` + cb + `","size":3}}`)
	check("range", spaced(got, more), "u3,u4,u5 true")
	got, _, more, _ = q(`{"page":{"after":"` + cr + `","before":"` + cb + `","size":3}}`)
	check("range continued", spaced(got, more), "u6 false")
	bad400 := ts.expect(400, "POST", queryUsers, `{"page":{"after":"`+cb+`","before":"`+ca+`"}}`)
	check("reversed range", message(bad400), "page.after must come before page.before")

	// The cursor keeps filter and sort; columns and size may change.
	_, cf, _, _ := q(`{"filter":{"age":{"$ge":32}},"sort":{"age":"desc"},"page":{"size":2}}`)
	got, cf2, _, size := q(page("after", cf))
	check("filtered page 2", spaced(got, size), "u7,u6 2")
	r := ts.expect(200, "POST", queryUsers, `{"columns":["name"],"page":{"after":"`+cf2+`","size":1}}`)
	check("columns with a cursor", ids(t, r), "u5")
	rec := r.obj()["records"].([]any)[0]
	check("columns with a cursor", keys(rec), "id,name,svc")
	if _, _, size := pageMeta(t, r); size != "1" {
		t.Errorf("size with a cursor: %s", size)
	}

	// Misuse and bad cursors are 400s.
	bad := func(body, want string) {
		t.Helper()
		r := ts.expect(400, "POST", queryUsers, body)
		if want != "" && message(r) != want {
			t.Errorf("%s: message %q, want %q", body, message(r), want)
		}
	}
	const both = "filter and sort cannot be set together with a cursor"
	bad(`{"filter":{"age":1},"page":{"after":"`+c1+`"}}`, both)
	bad(`{"sort":{"age":"asc"},"page":{"before":"`+c1+`"}}`, both)
	bad(`{"filter":{"age":1},"page":{"start":"`+c1+`"}}`, both)
	bad(page("start", c1, `,"after":"`+c2+`"`), "")
	bad(page("start", c1, `,"end":"`+c2+`"`), "")
	bad(`{"page":{"after":"end","before":"end"}}`, "")
	bad(page("after", "garbage"), "invalid cursor")
	bad(page("after", ""), "")
	bad(page("start", "end"), "")
	forged := []byte(c1)
	forged[len(forged)/2] ^= 1
	bad(page("after", string(forged)), "invalid cursor")
	bad(page("before", c1[:len(c1)-2]), "invalid cursor")
}

func TestQueryProjection(t *testing.T) {
	ts := queryFixture(t, Options{})
	// f queries u1 (or the first record of a filter) with columns and
	// compares it without its metadata, which must be present.
	f := func(columns, want string) {
		t.Helper()
		r := ts.expect(200, "POST", queryUsers, `{"filter":{"id":"u1"},"columns":`+columns+`}`)
		recs := r.obj()["records"].([]any)
		if len(recs) != 1 {
			t.Fatalf("columns %s: %s", columns, r.raw)
		}
		rec := recs[0].(map[string]any)
		checkMeta(t, rec, "svc")
		delete(rec, "svc")
		stripMeta(t, rec)
		jsonEq(t, "columns "+columns, rec, want)
	}
	all := `{"id":"u1","name":"ann","age":31,"tags":["a","b"],"team":{"id":"t1"},"address":{"city":"Oslo","zip":"0150"}}`
	// Rule 1: absent columns are every column, links as {id}.
	f(`null`, all)
	// Rule 2: only the selected columns plus id and metadata.
	f(`["name"]`, `{"id":"u1","name":"ann"}`)
	f(`["id","svc","name","age"]`, `{"id":"u1","name":"ann","age":31}`)
	f(`[]`, `{"id":"u1"}`)
	// Rule 3: * is every column, objects included.
	f(`["*"]`, all)
	// Rule 4: objects and links by name, dotted sub-keys, link.* and
	// link.col.
	f(`["address"]`, `{"id":"u1","address":{"city":"Oslo","zip":"0150"}}`)
	f(`["address.zip"]`, `{"id":"u1","address":{"zip":"0150"}}`)
	f(`["team"]`, `{"id":"u1","team":{"id":"t1","svc":true,"name":"red"}}`)
	f(`["team.*"]`, `{"id":"u1","team":{"id":"t1","svc":true,"name":"red"}}`)
	f(`["team.name"]`, `{"id":"u1","team":{"id":"t1","svc":true,"name":"red"}}`)
	f(`["team.id"]`, `{"id":"u1","team":{"id":"t1","svc":true}}`)
	f(`[{"name":"age"}]`, `{"id":"u1","age":31}`)
	// Rule 5: every column of the table and one of the linked record.
	f(`["*","team.name"]`, `{"id":"u1","name":"ann","age":31,"tags":["a","b"],"team":{"id":"t1","svc":true,"name":"red"},"address":{"city":"Oslo","zip":"0150"}}`)

	// Reverse links: the records of another table that link here.
	f(`["name",{"name":"<-posts.author","columns":["title"],"limit":1}]`,
		`{"id":"u1","name":"ann","postsauthor":{"records":[{"id":"p1","svc":true,"title":"first"}]}}`)
	f(`[{"name":"<-posts.author","as":"posts","columns":["title"],"sort":{"title":"desc"}}]`,
		`{"id":"u1","posts":{"records":[{"id":"p2","svc":true,"title":"second"},{"id":"p1","svc":true,"title":"first"}]}}`)
	f(`[{"name":"<-posts.author","columns":["author.name"],"offset":1}]`,
		`{"id":"u1","postsauthor":{"records":[{"id":"p2","svc":true,"author":{"id":"u1","svc":true,"name":"ann"}}]}}`)
	r := ts.expect(200, "POST", queryUsers, `{"filter":{"id":"u3"},"columns":[{"name":"<-posts.author"}]}`)
	jsonEq(t, "no reverse links", r.obj()["records"].([]any)[0].(map[string]any)["postsauthor"], `{"records":[]}`)

	// Unknown columns are 400s.
	for _, c := range []string{`["nope"]`, `["address.nope"]`, `["team.nope"]`, `["svc.nope"]`, `[{"name":"<-nope.author"}]`,
		`[{"name":"<-posts.title"}]`, `"name"`, `[1]`} {
		ts.expect(400, "POST", queryUsers, `{"columns":`+c+`}`)
	}
}

// stripMeta replaces the metadata of nested records with true after
// checking it, so that expectations need not spell out timestamps.
func stripMeta(t *testing.T, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "svc" || k == "xata" {
				checkMeta(t, x, k)
				x[k] = true
				continue
			}
			stripMeta(t, e)
		}
	case []any:
		for _, e := range x {
			stripMeta(t, e)
		}
	}
}

func TestQueryCompat(t *testing.T) {
	ts := queryFixture(t, Options{Compat: CompatXata})
	r := ts.expect(200, "POST", queryUsers, `{"filter":{"xata.version":0},"sort":{"xata.createdAt":"asc"},"columns":["name","team.name"],"page":{"size":2}}`)
	if got := ids(t, r); got != "u7,u1" {
		t.Errorf("ids %s", got)
	}
	for _, rec := range r.obj()["records"].([]any) {
		if keys(rec) != "id,name,team,xata" && keys(rec) != "id,name,xata" {
			t.Errorf("record keys %s", keys(rec))
		}
		checkMeta(t, rec.(map[string]any), "xata")
	}
	checkMeta(t, r.obj()["records"].([]any)[1].(map[string]any)["team"].(map[string]any), "xata")
	ts.expect(400, "POST", queryUsers, `{"filter":{"svc.version":0}}`)
	ts.expect(400, "POST", queryUsers, `{"columns":["xata.nope"]}`)
}
