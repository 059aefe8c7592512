package memstore

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// RecordCache keeps records as read, up to a memory budget, as views of
// type V: a cached record is handed out as the same view until it is
// written, which lets a caller keep what it derives from a view (such as
// its encoding) for as long as the view lives. An entry is valid with one
// table object, at the epoch of its table's BitmapCache it was read at and
// at every later (or earlier) epoch no command in between wrote its row
// (the BitmapCache's writeLog): the engine's GetView documents why that makes
// it exact. It is safe for concurrent
// use and may serve several engines and databases; the caller owns it.
type RecordCache[V any] struct {
	seed   maphash.Seed
	limit  int // bytes per shard
	shards [recordCacheShards]recordShard[V]

	// entry puts the cache under the memory budget of the first engine
	// whose records it keeps; total is the bytes of all shards.
	entry atomic.Pointer[Entry]
	once  sync.Mutex
	total atomic.Int64
}

// recordCacheShards spreads the cache's lock over this many maps.
const recordCacheShards = 16

// recordShard is one lock's share of a RecordCache. Its map is keyed by a
// hash of the record's table cache and id, which the entry repeats: two
// records of the same hash take turns, and neither is ever mistaken for
// the other.
type recordShard[V any] struct {
	mu    sync.RWMutex // a leaf of the lock order
	m     map[uint64]*cachedView[V]
	bytes int
}

// cachedView is a view with what makes it valid: the cache of its table
// (which names the database, branch and table), the row of the record, the
// latest epoch of the cache it is known to hold at, and the table object
// the view was built with.
type cachedView[V any] struct {
	bc    *BitmapCache
	id    string
	row   uint32
	epoch atomic.Uint64
	t     *model.Table
	view  V
	size  int
}

// NewRecordCache returns a cache that holds about maxBytes of records.
func NewRecordCache[V any](maxBytes int) *RecordCache[V] {
	c := &RecordCache[V]{seed: maphash.MakeSeed(), limit: max(maxBytes/recordCacheShards, 1)}
	for i := range c.shards {
		c.shards[i].m = map[uint64]*cachedView[V]{}
	}
	return c
}

// slot returns the map key of record id of the table bc caches, and its
// shard.
func (c *RecordCache[V]) slot(bc *BitmapCache, id string) (uint64, *recordShard[V]) {
	h := maphash.String(c.seed, id) ^ bc.salt
	return h, &c.shards[h%recordCacheShards]
}

// Get returns the view of record id of bc's table if one is cached with
// table t that holds at epoch e of bc; at an odd e (a write in flight), one
// that holds both before and after the write.
func (c *RecordCache[V]) Get(bc *BitmapCache, id string, e uint64, t *model.Table) (V, bool) {
	h, s := c.slot(bc, id)
	s.mu.RLock()
	cv := s.m[h]
	s.mu.RUnlock()
	if cv == nil || cv.bc != bc || cv.id != id || cv.t != t {
		var zero V
		return zero, false
	}
	if at := cv.epoch.Load(); at != e {
		if !bc.rowHolds(at, e, cv.row) {
			var zero V
			return zero, false
		}
		// Known to hold at e too: later checks start from there.
		for e%2 == 0 && at < e && !cv.epoch.CompareAndSwap(at, e) {
			at = cv.epoch.Load()
		}
	}
	if en := c.entry.Load(); en != nil {
		en.Touch()
	}
	return cv.view, true
}

// budgeted returns the cache's budget entry, putting the cache under the
// budget of reg when it is under none yet.
func (c *RecordCache[V]) budgeted(reg *Registry) *Entry {
	if en := c.entry.Load(); en != nil || reg == nil {
		return en
	}
	c.once.Lock()
	defer c.once.Unlock()
	if en := c.entry.Load(); en != nil {
		return en
	}
	en := reg.budget.AddCache(KindRecordCache, c.empty)
	en.Resize(c.total.Load())
	c.entry.Store(en)
	return en
}

// empty drops every record, for the memory budget.
func (c *RecordCache[V]) empty() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		clear(s.m)
		c.total.Add(-int64(s.bytes))
		s.bytes = 0
		s.mu.Unlock()
	}
	if en := c.entry.Load(); en != nil {
		en.Resize(c.total.Load())
	}
}

// Put caches the view of record id, stored in row, of bc's table, read at
// epoch e with table t, which holds about size bytes, dropping other entries of its
// shard, in the map's random order, while the shard is over its budget.
func (c *RecordCache[V]) Put(bc *BitmapCache, id string, row uint32, e uint64, t *model.Table, view V, size int) {
	cv := &cachedView[V]{bc: bc, id: strings.Clone(id), row: row, t: t, view: view, size: size}
	cv.epoch.Store(e)
	h, s := c.slot(cv.bc, cv.id)
	s.mu.Lock()
	before := s.bytes
	if old := s.m[h]; old != nil {
		s.bytes -= old.size
	}
	s.m[h] = cv
	s.bytes += cv.size
	for victim, old := range s.m {
		if s.bytes <= c.limit {
			break
		}
		if victim != h {
			delete(s.m, victim)
			s.bytes -= old.size
		}
	}
	total := c.total.Add(int64(s.bytes - before))
	s.mu.Unlock()
	if en := c.budgeted(bc.reg); en != nil {
		en.Resize(total)
		en.Touch()
	}
}
