package api

import (
	"fmt"
	"testing"
)

func TestTransaction(t *testing.T) {
	ts := recordsFixture(t, Options{})
	ts.expect(201, "PUT", "/db/db:main/tables/users/data/u0", map[string]any{"name": "zed", "age": 1})
	TX := "/db/db:main/transaction"

	r := ts.expect(200, "POST", TX, map[string]any{"operations": []any{
		map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"name": "gen"}}},
		map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"id": "i0", "name": "a"}}},
		map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"id": "i1", "name": "b"}, "createOnly": true}},
		map[string]any{"update": map[string]any{"table": "users", "id": "i0", "fields": map[string]any{"age": 5}}},
		map[string]any{"update": map[string]any{"table": "users", "id": "i2", "fields": map[string]any{"age": 6}, "upsert": true}},
		map[string]any{"delete": map[string]any{"table": "users", "id": "i1"}},
		map[string]any{"delete": map[string]any{"table": "users", "id": "missing"}},
		map[string]any{"get": map[string]any{"table": "users", "id": "i0"}},
		map[string]any{"get": map[string]any{"table": "users", "id": "i0", "columns": []string{"age"}}},
		map[string]any{"get": map[string]any{"table": "users", "id": "i1"}},
		map[string]any{"update": map[string]any{"table": "users", "id": "u0", "fields": map[string]any{"age": map[string]any{"$increment": 2}}, "columns": []string{"id", "age"}}},
		map[string]any{"delete": map[string]any{"table": "users", "id": "i2", "columns": []string{"age"}}},
		map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"id": "i0", "name": "c"}, "ifVersion": 1}},
	}})
	res := r.obj()["results"].([]any)
	if len(res) != 13 {
		t.Fatalf("results: %s", r.raw)
	}
	gen := res[0].(map[string]any)
	if keys(gen) != "id,operation,rows" || !generatedID.MatchString(gen["id"].(string)) {
		t.Errorf("insert without id: %v", gen)
	}
	want := []string{
		``,
		`{"operation":"insert","id":"i0","rows":1,"columns":{}}`,
		`{"operation":"insert","id":"i1","rows":1}`,
		`{"operation":"update","id":"i0","rows":1,"columns":{}}`,
		`{"operation":"update","id":"i2","rows":1,"columns":{}}`,
		`{"operation":"delete","rows":1}`,
		`{"operation":"delete","rows":0}`,
		``,
		`{"operation":"get","columns":{"age":5}}`,
		`{"operation":"get","columns":{}}`,
		`{"operation":"update","id":"u0","rows":1,"columns":{"id":"u0","age":3}}`,
		`{"operation":"delete","rows":1,"columns":{"age":6}}`,
		`{"operation":"insert","id":"i0","rows":1,"columns":{}}`,
	}
	for i, w := range want {
		if w != "" {
			jsonEq(t, fmt.Sprintf("result %d", i), res[i], w)
		}
	}
	got := res[7].(map[string]any)["columns"].(map[string]any)
	checkMeta(t, got, "svc")
	if got["id"] != "i0" || got["name"] != "a" {
		t.Errorf("get: %v", got)
	}
	// Later operations saw earlier ones; the results are stored.
	r = ts.expect(200, "GET", "/db/db:main/tables/users/data/i0", nil)
	if r.obj()["name"] != "c" || r.obj()["age"] != nil {
		t.Errorf("i0 after replace: %s", r.raw)
	}
	jsonEq(t, "empty", ts.expect(200, "POST", TX, map[string]any{"operations": []any{}}).body, `{"results":[]}`)
}

