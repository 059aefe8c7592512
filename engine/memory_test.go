package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/engine/internal/memstore"
)

// memFixture is an engine with table t (n int, s string) of rows records on
// main, each with n = its index.
func memFixture(t *testing.T, rows int) (*Engine, Ref) {
	t.Helper()
	e, ref := recFixture(t, map[string][]ColumnDef{"t": {{Name: "n", Type: TypeInt}, {Name: "s", Type: TypeString}}})
	for at := 0; at < rows; at += MaxBulkRecords {
		var batch []map[string]any
		for i := at; i < min(rows, at+MaxBulkRecords); i++ {
			batch = append(batch, map[string]any{"id": fmt.Sprintf("r%05d", i), "n": json.Number(fmt.Sprint(i)), "s": fmt.Sprintf("s%d", i%13)})
		}
		if _, err := e.BulkInsert(ctx, ref, "t", batch); err != nil {
			t.Fatal(err)
		}
	}
	return e, ref
}

// sumOf summarizes the sum of n and the count of the rows of table t.
func sumOf(t *testing.T, e *Engine, ref Ref) (sum, count float64) {
	t.Helper()
	res, err := e.Summarize(ctx, ref, "t", SummarizeRequest{Summaries: []Summary{
		{Name: "total", Function: "sum", Column: "n"}, {Name: "rows", Function: "count", Column: "*"}}})
	if err != nil {
		t.Fatalf("summarize %s: %v", ref.Branch, err)
	}
	row := res.Rows[0]
	return toFloat(t, row.Summaries[0]), toFloat(t, row.Summaries[1])
}

func toFloat(t *testing.T, v any) float64 {
	t.Helper()
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case int:
		return float64(x)
	}
	t.Fatalf("not a number: %#v", v)
	return 0
}

func on(ref Ref, branch string) Ref { ref.Branch = branch; return ref }

