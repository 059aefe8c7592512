package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// TestBranches runs the branch scripts of testdata/branches: record writes
// and reads on branches, forks, branch deletions and reopens, with the
// expected output of each command. Regenerate with -rewrite and review the
// diff like code.
//
// Commands (table=notes picks the second table; items is the default):
//
//	reset                                      fresh engine and database
//	put branch=B id=I [col=v ...]              insert or replace a record
//	update branch=B id=I [col=v ...] [upsert]  change columns; incr=k adds k to n
//	delete branch=B id=I                       delete a record
//	get branch=B id=I                          read a record
//	scan branch=B                              every record, through the live bitmap
//	find branch=B col=v                        records in the posting of a value
//	txn branch=B                               the input lines as one transaction
//	fork from=B to=C                           create C from B
//	delete-branch name=B                       delete a branch
//	branches                                   the branches, oldest first
//	lineage branch=B                           a branch's layers and fork seqs
//	reopen                                     close and open the data directory
//
// Column values: name=ann, n=3, score=1.5, tags=(a,b), tags=() for an empty
// list, col=null for null.
func TestBranches(t *testing.T) {
	var db *testDB
	reset := func() {
		if db != nil {
			db.e.Close()
			db.e = nil
		}
		// No flattening: lineages in the output stay as forks make them.
		db = openTestDB(t, Options{FlattenDepth: 1 << 20})
	}
	datadriven.RunTest(t, "testdata/branches", func(t *testing.T, d *datadriven.TestData) string {
		if db == nil || d.Cmd == "reset" {
			reset()
			if d.Cmd == "reset" {
				return "ok"
			}
		}
		db.clock.tick()
		switch d.Cmd {
		case "put", "update", "delete", "get":
			op, err := branchesOp(d.Cmd, d.CmdArgs)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			ref := db.ref(branchesArg(d, "branch"))
			if d.Cmd == "get" {
				r, err := db.e.Get(ref, op.Table, op.ID)
				if err != nil {
					return "error: " + err.Error()
				}
				return formatRecord(r)
			}
			res, err := db.e.WriteOne(ref, op)
			if err != nil {
				return "error: " + err.Error()
			}
			return formatResult(op.Kind, res)
		case "txn":
			var ops []Op
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				cmd, args, err := datadriven.ParseLine(line)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				op, err := branchesOp(cmd, args)
				if err != nil {
					d.Fatalf(t, "%s: %v", line, err)
				}
				ops = append(ops, op)
			}
			res, err := db.e.Write(context.Background(), db.ref(branchesArg(d, "branch")), ops)
			if err != nil {
				return "error: " + err.Error()
			}
			var out []string
			for i, r := range res {
				if ops[i].Kind == OpGet {
					if r.Record == nil {
						out = append(out, r.ID+" not found")
					} else {
						out = append(out, formatRecord(r.Record))
					}
					continue
				}
				out = append(out, formatResult(ops[i].Kind, r))
			}
			return strings.Join(out, "\n")
		case "scan":
			table := "items"
			if d.HasArg("table") {
				table = branchesArg(d, "table")
			}
			recs, err := db.scanTable(branchesArg(d, "branch"), table)
			if err != nil {
				return "error: " + err.Error()
			}
			if len(recs) == 0 {
				return "(empty)"
			}
			var out []string
			for _, r := range recs {
				out = append(out, formatRecord(r))
			}
			return strings.Join(out, "\n")
		case "find":
			return branchesFind(t, db, d)
		case "fork":
			err := db.e.Branches().Create(db.ref(branchesArg(d, "to")), CreateBranchRequest{From: branchesArg(d, "from")})
			db.e.bg.Wait()
			if err != nil {
				return "error: " + err.Error()
			}
			return "ok"
		case "delete-branch":
			if err := db.e.Branches().Delete(db.ref(branchesArg(d, "name"))); err != nil {
				return "error: " + err.Error()
			}
			return "ok"
		case "branches":
			infos, err := db.e.Branches().List(db.ws, "db")
			if err != nil {
				return "error: " + err.Error()
			}
			var out []string
			for _, b := range infos {
				out = append(out, b.Name)
			}
			return strings.Join(out, "\n")
		case "lineage":
			_, b, err := db.branchState(branchesArg(d, "branch"))
			if err != nil {
				return "error: " + err.Error()
			}
			var out []string
			for _, lr := range b.Lineage {
				seq := "max"
				if lr.Seq != model.MaxSeq {
					seq = strconv.FormatUint(lr.Seq, 10)
				}
				out = append(out, fmt.Sprintf("layer %d seq %s", lr.Layer, seq))
			}
			return strings.Join(out, "\n")
		case "reopen":
			db.reopen()
			return "ok"
		}
		d.Fatalf(t, "unknown command %s", d.Cmd)
		return ""
	})
}

