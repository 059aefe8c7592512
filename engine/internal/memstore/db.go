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
	// Background runs fn in a goroutine the engine waits for on close,
	// unless it is closing; it reports whether fn was started.
	Background func(fn func()) bool
	// Event is told of store builds and cache evictions, and of their
	// failures.
	Event func(model.Event)
}

// Registry holds the derived structures of every open database: each
// database's DB, reachable by id. It is what a memory budget over all of
// them walks. It is safe for concurrent use.
type Registry struct {
	pdb  *pebble.DB
	opts Options

	mu  sync.RWMutex // guards dbs; a leaf of the lock order (apply's doc)
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
	return &Registry{pdb: pdb, opts: opts, dbs: map[uint32]*DB{}}
}

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
	d := &DB{DB: ad, reg: r}
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
// background, over every open database. It takes each database's store
// lock after the registry's lock is released, as the lock order wants.
func (r *Registry) BuildsInProgress() int {
	r.mu.RLock()
	dbs := make([]*DB, 0, len(r.dbs))
	for _, d := range r.dbs {
		dbs = append(dbs, d)
	}
	r.mu.RUnlock()
	n := 0
	for _, d := range dbs {
		d.storeMu.RLock()
		n += len(d.building)
		d.storeMu.RUnlock()
	}
	return n
}

// DB is one open database as readers see it: the database the write path
// applies commands to, and the structures derived from its keys in
// memory, which it keeps current as its observer. Its store lock guards
// the stores (the lock order is in package apply).
type DB struct {
	*apply.DB
	reg *Registry

	// written holds, for every table of a branch written since the open,
	// the seq of the last command that wrote its rows; guarded by the
	// writer lock.
	written map[storeKey]uint64

	storeState
	hasStores atomic.Bool // some column store exists: writers must update them
	caches    sync.Map    // storeKey → *BitmapCache

	// vectors are the vector stores of the vector columns, guarded by
	// storeMu.
	vectors map[VectorKey]*VectorStore
}

// updateStores applies a command's row changes to the column stores, and
// drops the stores of branches it removed or whose schema it changed.
// The caller holds storeMu.
func (d *DB) updateStores(tx *apply.Tx) {
	st := d.State()
	for k, s := range d.stores {
		if b := st.ByID[k.Branch]; b == nil || b.Version != s.version {
			delete(d.stores, k)
			if s.lent && s.owner == k.Branch {
				d.endLoans(s) // a borrower never outlives its owner's entry
			}
		}
	}
	for _, c := range tx.Rows() {
		k := storeKey{Branch: c.Branch, Table: c.Table}
		s := d.stores[k]
		switch {
		case s == nil:
		case s.owner != c.Branch:
			// A borrowed store: the branch now has rows of its own.
			delete(d.stores, k)
		default:
			if s.lent {
				d.endLoans(s)
			}
			s.apply(c.Row, c.Rec)
		}
	}
	d.updateSearch(tx)
	d.updateVectorStores(tx)
}
