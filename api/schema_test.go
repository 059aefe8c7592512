package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coppice-db/coppice/engine"
)

// schemaPath is the path of a schema edit endpoint of db:main.
func schemaPath(db, op string) string { return "/db/" + db + ":main/schema/" + op }

// head returns the lastMigrationID of a branch.
func (ts *testServer) head(dbb string) string {
	ts.t.Helper()
	return ts.expect(200, "GET", "/db/"+dbb, nil).obj()["lastMigrationID"].(string)
}

// opsJSON returns the operations of a compare answer as JSON text, object
// keys sorted.
func opsJSON(r *response) string {
	b, _ := json.Marshal(r.obj()["edits"].(map[string]any)["operations"])
	return string(b)
}

// wantOps fails unless the operations of a compare answer are want.
func wantOps(t *testing.T, what string, r *response, want string) {
	t.Helper()
	jsonEq(t, what, r.obj()["edits"].(map[string]any)["operations"], want)
}

// TestSchemaBootstrap follows the flow of SDK test harnesses: compare a
// schema with a fresh branch, apply the returned edits, and find the
// branch with that schema.
func TestSchemaBootstrap(t *testing.T) {
	ts := startServer(t, Options{Compat: CompatXata})
	ts.createDB("db")
	schema := `{"tables":[
		{"name":"users","columns":[
			{"name":"name","type":"string"},
			{"name":"email","type":"email","unique":true},
			{"name":"team","type":"link","link":{"table":"teams"}},
			{"name":"address","type":"object","columns":[{"name":"city","type":"string"}]},
			{"name":"files","type":"fileMap"}]},
		{"name":"teams","columns":[{"name":"name","type":"string","notNull":true,"defaultValue":"none"}]}]}`
	r := ts.expect(200, "POST", schemaPath("db", "compare"), `{"schema":`+schema+`}`)
	jsonEq(t, "source", r.obj()["source"], `{"tables":[]}`)
	if _, ok := r.obj()["edits"].(map[string]any)["sourceMigrationID"]; ok {
		t.Errorf("sourceMigrationID on a branch without migrations: %s", r.raw)
	}
	jsonEq(t, "operations", r.obj()["edits"].(map[string]any)["operations"], `[
		{"addTable":{"table":"users"}},
		{"addTable":{"table":"teams"}},
		{"addColumn":{"table":"users","column":{"name":"name","type":"string"}}},
		{"addColumn":{"table":"users","column":{"name":"email","type":"email","unique":true}}},
		{"addColumn":{"table":"users","column":{"name":"team","type":"link","link":{"table":"teams"}}}},
		{"addColumn":{"table":"users","column":{"name":"address","type":"object","columns":[{"name":"city","type":"string"}]}}},
		{"addColumn":{"table":"users","column":{"name":"files","type":"file[]"}}},
		{"addColumn":{"table":"teams","column":{"name":"name","type":"string","notNull":true,"defaultValue":"none"}}}]`)

	a := ts.expect(200, "POST", schemaPath("db", "apply"), map[string]any{"edits": r.obj()["edits"]})
	if keys(a.body) != "migrationID,parentMigrationID,status" || a.obj()["parentMigrationID"] != "" || a.obj()["status"] != "completed" {
		t.Fatalf("apply: %s", a.raw)
	}
	head := a.obj()["migrationID"].(string)
	if len(head) != 24 || strings.Trim(head[4:], "0123456789abcdefghijklmnopqrstuv") != "" {
		t.Errorf("migration id %q", head)
	}
	det := ts.expect(200, "GET", "/db/db:main", nil).obj()
	if det["lastMigrationID"] != head {
		t.Errorf("head %v, want %s", det["lastMigrationID"], head)
	}
	jsonEq(t, "schema", det["schema"], `{"tables":[
		{"name":"users","columns":[
			{"name":"name","type":"string"},
			{"name":"email","type":"email","unique":true},
			{"name":"team","type":"link","link":{"table":"teams"}},
			{"name":"address","type":"object","columns":[{"name":"city","type":"string"}]},
			{"name":"files","type":"file[]"}]},
		{"name":"teams","columns":[{"name":"name","type":"string","notNull":true,"defaultValue":"none"}],
		 "revLinks":[{"table":"users","column":"team"}]}]}`)

	// The branch's own schema, sent back with its revLinks, compares equal;
	// applying no operations changes nothing.
	b, _ := json.Marshal(map[string]any{"schema": det["schema"]})
	r = ts.expect(200, "POST", schemaPath("db", "compare"), string(b))
	if opsJSON(r) != "[]" || r.obj()["edits"].(map[string]any)["sourceMigrationID"] != head {
		t.Errorf("compare with itself: %s", r.raw)
	}
	a = ts.expect(200, "POST", schemaPath("db", "apply"), map[string]any{"edits": r.obj()["edits"]})
	jsonEq(t, "empty apply", a.body, `{"migrationID":"`+head+`","parentMigrationID":"","status":"completed"}`)

	// Bad input.
	f := func(status int, path, body string) {
		t.Helper()
		ts.expect(status, "POST", path, body)
	}
	f(400, schemaPath("db", "compare"), `{}`)
	f(400, schemaPath("db", "compare"), ``)
	f(400, schemaPath("db", "compare"), `{"schema":{"tables":[{"name":"a"},{"name":"A"}]}}`)
	f(400, schemaPath("db", "compare"), `{"schema":{"tables":[{"name":"a","columns":[{"name":"l","type":"link","link":{"table":"nope"}}]}]}}`)
	f(400, schemaPath("db", "compare"), `{"schema":{"tables":[{"name":"a","columns":[{"name":"x","type":"wat"}]}]}}`)
	f(400, schemaPath("db", "compare"), `{"schema":{"tables":[{"name":"a","extra":1}]}}`)
	f(400, schemaPath("db", "compare"), `{"schema":{"tables":[]},"schemaOperations":[{}]}`)
	f(404, "/db/db:nope/schema/compare", `{"schema":{"tables":[]}}`)
	f(404, "/db/nodb:main/schema/compare", `{"schema":{"tables":[]}}`)
	f(400, schemaPath("db", "apply"), `{}`)
	f(400, schemaPath("db", "apply"), `{"edits":{}}`)
	f(404, "/db/db:nope/schema/apply", `{"edits":{"operations":[]}}`)
}

