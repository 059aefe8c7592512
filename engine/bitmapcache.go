package engine

import (
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
)

// Queries read the same postings again and again (a category, active=true),
// and composing one from storage decodes every chunk of every layer. A
// bitmapCache keeps the composed bitmaps of one table of one branch, valid
// for one epoch of that table: every command that writes the table makes
// the epoch odd before its batch becomes visible and even again after, so
// an even epoch names one state of the table. A reader loads the epoch
// before and after taking its snapshot; when both loads agree and are even,
// its snapshot shows exactly that state, and it may use and fill entries of
// that epoch. Otherwise it reads storage.
type bitmapCache struct {
	epoch atomic.Uint64

	mu      sync.Mutex
	at      uint64 // the epoch of the entries in m
	m       map[string]*roaring.Bitmap
	entries int
}

// maxCachedBitmaps bounds the entries of one table's cache; past it the
// cache starts over.
const maxCachedBitmaps = 4096

// cacheFor returns the cache of a table of a branch. A new cache is made
// under the writer lock, so that no write is in flight while its first
// epoch begins. The caller must hold none of the database's locks.
func (d *database) cacheFor(k storeKey) *bitmapCache {
	if c, ok := d.caches.Load(k); ok {
		return c.(*bitmapCache)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c, _ := d.caches.LoadOrStore(k, &bitmapCache{})
	return c.(*bitmapCache)
}

// startWrite makes odd the epochs of the caches of every table a command
// writes, before its batch becomes visible; the returned func makes them
// even again after. Both run under the writer lock.
func (d *database) startWrite(tx *dbTx) (done func()) {
	var bumped []*bitmapCache
	seen := map[storeKey]bool{}
	for _, c := range tx.changes {
		k := storeKey{c.branch, c.table}
		if seen[k] {
			continue
		}
		seen[k] = true
		if c, ok := d.caches.Load(k); ok {
			bc := c.(*bitmapCache)
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

// get returns a copy of the cached bitmap of id at epoch e, or nil.
func (c *bitmapCache) get(id string, e uint64) *roaring.Bitmap {
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

// put keeps a copy of bitmap b of id, read at epoch e, if e is still the
// table's epoch.
func (c *bitmapCache) put(id string, b *roaring.Bitmap, e uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch.Load() != e {
		return
	}
	if c.at != e || c.m == nil || c.entries >= maxCachedBitmaps {
		c.at, c.m, c.entries = e, map[string]*roaring.Bitmap{}, 0
	}
	if _, ok := c.m[id]; !ok {
		c.entries++
	}
	c.m[id] = b.Clone()
}
