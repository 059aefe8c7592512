package engine

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// schemaOf parses a SchemaDef from JSON text.
func schemaOf(t *testing.T, s string) SchemaDef {
	t.Helper()
	var d SchemaDef
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		t.Fatalf("bad schema %s: %v", s, err)
	}
	return d
}

// opsOf parses operations from JSON text.
func opsOf(t *testing.T, s string) []MigrationOp {
	t.Helper()
	var ops []MigrationOp
	if err := json.Unmarshal([]byte(s), &ops); err != nil {
		t.Fatalf("bad operations %s: %v", s, err)
	}
	return ops
}

func TestDiffSchemas(t *testing.T) {
	f := func(src, dst, hints, want string) {
		t.Helper()
		var h []MigrationOp
		if hints != "" {
			h = opsOf(t, hints)
		}
		got, _ := json.Marshal(diffSchemas(schemaOf(t, src), schemaOf(t, dst), h))
		if string(got) == "null" {
			got = []byte("[]")
		}
		if string(got) != want {
			t.Errorf("diff\n  %s\n→ %s (hints %s)\n got %s\nwant %s", src, dst, hints, got, want)
		}
	}
	empty := `{"tables":[]}`
	f(empty, empty, "", `[]`)
	// Every new table first, then columns in the target's order: links
	// find their tables.
	f(empty, `{"tables":[{"name":"a","columns":[{"name":"l","type":"link","link":{"table":"b"}},{"name":"x","type":"int"}]},{"name":"b","columns":[{"name":"y","type":"string"}]}]}`, "",
		`[{"addTable":{"table":"a"}},{"addTable":{"table":"b"}},`+
			`{"addColumn":{"table":"a","column":{"name":"l","type":"link","link":{"table":"b"}}}},`+
			`{"addColumn":{"table":"a","column":{"name":"x","type":"int"}}},`+
			`{"addColumn":{"table":"b","column":{"name":"y","type":"string"}}}]`)
	f(`{"tables":[{"name":"a","columns":[]}]}`, `{"tables":[{"name":"a","columns":[{"name":"o","type":"object","columns":[{"name":"l","type":"link","link":{"table":"a"}}]},{"name":"x","type":"int"}]}]}`, "",
		`[{"addColumn":{"table":"a","column":{"name":"o","type":"object","columns":[{"name":"l","type":"link","link":{"table":"a"}}]}}},`+
			`{"addColumn":{"table":"a","column":{"name":"x","type":"int"}}}]`)
	// A changed column is removed right before it is added again; removals
	// come after every addition.
	f(`{"tables":[{"name":"a","columns":[{"name":"x","type":"int"},{"name":"y","type":"int"}]},{"name":"old","columns":[]}]}`,
		`{"tables":[{"name":"a","columns":[{"name":"x","type":"int","notNull":true,"defaultValue":"0"},{"name":"z","type":"int"}]}]}`, "",
		`[{"removeColumn":{"table":"a","column":"x"}},{"addColumn":{"table":"a","column":{"name":"x","type":"int","notNull":true,"defaultValue":"0"}}},`+
			`{"addColumn":{"table":"a","column":{"name":"z","type":"int"}}},`+
			`{"removeColumn":{"table":"a","column":"y"}},{"removeTable":{"table":"old"}}]`)
	// Removed tables that link to each other lose their links first.
	f(`{"tables":[{"name":"a","columns":[{"name":"b","type":"link","link":{"table":"b"}},{"name":"me","type":"link","link":{"table":"a"}}]},{"name":"b","columns":[{"name":"a","type":"link","link":{"table":"a"}}]}]}`, empty, "",
		`[{"removeColumn":{"table":"a","column":"b"}},{"removeColumn":{"table":"b","column":"a"}},{"removeTable":{"table":"a"}},{"removeTable":{"table":"b"}}]`)
	// Renames come only from hints, and first; links follow a renamed table.
	src := `{"tables":[{"name":"p","columns":[{"name":"n","type":"string"},{"name":"self","type":"link","link":{"table":"p"}}]}]}`
	dst := `{"tables":[{"name":"q","columns":[{"name":"m","type":"string"},{"name":"self","type":"link","link":{"table":"q"}}]}]}`
	f(src, dst, "", `[{"addTable":{"table":"q"}},{"addColumn":{"table":"q","column":{"name":"m","type":"string"}}},`+
		`{"addColumn":{"table":"q","column":{"name":"self","type":"link","link":{"table":"q"}}}},{"removeTable":{"table":"p"}}]`)
	f(src, dst, `[{"renameColumn":{"table":"p","oldName":"n","newName":"m"}},{"renameTable":{"oldName":"p","newName":"q"}}]`,
		`[{"renameTable":{"oldName":"p","newName":"q"}},{"renameColumn":{"table":"q","oldName":"n","newName":"m"}}]`)
	f(src, dst, `[{"renameTable":{"oldName":"p","newName":"q"}}]`,
		`[{"renameTable":{"oldName":"p","newName":"q"}},{"addColumn":{"table":"q","column":{"name":"m","type":"string"}}},{"removeColumn":{"table":"q","column":"n"}}]`)
	// Hints that do not fit the two schemas are ignored.
	f(src, src, `[{"renameTable":{"oldName":"p","newName":"q"}},{"renameColumn":{"table":"p","oldName":"n","newName":"x"}},{"addTable":{"table":"z"}}]`, `[]`)
}

