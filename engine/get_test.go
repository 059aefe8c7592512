package engine

import (
	"context"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/index"
)

// viewRecord converts a view to the Record Get returns for the same read.
func viewRecord(v *RecordView) *Record {
	if v == nil {
		return nil
	}
	r := &Record{ID: v.ID, Version: v.Version, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt, Values: map[string]any{}}
	for i := range v.Fields {
		index.SetPath(r.Values, v.Fields[i].Path(), v.Fields[i].Any())
	}
	return r
}

// checkView compares one cached point read with the model.
func (m *modelRun) checkView(c *RecordCache, branch, table, id string) {
	m.t.Helper()
	m.stats["view"]++
	ref := m.db.ref(branch)
	v, err := m.db.e.GetView(c, ref, table, id)
	if err != nil && CodeOf(err) != CodeNotFound {
		m.fatalf("view %s %s/%s: %v", branch, table, id, err)
	}
	want := m.live[branch][table][id]
	if d := diffRecord(viewRecord(v), id, want); d != "" {
		m.fatalf("view %s %s/%s: %s", branch, table, id, d)
	}
	// ReadView, through the cache and without: a view of storage's
	// buffer is compared while WriteView runs, which is all it lasts.
	for _, rc := range []*RecordCache{c, nil} {
		var d string
		err := m.db.e.ReadView(rc, ref, table, id, ViewFunc(func(v *RecordView) error {
			d = diffRecord(viewRecord(v), id, want)
			return nil
		}))
		if err != nil && CodeOf(err) != CodeNotFound {
			m.fatalf("ReadView %s %s/%s: %v", branch, table, id, err)
		}
		if err != nil {
			d = diffRecord(nil, id, want)
		}
		if d != "" {
			m.fatalf("ReadView %s %s/%s (cache %v): %s", branch, table, id, rc != nil, d)
		}
	}
}

// buildColumnStore builds the column store of a table of a branch, as a
// summary does.
func buildColumnStore(tb testing.TB, e *Engine, ref Ref, table string) {
	tb.Helper()
	sum := SummarizeRequest{Summaries: []Summary{{Name: "c", Function: "count", Column: "*"}}}
	if _, err := e.Summarize(context.Background(), ref, table, sum); err != nil && CodeOf(err) != CodeNotFound {
		tb.Fatal(err)
	}
}

// checkViews reads every pooled id and some generated ones of every table
// of a branch through the cache. Now and then a summary builds the
// table's column store first, whose id index point reads then use.
func (m *modelRun) checkViews(c *RecordCache, branch string) {
	m.t.Helper()
	for _, table := range testTables {
		if m.rng.IntN(10) == 0 {
			buildColumnStore(m.t, m.db.e, m.db.ref(branch), table)
		}
		for i := range modelIDPool {
			m.checkView(c, branch, table, "r"+strconv.Itoa(i))
		}
		for i := 0; i < 5 && len(m.gen) > 0; i++ {
			m.checkView(c, branch, table, m.gen[len(m.gen)-1-m.rng.IntN(min(len(m.gen), 50))])
		}
	}
}

// TestGetViewModel runs the random operations of TestBranchModel (writes,
// transactions, forks, branch deletions, flattening, reopens) and after
// every one reads the ids of the branch it touched and of another branch
// through one RecordCache: a cached read must never differ from the model.
// -seed reproduces a run; -model.ops sets its length.
func TestGetViewModel(t *testing.T) {
	n := *modelOps
	if n == 0 {
		n = 10000
		if testing.Short() {
			n = 2000
		}
	}
	m := newModelRun(t)
	c := NewRecordCache(1 << 20)
	for m.step = 1; m.step <= n; m.step++ {
		if m.step%(n/3+1) == 0 {
			m.logf("reopen")
			m.db.reopen()
		}
		branch := m.pick(m.liveNames())
		br := m.live[branch]
		switch r := m.rng.IntN(1000); {
		case r < 40:
			m.fork()
		case r < 60:
			m.deleteBranch()
		case r < 200:
			ops := make([]Op, 2+m.rng.IntN(5))
			for i := range ops {
				ops[i] = m.genOp(br, true)
			}
			m.write(branch, ops, false)
		default:
			m.write(branch, []Op{m.genOp(br, false)}, true)
		}
		if m.live[branch] != nil {
			m.checkViews(c, branch)
		}
		m.checkViews(c, m.pick(m.liveNames()))
	}
	t.Logf("seed %d, flatten depth %d: %d operations, %d cached reads", m.seed, m.depth, n, m.stats["view"])
}