// TestSchemaCompareOrder checks the order of compare's operations and that
// applying them yields the target.
func TestSchemaCompareOrder(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("db")
	ts.expect(200, "POST", schemaPath("db", "update"), `{"operations":[
		{"addTable":{"table":"a"}},{"addTable":{"table":"b"}},{"addTable":{"table":"gone1"}},{"addTable":{"table":"gone2"}},
		{"addColumn":{"table":"a","column":{"name":"x","type":"int"}}},
		{"addColumn":{"table":"a","column":{"name":"y","type":"string"}}},
		{"addColumn":{"table":"a","column":{"name":"toB","type":"link","link":{"table":"b"}}}},
		{"addColumn":{"table":"gone1","column":{"name":"g2","type":"link","link":{"table":"gone2"}}}},
		{"addColumn":{"table":"gone2","column":{"name":"g1","type":"link","link":{"table":"gone1"}}}}]}`)
	target := `{"tables":[
		{"name":"a","columns":[{"name":"x","type":"float"},{"name":"toB","type":"link","link":{"table":"b"}},{"name":"toC","type":"link","link":{"table":"c"}},{"name":"z","type":"bool"}]},
		{"name":"b","columns":[]},
		{"name":"c","columns":[{"name":"toA","type":"link","link":{"table":"a"}},{"name":"n","type":"text"}]}]}`
	r := ts.expect(200, "POST", schemaPath("db", "compare"), `{"schema":`+target+`}`)
	jsonEq(t, "operations", r.obj()["edits"].(map[string]any)["operations"], `[
		{"addTable":{"table":"c"}},
		{"removeColumn":{"table":"a","column":"x"}},
		{"addColumn":{"table":"a","column":{"name":"x","type":"float"}}},
		{"addColumn":{"table":"a","column":{"name":"toC","type":"link","link":{"table":"c"}}}},
		{"addColumn":{"table":"a","column":{"name":"z","type":"bool"}}},
		{"addColumn":{"table":"c","column":{"name":"toA","type":"link","link":{"table":"a"}}}},
		{"addColumn":{"table":"c","column":{"name":"n","type":"text"}}},
		{"removeColumn":{"table":"a","column":"y"}},
		{"removeColumn":{"table":"gone1","column":"g2"}},
		{"removeColumn":{"table":"gone2","column":"g1"}},
		{"removeTable":{"table":"gone1"}},
		{"removeTable":{"table":"gone2"}}]`)
	ts.expect(200, "POST", schemaPath("db", "apply"), map[string]any{"edits": r.obj()["edits"]})
	r = ts.expect(200, "POST", schemaPath("db", "compare"), `{"schema":`+target+`}`)
	if opsJSON(r) != "[]" {
		t.Errorf("after apply: %s", opsJSON(r))
	}

	// Branch against branch: the edits turn this branch into the other.
	ts.expect(201, "PUT", "/db/db:dev", map[string]any{"from": "main"})
	ts.expect(200, "POST", "/db/db:dev/schema/update", `{"operations":[{"addTable":{"table":"d"}},{"removeColumn":{"table":"a","column":"z"}}]}`)
	r = ts.expect(200, "POST", schemaPath("db", "compare/dev"), nil)
	edits := r.obj()["edits"].(map[string]any)
	wantOps(t, "compare branches", r, `[{"addTable":{"table":"d"}},{"removeColumn":{"table":"a","column":"z"}}]`)
	if edits["sourceMigrationID"] != ts.head("db:main") || edits["targetMigrationID"] != ts.head("db:dev") {
		t.Errorf("compare branches: %s", r.raw)
	}
	// The changed column x was removed and added again: it comes after toB.
	jsonEq(t, "target", r.obj()["target"], `{"tables":`+
		`[{"name":"a","columns":[{"name":"toB","type":"link","link":{"table":"b"}},{"name":"x","type":"float"},{"name":"toC","type":"link","link":{"table":"c"}}],"revLinks":[{"table":"c","column":"toA"}]},`+
		`{"name":"b","columns":[],"revLinks":[{"table":"a","column":"toB"}]},`+
		`{"name":"c","columns":[{"name":"toA","type":"link","link":{"table":"a"}},{"name":"n","type":"text"}],"revLinks":[{"table":"a","column":"toC"}]},`+
		`{"name":"d","columns":[]}]}`)
	ts.expect(200, "POST", schemaPath("db", "compare/db:dev"), `{}`)
	ts.expect(404, "POST", schemaPath("db", "compare/nope"), nil)
	ts.expect(400, "POST", schemaPath("db", "compare/other:dev"), nil)
}

// TestSchemaRenameHints: renames come only from the operation hints, and
// keep the data.
func TestSchemaRenameHints(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("db")
	ts.createTable("db", "people", map[string]any{"name": "fullname", "type": "string"}, map[string]any{"name": "age", "type": "int"})
	ts.expect(201, "PUT", "/db/db:main/tables/people/data/p1", map[string]any{"fullname": "Ann", "age": 3})
	target := `{"tables":[{"name":"users","columns":[{"name":"name","type":"string"},{"name":"age","type":"int"}]}]}`

	r := ts.expect(200, "POST", schemaPath("db", "compare"), `{"schema":`+target+`}`)
	wantOps(t, "without hints", r, `[{"addTable":{"table":"users"}},`+
		`{"addColumn":{"table":"users","column":{"name":"name","type":"string"}}},`+
		`{"addColumn":{"table":"users","column":{"name":"age","type":"int"}}},`+
		`{"removeTable":{"table":"people"}}]`)
	r = ts.expect(200, "POST", schemaPath("db", "compare"), `{"schema":`+target+`,
		"schemaOperations":[{"renameTable":{"oldName":"people","newName":"users"}}],
		"branchOperations":[{"renameColumn":{"table":"people","oldName":"fullname","newName":"name"}}]}`)
	wantOps(t, "with hints", r, `[{"renameTable":{"oldName":"people","newName":"users"}},`+
		`{"renameColumn":{"table":"users","oldName":"fullname","newName":"name"}}]`)
	ts.expect(200, "POST", schemaPath("db", "apply"), map[string]any{"edits": r.obj()["edits"]})
	got := ts.expect(200, "GET", "/db/db:main/tables/users/data/p1?columns=name,age", nil).obj()
	if got["name"] != "Ann" || got["age"] != json.Number("3") {
		t.Errorf("record after renames: %v", got)
	}
}

