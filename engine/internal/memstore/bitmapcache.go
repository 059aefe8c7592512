package memstore

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/model"
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
// batch becomes visible, the cache's writeLog notes, for each row the
// command writes and each bitmap it gives a delta, the epoch the command
// ends at. An entry tagged with epoch a answers for epoch b when its key's
// last write ends at or before the smaller of the two: then no command
// between them touched it. Otherwise it is a miss, and the reader refills
// it, unless the write kept it: once a command is applied, the entries it
// changed that held just before it (for a command past the log's bounds,
// every entry) are brought to the epoch after it by applying its deltas,
// so that a bulk load leaves the cache warm. The log forgets (moves its
// floor, past which every older entry is a miss) when it grows past its
// bounds, and for a command that touches more than maxWriteIDs bitmaps,
// changes a mask (which takes inherited rows out of every bitmap of the
// table) or changes branches (schemas, lineages), which counts as touching
// every bitmap, and for the last also every row; the last two keep no
// entry.
// The log is written before the epoch turns odd, so whoever loads an even
// epoch finds every command up to it.
type BitmapCache struct {
	epoch atomic.Uint64
	log   writeLog
	salt  uint64    // sets its records apart in a RecordCache
	reg   *Registry // whose budget record caches charge
	entry *Entry    // under the memory budget
	bound int64     // the most bytes the entries take (cacheBound)

	mu    sync.Mutex
	m     map[string]*cachedBitmap
	scans map[string]*cachedScan // whole-column scans by column prefix
	bytes int64                  // what the entries take
}

// writeLog holds, for each row and bitmap of a table written since its
// floors, the epoch after the last command that wrote it. Only the writer
// changes it, under the writer lock.
type writeLog struct {
	mu       sync.RWMutex
	rowFloor uint64 // entries of records tagged before it are misses
	idFloor  uint64 // entries of bitmaps and scans tagged before it are misses
	rows     map[uint32]uint64
	ids      map[string]uint64 // bitmaps by id
	cols     map[string]uint64 // postings by column prefix, for scans
}

// maxLoggedRows and maxLoggedIDs bound a table's writeLog: past them it
// forgets.
const (
	maxLoggedRows = 1 << 15
	maxLoggedIDs  = 1 << 14
)

// maxWriteIDs is the most bitmaps of a command a cache logs one by one; a
// bigger command (a bulk load) counts as touching every bitmap.
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

// maxCachedBytes bounds what the entries of one table's cache take, by
// bitmapBytes and scanBytes. A bound by bytes rather than by entries lets
// the thousands of small postings a prefix or a typo expands to stay
// cached, while a few large postings still cannot take more than this;
// the memory budget may empty the cache before it is full.
const maxCachedBytes = 64 << 20

// cacheBound returns the bound of a table's cache under a budget of limit
// bytes (0: none): maxCachedBytes, and at most an eighth of the limit, so
// that one table's postings do not make a small budget evict the stores
// that answer the rest.
func cacheBound(limit int64) int64 {
	if limit > 0 {
		return min(maxCachedBytes, limit/8)
	}
	return maxCachedBytes
}

// cacheShrink is the fraction of its bound a full cache drops to,
// in eighths: entries picked at random go until the rest fit, so that a
// working set a little larger than the bound keeps most of its entries
// rather than starting over.
const cacheShrink = 6

// CacheFor returns the cache of a table of a branch. A new cache is made
// under the table's lock (DB), as a reader holds it: no command writing
// the table is between its batch becoming visible and its epochs turning
// even, and one that has yet to get there turns the new cache's epoch odd
// too. A write of another table does not hold it back. The caller must
// hold none of the database's locks.
func (d *DB) CacheFor(k storeKey) *BitmapCache {
	if c := d.Cache(k); c != nil {
		return c
	}
	tl := d.readTable(k.Table)
	defer d.doneReading(tl)
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
// is none. The caller holds the table's lock (DB): no write of the table
// is in flight.
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
	c := &BitmapCache{salt: rand.Uint64(), reg: d.reg, bound: cacheBound(d.reg.budget.limit.Load())}
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
	c.m, c.scans, c.bytes = nil, nil, 0
	c.entry.Resize(0)
}

