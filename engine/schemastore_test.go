package engine

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSchemaStorageModel runs random schema changes on a few branches,
// forked from one another along the way, and checks two promises of the
// schema's storage: a change shows in no other branch and no earlier
// schema (schemas share the tables a change does not touch), and reopening
// the data directory finds every branch's schema as it was (the tables
// written one by one, then whole again once they are many).
func TestSchemaStorageModel(t *testing.T) {
	db := openTestDB(t, Options{})
	r := rand.New(rand.NewPCG(7, 11))
	branches := []string{"main"}
	details := func(branch string) string {
		t.Helper()
		det, err := db.e.Branches().Details(db.ref(branch))
		if err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(det.Schema)
		if err != nil {
			t.Fatal(err)
		}
		return string(js)
	}
	snapshot := func() map[string]string {
		out := map[string]string{}
		for _, b := range branches {
			out[b] = details(b)
		}
		return out
	}
	// schemaOf is the published schema object of a branch, to check that
	// no later change alters it.
	schemaOf := func(branch string) (string, func() string) {
		_, b, err := db.branchState(branch)
		if err != nil {
			t.Fatal(err)
		}
		s := b.Schema
		public := func() string {
			js, _ := json.Marshal(s.Public())
			return string(js)
		}
		return public(), public
	}
	tables := func(branch string) []string {
		_, b, err := db.branchState(branch)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tb := range b.Schema.Tables {
			out = append(out, tb.Name)
		}
		return out
	}
	next := 0
	for step := range 400 {
		branch := branches[r.IntN(len(branches))]
		before := snapshot()
		old, oldNow := schemaOf(branch)
		names := tables(branch)
		var err error
		switch k := r.IntN(10); {
		case k < 3 || len(names) == 0:
			next++
			_, err = db.e.Schema().CreateTable(db.ref(branch), fmt.Sprintf("t%d", next))
		case k < 6:
			next++
			_, err = db.e.Schema().AddColumn(db.ref(branch), names[r.IntN(len(names))], ColumnDef{Name: fmt.Sprintf("c%d", next), Type: TypeInt})
		case k < 7:
			next++
			_, err = db.e.Schema().RenameTable(db.ref(branch), names[r.IntN(len(names))], fmt.Sprintf("r%d", next))
		case k < 8:
			name := names[r.IntN(len(names))]
			if !slices.Contains(testTables, name) {
				_, err = db.e.Schema().DeleteTable(db.ref(branch), name)
			}
		case k < 9 && len(branches) < 5:
			next++
			nb := fmt.Sprintf("b%d", next)
			err = db.e.Branches().Create(db.ref(nb), CreateBranchRequest{From: branch})
			branches = append(branches, nb)
		default:
			next++
			_, err = db.e.Schema().SetTableColumns(db.ref(branch), names[r.IntN(len(names))],
				[]ColumnDef{{Name: fmt.Sprintf("s%d", next), Type: TypeString}})
		}
		if err != nil {
			t.Fatalf("step %d on %s: %v", step, branch, err)
		}
		if oldNow() != old {
			t.Fatalf("step %d: the schema %s had before the change changed with it", step, branch)
		}
		after := snapshot()
		for b, s := range before {
			if b != branch && after[b] != s {
				t.Fatalf("step %d: a change of %s changed %s", step, branch, b)
			}
		}
		if step%50 == 49 {
			db.reopen()
			if got := snapshot(); !equalMaps(got, after) {
				t.Fatalf("step %d: after reopening, the schemas differ", step)
			}
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestSchemaEditsCountTables: changes of one table, however many, keep one
// key of that table written one by one, and never write the schema whole
// again; changes of many tables do, once they outnumber a quarter of it.
func TestSchemaEditsCountTables(t *testing.T) {
	db := openTestDB(t, Options{})
	edits := func() int {
		t.Helper()
		_, b, err := db.branchState("main")
		if err != nil {
			t.Fatal(err)
		}
		return b.SchemaEdits
	}
	base := edits()
	for i := range 100 {
		if _, err := db.e.Schema().AddColumn(db.ref("main"), testTables[0], ColumnDef{Name: fmt.Sprintf("c%d", i), Type: TypeInt}); err != nil {
			t.Fatal(err)
		}
		if n := edits(); n > base+1 {
			t.Fatalf("after %d changes of one table: %d tables written one by one", i+1, n)
		}
	}
	for i := range 40 {
		if _, err := db.e.Schema().CreateTable(db.ref("main"), fmt.Sprintf("n%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := edits(); n >= base+1+40 {
		t.Fatalf("40 new tables written one by one, %d in all: never whole again", n)
	}
	db.reopen()
	_, b, err := db.branchState("main")
	if err != nil {
		t.Fatal(err)
	}
	if tb := b.Schema.TableByName(testTables[0]); tb == nil || len(tb.Columns) < 100 {
		t.Fatalf("after reopening: %+v", tb)
	}
}