// TestSchemaApplyIsAtomic: a failing operation in the middle of a list
// leaves the schema as it was; so does a stale sourceMigrationID.
func TestSchemaApplyIsAtomic(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("db")
	ts.createTable("db", "t", map[string]any{"name": "a", "type": "string"})
	before := ts.expect(200, "GET", "/db/db:main", nil).obj()
	edits := func(ops string) string { return `{"edits":{"operations":` + ops + `}}` }

	r := ts.expect(400, "POST", schemaPath("db", "apply"), edits(`[
		{"addTable":{"table":"u"}},
		{"addColumn":{"table":"t","column":{"name":"b","type":"int"}}},
		{"addColumn":{"table":"missing","column":{"name":"c","type":"int"}}},
		{"removeColumn":{"table":"t","column":"a"}}]`))
	if msg := r.obj()["message"].(string); !strings.Contains(msg, "operation 3 (addColumn)") || !strings.Contains(msg, "table [missing] not found") {
		t.Errorf("message %q", msg)
	}
	for _, ops := range []string{
		`[{"removeColumn":{"table":"t","column":"a"}},{"removeColumn":{"table":"t","column":"a"}}]`,
		`[{"addTable":{"table":"u"}},{"addTable":{"table":"U"}}]`,
		`[{"renameTable":{"oldName":"t","newName":"bad name"}}]`,
		`[{"addTable":{"table":"u"}},{"addTable":{"table":"v"},"removeTable":{"table":"t"}}]`,
		`[{"addTable":{"table":"u","extra":true}}]`,
		`[{"wat":{}}]`,
	} {
		ts.expect(400, "POST", schemaPath("db", "apply"), edits(ops))
	}
	jsonEq(t, "unchanged", ts.expect(200, "GET", "/db/db:main", nil).body, schemaJSONText(before))

	// sourceMigrationID must be the head.
	head := before["lastMigrationID"].(string)
	ts.expect(400, "POST", schemaPath("db", "apply"), `{"edits":{"operations":[{"addTable":{"table":"u"}}],"sourceMigrationID":"mig_00000000000000000000"}}`)
	a := ts.expect(200, "POST", schemaPath("db", "apply"), `{"edits":{"operations":[{"addTable":{"table":"u"}},{"renameColumn":{"table":"t","oldName":"a","newName":"b"}}],"sourceMigrationID":"`+head+`"}}`)
	if a.obj()["parentMigrationID"] != head {
		t.Errorf("apply: %s", a.raw)
	}
	ts.expect(200, "GET", "/db/db:main/tables/u/schema", nil)
	ts.expect(200, "GET", "/db/db:main/tables/t/columns/b", nil)
}

// schemaJSONText returns v as JSON text.
func schemaJSONText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestSchemaPreview: the schema before and after, nothing applied.
func TestSchemaPreview(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("db")
	ts.createTable("db", "t", map[string]any{"name": "a", "type": "string"})
	head := ts.head("db:main")
	r := ts.expect(200, "POST", schemaPath("db", "preview"), `{"edits":{"operations":[
		{"addTable":{"table":"u"}},{"addColumn":{"table":"u","column":{"name":"t","type":"link","link":{"table":"t"}}}}]}}`)
	jsonEq(t, "original", r.obj()["original"], `{"tables":[{"name":"t","columns":[{"name":"a","type":"string"}]}]}`)
	jsonEq(t, "updated", r.obj()["updated"], `{"tables":[
		{"name":"t","columns":[{"name":"a","type":"string"}],"revLinks":[{"table":"u","column":"t"}]},
		{"name":"u","columns":[{"name":"t","type":"link","link":{"table":"t"}}]}]}`)
	if ts.head("db:main") != head {
		t.Errorf("preview moved the head")
	}
	ts.expect(404, "GET", "/db/db:main/tables/u/schema", nil)
	r = ts.expect(200, "POST", schemaPath("db", "preview"), nil)
	if schemaJSONText(r.obj()["original"]) != schemaJSONText(r.obj()["updated"]) {
		t.Errorf("preview without edits: %s", r.raw)
	}
	ts.expect(400, "POST", schemaPath("db", "preview"), `{"edits":{"operations":[{"removeTable":{"table":"nope"}}]}}`)
	ts.expect(404, "POST", "/db/db:nope/schema/preview", nil)

	// A table created by a preview does not use up anything: the next real
	// change still works and the head moves once.
	ts.expect(200, "POST", schemaPath("db", "update"), `{"operations":[{"addTable":{"table":"u"}}],"parentID":"`+head+`"}`)
}

// TestSchemaUpdate: operations on top of parentID.
func TestSchemaUpdate(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("db")
	r := ts.expect(200, "POST", schemaPath("db", "update"), `{"operations":[{"addTable":{"table":"t"}}]}`)
	first := r.obj()["migrationID"].(string)
	ts.expect(400, "POST", schemaPath("db", "update"), `{"parentID":"","operations":[{"addTable":{"table":"u"}}]}`)
	ts.expect(400, "POST", schemaPath("db", "update"), `{"parentID":"mig_00000000000000000000","operations":[{"addTable":{"table":"u"}}]}`)
	r = ts.expect(200, "POST", schemaPath("db", "update"), `{"parentID":"`+first+`","operations":[{"addTable":{"table":"u"}}]}`)
	if r.obj()["parentMigrationID"] != first {
		t.Errorf("update: %s", r.raw)
	}
	ts.expect(400, "POST", schemaPath("db", "update"), `{}`)
	ts.expect(400, "POST", schemaPath("db", "update"), `{"operations":[{"addTable":{"table":"v"}}],"extra":1}`)
	ts.expect(400, "POST", schemaPath("db", "update"), `{"operations":[{"addColumn":{"table":"t","column":{"type":"int"}}}]}`)
	ts.expect(404, "POST", "/db/db:nope/schema/update", `{"operations":[]}`)
}

// TestSchemaHistory: newest first, paged with the cursor, since, and the
// history of a fork continuing with its source's.
func TestSchemaHistory(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("db")
	r := ts.expect(200, "POST", schemaPath("db", "history"), nil)
	jsonEq(t, "empty", r.body, `{"meta":{"cursor":"","more":false},"logs":[]}`)
	var ids []string // oldest first
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		r := ts.expect(200, "POST", schemaPath("db", "update"), `{"operations":[{"addTable":{"table":"`+name+`"}}]}`)
		ids = append(ids, r.obj()["migrationID"].(string))
	}
	page := func(body string) (got []string, cursor string, more bool) {
		t.Helper()
		r := ts.expect(200, "POST", schemaPath("db", "history"), body)
		for _, l := range r.obj()["logs"].([]any) {
			got = append(got, l.(map[string]any)["id"].(string))
		}
		meta := r.obj()["meta"].(map[string]any)
		return got, meta["cursor"].(string), meta["more"].(bool)
	}
	rev := func(ids ...string) string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[len(ids)-1-i] = id
		}
		return strings.Join(out, ",")
	}
	got, cur, more := page(`{"page":{"size":2}}`)
	if strings.Join(got, ",") != rev(ids[3], ids[4]) || cur != ids[3] || !more {
		t.Fatalf("page 1: %v %s %v", got, cur, more)
	}
	got, cur, more = page(`{"page":{"size":2,"after":"` + cur + `"}}`)
	if strings.Join(got, ",") != rev(ids[1], ids[2]) || cur != ids[1] || !more {
		t.Fatalf("page 2: %v %s %v", got, cur, more)
	}
	got, _, more = page(`{"page":{"size":2,"after":"` + cur + `"}}`)
	if strings.Join(got, ",") != ids[0] || more {
		t.Fatalf("page 3: %v %v", got, more)
	}
	got, _, more = page(`{"page":{"size":2,"before":"` + ids[1] + `"}}`)
	if strings.Join(got, ",") != rev(ids[2], ids[3]) || !more {
		t.Fatalf("before: %v %v", got, more)
	}
	got, _, _ = page(`{"since":"` + ids[2] + `"}`)
	if strings.Join(got, ",") != rev(ids[3], ids[4]) {
		t.Fatalf("since: %v", got)
	}
	got, _, _ = page(`{"page":{"size":null}}`)
	if len(got) != 5 {
		t.Fatalf("default size: %v", got)
	}

	// A commit in full.
	r = ts.expect(200, "POST", schemaPath("db", "history"), `{"page":{"size":1}}`)
	c := r.obj()["logs"].([]any)[0].(map[string]any)
	if keys(c) != "checksum,createdAt,id,operations,parentID" || c["parentID"] != ids[3] ||
		c["checksum"] != checksum(ids[3], `[{"addTable":{"table":"e"}}]`) {
		t.Errorf("commit: %v", c)
	}
	jsonEq(t, "operations", c["operations"], `[{"addTable":{"table":"e"}}]`)

	// A fork's history continues with its source's, up to the fork.
	ts.expect(201, "PUT", "/db/db:dev", map[string]any{"from": "main"})
	ts.expect(200, "POST", schemaPath("db", "update"), `{"operations":[{"addTable":{"table":"f"}}]}`)
	r = ts.expect(200, "POST", "/db/db:dev/schema/update", `{"operations":[{"addTable":{"table":"g"}}]}`)
	devHead := r.obj()["migrationID"].(string)
	r = ts.expect(200, "POST", "/db/db:dev/schema/history", nil)
	var dev []string
	for _, l := range r.obj()["logs"].([]any) {
		dev = append(dev, l.(map[string]any)["id"].(string))
	}
	if strings.Join(dev, ",") != devHead+","+rev(ids...) {
		t.Errorf("fork history: %v", dev)
	}

	ts.expect(400, "POST", schemaPath("db", "history"), `{"page":{"after":"mig_00000000000000000000"}}`)
	ts.expect(400, "POST", schemaPath("db", "history"), `{"since":"nope"}`)
	ts.expect(400, "POST", schemaPath("db", "history"), `{"page":{"size":0}}`)
	ts.expect(400, "POST", schemaPath("db", "history"), `{"page":{"size":1.5}}`)
	ts.expect(400, "POST", schemaPath("db", "history"), `{"page":{"after":"`+ids[1]+`","before":"`+ids[2]+`"}}`)
	ts.expect(404, "POST", "/db/db:nope/schema/history", nil)
}