// startWrite makes odd the epochs of the caches of every table a command
// writes, before its batch becomes visible, and notes in each what the
// command writes of its table; the returned func, told whether the
// command was applied, brings the cached bitmaps the command changed up to
// date (keep) and makes the epochs even again. Both run under the writer
// lock.
func (d *DB) startWrite(tx *apply.Tx) (done func(applied bool)) {
	var bumped []*cacheWrite
	var last storeKey
	var cur *cacheWrite
	for i, c := range tx.Rows() {
		k := storeKey{Branch: c.Branch, Table: c.Table}
		if i == 0 || k != last {
			last, cur = k, nil
			if bc := d.Cache(k); bc != nil {
				j := slices.IndexFunc(bumped, func(w *cacheWrite) bool { return w.bc == bc })
				if j < 0 {
					bumped = append(bumped, &cacheWrite{bc: bc, key: k, rows: roaring.New()})
					j = len(bumped) - 1
				}
				cur = bumped[j]
			}
		}
		if cur != nil {
			cur.rows.Add(c.Row)
		}
	}
	for _, w := range bumped {
		w.start(d, tx)
	}
	return func(applied bool) {
		for _, w := range bumped {
			if applied && w.top != nil {
				w.bc.keep(tx, w)
			}
			w.bc.epoch.Add(1)
		}
	}
}

// cacheWrite is what a command in flight writes of the table of one cache.
type cacheWrite struct {
	bc   *BitmapCache
	key  storeKey
	rows *roaring.Bitmap // the rows it writes
	from uint64          // the even epoch before it
	// ids are the bitmaps it changes; every is set when it counts as
	// changing every bitmap: it changes more than the log follows one by
	// one (ids is nil then), or a mask.
	ids   []string
	every bool
	// top is the layer it writes, when the bitmaps it changes there may be
	// brought up to date from its deltas: it changes no branch, no mask
	// and no other layer the table's bitmaps are composed from.
	top *uint32
}

// start notes the command in the cache's log and makes its epoch odd.
// Entries that may be kept are first brought to the epoch before the
// command when they hold there, for keep to find them.
func (w *cacheWrite) start(d *DB, tx *apply.Tx) {
	c := w.bc
	w.from = c.epoch.Load() // even: no other write is in flight
	end := w.from + 2
	n := c.counts()
	if n != nil {
		n.Writes.Add(1)
	}
	if tx.ChangedBranches() {
		c.log.note(end, nil, nil, true)
		c.epoch.Add(1)
		return
	}
	ids, ok := tx.BitmapsChanged(w.key.Table, maxWriteIDs)
	if !ok && n != nil {
		n.Overflows.Add(1)
	}
	w.ids, w.every = ids, !ok || slices.Contains(ids, string(codec.MaskBitmapID()))
	w.top = keepLayer(d, tx, w.key)
	if w.top != nil {
		c.settle(w)
	}
	c.log.note(end, w.rows, ids, w.every)
	c.epoch.Add(1)
}

// keepLayer returns the layer of the branch of k a command writes, when
// the bitmaps of k's table it changes may be brought up to date by
// applying its deltas to them: the composed bitmap of a branch is its top
// layer's over what it inherits less its mask, and rows of the top layer
// are never inherited ones, so when the command changes neither the mask
// nor another layer of the lineage, the composed bitmap changes by the
// top layer's delta. Otherwise nil.
func keepLayer(d *DB, tx *apply.Tx, k storeKey) *uint32 {
	b := d.State().ByID.At(k.Branch)
	if b == nil || len(b.Lineage) == 0 {
		return nil
	}
	top := b.Lineage[0].Layer
	for _, l := range tx.BitmapLayers(k.Table) {
		if l != top && slices.ContainsFunc(b.Lineage, func(r model.LayerRef) bool { return r.Layer == l }) {
			return nil
		}
	}
	if tx.ApplyBitmapChanges(top, k.Table, string(codec.MaskBitmapID()), nil) {
		return nil
	}
	return &top
}

// settle brings the entries of the bitmaps a command changes, or with
// every all entries, to the epoch before it where they hold there, and
// drops the others, before the command is noted in the log. Entries put
// from then on are of that epoch too, until it turns odd.
func (c *BitmapCache) settle(w *cacheWrite) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.every {
		for id, x := range c.m {
			c.valid(id, x, w.from)
		}
		return
	}
	for _, id := range w.ids {
		if x := c.m[id]; x != nil {
			c.valid(id, x, w.from)
		}
	}
}

