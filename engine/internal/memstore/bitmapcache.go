package memstore

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/model"
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
	reg   *Registry // hears of evictions

	mu      sync.Mutex
	at      uint64 // the epoch of the entries in m and scans
	m       map[string]*roaring.Bitmap
	scans   map[string][]ScanEntry // whole-column scans by column prefix
	entries int
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
	if c, ok := d.caches.Load(k); ok {
		return c.(*BitmapCache)
	}
	d.LockWriter()
	defer d.UnlockWriter()
	c, _ := d.caches.LoadOrStore(k, &BitmapCache{salt: rand.Uint64(), reg: d.reg})
	return c.(*BitmapCache)
}

// startWrite makes odd the epochs of the caches of every table a command
// writes, before its batch becomes visible, and notes the tables as
// written; the returned func makes the epochs even again after. Both run
// under the writer lock.
func (d *DB) startWrite(tx *apply.Tx) (done func()) {
	var bumped []*BitmapCache
	seen := map[storeKey]bool{}
	for _, c := range tx.Rows() {
		k := storeKey{Branch: c.Branch, Table: c.Table}
		if seen[k] {
			continue
		}
		seen[k] = true
		if d.written == nil {
			d.written = map[storeKey]uint64{}
		}
		d.written[k] = tx.Seq()
		if c, ok := d.caches.Load(k); ok {
			bc := c.(*BitmapCache)
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
	if _, ok := c.m[id]; !ok {
		c.entries++
	}
	kept := b.Clone()
	kept.SetCopyOnWrite(true)
	c.m[id] = kept
}

// reset starts the entries over when they belong to another epoch or are
// too many. The caller holds mu.
func (c *BitmapCache) reset(e uint64) {
	if c.at != e || c.m == nil || c.entries >= maxCachedBitmaps {
		if c.at == e && c.entries > 0 && c.reg != nil {
			c.reg.event(model.Event{Kind: model.EventEviction, Count: c.entries})
		}
		c.at, c.m, c.scans, c.entries = e, map[string]*roaring.Bitmap{}, map[string][]ScanEntry{}, 0
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
