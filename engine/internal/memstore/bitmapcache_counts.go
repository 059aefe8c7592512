package memstore

import "sync/atomic"

// BitmapCacheCounts count, over every bitmap cache of a registry since it
// was made, what the caches answered and how writes left them: they say
// whether the caches earn their memory under a given load.
type BitmapCacheCounts struct {
	// Hits and Misses count the lookups of bitmaps and column scans.
	Hits, Misses atomic.Int64
	// Writes counts the commands noted in a cache; Overflows those of them
	// that changed more bitmaps than a cache follows one by one.
	Writes, Overflows atomic.Int64
	// Kept counts the entries a command changed that were brought up to
	// date from its deltas rather than dropped.
	Kept atomic.Int64
}

// BitmapCacheCounts returns the registry's bitmap cache counters.
func (r *Registry) BitmapCacheCounts() *BitmapCacheCounts { return &r.bitmapCounts }

// counts returns the counters the cache adds to, or nil.
func (c *BitmapCache) counts() *BitmapCacheCounts {
	if c.reg == nil {
		return nil
	}
	return &c.reg.bitmapCounts
}

// looked counts one lookup, a hit or a miss.
func (c *BitmapCache) looked(hit bool) {
	n := c.counts()
	switch {
	case n == nil:
	case hit:
		n.Hits.Add(1)
	default:
		n.Misses.Add(1)
	}
}
