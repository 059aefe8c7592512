package api

import (
	"strings"
	"testing"
)

func TestTables(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("db")

	r := ts.expect(201, "PUT", "/db/db:main/tables/users", `{"ignored":true}`)
	jsonEq(t, "create", r.body, `{"branchName":"db:main","tableName":"users","status":"completed"}`)
	f := func(status int, method, path string, body any) *response {
		t.Helper()
		return ts.expect(status, method, "/db/db:main/tables/"+path, body)
	}
	f(422, "PUT", "users", nil)
	f(422, "PUT", "USERS", nil)
	f(400, "PUT", "bad%20name", nil)
	f(400, "PUT", "%24x", nil)
	ts.expect(404, "PUT", "/db/db:nope/tables/x", nil)
	ts.expect(404, "PUT", "/db/nodb:main/tables/x", nil)

	// Columns.
	su := f(200, "POST", "users/columns", map[string]any{"name": "email", "type": "email", "unique": true})
	if keys(su.body) != "migrationID,parentMigrationID,status" || !strings.HasPrefix(su.obj()["migrationID"].(string), "mig_") {
		t.Errorf("schema update: %s", su.raw)
	}
	f(200, "POST", "users/columns", map[string]any{
		"name": "address", "type": "object",
		"columns": []any{map[string]any{"name": "city", "type": "string"}, map[string]any{"name": "zip", "type": "int"}},
	})
	f(200, "POST", "users/columns", map[string]any{"name": "address.street", "type": "string"})
	f(200, "POST", "users/columns", map[string]any{"name": "files", "type": "fileMap", "fileMap": map[string]any{"defaultPublicAccess": true}})
	f(400, "POST", "users/columns", map[string]any{"name": "email", "type": "string"})
	f(400, "POST", "users/columns", map[string]any{"name": "x"})
	f(400, "POST", "users/columns", map[string]any{"type": "string"})
	f(400, "POST", "users/columns", map[string]any{"name": "x", "type": "whatever"})
	f(400, "POST", "users/columns", map[string]any{"name": "x", "type": "link", "link": map[string]any{"table": "missing"}})
	f(400, "POST", "users/columns", map[string]any{"name": "x", "type": "string", "extra": 1})
	f(400, "POST", "users/columns", map[string]any{"name": "id", "type": "string"})
	f(404, "POST", "nope/columns", map[string]any{"name": "x", "type": "string"})

	r = f(200, "GET", "users/columns", nil)
	jsonEq(t, "flattened", r.body, `{"columns":[
		{"name":"email","type":"email","unique":true},
		{"name":"address.city","type":"string"},{"name":"address.zip","type":"int"},{"name":"address.street","type":"string"},
		{"name":"files","type":"file[]","file[]":{"defaultPublicAccess":true}}]}`)
	jsonEq(t, "column", f(200, "GET", "users/columns/address.zip", nil).body, `{"name":"zip","type":"int"}`)
	f(404, "GET", "users/columns/address.nope", nil)
	f(404, "GET", "nope/columns/x", nil)

	r = f(200, "GET", "users/schema", nil)
	jsonEq(t, "schema", r.body, `{"columns":[
		{"name":"email","type":"email","unique":true},
		{"name":"address","type":"object","columns":[{"name":"city","type":"string"},{"name":"zip","type":"int"},{"name":"street","type":"string"}]},
		{"name":"files","type":"file[]","file[]":{"defaultPublicAccess":true}}]}`)

	// Rename and delete columns.
	f(400, "PATCH", "users/columns/address.zip", map[string]any{})
	f(400, "PATCH", "users/columns/address.zip", map[string]any{"name": "postcode", "type": "int"})
	f(404, "PATCH", "users/columns/nope", map[string]any{"name": "x"})
	f(200, "PATCH", "users/columns/address.zip", map[string]any{"name": "postcode"})
	f(200, "GET", "users/columns/address.postcode", nil)
	f(200, "DELETE", "users/columns/files", nil)
	f(404, "DELETE", "users/columns/files", nil)

	// Replace the column set.
	f(200, "PUT", "users/schema", map[string]any{"columns": []any{
		map[string]any{"name": "email", "type": "email", "unique": true},
		map[string]any{"name": "age", "type": "int", "defaultValue": "3"},
	}})
	jsonEq(t, "replaced", f(200, "GET", "users/schema", nil).body,
		`{"columns":[{"name":"email","type":"email","unique":true},{"name":"age","type":"int","defaultValue":"3"}]}`)
	f(400, "PUT", "users/schema", map[string]any{})
	f(400, "PUT", "users/schema", map[string]any{"columns": []any{map[string]any{"name": "n", "type": "nope"}}})
	ts.expect(201, "PUT", "/db/db:main/tables/users/data/u1", map[string]any{"email": "a@b.co"})
	f(409, "PUT", "users/schema", map[string]any{"columns": []any{map[string]any{"name": "email", "type": "string"}}})

	// Rename and delete tables.
	f(201, "PUT", "teams", nil)
	r = f(200, "PATCH", "users", map[string]any{"name": "people"})
	if keys(r.body) != "migrationID,parentMigrationID,status" || r.obj()["status"] != "completed" {
		t.Errorf("rename: %s", r.raw)
	}
	f(422, "PATCH", "people", map[string]any{"name": "teams"})
	f(400, "PATCH", "people", map[string]any{})
	f(400, "PATCH", "people", map[string]any{"name": "bad name"})
	f(404, "PATCH", "users", map[string]any{"name": "x"})
	ts.expect(200, "GET", "/db/db:main/tables/people/data/u1", nil)
	jsonEq(t, "delete", f(200, "DELETE", "teams", nil).body, `{"status":"completed"}`)
	f(404, "DELETE", "teams", nil)
	f(404, "GET", "teams/schema", nil)
}
