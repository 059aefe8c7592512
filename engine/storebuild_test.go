package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/index"
)

// storeOf returns the column store of a table of a branch and whether one
// is being built in the background.
func storeOf(t *testing.T, e *Engine, ref Ref, table string) (*tableStore, bool) {
	t.Helper()
	d, b, tb, err := e.resolveTable(ref, table)
	if err != nil {
		t.Fatal(err)
	}
	d.storeMu.RLock()
	defer d.storeMu.RUnlock()
	k := storeKey{b.ID, tb.ID}
	return d.stores[k], d.building[k]
}

// TestBackgroundStoreBuild: a table of BackgroundBuildRows records or more
// answers its first query from storage while its column store is built in
// the background, and the same query gives the same answer once the store
// is there; summaries wait for the store; a smaller table builds it before
// answering.
func TestBackgroundStoreBuild(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{
		"big":   {{Name: "n", Type: TypeInt}, {Name: "s", Type: TypeString}},
		"small": {{Name: "n", Type: TypeInt}},
	})
	e.opts.BackgroundBuildRows = 500
	fill := func(table string, rows int) {
		var batch []map[string]any
		for i := range rows {
			v := map[string]any{"n": json.Number(fmt.Sprint(i % 7))}
			if table == "big" {
				v["s"] = fmt.Sprintf("s%03d", i%50)
			}
			batch = append(batch, v)
		}
		if _, err := e.BulkInsert(ref, table, batch); err != nil {
			t.Fatal(err)
		}
	}
	fill("big", 800)
	fill("small", 100)

	size := 50
	in := index.QueryInput{
		Filter: json.RawMessage(`{"n": {"$ge": 3}, "s": {"$startsWith": "s01"}}`),
		Sort:   json.RawMessage(`[{"s": "desc"}, {"svc.version": "asc"}]`),
		Page:   index.PageInput{Size: &size},
	}
	query := func() string {
		t.Helper()
		res, err := e.Query(ref, "big", in, QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(docIDs(res.Records), ",")
	}
	if s, _ := storeOf(t, e, ref, "big"); s != nil {
		t.Fatal("a store before the first query")
	}
	first := query()
	if first == "" {
		t.Fatal("the first query found nothing")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, building := storeOf(t, e, ref, "big")
		if s != nil && !building {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no store after 20 s (building %v)", building)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if again := query(); again != first {
		t.Fatalf("with the store:\n%s\nfrom storage:\n%s", again, first)
	}

	// A summary of a table without its store builds it first.
	e.opts.BackgroundBuildRows = 1
	if _, err := e.Summarize(ref, "small", index.SummarizeInput{Columns: json.RawMessage(`["n"]`)}, ""); err != nil {
		t.Fatal(err)
	}
	if s, _ := storeOf(t, e, ref, "small"); s == nil {
		t.Fatal("no store after a summary")
	}

	// Below the threshold the first query builds the store.
	e.opts.BackgroundBuildRows = 500
	if _, err := e.CreateTable(ref, "tiny"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Query(ref, "tiny", index.QueryInput{}, QueryOptions{}); err != nil {
		t.Fatal(err)
	}
	if s, building := storeOf(t, e, ref, "tiny"); s == nil || building {
		t.Fatalf("store %v, building %v after the first query of a small table", s != nil, building)
	}
}

// TestBorrowedStore: a branch forked from a parent with a column store
// borrows it while neither writes the table, and every branch answers with
// its own rows once either does.
func TestBorrowedStore(t *testing.T) {
	e, main := recFixture(t, map[string][]ColumnDef{"t": {{Name: "n", Type: TypeInt}}})
	var batch []map[string]any
	for i := range 40 {
		batch = append(batch, map[string]any{"id": fmt.Sprintf("r%02d", i), "n": json.Number(fmt.Sprint(i % 5))})
	}
	if _, err := e.BulkInsert(main, "t", batch); err != nil {
		t.Fatal(err)
	}
	on := func(name string) Ref { r := main; r.Branch = name; return r }
	fork := func(name, from string) Ref {
		t.Helper()
		if err := e.CreateBranch(on(name), CreateBranchRequest{From: from}); err != nil {
			t.Fatal(err)
		}
		return on(name)
	}
	// ids answers the branch's rows with n = 4, by id.
	ids := func(ref Ref) string {
		t.Helper()
		res, err := e.Query(ref, "t", index.QueryInput{Filter: json.RawMessage(`{"n": 4}`)}, QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(docIDs(res.Records), ",")
	}
	set := func(ref Ref, id string, n int) {
		t.Helper()
		if _, err := e.WriteOne(ref, Op{Kind: OpUpdate, Table: "t", ID: id, Values: map[string]any{"n": json.Number(fmt.Sprint(n))}}); err != nil {
			t.Fatal(err)
		}
	}
	store := func(ref Ref) *tableStore {
		t.Helper()
		s, _ := storeOf(t, e, ref, "t")
		return s
	}
	want := "r04,r09,r14,r19,r24,r29,r34,r39"
	if got := ids(main); got != want {
		t.Fatalf("main: %s", got)
	}

	a := fork("a", "main")
	b := fork("b", "a")
	if got := ids(a); got != want || store(a) != store(main) {
		t.Fatalf("a: %s, borrowed %v", got, store(a) == store(main))
	}
	if got := ids(b); got != want || store(b) != store(main) {
		t.Fatalf("b: %s, borrowed %v", got, store(b) == store(main))
	}

	// A write of the owner ends every loan; the children keep their rows.
	set(main, "r00", 4)
	if store(a) != nil || store(b) != nil {
		t.Fatal("a loan outlived a write of the owner")
	}
	if got := ids(main); got != "r00,"+want {
		t.Fatalf("main after its write: %s", got)
	}
	for _, r := range []Ref{a, b} {
		if got := ids(r); got != want || store(r) == store(main) {
			t.Fatalf("%s after main's write: %s", r.Branch, got)
		}
	}

	// A child forked after that write borrows again until it writes.
	c := fork("c", "main")
	if got := ids(c); got != "r00,"+want || store(c) != store(main) {
		t.Fatalf("c: %s", got)
	}
	set(c, "r04", 0)
	if store(c) != nil {
		t.Fatal("a borrower kept the store after its own write")
	}
	if got := ids(c); got != "r00,r09,r14,r19,r24,r29,r34,r39" {
		t.Fatalf("c after its write: %s", got)
	}
	if got := ids(main); got != "r00,"+want {
		t.Fatalf("main after c's write: %s", got)
	}

	// A parent written after the fork, or another schema, lends nothing.
	set(main, "r01", 4)
	d := fork("d", "main")
	set(main, "r02", 4)
	if got := ids(d); got != "r00,r01,"+want || store(d) == store(main) {
		t.Fatalf("d: %s", got)
	}
	f := fork("f", "main")
	if _, err := e.AddColumn(f, "t", ColumnDef{Name: "extra", Type: TypeString}); err != nil {
		t.Fatal(err)
	}
	if got := ids(f); got != "r00,r01,r02,"+want || store(f) == store(main) {
		t.Fatalf("f: %s", got)
	}
}
