package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// loadOpenAPI parses and validates a served document as OpenAPI 3.1.
func loadOpenAPI(t *testing.T, b []byte) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(b)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(loader.Context, openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("validate: %v", err)
	}
	return doc
}

// servedRoutes lists "METHOD template" for every route the router
// registered and every route serve answers itself.
func servedRoutes(s *Server) []string {
	var out []string
	for method, paths := range s.router.List() {
		for _, p := range paths {
			out = append(out, method+" "+routeTemplate(p))
		}
	}
	for _, rt := range builtinRoutes {
		out = append(out, rt.method+" "+rt.template)
	}
	sort.Strings(out)
	return out
}

// TestOpenAPICoversEveryRoute checks, in both modes, that every route the
// router serves is documented, with its path parameters, and that every
// documented operation is served.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	for _, compat := range []string{CompatNone, CompatXata} {
		t.Run(compat, func(t *testing.T) {
			s := unstartedServer(t, compat)
			doc := loadOpenAPI(t, s.openapi)
			served := servedRoutes(s)
			if len(served) < 80 {
				t.Fatalf("only %d routes served: the router walk is broken", len(served))
			}
			missing := 0
			for _, r := range served {
				method, path, _ := strings.Cut(r, " ")
				item := doc.Paths.Value(path)
				if item == nil || item.GetOperation(method) == nil {
					t.Errorf("%s is served but not documented", r)
					missing++
					continue
				}
				params := map[string]bool{}
				for _, p := range item.Parameters {
					params[p.Value.Name] = p.Value.In == "path"
				}
				for _, seg := range strings.Split(path, "/") {
					if name, ok := strings.CutPrefix(seg, "{"); ok && !params[strings.TrimSuffix(name, "}")] {
						t.Errorf("%s: path parameter %s is not documented", r, seg)
					}
				}
			}
			if missing != 0 {
				t.Errorf("%d of %d routes missing from the document", missing, len(served))
			}
			isServed := map[string]bool{}
			for _, r := range served {
				isServed[r] = true
			}
			documented := 0
			ids := map[string]string{}
			for path, item := range doc.Paths.Map() {
				for method, op := range item.Operations() {
					documented++
					if prev, dup := ids[op.OperationID]; dup || op.OperationID == "" {
						t.Errorf("%s %s: operationId %q also names %s", method, path, op.OperationID, prev)
					}
					ids[op.OperationID] = method + " " + path
					if !isServed[method+" "+path] {
						t.Errorf("%s %s is documented but not served", method, path)
					}
				}
			}
			if documented != len(served) {
				t.Errorf("%d operations documented, %d routes served", documented, len(served))
			}
		})
	}
}

// TestOpenAPIMetadataKey checks that the record schema follows the mode.
func TestOpenAPIMetadataKey(t *testing.T) {
	f := func(compat, want, other string) {
		t.Helper()
		doc := loadOpenAPI(t, unstartedServer(t, compat).openapi)
		rec := doc.Components.Schemas["Record"].Value
		if !contains(rec.Required, want) || rec.Properties[want] == nil {
			t.Errorf("%s: Record requires %v, properties %v; want %s", compat, rec.Required, keysOf(rec.Properties), want)
		}
		if contains(rec.Required, other) || rec.Properties[other] != nil {
			t.Errorf("%s: Record mentions %s", compat, other)
		}
		ex := doc.Paths.Value("/db/{db_branch_name}/tables/{table_name}/data/{record_id}").Get.Responses.Status(200).Value.Content.Get("application/json").Example
		if _, ok := ex.(map[string]any)[want]; !ok {
			t.Errorf("%s: record example %v lacks %s", compat, ex, want)
		}
	}
	f(CompatNone, "svc", "xata")
	f(CompatXata, "xata", "svc")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// example is one example of the document and the schema it must satisfy.
type example struct {
	where  string
	schema *openapi3.Schema
	value  any
}

// examplesOf collects every example of request bodies and responses,
// shared error responses included.
func examplesOf(doc *openapi3.T) []example {
	var out []example
	media := func(where string, c openapi3.Content) {
		for ct, mt := range c {
			if mt.Schema == nil {
				continue
			}
			if mt.Example != nil {
				out = append(out, example{where + " " + ct, mt.Schema.Value, mt.Example})
			}
			for name, ex := range mt.Examples {
				out = append(out, example{where + " " + ct + " " + name, mt.Schema.Value, ex.Value.Value})
			}
		}
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.RequestBody != nil {
				media(where+" request", op.RequestBody.Value.Content)
			}
			for status, r := range op.Responses.Map() {
				media(where+" "+status, r.Value.Content)
			}
		}
	}
	for name, r := range doc.Components.Responses {
		media("components/responses/"+name, r.Value.Content)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].where < out[j].where })
	return out
}

