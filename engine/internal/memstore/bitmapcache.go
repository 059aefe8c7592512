package memstore

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
)

// Queries read the same postings again and again (a category, active=true),
// and composing one from storage decodes every chunk of every layer. A
// BitmapCache keeps the composed bitmaps of one table of one branch, each
// tagged with the epoch of the table it was read at: every command that
// writes the table makes the epoch odd before its batch becomes visible
// and even again after, so an even epoch names one state of the table. A
// reader loads the epoch before and after taking its snapshot; when both
// loads agree and are even, its snapshot shows exactly that state, and it
// may use and fill entries for that epoch. Otherwise it reads storage.
//
// An entry outlives the writes that leave it alone. Before a command's
// batch becomes visible, the cache notes what it writes (a writeSet: the
// rows, and the bitmaps given deltas) in a ring of the last writesKept
// commands. An entry tagged with epoch a answers for epoch b when every
// command between the two is still in the ring and none of them touched
// it; otherwise it is a miss, and the reader refills it. A command that
// touches more than maxWriteIDs bitmaps, changes a mask (which takes
// inherited rows out of every bitmap of the table) or changes branches
// (schemas, lineages) counts as touching every bitmap; one that changes
// branches also counts as touching every row. The ring is published before
// the epoch turns odd, so whoever loads an even epoch finds every command
// up to it.
type BitmapCache struct {
	epoch  atomic.Uint64
	writes atomic.Pointer[[]*writeSet] // the last commands, oldest first
	salt   uint64                      // sets its records apart in a RecordCache
	reg    *Registry                   // whose budget record caches charge
	entry  *Entry                      // under the memory budget

	mu      sync.Mutex
	m       map[string]*cachedBitmap
	scans   map[string]*cachedScan // whole-column scans by column prefix
	entries int
	bytes   int64 // what the entries take
}

// writeSet is what one command wrote of a table: the epoch after it, and
// the rows and bitmaps it touched.
type writeSet struct {
	end  uint64
	rows *roaring.Bitmap     // nil: every row
	ids  map[string]struct{} // bitmaps given deltas; nil: every bitmap
	cols map[string]struct{} // column prefixes of the postings in ids
}

// writesKept is how many commands a cache remembers: an entry older than
// that many writes of its table is a miss.
const writesKept = 64

// maxWriteIDs is the most bitmaps of a command a cache remembers; a bigger
// command (a bulk load) counts as touching every bitmap.
const maxWriteIDs = 4096

// cachedBitmap is a cached bitmap and the epoch it is known to hold at.
type cachedBitmap struct {
	b  *roaring.Bitmap
	at uint64
}

// cachedScan is a cached whole-column scan and the epoch it is known to
// hold at.
type cachedScan struct {
	entries []ScanEntry
	at      uint64
}

// ScanEntry is one value of a cached column scan and its rows.
type ScanEntry struct {
	V    codec.Value
	Rows *roaring.Bitmap
}

// MaxCachedScan is the most values a cached column scan holds: grouping
// columns have few; a scan of a near-unique column is not kept.
const MaxCachedScan = 1024

// maxCachedBitmaps bounds the entries of one table's cache; past it the
// cache starts over.
const maxCachedBitmaps = 4096

// CacheFor returns the cache of a table of a branch. A new cache is made
// under the writer lock, so that no write is in flight while its first
// epoch begins. The caller must hold none of the database's locks.
func (d *DB) CacheFor(k storeKey) *BitmapCache {
	if c := d.Cache(k); c != nil {
		return c
	}
	d.LockWriter()
	defer d.UnlockWriter()
	return d.cacheFor(k)
}

// Cache returns the cache of a table of a branch, or nil.
func (d *DB) Cache(k storeKey) *BitmapCache {
	if c, ok := d.caches.Load(k); ok {
		return c.(*BitmapCache)
	}
	return nil
}

// cacheFor returns the cache of a table of a branch, making it when there
// is none. The caller holds the writer lock or storeMu: no write is in
// flight.
func (d *DB) cacheFor(k storeKey) *BitmapCache {
	if c := d.Cache(k); c != nil {
		c.entry.Touch()
		return c
	}
	d.cachesMu.Lock()
	defer d.cachesMu.Unlock()
	if c := d.Cache(k); c != nil {
		return c
	}
	c := &BitmapCache{salt: rand.Uint64(), reg: d.reg}
	c.entry = d.reg.budget.AddCache(KindBitmapCache, c.empty)
	d.caches.Store(k, c)
	if d.cacheTables == nil {
		d.cacheTables = map[uint32][]uint32{}
	}
	d.cacheTables[k.Branch] = append(d.cacheTables[k.Branch], k.Table)
	return c
}