// keep brings the entries of the bitmaps an applied command changed, which
// settle left at the epoch before it, to the epoch after it by applying
// the command's deltas, instead of leaving them to miss; with every, the
// entries it left alone too. Readers of the epoch before miss them from
// then on, as they would after a refill. It runs before the epoch turns
// even again.
func (c *BitmapCache) keep(tx *apply.Tx, w *cacheWrite) {
	end := w.from + 2
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := int64(0)
	update := func(id string, x *cachedBitmap) {
		if x.at != w.from {
			return
		}
		if tx.ApplyBitmapChanges(*w.top, w.key.Table, id, nil) {
			old := bitmapBytes(id, x.b)
			b := x.b.Clone() // copy-on-write: the containers it changes are copied
			tx.ApplyBitmapChanges(*w.top, w.key.Table, id, b)
			c.m[id] = &cachedBitmap{b: b, at: end}
			c.bytes += bitmapBytes(id, b) - old
			kept++
			return
		}
		if w.every {
			x.at = end
		}
	}
	if w.every {
		for id, x := range c.m {
			if x.at != w.from {
				delete(c.m, id) // stale from the command on
				c.bytes -= bitmapBytes(id, x.b)
				continue
			}
			update(id, x)
		}
	} else {
		for _, id := range w.ids {
			if x := c.m[id]; x != nil {
				update(id, x)
			}
		}
	}
	c.entry.Resize(c.bytes)
	if n := c.counts(); n != nil && kept > 0 {
		n.Kept.Add(kept)
	}
}

// note logs a command ending at epoch end that writes rows (nil: every
// row) and the bitmaps ids, or every bitmap.
func (l *writeLog) note(end uint64, rows *roaring.Bitmap, ids []string, every bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rows == nil || len(l.rows)+int(rows.GetCardinality()) > maxLoggedRows {
		l.rowFloor, l.rows = end, nil
	} else if !rows.IsEmpty() {
		if l.rows == nil {
			l.rows = map[uint32]uint64{}
		}
		for it := rows.Iterator(); it.HasNext(); {
			l.rows[it.Next()] = end
		}
	}
	if every || len(l.ids)+len(ids) > maxLoggedIDs {
		l.idFloor, l.ids, l.cols = end, nil, nil
		return
	}
	if len(ids) > 0 && l.ids == nil {
		l.ids, l.cols = map[string]uint64{}, map[string]uint64{}
	}
	for _, id := range ids {
		l.ids[id] = end
		if len(id) >= 5 && id[0] == codec.BitmapPosting {
			l.cols[id[:5]] = end
		}
	}
}

// holds reports whether an entry tagged with even epoch a holds at epoch
// b: no command ending between them (when b is odd, up to the end of the
// command in flight) touched it, by the log's floor and the end of the
// last command that touched the key.
func holds(a, b, floor, last uint64) bool {
	if a == b {
		return true
	}
	m := min(a, b)
	return m >= floor && last <= m
}

// rowHolds reports whether no command between epochs a (even) and b
// wrote row.
func (c *BitmapCache) rowHolds(a, b uint64, row uint32) bool {
	if a == b {
		return true
	}
	l := &c.log
	l.mu.RLock()
	ok := holds(a, b, l.rowFloor, l.rows[row])
	l.mu.RUnlock()
	return ok
}

// idHolds reports whether no command between epochs a (even) and b changed
// the bitmap id, or (scan) the postings of the column prefix id.
func (c *BitmapCache) idHolds(a, b uint64, id string, scan bool) bool {
	if a == b {
		return true
	}
	l := &c.log
	l.mu.RLock()
	last := l.ids[id]
	if scan {
		last = l.cols[id]
	}
	ok := holds(a, b, l.idFloor, last)
	l.mu.RUnlock()
	return ok
}

// valid reports whether a bitmap cached at epoch at holds at epoch e,
// dropping it when it is known to be stale from e on. The caller holds mu.
func (c *BitmapCache) valid(id string, x *cachedBitmap, e uint64) bool {
	ok := c.idHolds(x.at, e, id, false)
	switch {
	case ok && e > x.at:
		x.at = e
	case !ok && e > x.at:
		delete(c.m, id)
		c.bytes -= bitmapBytes(id, x.b)
		c.entry.Resize(c.bytes)
	}
	return ok
}

// bitmapBytes estimates the memory a cached bitmap takes: its containers,
// and for the entry itself the map slot, the id, the entry and the
// bitmap's header and container lists, which for the many postings of one
// or two rows are most of it.
func bitmapBytes(id string, b *roaring.Bitmap) int64 {
	return 192 + int64(len(id)) + int64(b.GetSizeInBytes())
}