// checksum is the migration checksum of compat-api.md §5.4 as Coppice
// defines it: SHA-256 of {"parentID","operations"} in that order.
func checksum(parent, ops string) string {
	var o []engine.MigrationOp
	if err := json.Unmarshal([]byte(ops), &o); err != nil {
		panic(err)
	}
	b, _ := json.Marshal(struct {
		ParentID   string               `json:"parentID"`
		Operations []engine.MigrationOp `json:"operations"`
	}{parent, o})
	sum := sha256.Sum256(b)
	return "1:" + hex.EncodeToString(sum[:])
}

// TestSchemaPush: pull the history of one database, push it to another,
// and push again; known migrations are skipped, parents and checksums
// checked.
func TestSchemaPush(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("src")
	ts.createDB("dst")
	ts.createTable("src", "t", map[string]any{"name": "a", "type": "string"})
	ts.expect(200, "PATCH", "/db/src:main/tables/t/columns/a", map[string]any{"name": "b"})
	r := ts.expect(200, "POST", schemaPath("src", "history"), `{"page":{"size":200}}`)
	logs := r.obj()["logs"].([]any)
	pulled := make([]any, len(logs)) // oldest first
	for i, l := range logs {
		pulled[len(logs)-1-i] = l
	}
	if len(pulled) != 3 {
		t.Fatalf("pulled %d migrations", len(pulled))
	}
	srcHead := ts.head("src:main")

	p := ts.expect(200, "POST", schemaPath("dst", "push"), map[string]any{"migrations": pulled})
	if p.obj()["migrationID"] != srcHead || p.obj()["parentMigrationID"] != logs[1].(map[string]any)["id"] {
		t.Errorf("push: %s", p.raw)
	}
	src := ts.expect(200, "GET", "/db/src:main", nil).obj()
	dst := ts.expect(200, "GET", "/db/dst:main", nil).obj()
	if schemaJSONText(src["schema"]) != schemaJSONText(dst["schema"]) || dst["lastMigrationID"] != srcHead {
		t.Errorf("pushed schema %v, want %v", dst["schema"], src["schema"])
	}
	r = ts.expect(200, "POST", schemaPath("dst", "history"), nil)
	if schemaJSONText(r.obj()["logs"].([]any)[0].(map[string]any)["operations"]) != schemaJSONText(logs[0].(map[string]any)["operations"]) {
		t.Errorf("pushed history: %s", r.raw)
	}

	// Again: every migration is known, nothing changes.
	p = ts.expect(200, "POST", schemaPath("dst", "push"), map[string]any{"migrations": pulled})
	if p.obj()["migrationID"] != srcHead {
		t.Errorf("push again: %s", p.raw)
	}
	ts.expect(200, "POST", schemaPath("dst", "push"), `{"migrations":[]}`)

	// A new migration must sit on the head, with the right checksum.
	mig := func(id, parent, ops, sum string) string {
		return `{"migrations":[{"id":"` + id + `","parentID":"` + parent + `","checksum":"` + sum + `","title":"t","operations":` + ops + `}]}`
	}
	ops := `[{"addTable":{"table":"u"}}]`
	const id = "mig_cbth7sqbn4oua7eme8q0"
	r = ts.expect(400, "POST", schemaPath("dst", "push"), mig(id, "mig_00000000000000000000", ops, checksum("mig_00000000000000000000", ops)))
	if !strings.Contains(r.obj()["message"].(string), "not the head") {
		t.Errorf("parent mismatch: %s", r.raw)
	}
	r = ts.expect(400, "POST", schemaPath("dst", "push"), mig(id, srcHead, ops, checksum("", ops)))
	if !strings.Contains(r.obj()["message"].(string), "checksum mismatch") {
		t.Errorf("checksum mismatch: %s", r.raw)
	}
	ts.expect(400, "POST", schemaPath("dst", "push"), mig("mig_x", srcHead, ops, checksum(srcHead, ops)))
	ts.expect(400, "POST", schemaPath("dst", "push"), mig(id, srcHead, `[{"removeTable":{"table":"nope"}}]`, checksum(srcHead, `[{"removeTable":{"table":"nope"}}]`)))
	ts.expect(400, "POST", schemaPath("dst", "push"), `{}`)
	if ts.head("dst:main") != srcHead {
		t.Fatalf("a failed push moved the head")
	}
	p = ts.expect(200, "POST", schemaPath("dst", "push"), mig(id, srcHead, ops, checksum(srcHead, ops)))
	jsonEq(t, "pushed", p.body, `{"migrationID":"`+id+`","parentMigrationID":"`+srcHead+`","status":"completed"}`)
	r = ts.expect(200, "POST", schemaPath("dst", "history"), `{"page":{"size":1}}`)
	if c := r.obj()["logs"].([]any)[0].(map[string]any); c["id"] != id || c["title"] != "t" || c["checksum"] != checksum(srcHead, ops) {
		t.Errorf("pushed commit: %v", c)
	}
	ts.expect(404, "POST", "/db/dst:nope/schema/push", `{"migrations":[]}`)
}

