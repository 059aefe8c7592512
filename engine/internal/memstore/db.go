package memstore

import (
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// storeKey names the structures derived for one table of one branch.
type storeKey = model.TableKey

// Options configure a Registry.
type Options struct {
	// BackgroundBuildRows is the table size from which the column store of
	// a table is built in the background on first use; 0 builds every store before answering.
	BackgroundBuildRows int
	// Storeless makes every reader go without column stores; tests set it
	// to run the storage paths of the planner.
	Storeless bool
	// MemoryLimit is the budget in bytes of every structure derived in
	// memory (Budget); 0 means none.
	MemoryLimit int64
	// Background runs fn in a goroutine the engine waits for on close,
	// unless it is closing; it reports whether fn was started.
	Background func(fn func()) bool
	// Event is told of store builds and evictions, and of their failures.
	Event func(model.Event)
	// Fault returns why the storage failed, or nil: a degraded engine
	// builds no shared structure, which would wait for the lock of its
	// table a stuck write may hold; its readers build their own.
	Fault func() error
}

// Registry holds the derived structures of every open database, each
// database's DB reachable by id, and the memory budget over all of them.
// It is safe for concurrent use.
type Registry struct {
	pdb    *pebble.DB
	opts   Options
	budget *Budget

	backgroundBuilds atomic.Int64 // column stores being built in the background
	bitmapCounts     BitmapCacheCounts
	floor            snapFloor // under the snapshots of views (snapfloor.go)

	mu  sync.RWMutex // guards dbs and opts; a leaf of the lock order (apply's doc)
	dbs map[uint32]*DB

	// prepared, when set, is called by every command that writes rows
	// once it holds the locks of the tables it writes, before its batch
	// becomes visible (SetPrepared).
	prepared atomic.Pointer[func(*apply.Tx)]
}

// NewRegistry returns an empty registry whose stores read pdb.
func NewRegistry(pdb *pebble.DB, opts Options) *Registry {
	if opts.Background == nil {
		opts.Background = func(fn func()) bool { go fn(); return true }
	}
	if opts.Event == nil {
		opts.Event = func(model.Event) {}
	}
	if opts.Fault == nil {
		opts.Fault = func() error { return nil }
	}
	return &Registry{pdb: pdb, opts: opts, budget: NewBudget(opts.MemoryLimit, opts.Event), dbs: map[uint32]*DB{}}
}

// Close lets go of what the registry holds in the storage engine, which
// may close after it: the snapshot under the views' (snapfloor.go). Views
// still open keep their own snapshots until released.
func (r *Registry) Close() { r.floor.close() }

// Budget is the memory budget of every structure of the registry.
func (r *Registry) Budget() *Budget { return r.budget }

// Reclaim evicts structures while the budget is past its limit. The
// caller holds no lock of the engine.
func (r *Registry) Reclaim() { r.budget.Reclaim() }

// SetBackgroundBuildRows changes Options.BackgroundBuildRows.
func (r *Registry) SetBackgroundBuildRows(n int) {
	r.mu.Lock()
	r.opts.BackgroundBuildRows = n
	r.mu.Unlock()
}

// SetStoreless changes Options.Storeless.
func (r *Registry) SetStoreless(v bool) {
	r.mu.Lock()
	r.opts.Storeless = v
	r.mu.Unlock()
}

// SetPrepared makes every command that writes rows call fn once it holds
// the locks of the tables it writes, before its batch becomes visible;
// nil stops it. Tests hold a command there to see which readers wait for
// it.
func (r *Registry) SetPrepared(fn func(tx *apply.Tx)) {
	if fn == nil {
		r.prepared.Store(nil)
		return
	}
	r.prepared.Store(&fn)
}

// storeless reads Options.Storeless.
func (r *Registry) storeless() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.opts.Storeless
}

// backgroundBuildRows reads Options.BackgroundBuildRows.
func (r *Registry) backgroundBuildRows() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.opts.BackgroundBuildRows
}

// event reports ev.
func (r *Registry) event(ev model.Event) { r.opts.Event(ev) }

// Open makes the derived structures of a database that opens, empty until
// readers ask for them, and returns the observers that keep them current:
// what apply.Options.Observe returns.
func (r *Registry) Open(ad *apply.DB) []apply.Observer {
	d := &DB{DB: ad, reg: r, ids: r.budget.AddCache(KindIDFilter, ad.IDs.Clear)}
	ad.IDs.SetBudget(d.ids)
	r.mu.Lock()
	r.dbs[d.ID] = d
	r.mu.Unlock()
	return []apply.Observer{d}
}