// branchesArg returns the single value of a required argument.
func branchesArg(d *datadriven.TestData, key string) string {
	arg, ok := d.Arg(key)
	if !ok || len(arg.Vals) != 1 {
		panic(fmt.Sprintf("%s: want one %s=…", d.Pos, key))
	}
	return arg.Vals[0]
}

// branchesOp builds an operation from a put, update, delete or get line.
// Arguments that are not columns (branch, id, table, upsert) are options.
func branchesOp(cmd string, args []datadriven.CmdArg) (Op, error) {
	op := Op{Table: "items"}
	switch cmd {
	case "put":
		op.Kind = OpInsert
	case "update":
		op.Kind = OpUpdate
	case "delete":
		op.Kind = OpDelete
	case "get":
		op.Kind = OpGet
	default:
		return op, fmt.Errorf("unknown operation %s", cmd)
	}
	for _, a := range args {
		val := ""
		if len(a.Vals) > 0 {
			val = a.Vals[0]
		}
		switch a.Key {
		case "branch":
		case "id":
			op.ID = val
		case "table":
			op.Table = val
		case "upsert":
			op.Upsert = true
		case "incr":
			if op.Values == nil {
				op.Values = map[string]any{}
			}
			op.Values["n"] = map[string]any{"$increment": json.Number(val)}
		case "name", "code", "note", "n", "score", "tags":
			if op.Values == nil {
				op.Values = map[string]any{}
			}
			switch {
			case val == "null" && len(a.Vals) == 1:
				op.Values[a.Key] = nil
			case a.Key == "n" || a.Key == "score":
				op.Values[a.Key] = json.Number(val)
			case a.Key == "tags":
				tags := []string{}
				if len(a.Vals) > 1 || val != "" {
					tags = append(tags, a.Vals...)
				}
				op.Values[a.Key] = tags
			default:
				op.Values[a.Key] = val
			}
		default:
			return op, fmt.Errorf("unknown argument %s", a.Key)
		}
	}
	if op.Kind == OpInsert && op.Values == nil {
		op.Values = map[string]any{}
	}
	return op, nil
}

// formatResult prints the outcome of a write.
func formatResult(kind OpKind, r OpResult) string {
	switch {
	case kind == OpDelete && r.Rows == 0:
		return r.ID + " not found"
	case kind == OpDelete:
		return fmt.Sprintf("deleted %s v%d", r.ID, r.Record.Version)
	case r.Created:
		return fmt.Sprintf("created %s v%d", r.ID, r.Record.Version)
	}
	return fmt.Sprintf("wrote %s v%d", r.ID, r.Record.Version)
}

// formatRecord prints a record on one line, columns in schema order.
func formatRecord(r *Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s v%d", r.ID, r.Version)
	for _, c := range testColumns {
		v, ok := r.Values[c.Name]
		if !ok {
			continue
		}
		switch x := v.(type) {
		case string:
			fmt.Fprintf(&b, " %s=%s", c.Name, quoteIfNeeded(x))
		case []string:
			q := make([]string, len(x))
			for i, s := range x {
				q[i] = quoteIfNeeded(s)
			}
			fmt.Fprintf(&b, " %s=(%s)", c.Name, strings.Join(q, ","))
		default:
			fmt.Fprintf(&b, " %s=%v", c.Name, x)
		}
	}
	return b.String()
}

func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"=(),") {
		return strconv.Quote(s)
	}
	return s
}

// branchesFind lists, sorted, the ids of the records in the posting of one
// column value, as the branch's lineage composes it.
func branchesFind(t *testing.T, db *testDB, d *datadriven.TestData) string {
	table := "items"
	var col, val string
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "branch":
		case "table":
			table = a.Vals[0]
		default:
			col, val = a.Key, a.Vals[0]
		}
	}
	dbase, b, err := db.branchState(branchesArg(d, "branch"))
	if err != nil {
		return "error: " + err.Error()
	}
	tb, err := b.Schema.Table(table)
	if err != nil {
		return "error: " + err.Error()
	}
	c := tb.ByPath[col]
	if c == nil {
		d.Fatalf(t, "unknown column %s", col)
	}
	var v codec.Value
	switch c.Type {
	case TypeInt:
		i, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		v = codec.Int(i)
	case TypeFloat:
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		v = codec.Float(f)
	default:
		v = codec.String(val)
	}
	pid, err := codec.PostingBitmapID(nil, c.ID, v)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	rows, err := layers.ReadBitmap(db.e.pdb, dbase.ID, b.Lineage, tb.ID, pid, nil)
	if err != nil {
		return "error: " + err.Error()
	}
	var ids []string
	it := rows.Iterator()
	for it.HasNext() {
		var rec codec.Record
		row := it.Next()
		_, ok, err := layers.ReadRow(db.e.pdb, dbase.ID, b.Lineage, tb.ID, row, &rec)
		if err != nil {
			return "error: " + err.Error()
		}
		if !ok {
			ids = append(ids, fmt.Sprintf("(row %d has no record)", row))
			continue
		}
		ids = append(ids, rec.ID)
	}
	if len(ids) == 0 {
		return "(none)"
	}
	sort.Strings(ids)
	return strings.Join(ids, " ")
}