// TestStats: the record count now and the reads and writes of the last 24
// hours, per branch.
func TestStats(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("db")
	ts.createTable("db", "t", map[string]any{"name": "n", "type": "int"})
	ts.createTable("db", "u", map[string]any{"name": "n", "type": "int"})
	for _, id := range []string{"a", "b", "c"} {
		ts.expect(201, "PUT", "/db/db:main/tables/t/data/"+id, map[string]any{"n": 1})
	}
	ts.expect(200, "POST", "/db/db:main/tables/u/bulk", map[string]any{"records": []any{map[string]any{"n": 1}, map[string]any{"n": 2}}})
	ts.expect(204, "DELETE", "/db/db:main/tables/t/data/c", nil)
	ts.expect(200, "GET", "/db/db:main/tables/t/data/a", nil)
	ts.expect(200, "GET", "/db/db:main/tables/t/data/b", nil)
	ts.expect(404, "GET", "/db/db:main/tables/t/data/c", nil) // failed: not counted
	ts.expect(200, "POST", "/db/db:main/tables/t/query", nil)
	ts.expect(201, "PUT", "/db/db:dev", map[string]any{"from": "main"})
	ts.expect(200, "POST", "/db/db:dev/tables/t/query", nil)

	sum := func(points []any) (n int64) {
		for _, p := range points {
			v, _ := p.(map[string]any)["value"].(json.Number).Int64()
			n += v
		}
		return n
	}
	r := ts.expect(200, "GET", "/db/db:main/stats", nil)
	o := r.obj()
	if keys(o) != "interval,numberOfRecords,readsOverTime,resolution,timestamp,writesOverTime" ||
		o["interval"] != "24h" || o["resolution"] != "1h" {
		t.Fatalf("stats: %s", r.raw)
	}
	reads, writes := o["readsOverTime"].([]any), o["writesOverTime"].([]any)
	recs := o["numberOfRecords"].([]any)
	if len(reads) != 24 || len(writes) != 24 || len(recs) != 1 {
		t.Fatalf("datapoints: %d reads, %d writes, %d counts", len(reads), len(writes), len(recs))
	}
	if sum(writes) != 5 || sum(reads) != 3 || sum(recs) != 4 {
		t.Errorf("writes %d (want 5), reads %d (want 3), records %d (want 4)", sum(writes), sum(reads), sum(recs))
	}
	for i, p := range writes {
		m := p.(map[string]any)
		if keys(m) != "timestamp,value" || !strings.HasSuffix(m["timestamp"].(string), ":00:00.000Z") {
			t.Errorf("datapoint %v", m)
		}
		if i > 0 && m["timestamp"].(string) <= writes[i-1].(map[string]any)["timestamp"].(string) {
			t.Errorf("datapoints out of order at %d", i)
		}
	}
	if recs[0].(map[string]any)["timestamp"] != writes[23].(map[string]any)["timestamp"] {
		t.Errorf("record count at %v", recs[0])
	}

	// dev: its own counters, main's records.
	o = ts.expect(200, "GET", "/db/db:dev/stats", nil).obj()
	if sum(o["writesOverTime"].([]any)) != 0 || sum(o["readsOverTime"].([]any)) != 1 || sum(o["numberOfRecords"].([]any)) != 4 {
		t.Errorf("dev stats: %v", o)
	}
	ts.expect(204, "DELETE", "/db/db:dev/tables/u/data/"+firstID(t, ts, "db:dev", "u"), nil)
	if n := sum(ts.expect(200, "GET", "/db/db:dev/stats", nil).obj()["numberOfRecords"].([]any)); n != 3 {
		t.Errorf("dev records after a delete: %d", n)
	}
	if n := sum(ts.expect(200, "GET", "/db/db:main/stats", nil).obj()["numberOfRecords"].([]any)); n != 4 {
		t.Errorf("main records after a delete on dev: %d", n)
	}
	ts.expect(404, "GET", "/db/db:nope/stats", nil)
	ts.expect(404, "GET", "/db/nodb:main/stats", nil)
}

// firstID returns the id of the first record of a table.
func firstID(t *testing.T, ts *testServer, dbb, table string) string {
	t.Helper()
	r := ts.expect(200, "POST", "/db/"+dbb+"/tables/"+table+"/query", map[string]any{"page": map[string]any{"size": 1}})
	return r.obj()["records"].([]any)[0].(map[string]any)["id"].(string)
}

// TestUnsupportedEndpoints: SQL and ask answer 501 with a JSON error, also
// to clients asking for an event stream.
func TestUnsupportedEndpoints(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("db")
	ts.createTable("db", "t")
	sse := withHeader("Accept", "text/event-stream")
	f := func(path, body, feature string) {
		t.Helper()
		for _, opts := range [][]reqOpt{nil, {sse}} {
			r := ts.expect(501, "POST", path, body, opts...)
			if r.obj()["message"] != feature+" is not supported by this server" {
				t.Errorf("%s: %s", path, r.raw)
			}
		}
	}
	f("/db/db:main/sql", `{"statement":"SELECT 1"}`, "sql")
	f("/db/db:main/sql/batch", `{"statements":[{"statement":"SELECT 1"}]}`, "sql")
	f("/db/db:main/tables/t/ask", `{"question":"why?"}`, "ask")
	f("/db/db:main/tables/t/ask/", `{"question":"why?"}`, "ask")
	f("/db/db:main/tables/t/ask/sess1", `{"question":"why?"}`, "ask")
	ts.key = ""
	ts.expect(401, "POST", "/db/db:main/sql", `{"statement":"SELECT 1"}`)
}

// compareApply compares db:branch's schema with schema, applies the
// returned edits and returns the apply answer.
func (ts *testServer) compareApply(want int, dbb string, schema any) *response {
	ts.t.Helper()
	r := ts.expect(200, "POST", "/db/"+dbb+"/schema/compare", map[string]any{"schema": schema})
	return ts.expect(want, "POST", "/db/"+dbb+"/schema/apply", map[string]any{"edits": r.obj()["edits"]})
}

// withColumn returns a copy of a branch schema (as GET /db/{dbb} returns
// it) in which the column at path of table is replaced by col.
func withColumn(t *testing.T, schema any, table string, path []string, col string) any {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal([]byte(schemaJSONText(schema)), &s); err != nil {
		t.Fatal(err)
	}
	var c any
	if err := json.Unmarshal([]byte(col), &c); err != nil {
		t.Fatalf("bad column %s: %v", col, err)
	}
	for _, tb := range s["tables"].([]any) {
		tm := tb.(map[string]any)
		if tm["name"] != table {
			continue
		}
		cols := tm["columns"].([]any)
		for depth, name := range path {
			for i, x := range cols {
				xm := x.(map[string]any)
				if xm["name"] != name {
					continue
				}
				if depth == len(path)-1 {
					cols[i] = c
					return s
				}
				cols = xm["columns"].([]any)
				break
			}
		}
	}
	t.Fatalf("no column %v in table %s", path, table)
	return nil
}