// Get returns a copy of the cached bitmap of id at epoch e, or nil. The
// cached bitmaps are copy-on-write: a copy shares their containers until
// the caller changes one, so that reading a posting of hundreds of
// thousands of rows does not copy it.
func (c *BitmapCache) Get(id string, e uint64) *roaring.Bitmap {
	c.mu.Lock()
	defer c.mu.Unlock()
	if x := c.m[id]; x != nil && c.valid(id, x, e) {
		c.looked(true)
		c.entry.Touch()
		return x.b.Clone()
	}
	c.looked(false)
	return nil
}

// GetAll sets out[i] to a copy of the cached bitmap of ids[i] at epoch e
// and reports true when every one of ids is cached, under one lock: a
// term's postings and frequency levels are read together, for each of
// the hundreds of terms a prefix expands to. On false out is left as is.
func (c *BitmapCache) GetAll(ids []string, e uint64, out []*roaring.Bitmap) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		x := c.m[id]
		ok := x != nil && c.valid(id, x, e)
		c.looked(ok)
		if !ok {
			return false
		}
	}
	for i, id := range ids {
		out[i] = c.m[id].b.Clone()
	}
	c.entry.Touch()
	return true
}

// Put keeps a copy of bitmap b of id, read at epoch e, if e is still the
// table's epoch.
func (c *BitmapCache) Put(id string, b *roaring.Bitmap, e uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch.Load() != e {
		return
	}
	if old, ok := c.m[id]; ok {
		delete(c.m, id)
		c.bytes -= bitmapBytes(id, old.b)
	}
	kept := b.Clone()
	kept.SetCopyOnWrite(true)
	n := bitmapBytes(id, kept)
	if !c.room(n) {
		c.entry.Resize(c.bytes)
		return
	}
	c.m[id] = &cachedBitmap{b: kept, at: e}
	c.bytes += n
	c.entry.Resize(c.bytes)
	c.entry.Touch()
}

// room makes room for an entry of n bytes: when the entries would take
// more than the cache's bound with it, entries picked at random (the
// maps' order) are dropped until they take at most cacheShrink eighths of
// it.
// It reports false, dropping nothing, for an entry larger than that on
// its own, which is not kept. The caller holds mu.
func (c *BitmapCache) room(n int64) bool {
	if c.m == nil {
		c.m, c.scans = map[string]*cachedBitmap{}, map[string]*cachedScan{}
	}
	if c.bytes+n <= c.bound {
		return true
	}
	target := c.bound * cacheShrink / 8
	if n > target {
		return false
	}
	target -= n
	freed := c.bytes
	for id, x := range c.m {
		if c.bytes <= target {
			break
		}
		delete(c.m, id)
		c.bytes -= bitmapBytes(id, x.b)
	}
	for col, x := range c.scans {
		if c.bytes <= target {
			break
		}
		delete(c.scans, col)
		c.bytes -= scanBytes(x.entries)
	}
	if freed -= c.bytes; freed > 0 && c.reg != nil {
		c.reg.budget.Overflowed(KindBitmapCache, freed)
	}
	return true
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
		c.looked(false)
		return nil, false
	}
	ok := c.idHolds(x.at, e, col, true)
	switch {
	case ok && e > x.at:
		x.at = e
	case !ok && e > x.at:
		delete(c.scans, col)
		c.bytes -= scanBytes(x.entries)
		c.entry.Resize(c.bytes)
	}
	c.looked(ok)
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
	if old := c.scans[col]; old != nil {
		delete(c.scans, col)
		c.bytes -= scanBytes(old.entries)
	}
	n := scanBytes(entries)
	if !c.room(n) {
		c.entry.Resize(c.bytes)
		return
	}
	c.scans[col] = &cachedScan{entries: entries, at: e}
	c.bytes += n
	c.entry.Resize(c.bytes)
	c.entry.Touch()
}

// Cardinality returns the cardinality of the cached bitmap of id at epoch
// e, without copying it.
func (c *BitmapCache) Cardinality(id string, e uint64) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if x := c.m[id]; x != nil && c.valid(id, x, e) {
		c.looked(true)
		return x.b.GetCardinality(), true
	}
	c.looked(false)
	return 0, false
}

// Epoch is the cache's current epoch: even when no write of the table is
// in flight.
func (c *BitmapCache) Epoch() uint64 { return c.epoch.Load() }