// dropCaches forgets the caches of the tables of a branch that gone
// reports gone.
func (d *DB) dropCaches(branch uint32, gone func(table uint32) bool) {
	d.cachesMu.Lock()
	defer d.cachesMu.Unlock()
	kept := d.cacheTables[branch][:0]
	for _, t := range d.cacheTables[branch] {
		k := storeKey{Branch: branch, Table: t}
		if !gone(t) {
			kept = append(kept, t)
			continue
		}
		if c := d.Cache(k); c != nil {
			c.entry.Remove()
			d.caches.Delete(k)
		}
	}
	if len(kept) == 0 {
		delete(d.cacheTables, branch)
	} else {
		d.cacheTables[branch] = kept
	}
}

// empty drops the cache's entries for the memory budget.
func (c *BitmapCache) empty() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.scans, c.entries, c.bytes = nil, nil, 0, 0
	c.entry.Resize(0)
}

// startWrite makes odd the epochs of the caches of every table a command
// writes, before its batch becomes visible, and notes in each what the
// command writes of its table; the returned func makes the epochs even
// again after. Both run under the writer lock.
func (d *DB) startWrite(tx *apply.Tx) (done func()) {
	type bump struct {
		bc    *BitmapCache
		table uint32
		rows  *roaring.Bitmap
	}
	var bumped []bump
	var last storeKey
	cur := -1
	for i, c := range tx.Rows() {
		k := storeKey{Branch: c.Branch, Table: c.Table}
		if i == 0 || k != last {
			last, cur = k, -1
			if bc := d.Cache(k); bc != nil {
				cur = slices.IndexFunc(bumped, func(b bump) bool { return b.bc == bc })
				if cur < 0 {
					bumped = append(bumped, bump{bc: bc, table: k.Table, rows: roaring.New()})
					cur = len(bumped) - 1
				}
			}
		}
		if cur >= 0 {
			bumped[cur].rows.Add(c.Row)
		}
	}
	for _, b := range bumped {
		ws := &writeSet{end: b.bc.epoch.Load() + 2, rows: b.rows}
		if !tx.ChangedBranches() {
			ws.ids, ws.cols = touchedIDs(tx, b.table)
		} else {
			ws.rows = nil
		}
		b.bc.noteWrite(ws)
		b.bc.epoch.Add(1)
	}
	return func() {
		for _, b := range bumped {
			b.bc.epoch.Add(1)
		}
	}
}

// touchedIDs returns the set of bitmaps of a table a command changes and
// their column prefixes, or nils when it changes too many or a mask.
func touchedIDs(tx *apply.Tx, table uint32) (ids, cols map[string]struct{}) {
	list, ok := tx.BitmapsChanged(table, maxWriteIDs)
	if !ok {
		return nil, nil
	}
	ids, cols = make(map[string]struct{}, len(list)), map[string]struct{}{}
	for _, id := range list {
		if id == string(codec.MaskBitmapID()) {
			return nil, nil
		}
		ids[id] = struct{}{}
		if len(id) >= 5 && id[0] == codec.BitmapPosting {
			cols[id[:5]] = struct{}{}
		}
	}
	return ids, cols
}

// noteWrite adds what a command writes to the ring, dropping the oldest
// when it is full. Only the writer calls it, under the writer lock.
func (c *BitmapCache) noteWrite(ws *writeSet) {
	var old []*writeSet
	if p := c.writes.Load(); p != nil {
		old = *p
	}
	if len(old) >= writesKept {
		old = old[len(old)-writesKept+1:]
	}
	ring := make([]*writeSet, 0, len(old)+1)
	ring = append(append(ring, old...), ws)
	c.writes.Store(&ring)
}

// untouched reports whether every command between even epochs a and b (in
// either order) is in the ring and touched nothing that touches reports.
func (c *BitmapCache) untouched(a, b uint64, touches func(*writeSet) bool) bool {
	if a == b {
		return true
	}
	if a > b {
		a, b = b, a
	}
	p := c.writes.Load()
	if p == nil || len(*p) == 0 || a%2 != 0 || b%2 != 0 {
		return false
	}
	ring := *p
	first := ring[0].end
	if a+2 < first {
		return false // some of the commands have left the ring
	}
	i, n := int((a+2-first)/2), int((b-a)/2)
	if i+n > len(ring) {
		return false
	}
	for j, ws := range ring[i : i+n] {
		if ws.end != a+2+2*uint64(j) || touches(ws) {
			return false
		}
	}
	return true
}

// rowUntouched reports whether no command between even epochs a and b
// wrote row.
func (c *BitmapCache) rowUntouched(a, b uint64, row uint32) bool {
	return c.untouched(a, b, func(ws *writeSet) bool { return ws.rows == nil || ws.rows.Contains(row) })
}