// TestOpenAPIExamplesValidate validates every example of the document, in
// both modes, against its schema as JSON Schema 2020-12.
func TestOpenAPIExamplesValidate(t *testing.T) {
	for _, compat := range []string{CompatNone, CompatXata} {
		t.Run(compat, func(t *testing.T) {
			doc := loadOpenAPI(t, unstartedServer(t, compat).openapi)
			exs := examplesOf(doc)
			responses := 0
			for _, ex := range exs {
				if !strings.Contains(ex.where, " request ") {
					responses++
				}
				if err := ex.schema.VisitJSON(ex.value, openapi3.EnableJSONSchema2020(), openapi3.EnableFormatValidation()); err != nil {
					t.Errorf("%s: example does not validate: %v", ex.where, err)
				}
			}
			if responses < 80 {
				t.Errorf("only %d response examples", responses)
			}
			// The check can fail: a record without its metadata, an error
			// without a message.
			rec := doc.Components.Schemas["Record"].Value
			if rec.VisitJSON(map[string]any{"id": "x"}, openapi3.EnableJSONSchema2020()) == nil {
				t.Error("a record without metadata validates")
			}
			if doc.Components.Schemas["Error"].Value.VisitJSON(map[string]any{"id": "x"}, openapi3.EnableJSONSchema2020()) == nil {
				t.Error("an error without message validates")
			}
		})
	}
}

// validator checks real responses against the served document.
type validator struct {
	t       *testing.T
	doc     *openapi3.T
	checked int
}

// check sends a request to the route template path (parameters filled in
// by args, in order) and validates the response: its status must be
// documented for the operation and its JSON body satisfy the schema.
func (v *validator) check(ts *testServer, want int, method, template string, body any, args ...string) *response {
	v.t.Helper()
	template, query, _ := strings.Cut(template, "?")
	url := template
	for _, a := range args {
		i, j := strings.IndexByte(url, '{'), strings.IndexByte(url, '}')
		url = url[:i] + a + url[j+1:]
	}
	if strings.HasPrefix(template, "/db/") || strings.HasPrefix(template, "/dbs/") {
		url = ts.base + url
	} else {
		url = ts.url + url
	}
	if query != "" {
		url += "?" + query
	}
	r := ts.do(method, url, body)
	if r.status != want {
		v.t.Fatalf("%s %s: status %d, want %d: %s", method, url, r.status, want, r.raw)
	}
	v.validate(method, template, r)
	return r
}

