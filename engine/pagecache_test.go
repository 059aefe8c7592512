package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/index"
)

// TestPagesThroughRecordCache reads pages of records through a record
// cache while writers insert, update and delete records of the same table
// on main and on its forks, and point reads fill the cache too, and checks
// every page against the same rows read from storage at the same
// snapshot: a page served from the cache must be the page storage holds,
// for every projection, whole records or some columns. Forks are made as
// the writers go, of main and of other forks, so that pages are read of
// forks that share their ancestor's rows (neither side has written the
// table since the fork), of forks whose sharing a write is ending, and of
// forks that have written the table. Once the writers are done, a page
// read twice comes from the cache the second time, and holds the very
// views point reads get, on a fresh fork as on main.
func TestPagesThroughRecordCache(t *testing.T) {
	e, main := cacheItems(t)
	const ids = 60
	values, idOf := cacheItemValues, cacheItemID
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range ids {
		if _, err := e.WriteOne(main, Op{Kind: OpInsert, Table: "items", ID: idOf(i), Values: values(rng)}); err != nil {
			t.Fatal(err)
		}
	}
	fork := func(from Ref, name string) Ref {
		t.Helper()
		ref := Ref{Workspace: from.Workspace, Database: from.Database, Branch: name}
		if err := e.Branches().Create(ref, CreateBranchRequest{From: from.Branch}); err != nil {
			t.Fatal(err)
		}
		return ref
	}
	dev := fork(main, "dev")
	// The branches pages are read of; forks join as they are made.
	var refsMu sync.Mutex
	refs := []Ref{main, dev}
	pick := func(rng *rand.Rand) Ref {
		refsMu.Lock()
		defer refsMu.Unlock()
		if rng.IntN(2) == 0 {
			return refs[len(refs)-1] // the newest fork: likely unwritten
		}
		return refs[rng.IntN(len(refs))]
	}
	var projections []*index.Projection
	for _, cols := range []string{`null`, `["s"]`, `["n","m"]`, `["svc.version","s"]`} {
		c, err := index.ReadColumns([]byte(cols))
		if err != nil {
			t.Fatal(err)
		}
		src, release, err := e.openSource(context.Background(), main, "items", memstore.Need{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := index.ParseColumns(src.it, c, src.tableByName)
		release()
		if err != nil {
			t.Fatalf("columns %s: %v", cols, err)
		}
		projections = append(projections, p)
	}

	// Small enough that pages and point reads evict each other.
	c := NewRecordCache(16 << 10)
	writes, pages := 300, 400
	if testing.Short() {
		writes, pages = 120, 150
	}
	var failed atomic.Bool
	fail := func(format string, args ...any) {
		if failed.CompareAndSwap(false, true) {
			t.Errorf(format, args...)
		}
	}
	var wg sync.WaitGroup
	var writing atomic.Int32
	writing.Store(2)
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(7, 8))
		for i := 0; writing.Load() > 0 && !failed.Load(); i++ {
			from := pick(rng)
			ref := Ref{Workspace: from.Workspace, Database: from.Database, Branch: fmt.Sprintf("f%d", i)}
			if err := e.Branches().Create(ref, CreateBranchRequest{From: from.Branch}); err != nil {
				fail("fork of %s: %v", from.Branch, err)
				return
			}
			refsMu.Lock()
			refs = append(refs, ref)
			refsMu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer writing.Add(-1)
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for range writes {
				if failed.Load() {
					return
				}
				ref, id := pick(rng), idOf(rng.IntN(ids))
				var err error
				switch rng.IntN(4) {
				case 0:
					_, err = e.WriteOne(ref, Op{Kind: OpDelete, Table: "items", ID: id})
				case 1:
					_, err = e.WriteOne(ref, Op{Kind: OpInsert, Table: "items", ID: id, Values: values(rng)})
				default:
					_, err = e.WriteOne(ref, Op{Kind: OpUpdate, Table: "items", ID: id, Values: values(rng)})
				}
				if err != nil && CodeOf(err) != CodeNotFound && CodeOf(err) != CodeAlreadyExists && CodeOf(err) != CodeConflict {
					fail("write %s on %s: %v", id, ref.Branch, err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(5, 6))
		for writing.Load() > 0 && !failed.Load() {
			ref := pick(rng)
			if _, err := e.GetView(c, ref, "items", idOf(rng.IntN(ids))); err != nil && CodeOf(err) != CodeNotFound {
				fail("point read on %s: %v", ref.Branch, err)
			}
		}
	}()
	// Pages checked, and those of forks that share their ancestor's rows;
	// whole cached views among them.
	var checked, cached, shared, sharedCached atomic.Int64
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 13))
			for range pages {
				if failed.Load() {
					return
				}
				ref := pick(rng)
				p := projections[rng.IntN(len(projections))]
				pg, err := pageBothWays(e, c, ref, p, rng)
				if err != nil {
					fail("page on %s: %v", ref.Branch, err)
					return
				}
				if msg := sameViews(pg.got, pg.want); msg != "" {
					fail("page of %d rows on %s (sharing its ancestor's rows: %v): through the cache %s", pg.n, ref.Branch, pg.shared, msg)
					return
				}
				checked.Add(1)
				if pg.shared {
					shared.Add(1)
				}
				for _, v := range pg.got {
					if v.Cached() {
						cached.Add(1)
						if pg.shared {
							sharedCached.Add(1)
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		return
	}
	// Whether pages of sharing forks find cached views depends on how the
	// writers run; the quiet part below and TestForkPagesAtTheirSnapshot
	// make sure they do.
	if checked.Load() == 0 || cached.Load() == 0 || shared.Load() == 0 {
		t.Fatalf("%d pages checked, %d whole cached views among them; %d of forks sharing rows, with %d cached views",
			checked.Load(), cached.Load(), shared.Load(), sharedCached.Load())
	}
	t.Logf("%d pages checked, %d whole cached views among them; %d of forks sharing rows, with %d cached views",
		checked.Load(), cached.Load(), shared.Load(), sharedCached.Load())

	// Quiet now: a page read twice is served from the cache, and its
	// views are those point reads get, on branches that have written the
	// table and on fresh forks (one of a fresh fork) sharing main's rows.
	big := NewRecordCache(1 << 20)
	quiet := fork(main, "quiet")
	for _, ref := range []Ref{main, dev, quiet, fork(quiet, "quieter")} {
		pg, err := pageBothWays(e, big, ref, projections[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		first := pg.got
		if pg, err = pageBothWays(e, big, ref, projections[0], nil); err != nil {
			t.Fatal(err)
		}
		again := pg.got
		if msg := sameViews(again, pg.want); msg != "" {
			t.Fatalf("%s: %s", ref.Branch, msg)
		}
		if fresh := ref.Branch != main.Branch && ref.Branch != dev.Branch; pg.shared != fresh {
			t.Fatalf("%s: sharing its ancestor's rows: %v", ref.Branch, pg.shared)
		}
		if len(first) == 0 || len(first) != len(again) {
			t.Fatalf("%s: pages of %d and %d records", ref.Branch, len(first), len(again))
		}
		for i := range first {
			if first[i] != again[i] || !first[i].Cached() {
				t.Fatalf("%s: record %s read again, not served from the cache", ref.Branch, first[i].ID)
			}
			v, err := e.GetView(big, ref, "items", first[i].ID)
			if err != nil {
				t.Fatal(err)
			}
			if v != first[i] {
				t.Fatalf("%s: point read of %s does not find the page's view", ref.Branch, first[i].ID)
			}
		}
	}
}

// bothWays is a page read through a record cache (got) and from storage
// (want) at one snapshot, of n rows asked for; shared says the branch read
// its ancestor's structures, sharing its rows.
type bothWays struct {
	got, want []*RecordView
	n         int
	shared    bool
}

// pageBothWays reads some rows of a table of a branch as views of the
// columns p selects, through the record cache c as Query does and from
// storage, at one snapshot; the rows are live and deleted ones in random
// order (every row, ascending, with rng nil).
func pageBothWays(e *Engine, c *RecordCache, ref Ref, p *index.Projection, rng *rand.Rand) (bothWays, error) {
	own := e.loadOwnEpoch(ref, "items", c)
	src, release, err := e.openSource(context.Background(), ref, "items", memstore.Need{})
	if err != nil {
		return bothWays{}, err
	}
	defer release()
	if rng != nil && rng.IntN(2) == 0 {
		// As long as a query takes: writes of the branch after the
		// snapshot have their time to land and be cached.
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
	}
	pc := src.cachedRecords(c, own)
	// The projection was parsed against main's table: the same columns.
	var rows []uint32
	for row := range uint32(256) {
		rows = append(rows, row)
	}
	if rng != nil {
		rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		rows = rows[:1+rng.IntN(len(rows))]
	}
	pg := bothWays{n: len(rows), shared: src.view.Root != src.b}
	if pg.got, err = src.views(rows, p, pc); err != nil {
		return bothWays{}, err
	}
	if pg.want, err = src.views(rows, p, pageCache{}); err != nil {
		return bothWays{}, err
	}
	return pg, nil
}

// sameViews describes how two pages of views differ, or is "".
func sameViews(got, want []*RecordView) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d records, from storage %d", len(got), len(want))
	}
	type field struct {
		Path  string
		Type  ColumnType
		Value any
	}
	flat := func(v *RecordView) []field {
		out := make([]field, len(v.Fields))
		for i, f := range v.Fields {
			out[i] = field{f.Path(), f.Type(), f.Value}
		}
		return out
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Version != w.Version || !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) ||
			!reflect.DeepEqual(flat(g), flat(w)) {
			return fmt.Sprintf("record %d is %s v%d %+v, from storage %s v%d %+v", i, g.ID, g.Version, flat(g), w.ID, w.Version, flat(w))
		}
	}
	return ""
}

// TestForkPagesAtTheirSnapshot reads pages of forks that share their
// parent's rows through a record cache with writes and point reads
// between the snapshot and the page read, in the order that tells an
// epoch of the fork's cache taken with the snapshot from one taken later:
// a write of the fork after its snapshot, whose new record a point read
// then caches, must not show in the page; a write of the parent leaves the
// fork's cached records in use.
func TestForkPagesAtTheirSnapshot(t *testing.T) {
	e, main := recFixture(t, map[string][]ColumnDef{"items": {{Name: "s", Type: TypeString}}})
	for i := range 8 {
		if _, err := e.WriteOne(main, Op{Kind: OpInsert, Table: "items", ID: fmt.Sprintf("r%d", i), Values: map[string]any{"s": "old"}}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := index.ReadColumns([]byte(`null`))
	if err != nil {
		t.Fatal(err)
	}
	c := NewRecordCache(1 << 20)
	// page reads every row of ref through c as Query does, with between
	// its snapshot and the page read; it checks the page against storage
	// at the snapshot and returns whether the fork shared its ancestor's
	// rows and how many views came from the cache.
	page := func(ref Ref, between func()) (shared bool, hits int) {
		t.Helper()
		own := e.loadOwnEpoch(ref, "items", c)
		src, release, err := e.openSource(context.Background(), ref, "items", memstore.Need{})
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		p, err := index.ParseColumns(src.it, all, src.tableByName)
		if err != nil {
			t.Fatal(err)
		}
		shared = src.view.Root != src.b
		between()
		rows := make([]uint32, 16)
		for i := range rows {
			rows[i] = uint32(i)
		}
		pc := src.cachedRecords(c, own)
		// Cached views are found before the read that puts them: count
		// them before.
		for _, row := range rows {
			if _, ok := pc.get(row, src.t); ok {
				hits++
			}
		}
		viewsThrough(t, src, rows, p, pc, ref.Branch)
		return shared, hits
	}
	update := func(ref Ref, id, s string) {
		t.Helper()
		if _, err := e.WriteOne(ref, Op{Kind: OpUpdate, Table: "items", ID: id, Values: map[string]any{"s": s}}); err != nil {
			t.Fatal(err)
		}
		// Read twice: a record read again is cached (RecordCache.Admit).
		for range 2 {
			if _, err := e.GetView(c, ref, "items", id); err != nil {
				t.Fatal(err)
			}
		}
	}
	fork := func(name string) Ref {
		ref := Ref{Workspace: main.Workspace, Database: main.Database, Branch: name}
		if err := e.Branches().Create(ref, CreateBranchRequest{From: main.Branch}); err != nil {
			t.Fatal(err)
		}
		return ref
	}
	nothing := func() {}

	a := fork("a")
	if shared, hits := page(a, nothing); !shared || hits != 0 {
		t.Fatalf("fresh fork: shared %v, %d cached views", shared, hits)
	}
	if shared, hits := page(a, nothing); !shared || hits != 8 {
		t.Fatalf("fork read again: shared %v, %d cached views, want 8", shared, hits)
	}
	// The fork writes after the snapshot, and a point read caches the new
	// record under the fork's cache: the page still shows the old one.
	if shared, _ := page(a, func() { update(a, "r1", "new") }); !shared {
		t.Fatal("fork not sharing before its first write")
	}
	// Its next page sees the write, from the cache, and the rest of the
	// fork's entries as they were.
	if shared, hits := page(a, nothing); shared || hits != 8 {
		t.Fatalf("fork after its write: shared %v, %d cached views, want 8", shared, hits)
	}

	// The parent writes after the snapshot of a fresh fork: the fork's
	// rows and cached records stay.
	b := fork("b")
	page(b, nothing)
	if shared, hits := page(b, func() { update(main, "r2", "main") }); !shared || hits != 8 {
		t.Fatalf("fork while its parent writes: shared %v, %d cached views, want 8", shared, hits)
	}
	if shared, hits := page(b, nothing); shared || hits != 8 {
		t.Fatalf("fork after its parent wrote: shared %v, %d cached views, want 8", shared, hits)
	}
}

// TestForkFindsParentRecords reads pages and records of forks through a
// record cache that holds their parent's: a fresh fork, sharing its
// parent's rows, is served the very views its parent's pages cached, by
// its pages and its point reads alike, also after a reopen (which loads
// the fork's table apart from its parent's); once the parent writes, the
// fork reads its own rows, not the parent's new ones; and a fork that
// renamed a column, which shares its parent's rows but not their views,
// is never served the parent's.
func TestForkFindsParentRecords(t *testing.T) {
	db := openTestDB(t, Options{})
	main := db.ref("main")
	const ids = 12
	for i := range ids {
		if _, err := db.e.WriteOne(main, Op{Kind: OpInsert, Table: "items", ID: cacheItemID(i),
			Values: map[string]any{"name": fmt.Sprintf("name %d", i), "n": json.Number(fmt.Sprint(i % 5))}}); err != nil {
			t.Fatal(err)
		}
	}
	cols, err := index.ReadColumns([]byte(`null`))
	if err != nil {
		t.Fatal(err)
	}
	var c *RecordCache
	// page reads every row of ref through c, checks it against storage
	// at the same snapshot, and returns it with whether ref shared its
	// ancestor's rows.
	page := func(ref Ref) ([]*RecordView, bool) {
		t.Helper()
		own := db.e.loadOwnEpoch(ref, "items", c)
		src, release, err := db.e.openSource(context.Background(), ref, "items", memstore.Need{})
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		p, err := index.ParseColumns(src.it, cols, src.tableByName)
		if err != nil {
			t.Fatal(err)
		}
		rows := make([]uint32, 2*ids)
		for i := range rows {
			rows[i] = uint32(i)
		}
		got := viewsThrough(t, src, rows, p, src.cachedRecords(c, own), ref.Branch)
		if len(got) != ids {
			t.Fatalf("%s: %d records, want %d", ref.Branch, len(got), ids)
		}
		return got, src.view.Root != src.b
	}
	fork := func(name string) Ref {
		t.Helper()
		ref := db.ref(name)
		if err := db.e.Branches().Create(ref, CreateBranchRequest{From: main.Branch}); err != nil {
			t.Fatal(err)
		}
		return ref
	}
	get := func(ref Ref, id string) *RecordView {
		t.Helper()
		v, err := db.e.GetView(c, ref, "items", id)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	field := func(v *RecordView, path string) string {
		for _, f := range v.Fields {
			if f.Path() == path {
				return f.Value.Str
			}
		}
		return ""
	}
	// served pages main twice, then kid, which must get main's views.
	served := func(when string, kid Ref) []*RecordView {
		t.Helper()
		page(main)
		parent, _ := page(main) // cached now
		got, shared := page(kid)
		if !shared {
			t.Fatalf("%s: not sharing its parent's rows", when)
		}
		for i, v := range got {
			if v != parent[i] {
				t.Fatalf("%s: record %s read again, not its parent's cached view", when, v.ID)
			}
			if get(kid, v.ID) != v {
				t.Fatalf("%s: point read of %s does not find its parent's view", when, v.ID)
			}
		}
		return parent
	}

	c = NewRecordCache(1 << 20)
	kid := fork("kid")
	served("fresh fork", kid)
	db.reopen()
	c = NewRecordCache(1 << 20)
	parent := served("fresh fork reopened", kid)

	// The parent writes: the fork reads its own rows from now on.
	id := parent[2].ID
	if _, err := db.e.WriteOne(main, Op{Kind: OpUpdate, Table: "items", ID: id, Values: map[string]any{"name": "main's"}}); err != nil {
		t.Fatal(err)
	}
	page(main)
	if s := field(get(main, id), "name"); s != "main's" {
		t.Fatalf("main reads %s with name %q", id, s)
	}
	if _, shared := page(kid); shared {
		t.Fatal("fork still sharing after its parent wrote")
	}
	if s, want := field(get(kid, id), "name"), field(parent[2], "name"); s != want {
		t.Fatalf("fork reads %s with name %q, want %q", id, s, want)
	}

	// A fork that renamed a column shares its parent's rows, not their
	// views.
	parent, _ = page(main)
	ren := fork("ren")
	if _, err := db.e.Schema().RenameColumn(ren, "items", "name", "title"); err != nil {
		t.Fatal(err)
	}
	got, shared := page(ren)
	if !shared {
		t.Fatal("fork that renamed a column: not sharing its parent's rows")
	}
	for i, v := range got {
		w := get(ren, v.ID)
		if v == parent[i] || w == parent[i] {
			t.Fatalf("fork that renamed a column: served its parent's view of %s", v.ID)
		}
		if field(w, "name") != "" || field(w, "title") != field(parent[i], "name") {
			t.Fatalf("fork that renamed a column: %s read as %+v", v.ID, w.Fields)
		}
	}
}

// viewsThrough reads rows of src through pc, checks them against the same
// rows read from storage at the same snapshot, and returns them.
func viewsThrough(t *testing.T, src *source, rows []uint32, p *index.Projection, pc pageCache, branch string) []*RecordView {
	t.Helper()
	got, err := src.views(rows, p, pc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := src.views(rows, p, pageCache{})
	if err != nil {
		t.Fatal(err)
	}
	if msg := sameViews(got, want); msg != "" {
		t.Fatalf("%s: through the cache %s", branch, msg)
	}
	return got
}
