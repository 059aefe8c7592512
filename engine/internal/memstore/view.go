package memstore

import (
	"context"
	"errors"

	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Use says how a reader of a table depends on its column store.
type Use int

// The ways a reader depends on a column store.
const (
	// Optional readers (queries, searches) read storage while the
	// store of a large table is built in the background.
	Optional Use = iota
	// Required readers (summaries, aggregations) visit every
	// candidate's values: without the store they would take longer than
	// building it, so they wait for it.
	Required
	// Without readers need no column store.
	Without
)

// Need says which structures a reader of a table wants.
type Need struct {
	// Store says how the reader depends on the column store.
	Store Use
	// Search asks for the search store, which a View then always has.
	Search bool
	// Vector asks for the vector store of this column (0: none); a View
	// has it unless readers hold it with changes queued.
	Vector uint32
}

// View is one read of a table of a branch: a snapshot of storage and the
// structures derived in memory that show exactly it, held until Release.
// The layers of the branch's lineage stay until then too.
type View struct {
	Snap   *pebble.Snapshot
	State  *apply.State // the state Branch was read from
	Branch *model.Branch
	Table  *model.Table
	// Root is the branch whose rows of the table Branch sees exactly
	// (share.go): Branch itself, or an ancestor whose structures it
	// reads; RootTable is that branch's table.
	Root      *model.Branch
	RootTable *model.Table
	// Store is the column store, nil when the reader goes without it.
	Store *TableStore
	// Search and Vector are the search and vector stores asked for.
	Search *SearchStore
	Vector *VectorStore
	// Linked holds, by table id, the column stores of the tables the
	// table's links reach (transitively) that exist and show the snapshot;
	// Store and Linked are read alike, for filters through links.
	Linked map[uint32]*TableStore
	// Cache is the bitmap cache of the table's rows at epoch Epoch, nil
	// when the snapshot shows no even epoch of it.
	Cache *BitmapCache
	Epoch uint64

	d    *DB
	held []*slot
}

// Open returns a view of table of branch with the structures need names,
// building those it must have (a Required column store, a search store, a
// vector store), and starting the background build of a large table's
// column store for an Optional reader. A build stops with ctx's error when
// ctx ends. The caller must Release the view, and holds none of the
// database's locks.
func (d *DB) Open(ctx context.Context, branch, table string, need Need) (*View, error) {
	d.reg.budget.Advance()
	if need.Store != Without && d.reg.storeless() {
		need.Store = Without
	}
	for attempt := 0; ; attempt++ {
		if err := d.prepare(ctx, branch, table, need); err != nil && !errors.Is(err, errDegraded) {
			return nil, err
		}
		v, busy, missing, err := d.acquire(branch, table, need)
		if err != nil {
			return nil, err
		}
		if !missing && len(busy) > 0 && attempt == 0 {
			// Structures it may go without wait to catch up with a write:
			// a short wait usually spares it reading storage instead.
			v.Release()
			wait, cancel := context.WithTimeout(ctx, optionalWait)
			for _, s := range busy {
				s.catchUp(wait)
			}
			cancel()
			continue
		}
		if !missing || attempt == maxOpenAttempts || d.reg.opts.Fault() != nil {
			// Past a few tries (a store evicted again at once, or written
			// again each time its readers were done), the reader builds
			// its own from its snapshot.
			if err := v.buildMissing(ctx, need); err != nil {
				v.Release()
				return nil, err
			}
			return v, nil
		}
		v.Release()
		// A structure it must have has changes queued that its readers
		// hold back: wait for them, then apply the changes. One that was
		// evicted or changed meanwhile is built again by prepare.
		for _, s := range busy {
			if err := s.catchUp(ctx); err != nil {
				return nil, err
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// maxOpenAttempts is how many times Open tries again to get the structures
// a reader must have before it builds them for the reader alone.
const maxOpenAttempts = 4

// optionalWait is how long a reader waits for a structure it may go
// without to catch up with a write its other readers hold back.
const optionalWait = 5 * time.Millisecond

// prepare builds or starts building the structures need asks for that do
// not exist, holding no lock.
func (d *DB) prepare(ctx context.Context, branch, table string, need Need) error {
	st := d.State()
	b, err := st.Branch(branch)
	if err != nil {
		return err
	}
	t, err := b.Schema.Table(table)
	if err != nil {
		return err
	}
	tl := d.readTable(t.ID)
	root, rt := d.shareRoot(st, b, t)
	d.doneReading(tl)
	if need.Store != Without {
		if err := d.prepareStore(ctx, root, rt, need.Store); err != nil {
			return err
		}
	}
	if need.Search {
		if err := d.ensure(ctx, KindSearchStore, root, rt, 0); err != nil {
			return err
		}
	}
	if c := t.ByID[need.Vector]; need.Vector != 0 && c != nil && c.Type == model.TypeVector {
		if err := d.ensure(ctx, KindVectorStore, root, rt, need.Vector); err != nil && !errors.Is(err, errNotVector) {
			return err
		}
	}
	return nil
}

// prepareStore makes sure the column store of a table of root exists or is
// being built: a Required reader waits for it; an Optional reader of a
// table of Options.BackgroundBuildRows records or more starts building it
// in the background and reads storage meanwhile, so that a restarted
// server answers its first queries at once.
func (d *DB) prepareStore(ctx context.Context, root *model.Branch, t *model.Table, use Use) error {
	k := storeKey{Branch: root.ID, Table: t.ID}
	tl := d.readTable(t.ID)
	s := d.lookup(k, KindColumnStore, 0)
	d.doneReading(tl)
	if use == Optional && s != nil && s.sig == t.Sig {
		return nil // built, or being built: the reader does not wait
	}
	if n := d.reg.backgroundBuildRows(); use == Optional && n > 0 {
		live, err := d.liveRows(root, t)
		if err != nil {
			return err
		}
		if live >= uint64(n) {
			d.buildInBackground(root, t)
			return nil
		}
	}
	return d.ensure(ctx, KindColumnStore, root, t, 0)
}

// liveRows counts the records of a table of a branch.
func (d *DB) liveRows(b *model.Branch, t *model.Table) (uint64, error) {
	d.Pin()
	defer d.Unpin()
	// The lineage read must be loaded under the pin: layers it names stay.
	cur := d.State().ByID.At(b.ID)
	if cur == nil {
		return 0, nil // gone: the reader finds out
	}
	live, err := layers.ReadBitmap(d.reg.pdb, d.ID, cur.Lineage, t.ID, codec.LiveBitmapID(), nil)
	if err != nil {
		return 0, err
	}
	return live.GetCardinality(), nil
}

// acquire takes the snapshot of a view and the structures need asks for
// that show exactly it, holding storeMu for reading (the state stays) and
// the table's lock for reading (no command writing the table is in
// flight), and the locks of the linked tables whose stores it takes
// (takeLinked). missing is true when a structure the reader must have is
// not there (evicted or changed since prepare, or held by readers with
// changes queued).
func (d *DB) acquire(branch, table string, need Need) (v *View, busy []*slot, missing bool, err error) {
	d.Pin()
	d.storeMu.RLock()
	st := d.State()
	b, err := st.Branch(branch)
	var t *model.Table
	if err == nil {
		t, err = b.Schema.Table(table)
	}
	if err != nil {
		d.storeMu.RUnlock()
		d.Unpin()
		return nil, nil, false, err
	}
	tl := d.table(t.ID)
	tl.mu.RLock()
	root, rt := d.shareRoot(st, b, t)
	k := storeKey{Branch: root.ID, Table: t.ID}
	v = &View{d: d, State: st, Branch: b, Table: t, Root: root, RootTable: rt}
	// take takes a structure the snapshot will show; a reader that must
	// have it notes it missing, and busy when its readers hold back
	// changes; for one that may go without, the changes are applied in
	// the background once its readers are done.
	take := func(kind Kind, col uint32, must bool) *slot {
		s := d.lookup(k, kind, col)
		if s == nil || s.sig != t.Sig {
			missing = missing || must
			return nil
		}
		ok, wait := s.tryRead()
		if !ok {
			missing = missing || must
			if wait {
				busy = append(busy, s)
				s.startCatchUp()
			}
			return nil
		}
		s.entry.Touch()
		v.held = append(v.held, s)
		return s
	}
	if need.Store != Without {
		if s := take(KindColumnStore, 0, need.Store == Required); s != nil {
			v.Store = s.table
		}
	}
	if need.Search {
		if s := take(KindSearchStore, 0, true); s != nil {
			v.Search = s.search
		}
	}
	if need.Vector != 0 {
		if s := take(KindVectorStore, need.Vector, false); s != nil {
			v.Vector = s.vector
		}
	}
	var linked []*tableLock
	if need.Store != Without {
		linked = d.takeLinked(v)
	}
	// No write of the table is in flight under its lock: the epoch is
	// even and stays.
	cache := d.cacheFor(k)
	e0 := cache.Epoch()
	v.Snap = d.reg.floor.snapshot(d.reg.pdb)
	if e1 := cache.Epoch(); e0 == e1 && e0%2 == 0 {
		v.Cache, v.Epoch = cache, e0
	}
	for _, l := range linked {
		l.mu.RUnlock()
	}
	d.doneReading(tl)
	return v, busy, missing, nil
}

// takeLinked takes the column stores of the tables the view's table links
// to, and those they link to, that exist and show the snapshot, and
// returns the locks of their tables, which it holds for reading until the
// caller has taken the snapshot. A table whose lock it cannot take at once
// (a command writing it is in flight, or waits) is left out: the reader
// reads its rows from storage, and does not wait. The caller holds
// storeMu and the view's table's lock for reading.
func (d *DB) takeLinked(v *View) []*tableLock {
	var locked []*tableLock
	seen := map[uint32]bool{v.Table.ID: true}
	queue := []*model.Table{v.Table}
	for len(queue) > 0 {
		t := queue[0]
		queue = queue[1:]
		for _, c := range t.Leaves {
			if c.Type != model.TypeLink || seen[c.LinkTable] {
				continue
			}
			seen[c.LinkTable] = true
			lt := v.Branch.Schema.TableByID(c.LinkTable)
			if lt == nil {
				continue
			}
			queue = append(queue, lt)
			ltl := d.table(lt.ID)
			if !ltl.mu.TryRLock() {
				continue
			}
			root, _ := d.shareRoot(v.State, v.Branch, lt)
			s := d.lookup(storeKey{Branch: root.ID, Table: lt.ID}, KindColumnStore, 0)
			if s == nil || s.sig != lt.Sig {
				ltl.mu.RUnlock()
				continue
			}
			if ok, _ := s.tryRead(); !ok {
				ltl.mu.RUnlock()
				continue
			}
			locked = append(locked, ltl)
			s.entry.Touch()
			v.held = append(v.held, s)
			if v.Linked == nil {
				v.Linked = map[uint32]*TableStore{}
			}
			v.Linked[lt.ID] = s.table
		}
	}
	return locked
}

// buildMissing builds, from the view's snapshot and for the view alone,
// the structures the reader must have and did not get.
func (v *View) buildMissing(ctx context.Context, need Need) error {
	var err error
	if v.Store == nil && need.Store == Required {
		if v.Store, err = buildTableStore(ctx, v.Snap, v.d.ID, v.Branch.Lineage, v.Table); err != nil {
			return err
		}
	}
	if v.Search == nil && need.Search {
		if v.Search, err = BuildSearchStore(ctx, v.Snap, v.d.ID, v.Branch.Lineage, v.Table); err != nil {
			return err
		}
	}
	return nil
}

// Release ends the view: the snapshot, the structures and the layers it
// held may go. Then, holding nothing, it trims the structures to the
// memory budget.
func (v *View) Release() {
	v.Snap.Close()
	for _, s := range v.held {
		if s.table != nil && s.table.grew.Swap(false) {
			s.entry.Resize(s.size())
		}
		s.mu.RUnlock()
	}
	v.held = nil
	v.d.Unpin()
	v.d.reg.Reclaim()
}

// isCtxErr reports whether err ended a build because its context ended:
// another reader waiting for the build tries again.
func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Peek returns, for tests and reports, the column store a table of a
// branch reads now and whether it is being built: the store of the branch
// the branch shares its rows with (share.go), without building anything.
func (d *DB) Peek(b *model.Branch, t *model.Table) (store *TableStore, building bool) {
	tl := d.readTable(t.ID)
	defer d.doneReading(tl)
	st := d.State()
	if b = st.ByID.At(b.ID); b == nil {
		return nil, false
	}
	if t = b.Schema.TableByID(t.ID); t == nil {
		return nil, false
	}
	root, _ := d.shareRoot(st, b, t)
	s := d.lookup(storeKey{Branch: root.ID, Table: t.ID}, KindColumnStore, 0)
	switch {
	case s == nil || s.sig != t.Sig:
		return nil, false
	case s.building:
		return nil, true
	}
	return s.table, false
}

// RowOf returns the row of record id in table t of branch b as the column
// store the table reads shows it (TableStore.RowHint: rarely the row of
// another id of the same hash); ok is false when the store cannot tell:
// it has no such id, or no store shows the table at once (none is built,
// one is being built, or its readers hold back changes). It builds no
// store: a point read uses the stores that queries and summaries built,
// and only adds their id index on its first use (TableStore.RowHint).
// The store shows no write that is not visible when RowOf is called, and
// may miss the last ones: a caller that reads the row afterwards confirms
// that it still holds id, and reads the id map when it does not.
//
// A branch that reads its own store finds it again without the database's
// and the table's locks (rowHints): a point read then takes one lock, the
// store's, where other readers take three. Without the table's lock the
// store may not yet show a write whose batch is already visible; under it
// (the first read, a branch reading its parent's store) it shows every
// such write.
func (d *DB) RowOf(b *model.Branch, t *model.Table, id string) (row uint32, ok bool) {
	k := storeKey{Branch: b.ID, Table: t.ID}
	if v, found := d.rowHints.Load(k); found {
		if s := v.(*slot); s.sig == t.Sig && s.mu.TryRLock() {
			if !s.pending() {
				s.entry.Touch()
				row, ok = s.table.RowHint(id)
				s.mu.RUnlock()
				return row, ok
			}
			s.mu.RUnlock() // changes wait: the locked path applies them
		}
	}
	tl := d.readTable(t.ID)
	st := d.State()
	if b = st.ByID.At(b.ID); b == nil {
		d.doneReading(tl)
		return 0, false
	}
	if t = b.Schema.TableByID(t.ID); t == nil {
		d.doneReading(tl)
		return 0, false
	}
	root, rt := d.shareRoot(st, b, t)
	s := d.lookup(storeKey{Branch: root.ID, Table: rt.ID}, KindColumnStore, 0)
	if s == nil || s.sig != rt.Sig {
		d.doneReading(tl)
		return 0, false
	}
	if held, _ := s.tryRead(); !held {
		d.doneReading(tl)
		return 0, false
	}
	if root.ID == b.ID && rt.ID == t.ID {
		d.rowHints.Store(k, s)
	}
	d.doneReading(tl)
	s.entry.Touch()
	row, ok = s.table.RowHint(id)
	s.mu.RUnlock()
	return row, ok
}