// TestSchemaSettingChangeKeepsData: a column whose settings change, and
// not its type, keeps its values through compare and apply, update,
// preview and push; a change the values do not allow is a 400 that
// changes nothing.
func TestSchemaSettingChangeKeepsData(t *testing.T) {
	ts := startServer(t, Options{Compat: CompatXata})
	ts.createDB("db")
	ts.createTable("db", "users",
		map[string]any{"name": "email", "type": "email"},
		map[string]any{"name": "nick", "type": "string"},
		map[string]any{"name": "age", "type": "int"},
		map[string]any{"name": "photo", "type": "file"},
		map[string]any{"name": "address", "type": "object", "columns": []any{map[string]any{"name": "city", "type": "string"}}})
	ts.expect(201, "PUT", "/db/db:main/tables/users/data/u1", map[string]any{
		"email": "a@example.com", "nick": "ann", "age": 3, "address": map[string]any{"city": "Oslo"},
		"photo": map[string]any{"name": "p.txt", "mediaType": "text/plain", "base64Content": "aGk="}})
	ts.expect(201, "PUT", "/db/db:main/tables/users/data/u2", map[string]any{"email": "b@example.com", "nick": "ann"})
	records := func(dbb string) string {
		t.Helper()
		r := ts.expect(200, "POST", "/db/"+dbb+"/tables/users/query", `{"columns":["email","nick","age","address.*","photo.name","photo.size"]}`)
		var out []string
		for _, x := range r.obj()["records"].([]any) {
			m := x.(map[string]any)
			delete(m, "xata")
			out = append(out, schemaJSONText(m))
		}
		return strings.Join(out, "\n")
	}
	const data = `{"address":{"city":"Oslo"},"age":3,"email":"a@example.com","id":"u1","nick":"ann","photo":{"name":"p.txt","size":2}}` + "\n" +
		`{"email":"b@example.com","id":"u2","nick":"ann"}`
	if got := records("db:main"); got != data {
		t.Fatalf("records before:\n%s", got)
	}
	schema := func() any { return ts.expect(200, "GET", "/db/db:main", nil).obj()["schema"] }

	// unique, a file setting and a new sub-column: compare answers a
	// removeColumn and addColumn pair for each, and applying them keeps
	// every value.
	s := withColumn(t, schema(), "users", []string{"email"}, `{"name":"email","type":"email","unique":true}`)
	s = withColumn(t, s, "users", []string{"photo"}, `{"name":"photo","type":"file","file":{"defaultPublicAccess":true}}`)
	s = withColumn(t, s, "users", []string{"address"}, `{"name":"address","type":"object","columns":[{"name":"city","type":"string","unique":true},{"name":"zip","type":"string"}]}`)
	r := ts.expect(200, "POST", schemaPath("db", "compare"), map[string]any{"schema": s})
	wantOps(t, "settings", r, `[
		{"removeColumn":{"table":"users","column":"email"}},
		{"addColumn":{"table":"users","column":{"name":"email","type":"email","unique":true}}},
		{"removeColumn":{"table":"users","column":"photo"}},
		{"addColumn":{"table":"users","column":{"name":"photo","type":"file","file":{"defaultPublicAccess":true}}}},
		{"removeColumn":{"table":"users","column":"address"}},
		{"addColumn":{"table":"users","column":{"name":"address","type":"object","columns":[{"name":"city","type":"string","unique":true},{"name":"zip","type":"string"}]}}}]`)
	ts.expect(200, "POST", schemaPath("db", "apply"), map[string]any{"edits": r.obj()["edits"]})
	if got := records("db:main"); got != data {
		t.Fatalf("records after the settings change:\n%s\nwant\n%s", got, data)
	}
	jsonEq(t, "columns", ts.expect(200, "GET", "/db/db:main/tables/users/schema", nil).obj()["columns"], `[
		{"name":"email","type":"email","unique":true},
		{"name":"nick","type":"string"},
		{"name":"age","type":"int"},
		{"name":"photo","type":"file","file":{"defaultPublicAccess":true}},
		{"name":"address","type":"object","columns":[{"name":"city","type":"string","unique":true},{"name":"zip","type":"string"}]}]`)
	r = ts.expect(400, "PUT", "/db/db:main/tables/users/data/u3", map[string]any{"email": "a@example.com"})
	if !strings.Contains(r.obj()["message"].(string), "not unique") {
		t.Errorf("unique not enforced: %s", r.raw)
	}
	if got := ts.expect(200, "POST", schemaPath("db", "compare"), map[string]any{"schema": s}); opsJSON(got) != "[]" {
		t.Errorf("compare after apply: %s", opsJSON(got))
	}

	// notNull with a defaultValue fills the records without a value.
	s = withColumn(t, schema(), "users", []string{"age"}, `{"name":"age","type":"int","notNull":true,"defaultValue":"7"}`)
	ts.compareApply(200, "db:main", s)
	want := strings.Replace(data, `"email":"b@example.com"`, `"age":7,"email":"b@example.com"`, 1)
	if got := records("db:main"); got != want {
		t.Fatalf("records after notNull:\n%s\nwant\n%s", got, want)
	}

	// Changes the values do not allow: 400, nothing changes.
	before := ts.expect(200, "GET", "/db/db:main", nil).body
	f := func(path []string, col, wantMsg string) {
		t.Helper()
		s := withColumn(t, schema(), "users", path, col)
		r := ts.compareApply(400, "db:main", s)
		if msg := r.obj()["message"].(string); !strings.Contains(msg, wantMsg) {
			t.Errorf("%s: message %q, want it to contain %q", col, msg, wantMsg)
		}
		r = ts.expect(200, "POST", schemaPath("db", "compare"), map[string]any{"schema": s})
		ts.expect(400, "POST", schemaPath("db", "preview"), map[string]any{"edits": r.obj()["edits"]})
	}
	f([]string{"nick"}, `{"name":"nick","type":"string","unique":true}`, "column [nick] cannot become unique: records [u1] and [u2] have the same value")
	f([]string{"nick"}, `{"name":"nick","type":"string","notNull":true,"unique":true,"defaultValue":"x"}`, "column [nick] cannot become unique: records [u1] and [u2] have the same value")
	f([]string{"address", "zip"}, `{"name":"zip","type":"string","notNull":true}`, "column [address.zip] cannot become notNull: record [u1] has no value and the column has no defaultValue")
	jsonEq(t, "after refused changes", ts.expect(200, "GET", "/db/db:main", nil).body, schemaJSONText(before))
	if got := records("db:main"); got != want {
		t.Fatalf("records after refused changes:\n%s", got)
	}

	// update and preview read the pair the same way.
	ops := `[{"removeColumn":{"table":"users","column":"email"}},{"addColumn":{"table":"users","column":{"name":"email","type":"email"}}}]`
	p := ts.expect(200, "POST", schemaPath("db", "preview"), `{"edits":{"operations":`+ops+`}}`)
	if !strings.Contains(schemaJSONText(p.obj()["original"]), `{"name":"email","type":"email","unique":true}`) ||
		!strings.Contains(schemaJSONText(p.obj()["updated"]), `{"name":"email","type":"email"}`) {
		t.Errorf("preview: %s", p.raw)
	}
	ts.expect(200, "POST", schemaPath("db", "update"), `{"operations":`+ops+`}`)
	if got := records("db:main"); got != want {
		t.Fatalf("records after update:\n%s", got)
	}
	ts.expect(201, "PUT", "/db/db:main/tables/users/data/u3", map[string]any{"email": "a@example.com"})

	// A type change is still a new column.
	ts.compareApply(200, "db:main", withColumn(t, schema(), "users", []string{"nick"}, `{"name":"nick","type":"text"}`))
	if got := records("db:main"); strings.Contains(got, `"nick"`) {
		t.Errorf("nick kept its values through a type change:\n%s", got)
	}

	// push: the pulled history replayed elsewhere keeps the values there
	// too.
	ts.createDB("copy")
	logs := ts.expect(200, "POST", schemaPath("db", "history"), `{"page":{"size":200}}`).obj()["logs"].([]any)
	var pulled []any // oldest first
	for i := len(logs) - 1; i >= 0; i-- {
		pulled = append(pulled, logs[i])
	}
	first := 0
	for i, l := range pulled {
		if strings.Contains(schemaJSONText(l), `"removeColumn"`) {
			first = i
			break
		}
	}
	ts.expect(200, "POST", schemaPath("copy", "push"), map[string]any{"migrations": pulled[:first]})
	ts.expect(201, "PUT", "/db/copy:main/tables/users/data/u1", map[string]any{"email": "a@example.com", "nick": "ann", "address": map[string]any{"city": "Oslo"}})
	ts.expect(200, "POST", schemaPath("copy", "push"), map[string]any{"migrations": pulled})
	got := ts.expect(200, "GET", "/db/copy:main/tables/users/data/u1?columns=email,age,address.city", nil).obj()
	if got["email"] != "a@example.com" || got["age"] != json.Number("7") || got["address"].(map[string]any)["city"] != "Oslo" {
		t.Errorf("pushed copy: %v", got)
	}
}

