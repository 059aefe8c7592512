package memstore

import (
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Use says how a reader of a table depends on its column store.
type Use int

const (
	// Optional readers (queries, searches) read storage while the
	// store of a large table is built in the background.
	Optional Use = iota
	// Required readers (summaries, aggregations) visit every
	// candidate's values: without the store they would take longer than
	// building it, so they wait for it.
	Required
)

// storeState is embedded in DB: the stores and their lock, the store lock
// of the lock order (package apply).
type storeState struct {
	storeMu  sync.RWMutex
	stores   map[storeKey]*TableStore
	search   map[storeKey]*SearchStore
	building map[storeKey]bool // column stores built in the background
}

// StoreFor returns the column store of a table of a branch for a reader,
// or nil when the reader goes without. A table of Options.BackgroundBuildRows
// records or more gets its store built in the background on first use, and
// optional readers answer from storage meanwhile: a restarted server
// answers its first queries at once instead of after a scan of the table.
func (d *DB) StoreFor(b *model.Branch, t *model.Table, use Use) (*TableStore, error) {
	if d.reg.storeless() {
		return nil, nil
	}
	k := storeKey{Branch: b.ID, Table: t.ID}
	d.storeMu.RLock()
	s, building := d.stores[k], d.building[k]
	d.storeMu.RUnlock()
	if s != nil && s.version == b.Version {
		return s, nil
	}
	if !building {
		if s := d.borrowStore(b, t); s != nil {
			return s, nil
		}
	}
	if use == Optional && d.reg.backgroundBuildRows() > 0 {
		if building {
			return nil, nil
		}
		n, err := d.liveRows(b, t)
		if err != nil {
			return nil, err
		}
		if n >= uint64(d.reg.backgroundBuildRows()) {
			d.buildStoreInBackground(b, t)
			return nil, nil
		}
	}
	return d.ensureStore(b, t)
}

// borrowStore lends a branch the column store of the branch it was forked
// from while neither has written the table since the fork and their
// schemas are one: the child then sees exactly the parent's rows, and
// answers from the parent's store at once instead of building a copy. The
// loan ends at the first write of either (updateStores). Writes from before
// the database was opened are not known, so only forks since then borrow.
func (d *DB) borrowStore(b *model.Branch, t *model.Table) *TableStore {
	if len(b.Lineage) < 2 || b.Lineage[1].Seq < d.OpenSeq() {
		return nil
	}
	d.LockWriter()
	defer d.UnlockWriter()
	st := d.State()
	if b = st.ByID[b.ID]; b == nil || len(b.Lineage) < 2 {
		return nil
	}
	k := storeKey{Branch: b.ID, Table: t.ID}
	if _, wrote := d.written[k]; wrote {
		return nil
	}
	fork := b.Lineage[1]
	var parent *model.Branch
	for _, p := range st.ByID {
		if p.Lineage[0].Layer == fork.Layer {
			parent = p
			break
		}
	}
	if parent == nil || parent.Schema != b.Schema || parent.Version != b.Version ||
		!slices.Equal(parent.Lineage[1:], b.Lineage[2:]) || d.written[storeKey{Branch: parent.ID, Table: t.ID}] > fork.Seq {
		return nil
	}
	d.storeMu.Lock()
	defer d.storeMu.Unlock()
	if cur := d.stores[k]; cur != nil && cur.version == b.Version {
		return cur
	}
	s := d.stores[storeKey{Branch: parent.ID, Table: t.ID}]
	if s == nil || s.version != b.Version {
		return nil
	}
	s.lent = true
	d.stores[k] = s
	return s
}

// endLoans takes a store back from the branches that borrow it, before a
// write of its owner changes it. The caller holds storeMu.
func (d *DB) endLoans(s *TableStore) {
	for k, o := range d.stores {
		if o == s && k.Branch != s.owner {
			delete(d.stores, k)
		}
	}
	s.lent = false
}

// liveRows counts the records of a table of a branch.
func (d *DB) liveRows(b *model.Branch, t *model.Table) (uint64, error) {
	d.Pin()
	defer d.Unpin()
	// The lineage read must be loaded under gcMu: layers it names stay.
	cur := d.State().ByID[b.ID]
	if cur == nil {
		return 0, nil // gone: building says so
	}
	live, err := layers.ReadBitmap(d.reg.pdb, d.ID, cur.Lineage, t.ID, codec.LiveBitmapID(), nil)
	if err != nil {
		return 0, err
	}
	return live.GetCardinality(), nil
}

// buildStoreInBackground starts building the column store of a table of a
// branch unless a build of it is under way. A failed build is dropped: the
// next reader starts another.
func (d *DB) buildStoreInBackground(b *model.Branch, t *model.Table) {
	k := storeKey{Branch: b.ID, Table: t.ID}
	d.storeMu.Lock()
	if d.building[k] {
		d.storeMu.Unlock()
		return
	}
	if d.building == nil {
		d.building = map[storeKey]bool{}
	}
	d.building[k] = true
	d.storeMu.Unlock()
	done := func() {
		d.storeMu.Lock()
		delete(d.building, k)
		d.storeMu.Unlock()
	}
	if !d.reg.opts.Background(func() {
		// A build reports itself; a failure has no caller to go to.
		if _, err := d.ensureStore(b, t); err != nil {
			d.reg.event(model.Event{Kind: model.EventStoreBuild, Err: err})
		}
		done()
	}) {
		done()
	}
}

// ensureStore returns the column store of a table of a branch, building it
// if needed.
func (d *DB) ensureStore(b *model.Branch, t *model.Table) (*TableStore, error) {
	return ensureBuilt(d, b, t, &d.stores, storeKey{Branch: b.ID, Table: t.ID}, func(r pebble.Reader, b *model.Branch, t *model.Table) (*TableStore, error) {
		return buildTableStore(r, d.ID, b, t)
	})
}

// builtStore is an in-memory structure built for one schema version of a
// branch (a column store, a search store).
type builtStore interface {
	comparable
	schemaVersion() uint64
}

// schemaVersion implements builtStore.
func (s *TableStore) schemaVersion() uint64 { return s.version }

// ensureBuilt returns the store m[k] of a table of a branch, building it
// from a snapshot when it is missing or was built for another schema.
// Building holds the writer lock: no write can slip between the snapshot
// the store is built from and the store's installation, after which writes
// keep it current under storeMu.
func ensureBuilt[K comparable, S builtStore](d *DB, b *model.Branch, t *model.Table, m *map[K]S, k K,
	build func(r pebble.Reader, b *model.Branch, t *model.Table) (S, error)) (S, error) {
	var zero S
	current := func() (S, bool) {
		d.storeMu.RLock()
		defer d.storeMu.RUnlock()
		s, ok := (*m)[k]
		return s, ok && s.schemaVersion() == b.Version
	}
	if s, ok := current(); ok {
		return s, nil
	}
	d.LockWriter()
	defer d.UnlockWriter()
	if s, ok := current(); ok {
		return s, nil
	}
	// Under d.mu the state is current: no lineage swap can happen, and
	// layers still to be dropped are in no current lineage.
	if b = d.State().ByID[b.ID]; b == nil {
		return zero, model.NotFoundf("branch not found")
	}
	if t = b.Schema.ByID[t.ID]; t == nil {
		return zero, model.NotFoundf("table not found")
	}
	d.Pin()
	defer d.Unpin()
	snap := d.reg.pdb.NewSnapshot()
	defer snap.Close()
	start := time.Now()
	s, err := build(snap, b, t)
	if err != nil {
		return zero, err
	}
	d.reg.event(model.Event{Kind: model.EventStoreBuild, Duration: time.Since(start)})
	d.storeMu.Lock()
	if *m == nil {
		*m = map[K]S{}
	}
	(*m)[k] = s
	d.hasStores.Store(true)
	d.storeMu.Unlock()
	return s, nil
}

// RLockStores takes the store lock for reading: the stores a reader looks
// up (Store, SearchStore, VectorStore) stay as they are, and agree with
// any snapshot taken meanwhile, until RUnlockStores.
func (d *DB) RLockStores() { d.storeMu.RLock() }

// RUnlockStores releases RLockStores.
func (d *DB) RUnlockStores() { d.storeMu.RUnlock() }

// Store returns the column store of a table of a branch, or nil. The
// caller holds RLockStores.
func (d *DB) Store(k model.TableKey) *TableStore { return d.stores[k] }

// SearchStore returns the search store of a table of a branch, or nil.
// The caller holds RLockStores.
func (d *DB) SearchStore(k model.TableKey) *SearchStore { return d.search[k] }

// VectorStore returns the vector store of a column, or nil. The caller
// holds RLockStores.
func (d *DB) VectorStore(k VectorKey) *VectorStore { return d.vectors[k] }

// Cache returns the bitmap cache of a table of a branch when one exists.
func (d *DB) Cache(k model.TableKey) (*BitmapCache, bool) {
	c, ok := d.caches.Load(k)
	if !ok {
		return nil, false
	}
	return c.(*BitmapCache), true
}

// Building reports whether the column store of a table of a branch is
// being built in the background. The caller holds RLockStores.
func (d *DB) Building(k model.TableKey) bool { return d.building[k] }
