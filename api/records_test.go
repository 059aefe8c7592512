package api

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// recordsFixture creates db with teams and users tables: every kind of
// column the record JSON rules treat specially.
func recordsFixture(t *testing.T, opts Options) *testServer {
	ts := startServer(t, opts)
	ts.createDB("db")
	ts.createTable("db", "teams", map[string]any{"name": "name", "type": "string"})
	ts.createTable("db", "users",
		map[string]any{"name": "name", "type": "string"},
		map[string]any{"name": "email", "type": "email", "unique": true},
		map[string]any{"name": "age", "type": "int"},
		map[string]any{"name": "score", "type": "float"},
		map[string]any{"name": "active", "type": "bool"},
		map[string]any{"name": "born", "type": "datetime"},
		map[string]any{"name": "tags", "type": "multiple"},
		map[string]any{"name": "config", "type": "json"},
		map[string]any{"name": "team", "type": "link", "link": map[string]any{"table": "teams"}},
		map[string]any{"name": "address", "type": "object", "columns": []any{
			map[string]any{"name": "city", "type": "string"}, map[string]any{"name": "zip", "type": "string"},
		}},
	)
	ts.expect(201, "PUT", "/db/db:main/tables/teams/data/t1", map[string]any{"name": "red"})
	return ts
}

var (
	generatedID = regexp.MustCompile(`^rec_[0-9a-v]{20}$`)
	millis      = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
)

// checkMeta checks the metadata object of a record and returns its version.
func checkMeta(t *testing.T, rec map[string]any, key string) string {
	t.Helper()
	meta, ok := rec[key].(map[string]any)
	if !ok {
		t.Fatalf("no %s object in %v", key, rec)
	}
	if keys(meta) != "createdAt,updatedAt,version" {
		t.Errorf("meta keys %s", keys(meta))
	}
	for _, k := range []string{"createdAt", "updatedAt"} {
		if s, _ := meta[k].(string); !millis.MatchString(s) {
			t.Errorf("meta %s = %v", k, meta[k])
		}
	}
	return fmt.Sprint(meta["version"])
}

