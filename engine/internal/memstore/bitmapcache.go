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
// BitmapCache keeps the composed bitmaps of one table of one branch, valid
// for one epoch of that table: every command that writes the table makes
// the epoch odd before its batch becomes visible and even again after, so
// an even epoch names one state of the table. A reader loads the epoch
// before and after taking its snapshot; when both loads agree and are even,
// its snapshot shows exactly that state, and it may use and fill entries of
// that epoch. Otherwise it reads storage.
type BitmapCache struct {
	epoch atomic.Uint64
	salt  uint64    // sets its records apart in a RecordCache
	reg   *Registry // whose budget record caches charge
	entry *Entry    // under the memory budget

	mu      sync.Mutex
	at      uint64 // the epoch of the entries in m and scans
	m       map[string]*roaring.Bitmap
	scans   map[string][]ScanEntry // whole-column scans by column prefix
	entries int
	bytes   int64 // what the entries take
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
// writes, before its batch becomes visible, and notes the tables as
// written; the returned func makes the epochs even again after. Both run
// under the writer lock.
func (d *DB) startWrite(tx *apply.Tx) (done func()) {
	var bumped []*BitmapCache
	var last storeKey
	for i, c := range tx.Rows() {
		k := storeKey{Branch: c.Branch, Table: c.Table}
		if i > 0 && k == last {
			continue
		}
		last = k
		if bc := d.Cache(k); bc != nil && !slices.Contains(bumped, bc) {
			bc.epoch.Add(1)
			bumped = append(bumped, bc)
		}
	}
	return func() {
		for _, bc := range bumped {
			bc.epoch.Add(1)
		}
	}
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
	if c.at != e {
		return nil
	}
	if b := c.m[id]; b != nil {
		c.entry.Touch()
		return b.Clone()
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
	c.reset(e)
	if old, ok := c.m[id]; ok {
		c.bytes -= bitmapBytes(id, old)
	} else {
		c.entries++
	}
	kept := b.Clone()
	kept.SetCopyOnWrite(true)
	c.m[id] = kept
	n := bitmapBytes(id, kept)
	c.bytes += n
	c.entry.Resize(c.bytes)
	c.entry.Touch()
}

// reset starts the entries over when they belong to another epoch or are
// too many. The caller holds mu.
func (c *BitmapCache) reset(e uint64) {
	if c.at != e || c.m == nil || c.entries >= maxCachedBitmaps {
		if c.at == e && c.entries > 0 && c.reg != nil {
			c.reg.budget.Overflowed(KindBitmapCache, c.bytes)
		}
		c.at, c.m, c.scans, c.entries, c.bytes = e, map[string]*roaring.Bitmap{}, map[string][]ScanEntry{}, 0, 0
		if c.entry != nil {
			c.entry.Resize(0)
		}
	}
}

// Scan returns the cached whole scan of a column at epoch e. The
// entries are shared: callers clone the rows they change.
func (c *BitmapCache) Scan(col string, e uint64) ([]ScanEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at != e {
		return nil, false
	}
	s, ok := c.scans[col]
	return s, ok
}

// PutScan keeps a whole scan of a column read at epoch e, if e is still
// the table's epoch.
func (c *BitmapCache) PutScan(col string, entries []ScanEntry, e uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch.Load() != e {
		return
	}
	c.reset(e)
	c.scans[col] = entries
	c.entries += len(entries)
	for _, x := range entries {
		c.bytes += 48 + int64(len(x.V.Str)) + int64(x.Rows.GetSizeInBytes())
	}
	c.entry.Resize(c.bytes)
	c.entry.Touch()
}

// Cardinality returns the cardinality of the cached bitmap of id at epoch
// e, without copying it.
func (c *BitmapCache) Cardinality(id string, e uint64) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at != e {
		return 0, false
	}
	if b := c.m[id]; b != nil {
		return b.GetCardinality(), true
	}
	return 0, false
}

// Epoch is the cache's current epoch: even when no write of the table is
// in flight.
func (c *BitmapCache) Epoch() uint64 { return c.epoch.Load() }