// TestGetViewSchemaChanges: cached reads follow column renames, deletions
// and additions, and a table or branch deleted and created again under the
// same name.
func TestGetViewSchemaChanges(t *testing.T) {
	db := openTestDB(t, Options{})
	e, c := db.e, NewRecordCache(1<<20)
	main := db.ref("main")
	check := func(what string, ref Ref, table, id string) {
		t.Helper()
		want, werr := e.Get(ref, table, id)
		var first *RecordView
		for round := range 3 {
			v, err := e.GetView(c, ref, table, id)
			if CodeOf(err) != CodeOf(werr) {
				t.Fatalf("%s, read %d: error %v, want %v", what, round, err, werr)
			}
			if werr != nil {
				continue
			}
			got := viewRecord(v)
			if got.ID != want.ID || got.Version != want.Version || !got.UpdatedAt.Equal(want.UpdatedAt) || !reflect.DeepEqual(got.Values, want.Values) {
				t.Fatalf("%s, read %d: %+v, want %+v", what, round, got, want)
			}
			// A record read again is cached (RecordCache.Admit), and the
			// read after that comes from the cache: the same view, which
			// callers may keep what they derive from.
			if round == 2 && v != first {
				t.Fatalf("%s, read %d: a new view of a record not written since the last read", what, round)
			}
			first = v
		}
	}
	write := func(ref Ref, table, id string, values map[string]any) {
		t.Helper()
		db.clock.tick()
		if _, err := e.WriteOne(ref, Op{Kind: OpUpdate, Upsert: true, Table: table, ID: id, Values: values}); err != nil {
			t.Fatal(err)
		}
	}
	write(main, "items", "a", map[string]any{"name": "ann", "n": 1})
	check("written", main, "items", "a")
	write(main, "items", "a", map[string]any{"n": 2})
	check("updated", main, "items", "a")
	if _, err := e.Schema().RenameColumn(main, "items", "name", "title"); err != nil {
		t.Fatal(err)
	}
	check("column renamed", main, "items", "a")
	if _, err := e.Schema().DeleteColumn(main, "items", "n"); err != nil {
		t.Fatal(err)
	}
	check("column deleted", main, "items", "a")
	if _, err := e.Schema().AddColumn(main, "items", ColumnDef{Name: "n", Type: TypeString}); err != nil {
		t.Fatal(err)
	}
	check("column added", main, "items", "a")
	write(main, "items", "a", map[string]any{"n": "two"})
	check("new column written", main, "items", "a")

	if err := e.Branches().Create(db.ref("dev"), CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	dev := db.ref("dev")
	check("forked", dev, "items", "a")
	write(main, "items", "a", map[string]any{"title": "main only"})
	check("parent written after the fork: child", dev, "items", "a")
	check("parent written after the fork: parent", main, "items", "a")
	write(dev, "items", "a", map[string]any{"title": "dev only"})
	check("child written: child", dev, "items", "a")
	check("child written: parent", main, "items", "a")
	if err := e.Branches().Delete(dev); err != nil {
		t.Fatal(err)
	}
	check("branch deleted", dev, "items", "a")
	if err := e.Branches().Create(dev, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	check("branch created again", dev, "items", "a")

	if _, err := e.Schema().DeleteTable(main, "notes"); err != nil {
		t.Fatal(err)
	}
	check("table deleted", main, "notes", "a")
	if _, err := e.Schema().CreateTable(main, "notes"); err != nil {
		t.Fatal(err)
	}
	check("table created again", main, "notes", "a")
	if _, err := e.Schema().AddColumn(main, "notes", ColumnDef{Name: "name", Type: TypeString}); err != nil {
		t.Fatal(err)
	}
	write(main, "notes", "a", map[string]any{"name": "note"})
	check("new table written", main, "notes", "a")
	if _, err := e.WriteOne(main, Op{Kind: OpDelete, Table: "notes", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	check("record deleted", main, "notes", "a")
}

// TestGetViewConcurrentWrites: while a record is written over and over,
// cached reads never return a version older than one already acknowledged
// when the read started (run it with -race).
func TestGetViewConcurrentWrites(t *testing.T) {
	db := openTestDB(t, Options{})
	e, c, ref := db.e, NewRecordCache(1<<20), db.ref("main")
	if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "items", ID: "a", Values: map[string]any{"n": 0}}); err != nil {
		t.Fatal(err)
	}
	writes := 300
	if testing.Short() {
		writes = 100
	}
	var acked atomic.Uint64
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan string, 4)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				floor := acked.Load()
				v, err := e.GetView(c, ref, "items", "a")
				if err != nil {
					errs <- err.Error()
					return
				}
				n := int64(-1)
				for _, f := range v.Fields {
					if f.Path() == "n" {
						n = f.Value.Int
					}
				}
				if v.Version < floor || n != int64(v.Version) {
					errs <- "read version " + strconv.FormatUint(v.Version, 10) + " n " + strconv.FormatInt(n, 10) +
						" after version " + strconv.FormatUint(floor, 10) + " was acknowledged"
					return
				}
			}
		}()
	}
	for i := 1; i <= writes; i++ {
		res, err := e.WriteOne(ref, Op{Kind: OpUpdate, Table: "items", ID: "a", Values: map[string]any{"n": i}})
		if err != nil {
			t.Fatal(err)
		}
		acked.Store(res.Record.Version)
	}
	close(done)
	wg.Wait()
	select {
	case msg := <-errs:
		t.Fatal(msg)
	default:
	}
}