// TestRecordCountOfForks: a branch's count, once read from storage, is
// remembered for as long as its rows cannot have changed (its own layer
// unwritten, its lineage the same), and is read again once they may have:
// a child's count stays put while its parent writes on, follows the
// child's own writes, and survives its flattening and a restart.
func TestRecordCountOfForks(t *testing.T) {
	db := openTestDB(t, Options{FlattenDepth: 1 << 20})
	e, main := db.e, db.ref("main")
	ins := func(ref Ref, id string) {
		t.Helper()
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "items", ID: id, Values: map[string]any{"n": json.Number("1")}}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(ref Ref, id string) {
		t.Helper()
		if _, err := e.WriteOne(ref, Op{Kind: OpDelete, Table: "items", ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(ref Ref, want int64) {
		t.Helper()
		n, err := e.RecordCount(ref)
		if err != nil || n != want {
			t.Fatalf("%s: %d records, %v; want %d", ref.Branch, n, err, want)
		}
	}
	// remembered says whether the count of items on ref is remembered
	// under the marks its table shows now.
	remembered := func(ref Ref) bool {
		t.Helper()
		d, b, tb := branchTableOf(t, e, ref, "items")
		_, ok := d.LiveCount(b, tb.ID, d.CountMarks(b, tb.ID))
		return ok
	}
	for i := range 4 {
		ins(main, fmt.Sprintf("m%d", i))
	}
	var kids []Ref
	for k := range 3 {
		kid := db.ref(fmt.Sprintf("kid%d", k))
		if err := e.Branches().Create(kid, CreateBranchRequest{From: "main"}); err != nil {
			t.Fatal(err)
		}
		kids = append(kids, kid)
		ins(main, fmt.Sprintf("after%d", k))
	}
	count(kids[0], 4)
	count(kids[1], 5)
	count(kids[2], 6)
	count(main, 7)
	if !remembered(kids[0]) || !remembered(kids[2]) {
		t.Fatal("the counts of children that have not written are not remembered")
	}
	// The parent writes on: its children see none of it.
	del(main, "m0")
	ins(main, "late")
	count(main, 7)
	count(kids[0], 4)
	count(kids[1], 5)
	if !remembered(kids[0]) {
		t.Fatal("a parent's write made its child count again")
	}
	// A child's own writes count.
	ins(kids[0], "own")
	if remembered(kids[0]) {
		t.Fatal("a count is remembered across a write of the branch's own layer")
	}
	count(kids[0], 5)
	del(kids[0], "m1")
	del(kids[0], "m2")
	count(kids[0], 3)
	// A grandchild, then the child it was forked from writes again.
	grand := db.ref("grand")
	if err := e.Branches().Create(grand, CreateBranchRequest{From: "kid0"}); err != nil {
		t.Fatal(err)
	}
	count(grand, 3)
	ins(kids[0], "own2")
	count(kids[0], 4)
	count(grand, 3)
	// Flattening changes the lineage, not the rows.
	d, err := e.database(main.Workspace, main.Database)
	if err != nil {
		t.Fatal(err)
	}
	g, err := d.State().Branch("grand")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ap.Flatten(d.DB, g.ID); err != nil {
		t.Fatal(err)
	}
	count(grand, 3)
	ins(grand, "g")
	count(grand, 4)
	// A branch deleted and made again under its name is counted anew.
	if err := e.Branches().Delete(kids[1]); err != nil {
		t.Fatal(err)
	}
	if err := e.Branches().Create(kids[1], CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	count(kids[1], 7)
	db.reopen()
	e = db.e
	count(main, 7)
	count(kids[0], 4)
	count(kids[1], 7)
	count(kids[2], 6)
	count(grand, 4)
}