func TestRecordWrites(t *testing.T) {
	ts := recordsFixture(t, Options{})
	T := "/db/db:main/tables/users"

	// Insert: generated id, {id, meta} without columns.
	r := ts.expect(201, "POST", T+"/data", map[string]any{"name": "ann", "age": 30})
	id, _ := r.obj()["id"].(string)
	if !generatedID.MatchString(id) || keys(r.body) != "id,svc" || checkMeta(t, r.obj(), "svc") != "0" {
		t.Fatalf("insert: %s", r.raw)
	}

	// With columns=*: the full record; nulls omitted, links as {id}, json as
	// text, datetimes with milliseconds.
	r = ts.expect(201, "POST", T+"/data?columns=*", map[string]any{
		"name": "bob", "email": "bob@example.com", "age": 41, "score": 2.5, "active": true,
		"born": "1990-05-01T10:20:30.123456+02:00", "tags": []string{"a", "b"},
		"config": map[string]any{"b": 1, "a": []int{1}}, "team": "t1",
		"address": map[string]any{"city": "Oslo"}, "svc": map[string]any{"version": 9},
	})
	bob := r.obj()
	bobID := bob["id"].(string)
	checkMeta(t, bob, "svc")
	delete(bob, "svc")
	delete(bob, "id")
	jsonEq(t, "full record", bob, `{"name":"bob","email":"bob@example.com","age":41,"score":2.5,"active":true,
		"born":"1990-05-01T08:20:30.123Z","tags":["a","b"],"config":"{\"a\":[1],\"b\":1}","team":{"id":"t1"},
		"address":{"city":"Oslo"}}`)

	// Bad input.
	f := func(status int, method, path string, body any) *response {
		t.Helper()
		return ts.expect(status, method, T+path, body)
	}
	f(400, "POST", "/data", `{"name":`)
	f(400, "POST", "/data", `[1,2]`)
	f(400, "POST", "/data", map[string]any{"age": "old"})
	f(400, "POST", "/data", map[string]any{"age": 1.5})
	f(400, "POST", "/data", map[string]any{"nope": 1})
	f(400, "POST", "/data", map[string]any{"email": "not-an-email"})
	f(400, "POST", "/data", map[string]any{"config": "{bad json"})
	f(400, "POST", "/data", map[string]any{"team": "missing"})
	f(400, "POST", "/data", map[string]any{"id": "x"})
	f(201, "POST", "/data", map[string]any{"id": nil, "name": "null id is absent"})
	f(400, "POST", "/data", map[string]any{"email": "bob@example.com"})
	f(400, "POST", "/data?columns=nope", map[string]any{"name": "never"})
	ts.expect(404, "POST", "/db/db:main/tables/nope/data", map[string]any{})
	ts.expect(404, "POST", "/db/db:nope/tables/users/data", map[string]any{})

	// PUT: insert, replace, createOnly, ifVersion.
	r = f(201, "PUT", "/data/u-1", map[string]any{"name": "carl", "age": 5})
	if r.obj()["id"] != "u-1" || checkMeta(t, r.obj(), "svc") != "0" {
		t.Errorf("put insert: %s", r.raw)
	}
	r = f(200, "PUT", "/data/u-1?columns=*", map[string]any{"name": "carl2"})
	if checkMeta(t, r.obj(), "svc") != "1" || r.obj()["age"] != nil || r.obj()["name"] != "carl2" {
		t.Errorf("put replace: %s", r.raw)
	}
	f(422, "PUT", "/data/u-1?createOnly=true", map[string]any{"name": "x"})
	f(201, "PUT", "/data/u-2?createOnly=true", map[string]any{"name": "dora"})
	f(422, "PUT", "/data/u-1?ifVersion=0", map[string]any{"name": "x"})
	f(200, "PUT", "/data/u-1?ifVersion=1", map[string]any{"name": "carl3"})
	f(422, "PUT", "/data/u-9?ifVersion=0", map[string]any{"name": "x"})
	f(400, "PUT", "/data/u-1?ifVersion=abc", map[string]any{})
	f(400, "PUT", "/data/u-1?createOnly=maybe", map[string]any{})
	f(400, "PUT", "/data/u-1", map[string]any{"id": "other"})
	f(200, "PUT", "/data/u-1", map[string]any{"id": "u-1", "name": "carl4"})
	f(400, "PUT", "/data/bad%20id", map[string]any{})

	// PATCH: partial, never creates.
	r = f(200, "PATCH", "/data/u-1?columns=name,age", map[string]any{"age": 7})
	jsonEq(t, "patch", r.obj()["age"], `7`)
	if r.obj()["name"] != "carl4" || keys(r.body) != "age,id,name,svc" {
		t.Errorf("patch: %s", r.raw)
	}
	f(200, "PATCH", "/data/u-1", map[string]any{"age": map[string]any{"$increment": 3}})
	r = f(200, "GET", "/data/u-1?columns=age", nil)
	jsonEq(t, "incremented", r.obj()["age"], `10`)
	f(404, "PATCH", "/data/missing", map[string]any{"age": 1})
	f(422, "PATCH", "/data/u-1?ifVersion=0", map[string]any{"age": 1})
	f(400, "PATCH", "/data/u-1", map[string]any{"age": "x"})
	r = f(200, "PATCH", "/data/u-1", map[string]any{"age": nil})
	if checkMeta(t, r.obj(), "svc") != "6" {
		t.Errorf("versions: %s", r.raw)
	}

	// POST data/{id}: upsert.
	f(201, "POST", "/data/u-3", map[string]any{"name": "eve"})
	r = f(200, "POST", "/data/u-3?columns=*", map[string]any{"age": 9})
	if r.obj()["name"] != "eve" || checkMeta(t, r.obj(), "svc") != "1" {
		t.Errorf("upsert update: %s", r.raw)
	}
	f(422, "POST", "/data/u-3?ifVersion=0", map[string]any{"age": 1})

	// DELETE: 204, or 200 with the record as it was.
	f(204, "DELETE", "/data/u-2", nil)
	f(404, "DELETE", "/data/u-2", nil)
	r = f(200, "DELETE", "/data/u-3?columns=name", nil)
	if r.obj()["name"] != "eve" || keys(r.body) != "id,name,svc" {
		t.Errorf("delete with columns: %s", r.raw)
	}
	f(404, "GET", "/data/u-3", nil)

	// GET.
	r = f(200, "GET", "/data/"+bobID, nil)
	if keys(r.body) != "active,address,age,born,config,email,id,name,score,svc,tags,team" {
		t.Errorf("get keys %s", keys(r.body))
	}
	r = f(200, "GET", "/data/"+id, nil)
	if keys(r.body) != "age,id,name,svc" {
		t.Errorf("nulls are not omitted: %s", r.raw)
	}
	f(404, "GET", "/data/nope", nil)
	ts.expect(404, "GET", "/db/db:main/tables/nope/data/x", nil)
	ts.expect(404, "GET", "/db/db:gone/tables/users/data/x", nil)
}

func TestRecordProjection(t *testing.T) {
	ts := recordsFixture(t, Options{})
	T := "/db/db:main/tables/users/data/"
	ts.expect(201, "PUT", T+"b", map[string]any{
		"name": "bob", "age": 41, "team": "t1", "address": map[string]any{"city": "Oslo", "zip": "0150"},
	})
	f := func(query, want string) {
		t.Helper()
		r := ts.expect(200, "GET", T+"b"+query, nil)
		rec := r.obj()
		checkMeta(t, rec, "svc")
		delete(rec, "svc")
		jsonEq(t, query, rec, want)
	}
	f("?columns=name", `{"id":"b","name":"bob"}`)
	f("?columns=id,name", `{"id":"b","name":"bob"}`)
	f("?columns=name,age", `{"id":"b","name":"bob","age":41}`)
	f("?columns=name&columns=age", `{"id":"b","name":"bob","age":41}`)
	f("?columns=name%2Cage&columns=", `{"id":"b","name":"bob","age":41}`)
	f("?columns=", `{"id":"b","name":"bob","age":41,"team":{"id":"t1"},"address":{"city":"Oslo","zip":"0150"}}`)
	f("?columns=address.city", `{"id":"b","address":{"city":"Oslo"}}`)
	f("?columns=address", `{"id":"b","address":{"city":"Oslo","zip":"0150"}}`)
	f("?columns=address.*", `{"id":"b","address":{"city":"Oslo","zip":"0150"}}`)
	f("?columns=svc.version,email", `{"id":"b"}`)

	// Links: `*` keeps {id}; naming the link or link.* expands it.
	r := ts.expect(200, "GET", T+"b?columns=*", nil)
	jsonEq(t, "star link", r.obj()["team"], `{"id":"t1"}`)
	for _, q := range []string{"team", "team.*", "*,team.name"} {
		r := ts.expect(200, "GET", T+"b?columns="+q, nil)
		team, _ := r.obj()["team"].(map[string]any)
		checkMeta(t, team, "svc")
		if team["id"] != "t1" || team["name"] != "red" {
			t.Errorf("columns=%s: team %v", q, team)
		}
	}
	for _, q := range []string{"nope", "address.nope", "name.x", "team.nope", "svc.nope", "a..b"} {
		r := ts.expect(400, "GET", T+"b?columns="+q, nil)
		if !strings.HasSuffix(r.obj()["message"].(string), "column not found") {
			t.Errorf("columns=%s: %s", q, r.raw)
		}
	}
	// A dangling link is absent.
	ts.expect(204, "DELETE", "/db/db:main/tables/teams/data/t1", nil)
	r = ts.expect(200, "GET", T+"b?columns=team.*", nil)
	if _, ok := r.obj()["team"]; ok {
		t.Errorf("dangling link: %s", r.raw)
	}
}

func TestRecordCompatMeta(t *testing.T) {
	ts := recordsFixture(t, Options{Compat: CompatXata})
	r := ts.expect(201, "POST", "/db/db:main/tables/users/data?columns=*", map[string]any{"name": "x", "xata": map[string]any{"version": 3}})
	if keys(r.body) != "id,name,xata" || checkMeta(t, r.obj(), "xata") != "0" {
		t.Errorf("compat record: %s", r.raw)
	}
	ts.expect(200, "GET", "/db/db:main/tables/users/data/"+r.obj()["id"].(string)+"?columns=xata.version", nil)
}

func TestBulkInsert(t *testing.T) {
	ts := recordsFixture(t, Options{})
	T := "/db/db:main/tables/users/bulk"

	r := ts.expect(200, "POST", T, map[string]any{"records": []any{map[string]any{"name": "a"}, map[string]any{"id": "b1", "name": "b"}}})
	ids := r.obj()["recordIDs"].([]any)
	if len(ids) != 2 || !generatedID.MatchString(ids[0].(string)) || ids[1] != "b1" {
		t.Errorf("bulk: %s", r.raw)
	}
	r = ts.expect(200, "POST", T+"?columns=name", map[string]any{"records": []any{map[string]any{"id": "c1", "name": "c", "age": 3}}})
	recs := r.obj()["records"].([]any)
	if len(recs) != 1 || keys(recs[0]) != "id,name,svc" {
		t.Errorf("bulk with columns: %s", r.raw)
	}
	jsonEq(t, "empty", ts.expect(200, "POST", T, map[string]any{"records": []any{}}).body, `{"recordIDs":[]}`)

	// One bad record fails the whole request and stores nothing.
	r = ts.expect(400, "POST", T, map[string]any{"records": []any{
		map[string]any{"id": "d1", "name": "d"},
		map[string]any{"id": "d2", "age": "bad"},
		map[string]any{"id": "d3", "nope": 1},
	}})
	errs := r.obj()["errors"].([]any)
	if keys(r.body) != "errors" || len(errs) != 2 {
		t.Fatalf("bulk errors: %s", r.raw)
	}
	for _, e := range errs {
		if keys(e) != "message,status" || fmt.Sprint(e.(map[string]any)["status"]) != "400" {
			t.Errorf("bulk error entry %v", e)
		}
	}
	for _, id := range []string{"d1", "d2", "d3"} {
		ts.expect(404, "GET", "/db/db:main/tables/users/data/"+id, nil)
	}
	// Bad ids are reported with the other failures, one entry each.
	r = ts.expect(400, "POST", T, map[string]any{"records": []any{
		map[string]any{"id": "f1"}, map[string]any{"id": 7}, map[string]any{"id": "bad id"}, map[string]any{"id": "f4", "age": "x"},
	}})
	if errs := r.obj()["errors"].([]any); len(errs) != 3 {
		t.Errorf("bad ids: %s", r.raw)
	}
	ts.expect(404, "GET", "/db/db:main/tables/users/data/f1", nil)
	// An existing id is an insert failure.
	r = ts.expect(422, "POST", T, map[string]any{"records": []any{map[string]any{"id": "e1"}, map[string]any{"id": "b1"}}})
	if len(r.obj()["errors"].([]any)) != 1 {
		t.Errorf("existing id: %s", r.raw)
	}
	ts.expect(404, "GET", "/db/db:main/tables/users/data/e1", nil)

	many := make([]any, 1001)
	for i := range many {
		many[i] = map[string]any{}
	}
	ts.expect(400, "POST", T, map[string]any{"records": many})
	ts.expect(400, "POST", T, map[string]any{})
	ts.expect(400, "POST", T, map[string]any{"records": []any{nil}})
	ts.expect(400, "POST", T, `{"records":`)
	ts.expect(404, "POST", "/db/db:main/tables/nope/bulk", map[string]any{"records": []any{}})
	ts.expect(404, "POST", "/db/db:nope/tables/users/bulk", map[string]any{"records": []any{}})
}

// TestBooleanQueryParams checks that boolean query parameters take every
// spelling of strconv.ParseBool: the Python SDK writes True and False.
func TestBooleanQueryParams(t *testing.T) {
	ts := recordsFixture(t, Options{})
	T := "/db/db:main/tables/users/data/"
	ts.expect(201, "PUT", T+"b1", map[string]any{"name": "first"})
	f := func(value string, createOnly bool) {
		t.Helper()
		want := 200 // replaced
		if createOnly {
			want = 422 // the record exists
		}
		ts.expect(want, "PUT", T+"b1?createOnly="+value, map[string]any{"name": value})
	}
	for _, v := range []string{"true", "True", "TRUE", "t", "T", "1"} {
		f(v, true)
	}
	for _, v := range []string{"false", "False", "FALSE", "f", "F", "0", ""} {
		f(v, false)
	}
	for _, v := range []string{"maybe", "yes", "2", "tRUE"} {
		r := ts.expect(400, "PUT", T+"b1?createOnly="+v, map[string]any{})
		if msg := r.obj()["message"]; msg != "query parameter createOnly must be a boolean (true or false), got ["+v+"]" {
			t.Errorf("createOnly=%s: message %q", v, msg)
		}
	}
	// With a new id, both spellings create.
	ts.expect(201, "PUT", T+"b2?createOnly=False", map[string]any{})
	ts.expect(201, "PUT", T+"b3?createOnly=True", map[string]any{})
}