// TestApplyMigrationIsAtomic: a failing operation in a list leaves the
// branch as it was; a good list is one migration.
func TestApplyMigrationIsAtomic(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{"t": {{Name: "a", Type: TypeString}}})
	if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "t", ID: "r1", Values: map[string]any{"a": "x"}}); err != nil {
		t.Fatal(err)
	}
	before, _ := e.Branches().Details(ref)
	_, err := e.Schema().ApplyMigration(ref, MigrationRequest{Operations: opsOf(t, `[
		{"addTable":{"table":"u"}},
		{"renameColumn":{"table":"t","oldName":"a","newName":"b"}},
		{"addColumn":{"table":"t","column":{"name":"n","type":"int","notNull":true}}}]`)})
	mustCode(t, err, CodeInvalid, "operation 3 (addColumn): column [n]: a notNull column on a non-empty table needs a defaultValue")
	_, err = e.Schema().ApplyMigration(ref, MigrationRequest{Operations: []MigrationOp{{}}})
	mustCode(t, err, CodeInvalid, "operation 1: an operation must have exactly one of")
	after, _ := e.Branches().Details(ref)
	b1, _ := json.Marshal(before)
	b2, _ := json.Marshal(after)
	if string(b1) != string(b2) {
		t.Fatalf("failed apply changed the branch:\n%s\n%s", b1, b2)
	}

	stale := "mig_00000000000000000000"
	_, err = e.Schema().ApplyMigration(ref, MigrationRequest{Parent: &stale, Operations: opsOf(t, `[{"addTable":{"table":"u"}}]`)})
	mustCode(t, err, CodeInvalid, "is not the head of branch [main]")
	head := before.LastMigrationID
	ch, err := e.Schema().ApplyMigration(ref, MigrationRequest{Parent: &head, Operations: opsOf(t, `[{"addTable":{"table":"u"}},{"renameColumn":{"table":"t","oldName":"a","newName":"b"}},
		{"addColumn":{"table":"u","column":{"name":"t","type":"link","link":{"table":"t"}}}}]`)})
	if err != nil || ch.ParentMigrationID != head {
		t.Fatalf("apply: %+v %v", ch, err)
	}
	after, _ = e.Branches().Details(ref)
	if after.Version != before.Version+1 || after.LastMigrationID != ch.MigrationID || len(after.Schema.Tables) != 2 {
		t.Fatalf("after apply: %+v", after)
	}
	rec, err := e.Get(ref, "t", "r1")
	if err != nil || rec.Values["b"] != "x" {
		t.Fatalf("record after rename: %+v %v", rec, err)
	}
	// No operations: nothing recorded, the head answered.
	same, err := e.Schema().ApplyMigration(ref, MigrationRequest{Operations: nil})
	if err != nil || same != ch {
		t.Fatalf("empty apply = %+v, %v; want %+v", same, err, ch)
	}
}