// TestSchemaCompareFromOperations follows `xata diff`: the local
// migrations arrive as schemaOperations with an empty schema, and the
// target is the schema those operations build.
func TestSchemaCompareFromOperations(t *testing.T) {
	ts := startServer(t, Options{Compat: CompatXata})
	ts.createDB("db")
	ts.expect(200, "POST", schemaPath("db", "update"), `{"operations":[
		{"addTable":{"table":"a"}},{"addTable":{"table":"b"}},
		{"addColumn":{"table":"a","column":{"name":"x","type":"int"}}},
		{"addColumn":{"table":"b","column":{"name":"toA","type":"link","link":{"table":"a"}}}}]}`)
	ts.expect(200, "POST", schemaPath("db", "update"), `{"operations":[
		{"renameColumn":{"table":"a","oldName":"x","newName":"y"}},
		{"addColumn":{"table":"a","column":{"name":"o","type":"object","columns":[{"name":"s","type":"string"}]}}}]}`)
	ts.expect(201, "PUT", "/db/db:main/tables/a/data/r1", map[string]any{"y": 1})

	// The operations of the pulled history, oldest first.
	logs := ts.expect(200, "POST", schemaPath("db", "history"), `{"page":{"size":200}}`).obj()["logs"].([]any)
	var local []any
	for i := len(logs) - 1; i >= 0; i-- {
		local = append(local, logs[i].(map[string]any)["operations"].([]any)...)
	}
	diff := func(extra string) *response {
		t.Helper()
		var more []any
		if err := json.Unmarshal([]byte(extra), &more); err != nil {
			t.Fatal(err)
		}
		ops := append(append([]any(nil), local...), more...)
		return ts.expect(200, "POST", schemaPath("db", "compare"), map[string]any{"schema": map[string]any{"tables": []any{}}, "schemaOperations": ops})
	}
	r := diff(`[]`)
	wantOps(t, "same history", r, `[]`)
	jsonEq(t, "target", r.obj()["target"], schemaJSONText(r.obj()["source"]))

	// Local migrations not pushed yet: the difference, renames included.
	r = diff(`[{"addColumn":{"table":"a","column":{"name":"z","type":"bool"}}},{"renameColumn":{"table":"a","oldName":"y","newName":"w"}},{"removeTable":{"table":"b"}}]`)
	wantOps(t, "local ahead", r, `[
		{"renameColumn":{"table":"a","oldName":"y","newName":"w"}},
		{"addColumn":{"table":"a","column":{"name":"z","type":"bool"}}},
		{"removeTable":{"table":"b"}}]`)
	ts.expect(200, "POST", schemaPath("db", "apply"), map[string]any{"edits": r.obj()["edits"]})
	if got := ts.expect(200, "GET", "/db/db:main/tables/a/data/r1", nil).obj(); got["w"] != json.Number("1") {
		t.Errorf("record after the renamed column: %v", got)
	}

	// Operations that do not build a schema are bad input.
	r = ts.expect(400, "POST", schemaPath("db", "compare"), `{"schema":{"tables":[]},"schemaOperations":[{"addTable":{"table":"a"}},{"addColumn":{"table":"nope","column":{"name":"x","type":"int"}}}]}`)
	if msg := r.obj()["message"].(string); !strings.Contains(msg, "schemaOperations") || !strings.Contains(msg, "table [nope] not found") {
		t.Errorf("message %q", msg)
	}
	// With a schema, the operations stay rename hints.
	r = ts.expect(200, "POST", schemaPath("db", "compare"), `{"schema":{"tables":[{"name":"a","columns":[]}]},"schemaOperations":[{"addTable":{"table":"q"}}]}`)
	if strings.Contains(opsJSON(r), `"q"`) {
		t.Errorf("hints with a schema: %s", opsJSON(r))
	}
}