// valid reports whether a bitmap cached at epoch at holds at epoch e,
// dropping it when it is known to be stale from e on. The caller holds mu.
func (c *BitmapCache) valid(id string, x *cachedBitmap, e uint64) bool {
	ok := c.untouched(x.at, e, func(ws *writeSet) bool {
		if ws.ids == nil {
			return true
		}
		_, hit := ws.ids[id]
		return hit
	})
	switch {
	case ok && e > x.at:
		x.at = e
	case !ok && e > x.at:
		delete(c.m, id)
		c.entries--
		c.bytes -= bitmapBytes(id, x.b)
		c.entry.Resize(c.bytes)
	}
	return ok
}

// bitmapBytes estimates the memory a cached bitmap takes.
func bitmapBytes(id string, b *roaring.Bitmap) int64 {
	return 64 + int64(len(id)) + int64(b.GetSizeInBytes())
}

// Get returns a copy of the cached bitmap of id at epoch e, or nil. The
// cached bitmaps are copy-on-write: a copy shares their containers until
// the caller changes one, so that reading a posting of hundreds of
// thousands of rows does not copy it.
func (c *BitmapCache) Get(id string, e uint64) *roaring.Bitmap {
	c.mu.Lock()
	defer c.mu.Unlock()
	if x := c.m[id]; x != nil && c.valid(id, x, e) {
		c.entry.Touch()
		return x.b.Clone()
	}
	return nil
}

// Put keeps a copy of bitmap b of id, read at epoch e, if e is still the
// table's epoch.
func (c *BitmapCache) Put(id string, b *roaring.Bitmap, e uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch.Load() != e {
		return
	}
	c.reset()
	if old, ok := c.m[id]; ok {
		c.bytes -= bitmapBytes(id, old.b)
	} else {
		c.entries++
	}
	kept := b.Clone()
	kept.SetCopyOnWrite(true)
	c.m[id] = &cachedBitmap{b: kept, at: e}
	n := bitmapBytes(id, kept)
	c.bytes += n
	c.entry.Resize(c.bytes)
	c.entry.Touch()
}

// reset starts the entries over when there are none yet or too many. The
// caller holds mu.
func (c *BitmapCache) reset() {
	if c.m == nil || c.entries >= maxCachedBitmaps {
		if c.entries > 0 && c.reg != nil {
			c.reg.budget.Overflowed(KindBitmapCache, c.bytes)
		}
		c.m, c.scans, c.entries, c.bytes = map[string]*cachedBitmap{}, map[string]*cachedScan{}, 0, 0
		if c.entry != nil {
			c.entry.Resize(0)
		}
	}
}

// scanBytes estimates the memory a cached scan takes.
func scanBytes(entries []ScanEntry) int64 {
	var n int64
	for _, x := range entries {
		n += 48 + int64(len(x.V.Str)) + int64(x.Rows.GetSizeInBytes())
	}
	return n
}

// Scan returns the cached whole scan of a column at epoch e. The
// entries are shared: callers clone the rows they change.
func (c *BitmapCache) Scan(col string, e uint64) ([]ScanEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	x := c.scans[col]
	if x == nil {
		return nil, false
	}
	ok := c.untouched(x.at, e, func(ws *writeSet) bool {
		if ws.cols == nil {
			return true
		}
		_, hit := ws.cols[col]
		return hit
	})
	switch {
	case ok && e > x.at:
		x.at = e
	case !ok && e > x.at:
		delete(c.scans, col)
		c.entries -= len(x.entries)
		c.bytes -= scanBytes(x.entries)
		c.entry.Resize(c.bytes)
	}
	if !ok {
		return nil, false
	}
	return x.entries, true
}

// PutScan keeps a whole scan of a column read at epoch e, if e is still
// the table's epoch.
func (c *BitmapCache) PutScan(col string, entries []ScanEntry, e uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch.Load() != e {
		return
	}
	c.reset()
	if old := c.scans[col]; old != nil {
		c.entries -= len(old.entries)
		c.bytes -= scanBytes(old.entries)
	}
	c.scans[col] = &cachedScan{entries: entries, at: e}
	c.entries += len(entries)
	c.bytes += scanBytes(entries)
	c.entry.Resize(c.bytes)
	c.entry.Touch()
}

// Cardinality returns the cardinality of the cached bitmap of id at epoch
// e, without copying it.
func (c *BitmapCache) Cardinality(id string, e uint64) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if x := c.m[id]; x != nil && c.valid(id, x, e) {
		return x.b.GetCardinality(), true
	}
	return 0, false
}

// Epoch is the cache's current epoch: even when no write of the table is
// in flight.
func (c *BitmapCache) Epoch() uint64 { return c.epoch.Load() }