// TestReadRecordHint: a row hint that no longer names the record (another
// record's row, a deleted record's, a row never written) is checked
// against what the row holds, and the read falls back to the id map; the
// column store's hints follow deletes and inserts under a deleted id.
func TestReadRecordHint(t *testing.T) {
	db := openTestDB(t, Options{})
	e := db.e
	main := db.ref("main")
	write := func(kind OpKind, id string, n int) {
		t.Helper()
		db.clock.tick()
		op := Op{Kind: kind, Table: "items", ID: id}
		if kind != OpDelete {
			op.Values = map[string]any{"n": n}
		}
		if _, err := e.WriteOne(main, op); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []string{"a", "b", "c"} {
		write(OpInsert, id, i)
	}
	d, err := e.database(main.Workspace, main.Database)
	if err != nil {
		t.Fatal(err)
	}
	rowOf := func(id string) uint32 {
		t.Helper()
		_, b, tb, err := e.resolveTable(main, "items")
		if err != nil {
			t.Fatal(err)
		}
		ent, _, ok, err := layers.LookupID(e.pdb, d.ID, b.Lineage, tb.ID, id)
		if err != nil || !ok {
			t.Fatalf("id map of %s: %v %v", id, ok, err)
		}
		return ent.Row
	}
	rowA, rowB := rowOf("a"), rowOf("b")
	write(OpDelete, "b", 0)
	f := func(what, id string, h rowHint, wantRow uint32, wantErr Code) {
		t.Helper()
		d.Pin()
		defer d.Unpin()
		_, b, tb, err := e.resolveTable(main, "items")
		if err != nil {
			t.Fatal(err)
		}
		var rec codec.Record
		row, err := e.readRecordHinted(d, b, tb, id, h, &rec)
		if CodeOf(err) != wantErr {
			t.Fatalf("%s: error %v, want code %v", what, err, wantErr)
		}
		if err == nil && (row != wantRow || rec.ID != id) {
			t.Fatalf("%s: row %d id %q, want row %d id %q", what, row, rec.ID, wantRow, id)
		}
	}
	f("right row", "a", rowHint{rowA, true}, rowA, 0)
	f("another record's row", "c", rowHint{rowA, true}, rowOf("c"), 0)
	f("a deleted record's row", "c", rowHint{rowB, true}, rowOf("c"), 0)
	f("a row never written", "a", rowHint{1 << 30, true}, rowA, 0)
	f("deleted, hinted at its old row", "b", rowHint{rowB, true}, 0, CodeNotFound)

	// The column store: built by a summary, it tracks the writes after it.
	hintOnce := func(id string) (uint32, bool) {
		t.Helper()
		_, b, tb, err := e.resolveTable(main, "items")
		if err != nil {
			t.Fatal(err)
		}
		return d.RowOf(b, tb, id)
	}
	hint := func(id string) uint32 {
		t.Helper()
		for range 400 {
			if row, ok := hintOnce(id); ok {
				return row
			}
			time.Sleep(5 * time.Millisecond) // built in the background
		}
		t.Fatalf("no hint for %s", id)
		return 0
	}
	if row, ok := hintOnce("a"); ok {
		t.Fatalf("hint of a without a column store: row %d", row)
	}
	buildColumnStore(t, e, main, "items")
	if row := hint("a"); row != rowA {
		t.Fatalf("hint of a: row %d, want %d", row, rowA)
	}
	if row, ok := hintOnce("b"); ok {
		t.Fatalf("hint of deleted b: row %d", row)
	}
	write(OpInsert, "b", 7)
	if row := hint("b"); row != rowOf("b") || row == rowB {
		t.Fatalf("hint of b inserted again: row %d, want %d (not its old %d)", row, rowOf("b"), rowB)
	}
	write(OpDelete, "a", 0)
	if row, ok := hintOnce("a"); ok {
		t.Fatalf("hint of deleted a: row %d", row)
	}

	// A store evicted gives no hints: not even to a branch that found it
	// before, whose later writes it would not show.
	if _, ok := hintOnce("c"); !ok {
		t.Fatal("no hint of c before the eviction")
	}
	e.mem.Budget().SetLimit(1)
	e.mem.Budget().Reclaim()
	e.mem.Budget().SetLimit(0)
	if row, ok := hintOnce("c"); ok {
		t.Fatalf("hint of c from an evicted store: row %d", row)
	}
}

// TestGetViewBytesKeepsNoID: the id a read by bytes gives is not kept: the
// cache holds its own copy, and a caller may reuse the bytes at once.
func TestGetViewBytesKeepsNoID(t *testing.T) {
	db := openTestDB(t, Options{})
	e, c := db.e, NewRecordCache(1<<20)
	main := db.ref("main")
	for _, id := range []string{"ab", "zz"} {
		if _, err := e.WriteOne(main, Op{Kind: OpInsert, Table: "items", ID: id, Values: map[string]any{"n": 1}}); err != nil {
			t.Fatal(err)
		}
	}
	raw := []byte("ab")
	var cached *RecordView
	for range 2 { // read, then cached
		v, err := e.GetViewBytes(c, main, "items", raw)
		if err != nil {
			t.Fatal(err)
		}
		cached = v
	}
	if !cached.Cached() {
		t.Fatal("the second read was not cached")
	}
	copy(raw, "zz")
	v, err := e.GetView(c, main, "items", "ab")
	if err != nil || v != cached {
		t.Fatalf("read ab again: %+v %v, want the cached view", v, err)
	}
}