// validate checks one response of an operation.
func (v *validator) validate(method, template string, r *response) {
	v.t.Helper()
	item := v.doc.Paths.Value(template)
	if item == nil || item.GetOperation(method) == nil {
		v.t.Fatalf("%s %s is not documented", method, template)
	}
	resp := item.GetOperation(method).Responses.Status(r.status)
	if resp == nil {
		v.t.Errorf("%s %s: status %d is not documented", method, template, r.status)
		return
	}
	if r.status == http.StatusNoContent || len(r.raw) == 0 {
		if resp.Value.Content.Get("application/json") != nil {
			v.t.Errorf("%s %s: %d without a body, documented with one", method, template, r.status)
		}
		return
	}
	mt := resp.Value.Content.Get("application/json")
	if mt == nil {
		v.t.Errorf("%s %s: %d has a JSON body, documented without one", method, template, r.status)
		return
	}
	var body any
	d := json.NewDecoder(bytes.NewReader(r.raw))
	d.UseNumber()
	if err := d.Decode(&body); err != nil {
		v.t.Fatal(err)
	}
	// The validator wants float64 numbers.
	body = plainNumbers(body)
	if err := mt.Schema.Value.VisitJSON(body, openapi3.EnableJSONSchema2020(), openapi3.EnableFormatValidation()); err != nil {
		v.t.Errorf("%s %s %d: response does not match the document: %v\n%s", method, template, r.status, err, r.raw)
	}
	v.checked++
}

// plainNumbers turns json.Number into float64.
func plainNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = plainNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plainNumbers(e)
		}
	}
	return v
}

// TestOpenAPIRealResponses validates the responses of a running server, in
// both modes, against the document it serves: a session over both planes
// with successes and failures.
func TestOpenAPIRealResponses(t *testing.T) {
	for _, compat := range []string{CompatNone, CompatXata} {
		t.Run(compat, func(t *testing.T) {
			ts := startServer(t, Options{Compat: compat})
			r := ts.do("GET", ts.url+"/openapi.json", nil, withKey(""))
			if r.status != 200 {
				t.Fatalf("GET /openapi.json without a key: %d", r.status)
			}
			v := &validator{t: t, doc: loadOpenAPI(t, r.raw)}
			openAPISession(t, ts, v)
			if v.checked < 60 {
				t.Errorf("only %d responses checked", v.checked)
			}
		})
	}
}