func TestTransactionFailureChangesNothing(t *testing.T) {
	ts := recordsFixture(t, Options{})
	ts.expect(201, "PUT", "/db/db:main/tables/users/data/u0", map[string]any{"name": "zed", "age": 1})
	TX := "/db/db:main/transaction"

	r := ts.expect(400, "POST", TX, map[string]any{"operations": []any{
		map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"id": "new", "name": "n"}}},
		map[string]any{"update": map[string]any{"table": "users", "id": "u0", "fields": map[string]any{"age": 99}}},
		map[string]any{"delete": map[string]any{"table": "users", "id": "u0"}},
		map[string]any{"delete": map[string]any{"table": "teams", "id": "missing", "failIfMissing": true}},
	}})
	if keys(r.body) != "errors,id" || r.obj()["id"] != r.header.Get("x-request-id") {
		t.Errorf("failure body: %s", r.raw)
	}
	jsonEq(t, "errors", r.obj()["errors"], `[{"index":3,"message":"table [teams]: no rows deleted"}]`)
	ts.expect(404, "GET", "/db/db:main/tables/users/data/new", nil)
	r = ts.expect(200, "GET", "/db/db:main/tables/users/data/u0", nil)
	if checkMeta(t, r.obj(), "svc") != "0" || fmt.Sprint(r.obj()["age"]) != "1" {
		t.Errorf("u0 changed: %s", r.raw)
	}

	f := func(ops []any, want string) {
		t.Helper()
		r := ts.expect(400, "POST", TX, map[string]any{"operations": ops})
		jsonEq(t, "errors", r.obj()["errors"], want)
	}
	f([]any{map[string]any{"update": map[string]any{"table": "users", "id": "nope", "fields": map[string]any{"age": 1}}}},
		`[{"index":0,"message":"table [users]: record [nope] not found"}]`)
	// Ids are checked before anything is applied; every bad one is named.
	f([]any{
		map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"id": "fresh"}}},
		map[string]any{"update": map[string]any{"table": "users", "id": "u0", "fields": map[string]any{"id": "u9"}}},
		map[string]any{"update": map[string]any{"table": "users", "id": "u1", "upsert": true, "fields": map[string]any{"id": "u8"}}},
	}, `[{"index":1,"message":"table [users]: id [u9] in the body does not match the record id [u0]"},`+
		`{"index":2,"message":"table [users]: id [u8] in the body does not match the record id [u1]"}]`)
	ts.expect(404, "GET", "/db/db:main/tables/users/data/fresh", nil)
	f([]any{map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"id": "u0"}, "createOnly": true}}},
		`[{"index":0,"message":"table [users]: record [u0] already exists"}]`)
	f([]any{map[string]any{"update": map[string]any{"table": "users", "id": "u0", "fields": map[string]any{"age": 1}, "ifVersion": 7}}},
		`[{"index":0,"message":"table [users]: version condition not met"}]`)
	f([]any{map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"nope": 1}}}},
		`[{"index":0,"message":"table [users]: column [nope]: column not found"}]`)
	// Validation reports every invalid operation, the values of records
	// and fields included, before any operation runs.
	f([]any{
		map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"name": "good"}}},
		map[string]any{"insert": map[string]any{"table": "nope", "record": map[string]any{"name": "bad"}}},
		map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"name": "good"}}},
		map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"foo": "bar"}}},
		map[string]any{"update": map[string]any{"table": "users", "id": "u0", "fields": map[string]any{"age": "old"}}},
		map[string]any{"update": map[string]any{"table": "users", "id": "u0", "fields": map[string]any{"age": map[string]any{"$divide": 0}}}},
		map[string]any{"update": map[string]any{"table": "users", "id": "missing", "fields": map[string]any{"age": 1}}},
		map[string]any{"delete": map[string]any{"table": "teams", "id": "missing", "failIfMissing": true}},
		map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"id": "bad id"}}},
	}, `[
		{"index":1,"message":"table [nope] not found"},
		{"index":3,"message":"table [users]: column [foo]: column not found"},
		{"index":4,"message":"table [users]: column [age]: invalid value: expected an integer"},
		{"index":5,"message":"table [users]: column [age]: division by zero"},
		{"index":8,"message":"table [users]: record id [bad id] is invalid: 1..255 letters, digits, '_', '-', '~' or ':'"}]`)
	ts.expect(200, "POST", "/db/db:main/tables/users/query", map[string]any{})
	if r := ts.expect(200, "POST", "/db/db:main/tables/users/aggregate", nil); fmt.Sprint(r.obj()["aggs"]) != "map[count:1]" {
		t.Errorf("records after a refused transaction: %s", r.raw)
	}
	// Validation reports every invalid operation.
	f([]any{
		map[string]any{"get": map[string]any{"table": "users", "id": "u0"}},
		map[string]any{"get": map[string]any{"table": "nope", "id": "u0"}},
		map[string]any{"fly": map[string]any{}},
		map[string]any{"get": map[string]any{"table": "users", "id": "u0"}, "delete": map[string]any{}},
		map[string]any{"get": map[string]any{"table": "users", "id": "u0", "extra": 1}},
		map[string]any{"get": map[string]any{"table": "users", "id": "u0", "columns": []string{"nope"}}},
		map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{}, "ifVersion": 1}},
		map[string]any{"update": map[string]any{"table": "users", "fields": map[string]any{}}},
		"not an object",
		map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"nope": 1}}},
		map[string]any{"update": map[string]any{"table": "users", "id": "u0", "fields": map[string]any{"name": 1}}},
	}, `[
		{"index":1,"message":"table [nope] not found"},
		{"index":2,"message":"unknown operation [fly]: use insert, update, delete or get"},
		{"index":3,"message":"an operation must have exactly one of insert, update, delete or get"},
		{"index":4,"message":"get: unknown field [extra]"},
		{"index":5,"message":"table [users]: column [nope]: column not found"},
		{"index":6,"message":"insert: ifVersion needs an explicit record id"},
		{"index":7,"message":"table [users]: id is required"},
		{"index":8,"message":"an operation must be an object with one of insert, update, delete or get"},
		{"index":9,"message":"table [users]: column [nope]: column not found"},
		{"index":10,"message":"table [users]: column [name]: invalid value: expected a string"}]`)
	r = ts.expect(200, "GET", "/db/db:main/tables/users/data/u0", nil)
	if checkMeta(t, r.obj(), "svc") != "0" {
		t.Errorf("u0 changed: %s", r.raw)
	}

	// Whole-request errors use the plain error body.
	many := make([]any, 1001)
	for i := range many {
		many[i] = map[string]any{"get": map[string]any{"table": "users", "id": "u0"}}
	}
	ts.expect(400, "POST", TX, map[string]any{"operations": many})
	ts.expect(400, "POST", TX, map[string]any{})
	ts.expect(400, "POST", TX, `{"operations":[`)
	ts.expect(404, "POST", "/db/db:nope/transaction", map[string]any{"operations": []any{}})
	ts.expect(404, "POST", "/db/nodb:main/transaction", map[string]any{"operations": []any{}})
}

