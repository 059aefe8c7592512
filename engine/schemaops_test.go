package engine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// TestSchemaOps runs testdata/schemaops: every schema edit on its own
// entry point, with the errors of each, and the migrations they record.
// Commands (branch= defaults to main):
//
//	reset                                   a database with no tables
//	create-table name=N                     add a table
//	delete-table name=N                     remove a table
//	rename-table name=N to=M                rename a table
//	add-column table=T                      add the column of the input (JSON)
//	delete-column table=T path=P            remove a column
//	rename-column table=T path=P to=N       rename a column
//	set-columns table=T                     replace the columns by the input's
//	migrate [parent=ID|head]                apply the input's operations as one migration
//	push                                    push the input's migrations, each a line:
//	                                        title: operations; ids and checksums are made
//	push-again                              push the migrations of the last push again
//	history [size=N]                        the migrations, newest first
//	compare-schema                          the operations from the branch to the input's schema
//	compare-branches target=C               the operations from the branch to C's schema
//	put table=T id=I                        insert the input's record
//	fork to=C                               create C from the branch
//	schema                                  the schema, a line per table
func TestSchemaOps(t *testing.T) {
	var run schemaOpsRun
	datadriven.RunTest(t, "testdata/schemaops", func(t *testing.T, d *datadriven.TestData) string {
		out := run.cmd(t, d)
		for i, id := range run.pushed {
			out = strings.ReplaceAll(out, id, "@push"+strconv.Itoa(i+1))
		}
		return migIDPattern.ReplaceAllString(out, "mig_…")
	})
}

// schemaOpsRun is the state of a TestSchemaOps script.
type schemaOpsRun struct {
	e      *Engine
	main   Ref
	pushed []string    // ids of the migrations push made, in order
	last   []Migration // the migrations of the last push
}

func (run *schemaOpsRun) cmd(t *testing.T, d *datadriven.TestData) string {
	if run.e == nil || d.Cmd == "reset" {
		run.e, run.main = recFixture(t, map[string][]ColumnDef{})
		run.pushed = nil
		if d.Cmd == "reset" {
			return "ok"
		}
	}
	e := run.e
	arg := func(key string) string {
		if !d.HasArg(key) {
			return ""
		}
		return branchesArg(d, key)
	}
	ref := run.main
	if b := arg("branch"); b != "" {
		ref.Branch = b
	}
	fail := func(err error) string {
		return fmt.Sprintf("error (%s): %s", codeNames[CodeOf(err)], err.Error())
	}
	change := func(ch SchemaChange, err error) string {
		if err != nil {
			return fail(err)
		}
		if ch.ParentMigrationID == "" {
			return "migration " + ch.MigrationID + " (first)"
		}
		return "migration " + ch.MigrationID + " after " + ch.ParentMigrationID
	}
	input := func(v any) {
		if err := json.Unmarshal([]byte(d.Input), v); err != nil {
			d.Fatalf(t, "bad input: %v", err)
		}
	}
	switch d.Cmd {
	case "create-table":
		return change(e.Schema().CreateTable(ref, arg("name")))
	case "delete-table":
		return change(e.Schema().DeleteTable(ref, arg("name")))
	case "rename-table":
		return change(e.Schema().RenameTable(ref, arg("name"), arg("to")))
	case "add-column":
		var def ColumnDef
		input(&def)
		return change(e.Schema().AddColumn(ref, arg("table"), def))
	case "delete-column":
		return change(e.Schema().DeleteColumn(ref, arg("table"), arg("path")))
	case "rename-column":
		return change(e.Schema().RenameColumn(ref, arg("table"), arg("path"), arg("to")))
	case "set-columns":
		var defs []ColumnDef
		input(&defs)
		return change(e.Schema().SetTableColumns(ref, arg("table"), defs))
	case "migrate":
		var parent *string
		switch p := arg("parent"); p {
		case "":
		case "head":
			det, err := e.Branches().Details(ref)
			if err != nil {
				return fail(err)
			}
			parent = &det.LastMigrationID
		default:
			parent = &p
		}
		return change(e.Schema().ApplyMigration(ref, MigrationRequest{Parent: parent, Operations: opsOf(t, d.Input)}))
	case "push":
		det, err := e.Branches().Details(ref)
		if err != nil {
			return fail(err)
		}
		head := det.LastMigrationID
		var migs []Migration
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			title, ops, ok := strings.Cut(line, ": ")
			if !ok {
				d.Fatalf(t, "push line %q: want title: operations", line)
			}
			id := fmt.Sprintf("mig_%020d", len(run.pushed)+1)
			m := Migration{ID: id, ParentID: head, Title: title, Operations: opsOf(t, ops)}
			m.Checksum = model.MigrationChecksum(m.ParentID, m.Operations)
			migs = append(migs, m)
			run.pushed = append(run.pushed, id)
			head = id
		}
		run.last = migs
		return change(e.Schema().PushMigrations(ref, migs))
	case "push-again":
		return change(e.Schema().PushMigrations(ref, run.last))
	case "history":
		size := 0
		if s := arg("size"); s != "" {
			size, _ = strconv.Atoi(s)
		}
		page, err := e.Schema().History(ref, HistoryRequest{Size: size})
		if err != nil {
			return fail(err)
		}
		var out []string
		for _, m := range page.Migrations {
			line := m.ID
			if m.Title != "" {
				line += " " + strconv.Quote(m.Title)
			}
			out = append(out, line+": "+strings.ReplaceAll(formatOps(m.Operations), "\n", " "))
		}
		if page.More {
			out = append(out, "(more)")
		}
		if len(out) == 0 {
			return "(none)"
		}
		return strings.Join(out, "\n")
	case "compare-schema":
		var target SchemaDef
		input(&target)
		c, err := e.Schema().Compare(ref, CompareRequest{Schema: &target})
		if err != nil {
			return fail(err)
		}
		return formatOps(c.Operations)
	case "compare-branches":
		c, err := e.Schema().Compare(ref, CompareRequest{Branch: arg("target")})
		if err != nil {
			return fail(err)
		}
		return formatOps(c.Operations)
	case "put":
		var v map[string]any
		input(&v)
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: arg("table"), ID: arg("id"), Values: v}); err != nil {
			return fail(err)
		}
		return "ok"
	case "fork":
		to := ref
		to.Branch = arg("to")
		if err := e.Branches().Create(to, CreateBranchRequest{From: ref.Branch}); err != nil {
			return fail(err)
		}
		return "ok"
	case "schema":
		det, err := e.Branches().Details(ref)
		if err != nil {
			return fail(err)
		}
		return formatSchema(det.Schema)
	}
	d.Fatalf(t, "unknown command %s", d.Cmd)
	return ""
}
