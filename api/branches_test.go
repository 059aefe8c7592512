package api

import (
	"testing"
)

func TestBranches(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("db")
	ts.createTable("db", "users", map[string]any{"name": "name", "type": "string"})
	ts.expect(201, "PUT", "/db/db:main/tables/users/data/u1", map[string]any{"name": "ann"})

	r := ts.expect(200, "GET", "/db/db:main", nil)
	want := "branchName,createdAt,databaseName,id,lastMigrationID,metadata,schema,version"
	if keys(r.body) != want {
		t.Errorf("details keys %s, want %s", keys(r.body), want)
	}
	jsonEq(t, "metadata", r.obj()["metadata"], `{}`)
	jsonEq(t, "schema", r.obj()["schema"], `{"tables":[{"name":"users","columns":[{"name":"name","type":"string"}]}]}`)

	r = ts.expect(201, "PUT", "/db/db:dev", map[string]any{"metadata": map[string]any{"stage": "test", "labels": []string{"a"}}})
	jsonEq(t, "create", r.body, `{"databaseName":"db","branchName":"dev","status":"completed"}`)
	r = ts.expect(200, "GET", "/db/db:dev", nil)
	if sf, _ := r.obj()["startedFrom"].(map[string]any); sf["branchName"] != "main" {
		t.Errorf("startedFrom: %s", r.raw)
	}
	// The new branch has the source's data; writes stay apart.
	ts.expect(200, "GET", "/db/db:dev/tables/users/data/u1", nil)
	ts.expect(201, "PUT", "/db/db:dev/tables/users/data/u2", map[string]any{"name": "bob"})
	ts.expect(404, "GET", "/db/db:main/tables/users/data/u2", nil)

	// The query parameter `from` wins over the body.
	ts.expect(201, "PUT", "/db/db:feature?from=dev", map[string]any{"from": "nope"})
	ts.expect(200, "GET", "/db/db:feature/tables/users/data/u2", nil)

	f := func(status int, method, path string, body any) {
		t.Helper()
		ts.expect(status, method, path, body)
	}
	f(422, "PUT", "/db/db:main", map[string]any{})
	f(400, "PUT", "/db/db:x", map[string]any{"from": "missing"})
	f(400, "PUT", "/db/db:bad%20name", nil)
	f(404, "PUT", "/db/nodb:x", nil)
	f(400, "PUT", "/db/db:y", map[string]any{"metadata": map[string]any{"stage": ""}})
	f(404, "GET", "/db/db:missing", nil)
	f(404, "GET", "/db/nodb:main", nil)
	f(400, "GET", "/db/nocolon", nil)

	r = ts.expect(200, "GET", "/dbs/db", nil)
	if r.obj()["databaseName"] != "db" || len(r.obj()["branches"].([]any)) != 3 {
		t.Errorf("list: %s", r.raw)
	}
	for _, b := range r.obj()["branches"].([]any) {
		if keys(b) != "createdAt,name" {
			t.Errorf("branch entry %v", b)
		}
	}
	f(404, "GET", "/dbs/nodb", nil)

	// Metadata.
	jsonEq(t, "dev metadata", ts.expect(200, "GET", "/db/db:dev/metadata", nil).body, `{"stage":"test","labels":["a"]}`)
	jsonEq(t, "main metadata", ts.expect(200, "GET", "/db/db:main/metadata", nil).body, `{}`)
	f(204, "PUT", "/db/db:main/metadata", map[string]any{"repository": "r", "branch": "b", "stage": "s", "labels": []string{"x"}})
	jsonEq(t, "set metadata", ts.expect(200, "GET", "/db/db:main/metadata", nil).body,
		`{"repository":"r","branch":"b","stage":"s","labels":["x"]}`)
	f(400, "PUT", "/db/db:main/metadata", map[string]any{"nope": 1})
	f(400, "PUT", "/db/db:main/metadata", map[string]any{"branch": "not valid"})
	f(404, "PUT", "/db/db:missing/metadata", map[string]any{})
	f(404, "GET", "/db/db:missing/metadata", nil)

	// Delete.
	jsonEq(t, "delete", ts.expect(200, "DELETE", "/db/db:feature", nil).body, `{"status":"completed"}`)
	f(404, "DELETE", "/db/db:feature", nil)
	f(200, "DELETE", "/db/db:dev", nil)
	f(409, "DELETE", "/db/db:main", nil)
}

func TestGitBranches(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("db")
	ts.expect(201, "PUT", "/db/db:dev", nil)

	jsonEq(t, "empty", ts.expect(200, "GET", "/dbs/db/gitBranches", nil).body, `{"mapping":[]}`)
	ts.expect(204, "POST", "/dbs/db/gitBranches", map[string]any{"gitBranch": "feature/x", "xataBranch": "dev"})
	r := ts.expect(201, "POST", "/dbs/db/gitBranches", map[string]any{"gitBranch": "feature/x", "xataBranch": "main"})
	if w, _ := r.obj()["warning"].(string); w == "" {
		t.Errorf("overwrite: %s", r.raw)
	}
	ts.expect(400, "POST", "/dbs/db/gitBranches", map[string]any{"gitBranch": "g", "xataBranch": "missing"})
	ts.expect(400, "POST", "/dbs/db/gitBranches", map[string]any{"gitBranch": "g"})
	ts.expect(404, "POST", "/dbs/nodb/gitBranches", map[string]any{"gitBranch": "g", "xataBranch": "main"})
	jsonEq(t, "list", ts.expect(200, "GET", "/dbs/db/gitBranches", nil).body,
		`{"mapping":[{"gitBranch":"feature/x","xataBranch":"main"}]}`)

	f := func(query, want string) {
		t.Helper()
		jsonEq(t, "resolve "+query, ts.expect(200, "GET", "/dbs/db/resolveBranch"+query, nil).body, want)
	}
	f("?gitBranch=feature%2Fx", `{"branch":"main","reason":{"code":"FOUND_IN_MAPPING","message":"found in git branch mapping"}}`)
	f("?gitBranch=dev", `{"branch":"dev","reason":{"code":"BRANCH_EXISTS","message":"branch with the same name exists"}}`)
	f("?gitBranch=nope&fallbackBranch=dev", `{"branch":"dev","reason":{"code":"FALLBACK_BRANCH","message":"using fallback branch"}}`)
	f("?gitBranch=nope&fallbackBranch=nope", `{"branch":"main","reason":{"code":"DEFAULT_BRANCH","message":"using default branch"}}`)
	f("", `{"branch":"main","reason":{"code":"DEFAULT_BRANCH","message":"using default branch"}}`)

	ts.expect(204, "DELETE", "/dbs/db/gitBranches?gitBranch=feature%2Fx", nil)
	ts.expect(404, "DELETE", "/dbs/db/gitBranches?gitBranch=feature%2Fx", nil)
	ts.expect(400, "DELETE", "/dbs/db/gitBranches", nil)
}