func TestPreviewMigration(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{"t": {{Name: "a", Type: TypeString}}})
	before, _ := e.Branches().Details(ref)
	orig, upd, err := e.Schema().PreviewMigration(ref, opsOf(t, `[{"addTable":{"table":"u"}},{"removeColumn":{"table":"t","column":"a"}}]`))
	if err != nil || len(orig.Tables) != 1 || len(orig.Tables[0].Columns) != 1 || len(upd.Tables) != 2 || len(upd.Tables[0].Columns) != 0 {
		t.Fatalf("preview: %+v → %+v, %v", orig, upd, err)
	}
	_, _, err = e.Schema().PreviewMigration(ref, opsOf(t, `[{"removeTable":{"table":"nope"}}]`))
	mustCode(t, err, CodeInvalid, "operation 1 (removeTable): table [nope] not found")
	after, _ := e.Branches().Details(ref)
	if after.Version != before.Version || after.LastMigrationID != before.LastMigrationID {
		t.Fatalf("preview changed the branch")
	}
	// The table id a preview took is not taken: the next table gets it.
	if _, err := e.Schema().CreateTable(ref, "u"); err != nil {
		t.Fatal(err)
	}
}

// TestSchemaHistoryAndPush: the history of a fork runs through its
// source's; pushing a history elsewhere reproduces the schema.
func TestSchemaHistoryAndPush(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{"t": {{Name: "a", Type: TypeString}}})
	all := func(r Ref) []Migration {
		t.Helper()
		p, err := e.Schema().History(r, HistoryRequest{Size: MaxHistoryPageSize})
		if err != nil {
			t.Fatal(err)
		}
		return p.Migrations
	}
	main := all(ref)
	if len(main) != 2 || main[0].Operations[0].AddColumn == nil || main[1].Operations[0].AddTable == nil || main[0].ParentID != main[1].ID {
		t.Fatalf("main history: %+v", main)
	}
	for _, m := range main {
		if m.Checksum != model.MigrationChecksum(m.ParentID, m.Operations) || !migrationIDPattern.MatchString(m.ID) {
			t.Fatalf("migration %+v", m)
		}
	}
	dev := ref
	dev.Branch = "dev"
	if err := e.Branches().Create(dev, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	feat := ref
	feat.Branch = "feat"
	if err := e.Branches().Create(feat, CreateBranchRequest{From: "dev"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Schema().CreateTable(ref, "onMain"); err != nil {
		t.Fatal(err)
	}
	c, err := e.Schema().CreateTable(feat, "onFeat")
	if err != nil {
		t.Fatal(err)
	}
	h := all(feat)
	if len(h) != 3 || h[0].ID != c.MigrationID || h[1].ID != main[0].ID || h[2].ID != main[1].ID {
		t.Fatalf("feat history: %+v", h)
	}

	// Push feat's history into a new database.
	if _, err := e.CreateDatabase(CreateDatabaseRequest{Workspace: ref.Workspace, Name: "copy", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	cp := Ref{Workspace: ref.Workspace, Database: "copy", Branch: "main"}
	push := make([]Migration, len(h))
	for i, m := range h {
		push[len(h)-1-i] = m
	}
	ch, err := e.Schema().PushMigrations(cp, push)
	if err != nil || ch.MigrationID != c.MigrationID || ch.ParentMigrationID != main[0].ID {
		t.Fatalf("push = %+v, %v", ch, err)
	}
	want, _ := e.Branches().Details(feat)
	got, _ := e.Branches().Details(cp)
	w, _ := json.Marshal(want.Schema)
	g, _ := json.Marshal(got.Schema)
	if string(w) != string(g) {
		t.Fatalf("pushed schema %s, want %s", g, w)
	}
	if ch, err := e.Schema().PushMigrations(cp, push); err != nil || ch.MigrationID != c.MigrationID {
		t.Fatalf("push again = %+v, %v", ch, err)
	}
	bad := push[2]
	bad.Checksum = model.MigrationChecksum("", bad.Operations)
	_, err = e.Schema().PushMigrations(cp, []Migration{bad})
	mustCode(t, err, CodeInvalid, "checksum mismatch")
	// A migration pushed on an old head: main's onMain table after feat's.
	_, err = e.Schema().PushMigrations(cp, []Migration{all(ref)[0]})
	mustCode(t, err, CodeInvalid, "is not the head")
	_, err = e.Schema().History(cp, HistoryRequest{After: "mig_00000000000000000000"})
	mustCode(t, err, CodeInvalid, "is not in the history")
	_, err = e.Schema().History(Ref{Workspace: ref.Workspace, Database: "copy", Branch: "nope"}, HistoryRequest{})
	mustCode(t, err, CodeNotFound, "branch [nope] not found")
}

func TestCompareSchemaValidatesTarget(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{})
	f := func(target, want string) {
		t.Helper()
		_, err := e.Schema().Compare(ref, CompareRequest{Schema: ptr(schemaOf(t, target))})
		mustCode(t, err, CodeInvalid, want)
	}
	f(`{"tables":[{"name":"a"},{"name":"A"}]}`, "table [A] is defined twice")
	f(`{"tables":[{"name":"a b"}]}`, "table name [a b] is invalid")
	f(`{"tables":[{"name":"a","columns":[{"name":"x","type":"int"},{"name":"x","type":"int"}]}]}`, "column [x] is defined twice")
	f(`{"tables":[{"name":"a","columns":[{"name":"l","type":"link","link":{"table":"b"}}]}]}`, "link target table [b] not found")
	c, err := e.Schema().Compare(ref, CompareRequest{Schema: ptr(schemaOf(t, `{"tables":[{"name":"a","columns":[{"name":"f","type":"file","file":{}}]}]}`))})
	if err != nil || !strings.Contains(mustJSONText(c.Target), `{"name":"f","type":"file"}`) {
		t.Fatalf("normalized target %+v, %v", c.Target, err)
	}
}

func mustJSONText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestRecordCount: live records over every table of a branch, from the
// cache or from storage, per branch.
func TestRecordCount(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{"a": {{Name: "n", Type: TypeInt}}, "b": {{Name: "n", Type: TypeInt}}})
	count := func(r Ref, want int64) {
		t.Helper()
		n, err := e.RecordCount(r)
		if err != nil || n != want {
			t.Fatalf("%s: %d records, %v; want %d", r.Branch, n, err, want)
		}
	}
	count(ref, 0)
	for i := 0; i < 5; i++ {
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "a", Values: map[string]any{"n": json.Number("1")}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "b", ID: "x", Values: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	count(ref, 6)
	// A query fills the table's bitmap cache; the count then reads it.
	if _, err := e.Query(ctx, ref, "a", QueryRequest{}, QueryOptions{}); err != nil {
		t.Fatal(err)
	}
	count(ref, 6)
	dev := ref
	dev.Branch = "dev"
	if err := e.Branches().Create(dev, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.WriteOne(dev, Op{Kind: OpDelete, Table: "b", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	count(dev, 5)
	count(ref, 6)
	if _, err := e.Schema().DeleteTable(ref, "b"); err != nil {
		t.Fatal(err)
	}
	count(ref, 5)
	_, err := e.RecordCount(Ref{Workspace: ref.Workspace, Database: "db", Branch: "nope"})
	mustCode(t, err, CodeNotFound, "not found")
}

// TestAddNotNullColumnBackfills: a notNull column added to a table with
// records gives them its default, on the branch it is added to only, and
// the value is indexed like a written one. A column the same migration
// removes again is not written.
func TestAddNotNullColumnBackfills(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{"t": {{Name: "a", Type: TypeString}, {Name: "o", Type: TypeObject}}})
	for _, id := range []string{"r1", "r2", "r3"} {
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "t", ID: id, Values: map[string]any{"a": id}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.WriteOne(ref, Op{Kind: OpDelete, Table: "t", ID: "r3"}); err != nil {
		t.Fatal(err)
	}
	other := ref
	other.Branch = "other"
	if err := e.Branches().Create(other, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Schema().ApplyMigration(ref, MigrationRequest{Operations: opsOf(t, `[
		{"addColumn":{"table":"t","column":{"name":"n","type":"int","notNull":true,"defaultValue":"7"}}},
		{"addColumn":{"table":"t","column":{"name":"o.s","type":"string","notNull":true,"defaultValue":"x"}}},
		{"addColumn":{"table":"t","column":{"name":"gone","type":"int","notNull":true,"defaultValue":"1"}}},
		{"removeColumn":{"table":"t","column":"gone"}}]`)}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r1", "r2"} {
		r, err := e.Get(ref, "t", id)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(r.Values); string(got) != `{"a":"`+id+`","n":7,"o":{"s":"x"}}` {
			t.Errorf("%s: %s", id, got)
		}
	}
	if _, err := e.Get(ref, "t", "r3"); CodeOf(err) != CodeNotFound {
		t.Errorf("deleted record: %v", err)
	}
	rows, err := e.FilterRows(ref, "t", mustFilter(`{"n":7,"o.s":"x"}`))
	if err != nil || rows.GetCardinality() != 2 {
		t.Errorf("filter on the backfilled columns: %v, %v", rows, err)
	}
	if r, err := e.Get(other, "t", "r1"); err != nil || r.Values["n"] != nil {
		t.Errorf("the other branch changed: %+v, %v", r, err)
	}
}

// TestSchemaEdits runs the scripts of testdata/schemaedits: lists of
// operations applied to branches with records, as the schema edit
// endpoints apply them. Regenerate with -rewrite and review the diff like
// code.
//
// Commands (operations and record values are JSON input):
//
//	reset                                   fresh database, empty main
//	update branch=B                         the operations as one migration on the head
//	apply branch=B [source=S]               the operations as edits compared against S:
//	                                        a mark, else the head of branch S; no source: none
//	preview branch=B                        the schema the operations would give
//	compare-ops branch=B                    compare B with the schema the operations build
//	mark name=N branch=B                    remember the head of B as N
//	fork from=B to=C                        create C from B
//	put branch=B table=T id=I               insert or replace a record
//	scan branch=B table=T                   the records of a table
//	schema branch=B                         the schema, a line per table
func TestSchemaEdits(t *testing.T) {
	var run schemaEditsRun
	datadriven.RunTest(t, "testdata/schemaedits", func(t *testing.T, d *datadriven.TestData) string {
		out := run.cmd(t, d)
		// Migration ids are not the same from run to run: marks by
		// name, others by their form.
		for name, id := range run.marks {
			out = strings.ReplaceAll(out, id, "@"+name)
		}
		return migIDPattern.ReplaceAllString(out, "mig_…")
	})
}

// migIDPattern matches migration ids in golden output.
var migIDPattern = regexp.MustCompile(`mig_[0-9a-v]{20}`)

// schemaEditsRun is the state of a TestSchemaEdits script.
type schemaEditsRun struct {
	e     *Engine
	main  Ref
	marks map[string]string // mark name → migration id
}

// cmd runs one command of TestSchemaEdits.
func (run *schemaEditsRun) cmd(t *testing.T, d *datadriven.TestData) string {
	if run.e == nil || d.Cmd == "reset" {
		run.e, run.main = recFixture(t, map[string][]ColumnDef{})
		run.marks = map[string]string{}
		if d.Cmd == "reset" {
			return "ok"
		}
	}
	e, marks := run.e, run.marks
	ref := func(key string) Ref {
		r := run.main
		r.Branch = branchesArg(d, key)
		return r
	}
	head := func(r Ref) string {
		det, err := e.Branches().Details(r)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		return det.LastMigrationID
	}
	ops := func() []MigrationOp { return opsOf(t, d.Input) }
	fail := func(err error) string {
		return fmt.Sprintf("error (%s): %s", codeNames[CodeOf(err)], err.Error())
	}
	switch d.Cmd {
	case "update":
		if _, err := e.Schema().ApplyMigration(ref("branch"), MigrationRequest{Operations: ops()}); err != nil {
			return fail(err)
		}
		return "ok"
	case "apply":
		r := ref("branch")
		var src *string
		if d.HasArg("source") {
			s, ok := marks[branchesArg(d, "source")]
			if !ok {
				det, err := e.Branches().Details(ref("source"))
				if err != nil {
					return fail(err)
				}
				s = det.LastMigrationID
			}
			src = &s
		}
		before := head(r)
		ch, err := e.Schema().ApplyMigration(r, MigrationRequest{Source: src, Operations: ops()})
		if err != nil {
			return fail(err)
		}
		if ch.MigrationID == before {
			return "no change"
		}
		return "recorded:\n" + schemaEditsHistory(t, e, r)
	case "preview":
		_, upd, err := e.Schema().PreviewMigration(ref("branch"), ops())
		if err != nil {
			return fail(err)
		}
		return formatSchema(upd)
	case "compare-ops":
		c, err := e.Schema().Compare(ref("branch"), CompareRequest{Operations: ops()})
		if err != nil {
			return fail(err)
		}
		return formatOps(c.Operations)
	case "mark":
		marks[branchesArg(d, "name")] = head(ref("branch"))
		return "ok"
	case "fork":
		if err := e.Branches().Create(ref("to"), CreateBranchRequest{From: branchesArg(d, "from")}); err != nil {
			return fail(err)
		}
		return "ok"
	case "put":
		var v map[string]any
		dec := json.NewDecoder(strings.NewReader(d.Input))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			d.Fatalf(t, "%v", err)
		}
		op := Op{Kind: OpInsert, Table: branchesArg(d, "table"), ID: branchesArg(d, "id"), Values: v}
		if _, err := e.WriteOne(ref("branch"), op); err != nil {
			return fail(err)
		}
		return "ok"
	case "scan":
		res, err := e.Query(ctx, ref("branch"), branchesArg(d, "table"), QueryRequest{Columns: mustColumns(`["*"]`)}, QueryOptions{})
		if err != nil {
			return fail(err)
		}
		var out []string
		for _, r := range res.Records {
			b, _ := json.Marshal(r.Values)
			out = append(out, r.ID+" "+string(b))
		}
		if len(out) == 0 {
			return "(empty)"
		}
		return strings.Join(out, "\n")
	case "schema":
		det, err := e.Branches().Details(ref("branch"))
		if err != nil {
			return fail(err)
		}
		return formatSchema(det.Schema)
	}
	d.Fatalf(t, "unknown command %s", d.Cmd)
	return ""
}

// codeNames names error codes in golden output.
var codeNames = map[Code]string{
	CodeInternal: "internal", CodeInvalid: "invalid", CodeNotFound: "not found", CodeAlreadyExists: "exists",
	CodeConflict: "conflict",
}

// schemaEditsHistory returns the operations of a branch's newest
// migration, one a line.
func schemaEditsHistory(t *testing.T, e *Engine, r Ref) string {
	t.Helper()
	page, err := e.Schema().History(r, HistoryRequest{Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Migrations) == 0 {
		return "(none)"
	}
	return formatOps(page.Migrations[0].Operations)
}

// formatOps prints operations as JSON, one a line.
func formatOps(ops []MigrationOp) string {
	if len(ops) == 0 {
		return "(none)"
	}
	var out []string
	for _, op := range ops {
		b, _ := json.Marshal(op)
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

// formatSchema prints a schema a table a line: each column as its name,
// type and settings.
func formatSchema(s SchemaDef) string {
	if len(s.Tables) == 0 {
		return "(no tables)"
	}
	var out []string
	for _, t := range s.Tables {
		out = append(out, t.Name+": "+formatColumns(t.Columns))
	}
	return strings.Join(out, "\n")
}

// formatColumns prints columns as formatSchema does.
func formatColumns(cols []ColumnDef) string {
	var parts []string
	for _, c := range cols {
		p := c.Name + " " + string(c.Type)
		switch {
		case c.Link != nil:
			p += "→" + c.Link.Table
		case c.Type == TypeObject:
			p += "(" + formatColumns(c.Columns) + ")"
		}
		if c.Unique {
			p += " unique"
		}
		if c.NotNull {
			p += " notNull"
		}
		if c.DefaultValue != nil {
			p += " default=" + *c.DefaultValue
		}
		for _, fd := range []*FileDef{c.File, c.FileArray} {
			if fd != nil && fd.DefaultPublicAccess != nil {
				p += fmt.Sprintf(" public=%v", *fd.DefaultPublicAccess)
			}
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }
