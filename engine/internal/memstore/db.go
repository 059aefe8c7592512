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
	// builds no shared structure, which would wait for the writer lock a
	// stuck write may hold; its readers build their own.
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

	mu  sync.RWMutex // guards dbs and opts; a leaf of the lock order (apply's doc)
	dbs map[uint32]*DB
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
	d := &DB{DB: ad, reg: r, slots: map[uint32]map[uint32]*tableSlots{}}
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
// Its store lock, storeMu, guards the map of those structures (slots),
// and orders readers against writers: a writer holds it for writing from
// before its batch becomes visible until it has queued its changes for
// the structures (observe.go), and a reader holds it for reading while it
// picks its structures and takes its snapshot (view.go), so that the two
// agree. Nobody holds it while reading or building a structure.
type DB struct {
	*apply.DB
	reg *Registry

	storeMu sync.RWMutex
	slots   map[uint32]map[uint32]*tableSlots // by owner branch, then table; guarded by storeMu

	caches      sync.Map            // storeKey → *BitmapCache
	cachesMu    sync.Mutex          // serializes making and dropping caches; a leaf
	cacheTables map[uint32][]uint32 // the tables with a cache, by branch; guarded by cachesMu
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
// nil. The caller holds storeMu.
func (d *DB) lookup(k storeKey, kind Kind, col uint32) *slot {
	if ts := d.slots[k.Branch][k.Table]; ts != nil {
		return ts.get(kind, col)
	}
	return nil
}

// install makes s the slot of its kind for its owner's table. The caller
// holds storeMu for writing.
func (d *DB) install(s *slot) {
	tables := d.slots[s.owner.Branch]
	if tables == nil {
		tables = map[uint32]*tableSlots{}
		d.slots[s.owner.Branch] = tables
	}
	ts := tables[s.owner.Table]
	if ts == nil {
		ts = &tableSlots{}
		tables[s.owner.Table] = ts
	}
	ts.set(s.kind, s.col, s)
}

// drop makes slot s unreachable: readers that hold it finish with it, and
// no write reaches it any more. The caller holds storeMu for writing.
func (d *DB) drop(s *slot) {
	tables := d.slots[s.owner.Branch]
	if ts := tables[s.owner.Table]; ts != nil && ts.get(s.kind, s.col) == s {
		ts.set(s.kind, s.col, nil)
		if ts.empty() {
			delete(tables, s.owner.Table)
			if len(tables) == 0 {
				delete(d.slots, s.owner.Branch)
			}
		}
	}
	if !s.dead {
		s.dead = true
		if s.entry != nil {
			s.entry.Remove()
		}
	}
}

// evict drops slot s for the budget.
func (d *DB) evict(s *slot) {
	d.storeMu.Lock()
	d.drop(s)
	d.storeMu.Unlock()
}