func TestTransactionProjection(t *testing.T) {
	ts := recordsFixture(t, Options{})
	ts.expect(201, "PUT", "/db/db:main/tables/users/data/u0", map[string]any{
		"name": "zed", "team": "t1", "address": map[string]any{"city": "Oslo", "zip": "0150"},
	})
	r := ts.expect(200, "POST", "/db/db:main/transaction", map[string]any{"operations": []any{
		map[string]any{"get": map[string]any{"table": "users", "id": "u0", "columns": []string{"address.*", "team.name"}}},
		map[string]any{"get": map[string]any{"table": "users", "id": "u0", "columns": []string{"id", "address.zip"}}},
		map[string]any{"get": map[string]any{"table": "users", "id": "u0", "columns": []string{}}},
		map[string]any{"update": map[string]any{"table": "users", "id": "u0", "fields": map[string]any{"name": "zoe"}, "columns": []string{"name", "team"}}},
	}})
	res := r.obj()["results"].([]any)
	stripMeta(t, res)
	jsonEq(t, "results", res, `[
		{"operation":"get","columns":{"address":{"city":"Oslo","zip":"0150"},"team":{"id":"t1","svc":true,"name":"red"}}},
		{"operation":"get","columns":{"id":"u0","address":{"zip":"0150"}}},
		{"operation":"get","columns":{"id":"u0","svc":true}},
		{"operation":"update","id":"u0","rows":1,"columns":{"name":"zoe","team":{"id":"t1","svc":true,"name":"red"}}}]`)
}

// TestTransactionEmptyColumns checks that `"columns": []`, which the Python
// SDK always sends, asks for no projection: a get answers the id and the
// metadata, the writes answer no columns at all.
func TestTransactionEmptyColumns(t *testing.T) {
	for _, mode := range []struct{ compat, meta string }{{CompatNone, "svc"}, {CompatXata, "xata"}} {
		t.Run(mode.compat, func(t *testing.T) {
			ts := recordsFixture(t, Options{Compat: mode.compat})
			ts.expect(201, "PUT", "/db/db:main/tables/users/data/u0", map[string]any{"name": "zed"})
			none := []string{}
			r := ts.expect(200, "POST", "/db/db:main/transaction", map[string]any{"operations": []any{
				map[string]any{"get": map[string]any{"table": "users", "id": "u0", "columns": none}},
				map[string]any{"get": map[string]any{"table": "users", "id": "missing", "columns": none}},
				map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"name": "gen"}, "columns": none}},
				map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"id": "i0"}, "columns": none}},
				map[string]any{"insert": map[string]any{"table": "users", "record": map[string]any{"id": "i1"}, "createOnly": true, "columns": none}},
				map[string]any{"update": map[string]any{"table": "users", "id": "u0", "fields": map[string]any{"age": 3}, "columns": none}},
				map[string]any{"update": map[string]any{"table": "users", "id": "u1", "fields": map[string]any{"age": 4}, "upsert": true, "columns": none}},
				map[string]any{"delete": map[string]any{"table": "users", "id": "i0", "columns": none}},
				map[string]any{"delete": map[string]any{"table": "users", "id": "missing", "columns": none}},
			}})
			res := r.obj()["results"].([]any)
			if len(res) != 9 {
				t.Fatalf("results: %s", r.raw)
			}
			get := res[0].(map[string]any)["columns"].(map[string]any)
			checkMeta(t, get, mode.meta)
			if keys(get) != "id,"+mode.meta || get["id"] != "u0" {
				t.Errorf("get with no columns: %v", get)
			}
			gen := res[2].(map[string]any)
			if keys(gen) != "id,operation,rows" {
				t.Errorf("insert with no columns: %v", gen)
			}
			res[0], res[2] = nil, nil
			jsonEq(t, "results", res, `[null,
				{"operation":"get","columns":{}},
				null,
				{"operation":"insert","id":"i0","rows":1},
				{"operation":"insert","id":"i1","rows":1},
				{"operation":"update","id":"u0","rows":1},
				{"operation":"update","id":"u1","rows":1},
				{"operation":"delete","rows":1},
				{"operation":"delete","rows":0}]`)
		})
	}
}