// TestSchemaApplyOnDivergedBranch follows `xata import csv --branch dev`:
// the edits are compared against main and applied to dev. They apply when
// they fit dev's schema; a real conflict is a 409 that names it.
func TestSchemaApplyOnDivergedBranch(t *testing.T) {
	ts := startServer(t, Options{Compat: CompatXata})
	ts.createDB("db")
	ts.createTable("db", "users", map[string]any{"name": "name", "type": "string"})
	ts.expect(201, "PUT", "/db/db:dev", map[string]any{"from": "main"})
	// main and dev both move on.
	ts.expect(200, "POST", schemaPath("db", "update"), `{"operations":[{"addColumn":{"table":"users","column":{"name":"age","type":"int"}}}]}`)
	ts.expect(200, "POST", "/db/db:dev/schema/update", `{"operations":[{"addTable":{"table":"extra"}},{"addColumn":{"table":"extra","column":{"name":"n","type":"int"}}},{"addColumn":{"table":"users","column":{"name":"mail","type":"email"}}}]}`)
	ts.expect(201, "PUT", "/db/db:dev/tables/extra/data/e1", map[string]any{"n": 1})
	ts.expect(201, "PUT", "/db/db:dev/tables/users/data/u1", map[string]any{"name": "Ann", "mail": "a@example.com"})
	devHead := ts.head("db:dev")

	// What the CLI sends: dev's tables plus the imported one, compared
	// against main, applied to dev.
	importTo := func(table string, cols string) (edits any) {
		t.Helper()
		dev := ts.expect(200, "GET", "/db/db:dev", nil).obj()["schema"].(map[string]any)
		var tables []any
		for _, tb := range dev["tables"].([]any) {
			if tb.(map[string]any)["name"] != table {
				tables = append(tables, tb)
			}
		}
		var c any
		json.Unmarshal([]byte(cols), &c)
		tables = append(tables, map[string]any{"name": table, "columns": c})
		r := ts.expect(200, "POST", schemaPath("db", "compare"), map[string]any{"schema": map[string]any{"tables": tables}})
		if r.obj()["edits"].(map[string]any)["sourceMigrationID"] != ts.head("db:main") {
			t.Fatalf("compare: %s", r.raw)
		}
		return r.obj()["edits"]
	}
	edits := importTo("people", `[{"name":"name","type":"string"},{"name":"n","type":"int"}]`)
	a := ts.expect(200, "POST", "/db/db:dev/schema/apply", map[string]any{"edits": edits})
	if a.obj()["parentMigrationID"] != devHead {
		t.Errorf("apply: %s", a.raw)
	}
	jsonEq(t, "dev schema", ts.expect(200, "GET", "/db/db:dev", nil).obj()["schema"], `{"tables":[
		{"name":"users","columns":[{"name":"name","type":"string"},{"name":"mail","type":"email"}]},
		{"name":"extra","columns":[{"name":"n","type":"int"}]},
		{"name":"people","columns":[{"name":"name","type":"string"},{"name":"n","type":"int"}]}]}`)
	ts.expect(200, "GET", "/db/db:dev/tables/extra/data/e1", nil)
	if got := ts.expect(200, "GET", "/db/db:dev/tables/users/data/u1", nil).obj(); got["mail"] != "a@example.com" {
		t.Errorf("dev record: %v", got)
	}
	// dev's history records what changed on dev.
	c := ts.expect(200, "POST", "/db/db:dev/schema/history", `{"page":{"size":1}}`).obj()["logs"].([]any)[0]
	jsonEq(t, "dev migration", c.(map[string]any)["operations"], `[
		{"addTable":{"table":"people"}},
		{"addColumn":{"table":"people","column":{"name":"name","type":"string"}}},
		{"addColumn":{"table":"people","column":{"name":"n","type":"int"}}}]`)
	// Importing again changes nothing.
	devHead = ts.head("db:dev")
	a = ts.expect(200, "POST", "/db/db:dev/schema/apply", map[string]any{"edits": importTo("people", `[{"name":"name","type":"string"},{"name":"n","type":"int"}]`)})
	if a.obj()["migrationID"] != devHead {
		t.Errorf("apply of nothing new: %s", a.raw)
	}

	// Stale edits on the branch they were compared on apply as well.
	r := ts.expect(200, "POST", schemaPath("db", "compare"), `{"schema":{"tables":[{"name":"users","columns":[{"name":"name","type":"string"},{"name":"age","type":"int"},{"name":"score","type":"float"}]}]}}`)
	ts.expect(200, "POST", schemaPath("db", "update"), `{"operations":[{"addTable":{"table":"q"}}]}`)
	ts.expect(200, "POST", schemaPath("db", "apply"), map[string]any{"edits": r.obj()["edits"]})
	ts.expect(200, "GET", "/db/db:main/tables/users/columns/score", nil)
	ts.expect(200, "GET", "/db/db:main/tables/q/schema", nil)

	// Real conflicts: 409 naming them, nothing changed.
	devBefore := ts.expect(200, "GET", "/db/db:dev", nil).body
	conflict := func(edits any, want string) {
		t.Helper()
		r := ts.expect(409, "POST", "/db/db:dev/schema/apply", map[string]any{"edits": edits})
		if msg := r.obj()["message"].(string); !strings.Contains(msg, want) {
			t.Errorf("message %q, want it to contain %q", msg, want)
		}
		jsonEq(t, "dev after a conflict", ts.expect(200, "GET", "/db/db:dev", nil).body, schemaJSONText(devBefore))
	}
	mainHead := ts.head("db:main")
	// dev has people.n as an int; the edits add it as a string.
	conflict(map[string]any{"sourceMigrationID": mainHead, "operations": []any{
		map[string]any{"addTable": map[string]any{"table": "people"}},
		map[string]any{"addColumn": map[string]any{"table": "people", "column": map[string]any{"name": "n", "type": "string"}}}}},
		"operation 2 (addColumn): column [n] of table [people] is defined differently on branch [dev]")
	// The edits change users.age, which dev does not have.
	conflict(map[string]any{"sourceMigrationID": mainHead, "operations": []any{
		map[string]any{"removeColumn": map[string]any{"table": "users", "column": "age"}},
		map[string]any{"addColumn": map[string]any{"table": "users", "column": map[string]any{"name": "age", "type": "int", "unique": true}}}}},
		"column [age] of table [users] is not on branch [dev]")
	// The edits remove table extra, which dev has changed since.
	ts.expect(200, "POST", "/db/db:dev/schema/update", `{"operations":[{"addTable":{"table":"extra2"}}]}`)
	devExtra := ts.head("db:dev")
	ts.expect(200, "POST", "/db/db:dev/schema/update", `{"operations":[{"addColumn":{"table":"extra","column":{"name":"m","type":"int"}}}]}`)
	devBefore = ts.expect(200, "GET", "/db/db:dev", nil).body
	conflict(map[string]any{"sourceMigrationID": devExtra, "operations": []any{map[string]any{"removeTable": map[string]any{"table": "extra"}}}},
		"operation 1 (removeTable): table [extra] has changed on branch [dev] since migration ["+devExtra+"]")
	// ... but removing extra2, which has not changed, applies.
	ts.expect(200, "POST", "/db/db:dev/schema/apply", map[string]any{"edits": map[string]any{"sourceMigrationID": devExtra, "operations": []any{map[string]any{"removeTable": map[string]any{"table": "extra2"}}}}})

	// An unknown source migration is bad input.
	r = ts.expect(400, "POST", "/db/db:dev/schema/apply", `{"edits":{"operations":[{"addTable":{"table":"z"}}],"sourceMigrationID":"mig_00000000000000000000"}}`)
	if msg := r.obj()["message"].(string); !strings.Contains(msg, "mig_00000000000000000000") {
		t.Errorf("unknown source: %s", r.raw)
	}
}