// DB returns the open database with id, or nil.
func (r *Registry) DB(id uint32) *DB {
	r.mu.RLock()
	d := r.dbs[id]
	r.mu.RUnlock()
	return d
}

// BuildsInProgress counts the column stores being built in the
// background, over every open database.
func (r *Registry) BuildsInProgress() int { return int(r.backgroundBuilds.Load()) }

// DB is one open database as readers see it: the database the write path
// applies commands to, and the structures derived from its keys in
// memory, which it keeps current as its observer.
//
// What a reader takes must agree with itself: its snapshot of storage,
// the state it resolved its branch and table in, the structures it picked
// for them (which show some commit sequence of the table's rows) and the
// bitmap cache's epoch. A structure follows writes through the changes a
// command queues on it (slot.go) once its batch is visible; a reader that
// took its snapshot after the batch became visible and before the
// changes were queued would find a structure that shows no change
// pending and yet misses rows its snapshot has. And whether a branch
// reads its own structures or an ancestor's (share.go) is decided from
// the write marks, which a command publishes with its batch. So writers
// hold a lock from before their batch becomes visible until their changes
// are queued and their marks and state published, and readers hold it
// while they pick their structures and take their snapshot (view.go);
// nobody holds it while reading or building a structure.
//
// That lock has two levels, so that a command writing the rows of some
// tables holds back only the readers of those tables:
//
//   - storeMu, for writing, covers everything: a command that changes
//     branches (schemas, lineages, the state readers resolve names in)
//     holds it, and so does dropping the database. Such commands run
//     under the writer lock, as every command does, so they never wait
//     for one that writes rows.
//   - Everyone else holds storeMu for reading and, under it, the lock of
//     each table whose structures they use (tableLock, one per table id,
//     across branches, since branches share a table's structures): a
//     command that writes rows takes the locks of the tables it writes
//     for writing, in increasing table id; a reader takes its table's
//     for reading, and those of the tables its links reach only if it
//     gets them without waiting (it reads storage for the others).
//     Registering a structure, opening it to readers and dropping it
//     (eviction) take its table's lock for writing.
//
// The state readers resolve names in changes only under storeMu for
// writing; the slots of a table, their building and dead flags and the
// write marks of the table change only under its lock for writing (or
// storeMu for writing).
//
// One reader takes neither: a point read's row hint (RowOf) for a branch
// that reads its own column store, found again in rowHints and read
// under the store's lock alone. Its answer needs no snapshot, for the
// point read confirms it against storage.
type DB struct {
	*apply.DB
	reg *Registry
	ids *Entry // the budget's account of the writers' id filters (apply.DB.IDs)

	storeMu sync.RWMutex
	// tables holds the *tableLock of each table id; entries are made
	// under storeMu (held either way) and removed only under storeMu for
	// writing, so that a table has one lock while anybody holds storeMu.
	tables sync.Map

	caches      sync.Map            // storeKey → *BitmapCache
	cachesMu    sync.Mutex          // serializes making and dropping caches; a leaf
	cacheTables map[uint32][]uint32 // the tables with a cache, by branch; guarded by cachesMu

	counts sync.Map // storeKey → *liveCount (counts.go)

	// rowHints holds, by owner, the column stores RowOf found for a branch
	// reading its own: a store is put while its table's lock is held for
	// reading and removed by drop, so that none is found after its drop
	// but by a reader that loaded it before.
	rowHints sync.Map // storeKey → *slot
}

// tableLock orders the readers and writers of one table of the database,
// on every branch (see DB), and holds the table's structures.
type tableLock struct {
	mu sync.RWMutex
	// slots holds the structures of the table, by owner branch; guarded
	// by mu for writing, or storeMu for writing.
	slots map[uint32]*tableSlots
}

// table returns the lock of table id, making it when there is none. The
// caller holds storeMu.
func (d *DB) table(id uint32) *tableLock {
	if tl, ok := d.tables.Load(id); ok {
		return tl.(*tableLock)
	}
	tl, _ := d.tables.LoadOrStore(id, &tableLock{})
	return tl.(*tableLock)
}

// readTable takes storeMu for reading and the lock of table id for
// reading: no command writing the table is in flight until doneReading.
func (d *DB) readTable(id uint32) *tableLock {
	d.storeMu.RLock()
	tl := d.table(id)
	tl.mu.RLock()
	return tl
}

// doneReading ends a readTable.
func (d *DB) doneReading(tl *tableLock) {
	tl.mu.RUnlock()
	d.storeMu.RUnlock()
}

// writeTable takes storeMu for reading and the lock of table id for
// writing: the table's slots may change until doneWriting.
func (d *DB) writeTable(id uint32) *tableLock {
	d.storeMu.RLock()
	tl := d.table(id)
	tl.mu.Lock()
	return tl
}

// doneWriting ends a writeTable.
func (d *DB) doneWriting(tl *tableLock) {
	tl.mu.Unlock()
	d.storeMu.RUnlock()
}

// pruneTables forgets the locks of tables without structures. The caller
// holds storeMu for writing: nobody holds a table's lock.
func (d *DB) pruneTables() {
	d.tables.Range(func(id, tl any) bool {
		if len(tl.(*tableLock).slots) == 0 {
			d.tables.Delete(id)
		}
		return true
	})
}

// tableSlots are the structures derived for one table of one branch.
type tableSlots struct {
	column  *slot
	search  *slot
	vectors map[uint32]*slot // by column id
}

// get returns the slot of kind k (and vector column col).
func (ts *tableSlots) get(k Kind, col uint32) *slot {
	switch k {
	case KindColumnStore:
		return ts.column
	case KindSearchStore:
		return ts.search
	}
	return ts.vectors[col]
}

// set puts s as the slot of its kind, or removes the slot of kind k (and
// col) when s is nil.
func (ts *tableSlots) set(k Kind, col uint32, s *slot) {
	switch k {
	case KindColumnStore:
		ts.column = s
	case KindSearchStore:
		ts.search = s
	default:
		if s == nil {
			delete(ts.vectors, col)
			return
		}
		if ts.vectors == nil {
			ts.vectors = map[uint32]*slot{}
		}
		ts.vectors[col] = s
	}
}

// all calls fn with every slot.
func (ts *tableSlots) all(fn func(*slot)) {
	for _, s := range []*slot{ts.column, ts.search} {
		if s != nil {
			fn(s)
		}
	}
	for _, s := range ts.vectors {
		fn(s)
	}
}

// empty reports whether no slot is left.
func (ts *tableSlots) empty() bool {
	return ts.column == nil && ts.search == nil && len(ts.vectors) == 0
}

// lookup returns the slot of kind k (and col) of a table of a branch, or
// nil. The caller holds storeMu and the table's lock, or storeMu for
// writing.
func (d *DB) lookup(k storeKey, kind Kind, col uint32) *slot {
	tl, ok := d.tables.Load(k.Table)
	if !ok {
		return nil
	}
	if ts := tl.(*tableLock).slots[k.Branch]; ts != nil {
		return ts.get(kind, col)
	}
	return nil
}

// install makes s the slot of its kind for its owner's table. The caller
// holds storeMu and the table's lock for writing, or storeMu for writing.
func (d *DB) install(s *slot) {
	tl := d.table(s.owner.Table)
	if tl.slots == nil {
		tl.slots = map[uint32]*tableSlots{}
	}
	ts := tl.slots[s.owner.Branch]
	if ts == nil {
		ts = &tableSlots{}
		tl.slots[s.owner.Branch] = ts
	}
	ts.set(s.kind, s.col, s)
}

// drop makes slot s unreachable: readers that hold it finish with it, and
// no write reaches it any more. The caller holds storeMu and the table's
// lock for writing, or storeMu for writing.
func (d *DB) drop(s *slot) {
	if tl, ok := d.tables.Load(s.owner.Table); ok {
		slots := tl.(*tableLock).slots
		if ts := slots[s.owner.Branch]; ts != nil && ts.get(s.kind, s.col) == s {
			ts.set(s.kind, s.col, nil)
			if ts.empty() {
				delete(slots, s.owner.Branch)
			}
		}
	}
	d.rowHints.CompareAndDelete(s.owner, s)
	if !s.dead {
		s.dead = true
		if s.entry != nil {
			s.entry.Remove()
		}
	}
}

// evict drops slot s for the budget; the readers and writers of other
// tables go on meanwhile.
func (d *DB) evict(s *slot) {
	tl := d.writeTable(s.owner.Table)
	d.drop(s)
	d.doneWriting(tl)
}