// TestMemoryBudget reads ten branches, each of which wrote a row of its
// own (so that each needs a store of its own), twice over, under a budget
// that holds about two stores: every answer is right, the structures are
// evicted and built again, and after every request the budget is kept.
func TestMemoryBudget(t *testing.T) {
	const rows = 3000
	e, main := memFixture(t, rows)
	base := float64(rows * (rows - 1) / 2)
	if sum, _ := sumOf(t, e, main); sum != base {
		t.Fatalf("main: sum %v, want %v", sum, base)
	}
	one := e.MemoryStats().Kinds["column_store"].Used
	if one <= 0 {
		t.Fatalf("no column store counted after a summary: %+v", e.MemoryStats())
	}
	limit := 5 * one / 2
	e.mem.Budget().SetLimit(limit)
	const branches = 10
	for i := range branches {
		b := fmt.Sprintf("b%d", i)
		if err := e.Branches().Create(on(main, b), CreateBranchRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.WriteOne(on(main, b), Op{Kind: OpUpdate, Table: "t", ID: "r00000", Values: map[string]any{"n": json.Number(fmt.Sprint(1000000 + i))}}); err != nil {
			t.Fatal(err)
		}
	}
	for pass := range 2 {
		for i := range branches {
			sum, count := sumOf(t, e, on(main, fmt.Sprintf("b%d", i)))
			if want := base + float64(1000000+i); sum != want || count != rows {
				t.Fatalf("pass %d, b%d: sum %v count %v, want %v %v", pass, i, sum, count, want, rows)
			}
			if s := e.MemoryStats(); s.Used > limit {
				t.Fatalf("pass %d, b%d: %d bytes used, over the limit of %d", pass, i, s.Used, limit)
			}
		}
	}
	s := e.MemoryStats()
	if s.Evictions == 0 || s.EvictedBytes == 0 {
		t.Fatalf("no eviction under a budget of two stores: %+v", s)
	}
	if k := s.Kinds["column_store"]; k.Evictions == 0 || k.EvictedBytes == 0 || k.Structures == 0 || k.Used == 0 {
		t.Fatalf("column stores: %+v", k)
	}
	var used, evictions int64
	for _, k := range s.Kinds {
		used += k.Used
		evictions += k.Evictions
	}
	if used != s.Used || evictions != s.Evictions || s.Limit != limit {
		t.Fatalf("kinds %+v do not add up to %+v", s.Kinds, s)
	}
}

// TestStoresShareAfterRestart: branches that have not written a table
// since their fork, and whose parents have not either, read their
// parent's column store, also after the data directory is reopened; a
// write of either side ends it.
func TestStoresShareAfterRestart(t *testing.T) {
	db := openTestDB(t, Options{})
	table := testTables[0]
	for i := range 50 {
		if _, err := db.e.WriteOne(db.ref("main"), Op{Kind: OpInsert, Table: table, ID: fmt.Sprintf("r%02d", i),
			Values: map[string]any{"n": json.Number(fmt.Sprint(i))}}); err != nil {
			t.Fatal(err)
		}
	}
	fork := func(name, from string) {
		t.Helper()
		if err := db.e.Branches().Create(db.ref(name), CreateBranchRequest{From: from}); err != nil {
			t.Fatal(err)
		}
	}
	fork("a", "main")
	fork("b", "a")
	fork("c", "main")
	if _, err := db.e.WriteOne(db.ref("c"), Op{Kind: OpUpdate, Table: table, ID: "r00", Values: map[string]any{"n": json.Number("99")}}); err != nil {
		t.Fatal(err)
	}
	store := func(branch string) *memstore.TableStore {
		t.Helper()
		if _, err := db.e.Summarize(ctx, db.ref(branch), table, SummarizeRequest{Columns: []string{"n"}}); err != nil {
			t.Fatal(err)
		}
		d, b, tb, err := db.e.resolveTable(db.ref(branch), table)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := d.Peek(b, tb)
		if s == nil {
			t.Fatalf("%s: no store after a summary", branch)
		}
		return s
	}
	check := func(when string) {
		t.Helper()
		m := store("main")
		if store("a") != m || store("b") != m {
			t.Fatalf("%s: a and b do not share main's store", when)
		}
		if store("c") == m {
			t.Fatalf("%s: c shares main's store after writing the table", when)
		}
	}
	check("before the restart")
	db.reopen()
	check("after the restart")
	if _, err := db.e.WriteOne(db.ref("main"), Op{Kind: OpDelete, Table: table, ID: "r01"}); err != nil {
		t.Fatal(err)
	}
	if store("a") == store("main") {
		t.Fatal("a shares main's store after main wrote the table")
	}
	if store("b") != store("a") {
		t.Fatal("b does not share a's store")
	}
}

// TestDeletingFreesStructures: deleting a branch, a table or a database
// takes their structures out of the budget.
func TestDeletingFreesStructures(t *testing.T) {
	e, main := memFixture(t, 500)
	if _, err := e.Schema().CreateTable(main, "u"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Schema().AddColumn(main, "u", ColumnDef{Name: "n", Type: TypeInt}); err != nil {
		t.Fatal(err)
	}
	if err := e.Branches().Create(on(main, "dev"), CreateBranchRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.WriteOne(on(main, "dev"), Op{Kind: OpDelete, Table: "t", ID: "r00001"}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"main", "dev"} {
		sumOf(t, e, on(main, b))
		if _, err := e.Summarize(ctx, on(main, b), "u", SummarizeRequest{Columns: []string{"n"}}); err != nil {
			t.Fatal(err)
		}
	}
	before := e.MemoryStats()
	if before.Structures == 0 || before.Used == 0 {
		t.Fatalf("no structure after summaries: %+v", before)
	}
	if err := e.Branches().Delete(on(main, "dev")); err != nil {
		t.Fatal(err)
	}
	afterBranch := e.MemoryStats()
	if afterBranch.Used >= before.Used || afterBranch.Structures >= before.Structures {
		t.Fatalf("deleting a branch freed nothing: %+v, then %+v", before, afterBranch)
	}
	if _, err := e.Schema().DeleteTable(main, "t"); err != nil {
		t.Fatal(err)
	}
	afterTable := e.MemoryStats()
	if afterTable.Used >= afterBranch.Used || afterTable.Structures >= afterBranch.Structures {
		t.Fatalf("deleting a table freed nothing: %+v, then %+v", afterBranch, afterTable)
	}
	if err := e.DeleteDatabase(main.Workspace, main.Database); err != nil {
		t.Fatal(err)
	}
	if s := e.MemoryStats(); s.Used != 0 || s.Structures != 0 {
		t.Fatalf("deleting the database left %+v", s)
	}
}

// TestLongReadDoesNotHoldWrites: a reader holding a store for as long as
// it likes holds back no write of the table and keeps seeing its snapshot;
// a query meanwhile sees the write (reading storage), and a summary, which
// must have the store, waits for the reader to be done and then sees it.
func TestLongReadDoesNotHoldWrites(t *testing.T) {
	e, main := memFixture(t, 200)
	sum0, _ := sumOf(t, e, main)
	src, release, err := e.openSource(ctx, main, "t", memstore.Need{Store: memstore.Required})
	if err != nil {
		t.Fatal(err)
	}
	if src.store == nil {
		t.Fatal("no store for a required reader")
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.WriteOne(main, Op{Kind: OpUpdate, Table: "t", ID: "r00000", Values: map[string]any{"n": json.Number("1000")}})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write waited for a reader")
	}
	if v := src.store.Column(src.t.ByPath["n"].ID).Get(src.rowOf(t, "r00000")); v.Int != 0 {
		t.Fatalf("the reader's store changed under it: n = %d", v.Int)
	}
	size := 200
	res, err := e.Query(ctx, main, "t", QueryRequest{Filter: mustFilter(`{"n": {"$ge": 1000}}`), Page: PageInput{Size: &size}}, QueryOptions{})
	if err != nil || len(res.Records) != 1 || res.Records[0].ID != "r00000" {
		t.Fatalf("a query during the long read: %v", err)
	}
	summed := make(chan float64, 1)
	go func() {
		sum, _ := sumOf(t, e, main)
		summed <- sum
	}()
	select {
	case sum := <-summed:
		t.Fatalf("a summary did not wait for the store's reader: sum %v", sum)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	select {
	case sum := <-summed:
		if sum != sum0+1000 {
			t.Fatalf("the summary that waited: sum %v, want %v", sum, sum0+1000)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the summary still waits after the long read")
	}
	if sum, _ := sumOf(t, e, main); sum != sum0+1000 {
		t.Fatalf("a summary after the long read: sum %v, want %v", sum, sum0+1000)
	}
}

// rowOf returns the row id of a record of the source's table.
func (s *source) rowOf(t *testing.T, id string) uint32 {
	t.Helper()
	rows, err := s.Rows([]string{id})
	if err != nil || rows.GetCardinality() != 1 {
		t.Fatalf("row of %s: %v %v", id, rows, err)
	}
	return rows.Minimum()
}

// TestBuildStopsWithContext: the build a summary waits for stops when the
// request's context ends, and the next summary builds it.
func TestBuildStopsWithContext(t *testing.T) {
	e, main := memFixture(t, 2000)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.Summarize(cancelled, main, "t", SummarizeRequest{Columns: []string{"s"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("summary with an ended context: %v", err)
	}
	if s := e.MemoryStats(); s.Structures != 0 && s.Kinds["column_store"].Used != 0 {
		t.Fatalf("an abandoned build left a store: %+v", s)
	}
	if sum, count := sumOf(t, e, main); count != 2000 || sum != 2000*1999/2 {
		t.Fatalf("sum %v count %v after an abandoned build", sum, count)
	}
}

// TestPlanMemory shares out a limit: an eighth for the block cache (at
// most DefaultCacheSize), an eighth for the memtables the storage engine
// may hold, a quarter in reserve, the rest for the derived structures; no
// limit keeps the defaults and no budget.
func TestPlanMemory(t *testing.T) {
	p := PlanMemory(1<<30, 0)
	want := MemoryPlan{Limit: 1 << 30, CacheSize: 128 << 20, MemtableSize: 32 << 20, Memtables: 128 << 20,
		Reserve: 256 << 20, Derived: 512 << 20, GoLimit: 1 << 30}
	if manualStorageMemory {
		want.GoLimit = 768 << 20
	}
	if p != want {
		t.Errorf("1GiB: %+v, want %+v", p, want)
	}
	if p := PlanMemory(64<<30, 0); p.CacheSize != DefaultCacheSize || p.Derived != 64<<30-DefaultCacheSize-256<<20-16<<30 {
		t.Errorf("64GiB: %+v", p)
	}
	if p := PlanMemory(128<<20, 0); p.Derived != 32<<20 || p.MemtableSize != 4<<20 || p.GoLimit < p.Derived+p.Reserve {
		t.Errorf("128MiB: %+v", p)
	}
	if p := PlanMemory(0, 0); p.CacheSize != DefaultCacheSize || p.Derived != 0 || p.GoLimit != 0 || p.Memtables != heldMemtables*maxMemtableSize {
		t.Errorf("no limit: %+v", p)
	}
}

// TestPlanMemoryWithinLimit checks that the shares of every limit from
// 256 MiB up fit in it, counting every memtable the storage engine may
// hold, and that the Go runtime's limit leaves room for what the storage
// engine holds outside the Go heap.
func TestPlanMemoryWithinLimit(t *testing.T) {
	for limit := int64(256 << 20); limit <= 64<<30; limit += limit / 3 {
		for _, cache := range []int64{0, limit / 2} {
			p := PlanMemory(limit, cache)
			if p.Memtables != heldMemtables*p.MemtableSize {
				t.Fatalf("%d: %d memtables of %d counted as %d", limit, heldMemtables, p.MemtableSize, p.Memtables)
			}
			if sum := p.CacheSize + p.Memtables + p.Reserve + p.Derived; sum > limit {
				t.Fatalf("%d (cache %d): the shares take %d: %+v", limit, cache, sum, p)
			}
			offHeap := int64(0)
			if manualStorageMemory {
				offHeap = p.CacheSize + p.Memtables
			}
			if p.GoLimit+offHeap > limit {
				t.Fatalf("%d (cache %d): Go limit %d and %d outside the heap: %+v", limit, cache, p.GoLimit, offHeap, p)
			}
		}
	}
}

// TestIDFiltersUnderBudget checks that the writers' filters of table ids
// are counted by the memory budget, that the budget may drop them, and
// that a write after that still finds the ids the table holds.
func TestIDFiltersUnderBudget(t *testing.T) {
	const rows = 3000
	e, main := memFixture(t, rows)
	k := e.MemoryStats().Kinds["id_filter"]
	if k.Used <= 0 || k.Structures != 1 {
		t.Fatalf("id filters after a load of %d rows: %+v", rows, k)
	}
	e.mem.Budget().SetLimit(1)
	e.mem.Reclaim()
	e.mem.Budget().SetLimit(0)
	if k := e.MemoryStats().Kinds["id_filter"]; k.Used != 0 || k.Evictions == 0 {
		t.Fatalf("id filters after the budget dropped them: %+v", k)
	}
	_, err := e.BulkInsert(ctx, main, "t", []map[string]any{{"id": "new", "n": json.Number("1")}, {"id": "r00042", "n": json.Number("2")}})
	if err == nil || !strings.Contains(err.Error(), "record [r00042] already exists") {
		t.Fatalf("insert of an id the table holds, its filter dropped: %v", err)
	}
	if k := e.MemoryStats().Kinds["id_filter"]; k.Used <= 0 {
		t.Fatalf("id filters not counted once built again: %+v", k)
	}
}

// TestBlockCacheBesideMemtables fills the storage engine's cache with
// blocks between loads and checks that they take the plan's block cache
// beside the memtables, which Pebble charges to the same cache, and that
// the cache and the memtables stay within what the plan gives them.
func TestBlockCacheBesideMemtables(t *testing.T) {
	e, err := Open(t.TempDir(), Options{MemoryLimit: 128 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	plan := e.plan
	if plan.CacheSize != 16<<20 || plan.MemtableSize != 4<<20 {
		t.Fatalf("plan %+v", plan)
	}
	// Twice the block cache of values under keys of their own, written in
	// rounds flushed one by one (Pebble grows its memtables to their full
	// size over its first flushes), then read back: the blocks read last
	// stay.
	prefix := []byte{0xfe, 'b', 'c'}
	val := make([]byte, 1000)
	n := int(2 * plan.CacheSize / int64(len(val)))
	key := func(i int) []byte { return fmt.Appendf(slices.Clone(prefix), "%08d", i) }
	const rounds = 10
	for r := range rounds {
		b := e.pdb.NewBatch()
		for i := r * n / rounds; i < (r+1)*n/rounds; i++ {
			if err := b.Set(key(i), val, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		if err := e.pdb.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		_, closer, err := e.pdb.Get(key(i))
		if err != nil {
			t.Fatal(err)
		}
		closer.Close()
	}
	m := e.pdb.Metrics()
	held := m.BlockCache.Size
	if held < plan.CacheSize*9/10 {
		t.Errorf("blocks take %d of the cache, want about %d beside %d memtables of %d", held, plan.CacheSize, m.MemTable.Count, plan.MemtableSize)
	}
	if total := held + int64(m.MemTable.Count)*plan.MemtableSize; total > plan.CacheSize+plan.Memtables {
		t.Errorf("blocks %d and %d memtables of %d take more than the plan's %d", held, m.MemTable.Count, plan.MemtableSize, plan.CacheSize+plan.Memtables)
	}
}
