package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine/internal/memstore"
)

// storeOf returns the column store of a table of a branch and whether one
// is being built in the background.
func storeOf(t *testing.T, e *Engine, ref Ref, table string) (*memstore.TableStore, bool) {
	t.Helper()
	d, b, tb, err := e.resolveTable(ref, table)
	if err != nil {
		t.Fatal(err)
	}
	d.RLockStores()
	defer d.RUnlockStores()
	k := storeKey{Branch: b.ID, Table: tb.ID}
	return d.Store(k), d.Building(k)
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
	e.mem.SetBackgroundBuildRows(500)
	fill := func(table string, rows int) {
		var batch []map[string]any
		for i := range rows {
			v := map[string]any{"n": json.Number(fmt.Sprint(i % 7))}
			if table == "big" {
				v["s"] = fmt.Sprintf("s%03d", i%50)
			}
			batch = append(batch, v)
		}
		if _, err := e.BulkInsert(context.Background(), ref, table, batch); err != nil {
			t.Fatal(err)
		}
	}
	fill("big", 800)
	fill("small", 100)

	size := 50
	in := QueryRequest{
		Filter: mustFilter(`{"n": {"$ge": 3}, "s": {"$startsWith": "s01"}}`),
		Sort:   mustSort(`[{"s": "desc"}, {"svc.version": "asc"}]`),
		Page:   PageInput{Size: &size},
	}
	query := func() string {
		t.Helper()
		res, err := e.Query(ctx, ref, "big", in, QueryOptions{})
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
	e.mem.SetBackgroundBuildRows(1)
	if _, err := e.Summarize(ctx, ref, "small", SummarizeRequest{Columns: []string{"n"}}); err != nil {
		t.Fatal(err)
	}
	if s, _ := storeOf(t, e, ref, "small"); s == nil {
		t.Fatal("no store after a summary")
	}

	// Below the threshold the first query builds the store.
	e.mem.SetBackgroundBuildRows(500)
	if _, err := e.Schema().CreateTable(ref, "tiny"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Query(ctx, ref, "tiny", QueryRequest{}, QueryOptions{}); err != nil {
		t.Fatal(err)
	}
	if s, building := storeOf(t, e, ref, "tiny"); s == nil || building {
		t.Fatalf("store %v, building %v after the first query of a small table", s != nil, building)
	}
}

// TestBorrowedStore: a branch forked from a parent with a column store
// borrows it while neither writes the table, and every branch answers with
// its own rows once either does. The table is large enough for the default
// order to walk the id map, which a borrower reads in its owner's layer.
func TestBorrowedStore(t *testing.T) {
	e, main := recFixture(t, map[string][]ColumnDef{"t": {{Name: "n", Type: TypeInt}}})
	const rows = 6000
	model := map[string]map[string]int{"main": {}} // branch → id → n
	for at := 0; at < rows; at += 1000 {
		var batch []map[string]any
		for i := at; i < at+1000; i++ {
			id := fmt.Sprintf("r%04d", i)
			model["main"][id] = i % 5
			batch = append(batch, map[string]any{"id": id, "n": json.Number(fmt.Sprint(i % 5))})
		}
		if _, err := e.BulkInsert(context.Background(), main, "t", batch); err != nil {
			t.Fatal(err)
		}
	}
	on := func(name string) Ref { r := main; r.Branch = name; return r }
	fork := func(name, from string) Ref {
		t.Helper()
		if err := e.Branches().Create(on(name), CreateBranchRequest{From: from}); err != nil {
			t.Fatal(err)
		}
		model[name] = maps.Clone(model[from])
		return on(name)
	}
	set := func(ref Ref, id string, n int) {
		t.Helper()
		if _, err := e.WriteOne(ref, Op{Kind: OpUpdate, Table: "t", ID: id, Values: map[string]any{"n": json.Number(fmt.Sprint(n))}}); err != nil {
			t.Fatal(err)
		}
		model[ref.Branch][id] = n
	}
	// check compares, on a branch, the rows with n = 4 (a heap over a few
	// candidates) and the first page of the rows with n ≥ 1 (a walk of
	// the id map) with the model.
	check := func(ref Ref) {
		t.Helper()
		for _, c := range []struct {
			filter string
			keep   func(n int) bool
			size   int
		}{
			{`{"n": 4}`, func(n int) bool { return n == 4 }, 1000},
			{`{"n": {"$ge": 1}}`, func(n int) bool { return n >= 1 }, 20},
		} {
			var want []string
			for id, n := range model[ref.Branch] {
				if c.keep(n) {
					want = append(want, id)
				}
			}
			slices.Sort(want)
			want = want[:min(len(want), c.size)]
			size := c.size
			res, err := e.Query(ctx, ref, "t", QueryRequest{Filter: mustFilter(c.filter), Page: PageInput{Size: &size}},
				QueryOptions{MaxSize: 1000, NoDepthLimit: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := docIDs(res.Records); !slices.Equal(got, want) {
				t.Fatalf("%s %s:\n%v\nwant\n%v", ref.Branch, c.filter, got, want)
			}
		}
	}
	store := func(ref Ref) *memstore.TableStore {
		t.Helper()
		s, _ := storeOf(t, e, ref, "t")
		return s
	}
	check(main)

	a := fork("a", "main")
	b := fork("b", "a")
	for _, r := range []Ref{a, b} {
		if check(r); store(r) != store(main) {
			t.Fatalf("%s did not borrow main's store", r.Branch)
		}
	}

	// A write of the owner ends every loan; the children keep their rows.
	set(main, "r0000", 4)
	if store(a) != nil || store(b) != nil {
		t.Fatal("a loan outlived a write of the owner")
	}
	check(main)
	for _, r := range []Ref{a, b} {
		if check(r); store(r) == store(main) {
			t.Fatalf("%s still borrows after main's write", r.Branch)
		}
	}

	// A child forked after that write borrows again until it writes.
	c := fork("c", "main")
	if check(c); store(c) != store(main) {
		t.Fatal("c did not borrow main's store")
	}
	set(c, "r0004", 0)
	if store(c) != nil {
		t.Fatal("a borrower kept the store after its own write")
	}
	check(c)
	check(main)

	// A parent written after the fork, or another schema, lends nothing;
	// a schema change of the owner ends its loans.
	set(main, "r0001", 4)
	d := fork("d", "main")
	set(main, "r0002", 4)
	if check(d); store(d) == store(main) {
		t.Fatal("d borrowed a store written since its fork")
	}
	f := fork("f", "main")
	if _, err := e.Schema().AddColumn(f, "t", ColumnDef{Name: "extra", Type: TypeString}); err != nil {
		t.Fatal(err)
	}
	if check(f); store(f) == store(main) {
		t.Fatal("f borrowed a store of another schema")
	}
	g := fork("g", "main")
	if check(g); store(g) != store(main) {
		t.Fatal("g did not borrow main's store")
	}
	if _, err := e.Schema().AddColumn(main, "t", ColumnDef{Name: "other", Type: TypeString}); err != nil {
		t.Fatal(err)
	}
	if store(g) != nil {
		t.Fatal("a loan outlived a schema change of the owner")
	}
	check(g)
	check(main)
}