// openAPISession drives the requests of TestOpenAPIRealResponses.
func openAPISession(t *testing.T, ts *testServer, v *validator) {
	ws := ts.info.WorkspaceID
	region := ts.region()
	c := func(want int, method, template string, body any, args ...string) *response {
		t.Helper()
		return v.check(ts, want, method, template, body, args...)
	}
	// Operations and the control plane.
	c(200, "GET", "/healthz", nil)
	c(200, "GET", "/readyz", nil)
	c(200, "GET", "/user", nil)
	c(200, "GET", "/user/keys", nil)
	c(201, "POST", "/user/keys/{key_name}", map[string]any{"workspaceID": ws}, "ci")
	c(409, "POST", "/user/keys/{key_name}", nil, "ci")
	c(400, "POST", "/user/keys/", nil)
	c(204, "DELETE", "/user/keys/{key_name}", nil, "ci")
	c(200, "GET", "/workspaces", nil)
	created := c(201, "POST", "/workspaces", map[string]any{"name": "Other Co"})
	other := str(created.obj()["id"])
	c(200, "GET", "/workspaces/{workspace_id}", nil, ws)
	c(200, "PUT", "/workspaces/{workspace_id}", map[string]any{"name": "Other"}, other)
	c(200, "GET", "/workspaces/{workspace_id}/members", nil, ws)
	inv := c(201, "POST", "/workspaces/{workspace_id}/invites", map[string]any{"email": "bob@example.com", "role": "maintainer"}, ws)
	inviteID := str(inv.obj()["inviteId"])
	c(409, "POST", "/workspaces/{workspace_id}/invites", map[string]any{"email": "bob@example.com", "role": "maintainer"}, ws)
	c(200, "PATCH", "/workspaces/{workspace_id}/invites/{invite_id}", map[string]any{"role": "owner"}, ws, inviteID)
	c(204, "POST", "/workspaces/{workspace_id}/invites/{invite_id}/resend", nil, ws, inviteID)
	c(404, "POST", "/workspaces/{workspace_id}/invites/{invite_id}/accept", nil, ws, "ik_nope")
	c(204, "DELETE", "/workspaces/{workspace_id}/invites/{invite_id}", nil, ws, inviteID)
	c(204, "DELETE", "/workspaces/{workspace_id}", nil, other)
	c(403, "GET", "/workspaces/{workspace_id}", nil, other)
	bob := c(201, "POST", "/admin/users", map[string]any{"email": "carl@example.com", "fullname": "Carl"})
	c(200, "PUT", "/user", map[string]any{"email": "admin@localhost", "fullname": "Admin", "image": ""})

	// Databases and branches.
	c(200, "GET", "/workspaces/{workspace_id}/regions", nil, ws)
	c(201, "PUT", "/workspaces/{workspace_id}/dbs/{db_name}", map[string]any{"region": region}, ws, "app")
	c(422, "PUT", "/workspaces/{workspace_id}/dbs/{db_name}", map[string]any{"region": region}, ws, "app")
	c(200, "GET", "/workspaces/{workspace_id}/dbs", nil, ws)
	c(200, "GET", "/workspaces/{workspace_id}/dbs/{db_name}", nil, ws, "app")
	c(200, "PATCH", "/workspaces/{workspace_id}/dbs/{db_name}", map[string]any{"ui": map[string]any{"color": "green"}}, ws, "app")
	c(201, "PUT", "/workspaces/{workspace_id}/dbs/{db_name}", map[string]any{"region": region}, ws, "tmp")
	c(200, "POST", "/workspaces/{workspace_id}/dbs/{db_name}/rename", map[string]any{"newName": "tmp2"}, ws, "tmp")
	c(200, "DELETE", "/workspaces/{workspace_id}/dbs/{db_name}", nil, ws, "tmp2")
	c(404, "GET", "/workspaces/{workspace_id}/dbs/{db_name}", nil, ws, "tmp2")

	// Tables, columns and schema edits.
	c(201, "PUT", "/db/{db_branch_name}/tables/{table_name}", nil, "app:main", "teams")
	c(200, "POST", "/db/{db_branch_name}/tables/{table_name}/columns", map[string]any{"name": "name", "type": "string"}, "app:main", "teams")
	c(201, "PUT", "/db/{db_branch_name}/tables/{table_name}", nil, "app:main", "users")
	c(422, "PUT", "/db/{db_branch_name}/tables/{table_name}", nil, "app:main", "users")
	c(200, "PUT", "/db/{db_branch_name}/tables/{table_name}/schema", map[string]any{"columns": []any{
		map[string]any{"name": "name", "type": "string"},
		map[string]any{"name": "email", "type": "email", "unique": true},
		map[string]any{"name": "age", "type": "int"},
		map[string]any{"name": "bio", "type": "text"},
		map[string]any{"name": "tags", "type": "multiple"},
		map[string]any{"name": "team", "type": "link", "link": map[string]any{"table": "teams"}},
		map[string]any{"name": "address", "type": "object", "columns": []any{map[string]any{"name": "city", "type": "string"}}},
		map[string]any{"name": "config", "type": "json"},
		map[string]any{"name": "embedding", "type": "vector", "vector": map[string]any{"dimension": 2}},
		map[string]any{"name": "photo", "type": "file"},
	}}, "app:main", "users")
	c(200, "GET", "/db/{db_branch_name}/tables/{table_name}/schema", nil, "app:main", "users")
	c(200, "GET", "/db/{db_branch_name}/tables/{table_name}/columns", nil, "app:main", "users")
	c(200, "GET", "/db/{db_branch_name}/tables/{table_name}/columns/{column_name}", nil, "app:main", "users", "age")
	c(200, "POST", "/db/{db_branch_name}/tables/{table_name}/columns", map[string]any{"name": "tmp", "type": "bool"}, "app:main", "users")
	c(200, "PATCH", "/db/{db_branch_name}/tables/{table_name}/columns/{column_name}", map[string]any{"name": "tmp2"}, "app:main", "users", "tmp")
	c(200, "DELETE", "/db/{db_branch_name}/tables/{table_name}/columns/{column_name}", nil, "app:main", "users", "tmp2")
	c(404, "GET", "/db/{db_branch_name}/tables/{table_name}/columns/{column_name}", nil, "app:main", "users", "nope")
	c(200, "POST", "/db/{db_branch_name}/schema/compare", map[string]any{"schema": map[string]any{"tables": []any{
		map[string]any{"name": "pets", "columns": []any{map[string]any{"name": "kind", "type": "string"}}}}}}, "app:main")
	c(200, "POST", "/db/{db_branch_name}/schema/preview", map[string]any{"edits": map[string]any{"operations": []any{
		map[string]any{"addTable": map[string]any{"table": "pets"}}}}}, "app:main")
	c(200, "POST", "/db/{db_branch_name}/schema/apply", map[string]any{"edits": map[string]any{"operations": []any{
		map[string]any{"addTable": map[string]any{"table": "pets"}}}}}, "app:main")
	c(200, "POST", "/db/{db_branch_name}/schema/update", map[string]any{"operations": []any{
		map[string]any{"addColumn": map[string]any{"table": "pets", "column": map[string]any{"name": "kind", "type": "string"}}}}}, "app:main")
	hist := c(200, "POST", "/db/{db_branch_name}/schema/history", nil, "app:main")
	c(200, "POST", "/db/{db_branch_name}/schema/push", map[string]any{"migrations": []any{}}, "app:main")
	c(200, "PATCH", "/db/{db_branch_name}/tables/{table_name}", map[string]any{"name": "animals"}, "app:main", "pets")
	c(200, "DELETE", "/db/{db_branch_name}/tables/{table_name}", nil, "app:main", "animals")
	if logs, _ := hist.obj()["logs"].([]any); len(logs) == 0 {
		t.Errorf("no schema history: %s", hist.raw)
	}

	// Records.
	c(201, "PUT", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}", map[string]any{"name": "Core"}, "app:main", "teams", "core")
	ins := c(201, "POST", "/db/{db_branch_name}/tables/{table_name}/data", map[string]any{
		"name": "Ann", "email": "ann@example.com", "age": 34, "bio": "Ann writes databases", "tags": []any{"a", "b"},
		"team": "core", "address": map[string]any{"city": "Oslo"}, "config": `{"a":1}`, "embedding": []any{0.5, 0.5},
		"photo": map[string]any{"name": "p.txt", "mediaType": "text/plain", "base64Content": "aGk="},
	}, "app:main", "users")
	ann := str(ins.obj()["id"])
	c(201, "POST", "/db/{db_branch_name}/tables/{table_name}/data?columns=*", map[string]any{"name": "Bob", "email": "bob@example.com", "age": 27, "team": "core"}, "app:main", "users")
	c(400, "POST", "/db/{db_branch_name}/tables/{table_name}/data", map[string]any{"name": "Bo", "email": "bob@example.com"}, "app:main", "users")
	c(200, "GET", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}", nil, "app:main", "users", ann)
	c(200, "GET", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}?columns=*,team.*,photo.signedUrl,photo.uploadUrl", nil, "app:main", "users", ann)
	c(200, "GET", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}?consistency=eventual", nil, "app:main", "users", ann)
	c(400, "GET", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}?consistency=latest", nil, "app:main", "users", ann)
	c(404, "GET", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}", nil, "app:main", "users", "nope")
	c(404, "GET", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}", nil, "app:main", "nope", "x")
	c(200, "PATCH", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}?columns=name,age", map[string]any{"age": map[string]any{"$increment": 1}}, "app:main", "users", ann)
	c(422, "PATCH", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}?ifVersion=0", map[string]any{"age": 1}, "app:main", "users", ann)
	c(201, "POST", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}", map[string]any{"name": "Cat"}, "app:main", "users", "cat")
	c(200, "POST", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}", map[string]any{"name": "Cat2"}, "app:main", "users", "cat")
	c(200, "PUT", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}", map[string]any{"name": "Cat3"}, "app:main", "users", "cat")
	c(422, "PUT", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}?createOnly=true", map[string]any{"name": "Cat4"}, "app:main", "users", "cat")
	c(200, "DELETE", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}?columns=name", nil, "app:main", "users", "cat")
	c(204, "DELETE", "/db/{db_branch_name}/tables/{table_name}/data/{record_id}", nil, "app:main", "teams", "core")
	c(200, "POST", "/db/{db_branch_name}/tables/{table_name}/bulk", map[string]any{"records": []any{
		map[string]any{"name": "Dan", "email": "dan@example.com"}, map[string]any{"name": "Eve"}}}, "app:main", "users")
	c(200, "POST", "/db/{db_branch_name}/tables/{table_name}/bulk?columns=name", map[string]any{"records": []any{
		map[string]any{"name": "Fay"}}}, "app:main", "users")
	c(400, "POST", "/db/{db_branch_name}/tables/{table_name}/bulk", map[string]any{"records": []any{
		map[string]any{"name": "X", "email": "ann@example.com"}}}, "app:main", "users")
	c(200, "POST", "/db/{db_branch_name}/transaction", map[string]any{"operations": []any{
		map[string]any{"insert": map[string]any{"table": "teams", "record": map[string]any{"id": "ops", "name": "Ops"}}},
		map[string]any{"insert": map[string]any{"table": "teams", "record": map[string]any{"name": "Gen"}}},
		map[string]any{"update": map[string]any{"table": "teams", "id": "ops", "fields": map[string]any{"name": "Ops2"}}},
		map[string]any{"get": map[string]any{"table": "teams", "id": "ops"}},
		map[string]any{"get": map[string]any{"table": "teams", "id": "ops", "columns": []any{"name"}}},
		map[string]any{"delete": map[string]any{"table": "teams", "id": "ops"}},
	}}, "app:main")
	c(400, "POST", "/db/{db_branch_name}/transaction", map[string]any{"operations": []any{
		map[string]any{"delete": map[string]any{"table": "teams", "id": "nope", "failIfMissing": true}}}}, "app:main")

	// Files.
	f := "/db/{db_branch_name}/tables/{table_name}/data/{record_id}/column/{column_name}/file"
	c(200, "DELETE", f, nil, "app:main", "users", ann, "photo")
	c(204, "GET", f, nil, "app:main", "users", ann, "photo")

	// Queries and search.
	c(200, "POST", "/db/{db_branch_name}/tables/{table_name}/query", map[string]any{
		"filter": map[string]any{"age": map[string]any{"$ge": 20}}, "sort": map[string]any{"age": "desc"},
		"columns": []any{"name", "age", "team.name"}, "page": map[string]any{"size": 1}}, "app:main", "users")
	c(200, "POST", "/db/{db_branch_name}/tables/{table_name}/query", nil, "app:main", "users")
	c(400, "POST", "/db/{db_branch_name}/tables/{table_name}/query", map[string]any{"filter": map[string]any{"nope": 1}}, "app:main", "users")
	c(200, "POST", "/db/{db_branch_name}/tables/{table_name}/summarize", map[string]any{
		"columns": []any{"team"}, "summaries": map[string]any{"n": map[string]any{"count": "*"}, "avg": map[string]any{"average": "age"}}}, "app:main", "users")
	c(200, "POST", "/db/{db_branch_name}/tables/{table_name}/aggregate", nil, "app:main", "users")
	c(200, "POST", "/db/{db_branch_name}/tables/{table_name}/aggregate", map[string]any{"aggs": map[string]any{
		"ages": map[string]any{"topValues": map[string]any{"column": "age"}}, "p": map[string]any{"percentiles": map[string]any{"column": "age", "percentiles": []any{50}}}}}, "app:main", "users")
	c(200, "POST", "/db/{db_branch_name}/tables/{table_name}/search", map[string]any{"query": "anne"}, "app:main", "users")
	c(400, "POST", "/db/{db_branch_name}/tables/{table_name}/search", map[string]any{"query": "x", "bogus": 1}, "app:main", "users")
	c(200, "POST", "/db/{db_branch_name}/search", map[string]any{"query": "ann", "tables": []any{"users", map[string]any{"table": "teams"}}}, "app:main")
	c(200, "POST", "/db/{db_branch_name}/tables/{table_name}/vectorSearch", map[string]any{"queryVector": []any{1, 0}, "column": "embedding"}, "app:main", "users")

	// Branches and git mapping.
	c(201, "PUT", "/db/{db_branch_name}", map[string]any{"from": "main", "metadata": map[string]any{"stage": "dev"}}, "app:dev")
	c(422, "PUT", "/db/{db_branch_name}", nil, "app:dev")
	c(200, "GET", "/db/{db_branch_name}", nil, "app:dev")
	c(200, "GET", "/db/{db_branch_name}", nil, "app:main")
	c(200, "GET", "/dbs/{db_name}", nil, "app")
	c(200, "GET", "/db/{db_branch_name}/metadata", nil, "app:dev")
	c(204, "PUT", "/db/{db_branch_name}/metadata", map[string]any{"repository": "github.com/acme/app", "labels": []any{"x"}}, "app:dev")
	c(200, "GET", "/db/{db_branch_name}/stats", nil, "app:main")
	c(200, "POST", "/db/{db_branch_name}/schema/compare/{branch_name}", nil, "app:main", "dev")
	c(204, "POST", "/dbs/{db_name}/gitBranches", map[string]any{"gitBranch": "feature/x", "xataBranch": "dev"}, "app")
	c(201, "POST", "/dbs/{db_name}/gitBranches", map[string]any{"gitBranch": "feature/x", "xataBranch": "main"}, "app")
	c(200, "GET", "/dbs/{db_name}/gitBranches", nil, "app")
	c(200, "GET", "/dbs/{db_name}/resolveBranch?gitBranch=feature/x", nil, "app")
	c(200, "GET", "/dbs/{db_name}/resolveBranch", nil, "app")
	c(204, "DELETE", "/dbs/{db_name}/gitBranches?gitBranch=feature/x", nil, "app")
	c(404, "DELETE", "/dbs/{db_name}/gitBranches?gitBranch=feature/x", nil, "app")
	c(200, "DELETE", "/db/{db_branch_name}", nil, "app:dev")
	c(404, "GET", "/db/{db_branch_name}", nil, "app:dev")
	c(501, "POST", "/db/{db_branch_name}/sql", map[string]any{"statement": "select 1"}, "app:main")

	// Bad keys.
	ts.key = "cpk_not_a_key"
	c(401, "GET", "/user", nil)
	c(401, "POST", "/db/{db_branch_name}/tables/{table_name}/query", nil, "app:main", "users")
	ts.key = str(bob.obj()["key"])
	c(403, "POST", "/admin/users", map[string]any{"email": "x@example.com"})
	c(401, "GET", "/workspaces/{workspace_id}/dbs", nil, ws)
	ts.key = testKey
	c(404, "DELETE", "/user/keys/{key_name}", nil, "nope")
}

// TestOpenAPIServedAsBuilt checks that GET /openapi.json serves the
// document New built, without authentication and in both modes.
func TestOpenAPIServedAsBuilt(t *testing.T) {
	ts := startServer(t, Options{Compat: CompatXata})
	ts.key = ""
	r := ts.expect(200, "GET", ts.url+"/openapi.json", nil)
	if !bytes.Equal(r.raw, ts.srv.openapi) {
		t.Errorf("served document differs from the built one")
	}
	var doc map[string]any
	if err := json.Unmarshal(r.raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi %v", doc["openapi"])
	}
	info := doc["info"].(map[string]any)
	if got, want := info["version"], ReadBuildInfo().Version; got != want {
		t.Errorf("info.version %v, want %v", got, want)
	}
	if !strings.Contains(fmt.Sprint(info["description"]), "xata") {
		t.Errorf("the description does not name the mode: %v", info["description"])
	}
}
