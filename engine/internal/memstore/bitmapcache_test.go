package memstore

import (
	"fmt"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// newTestCache returns a cache of bound bytes under a budget without a
// limit.
func newTestCache(bound int64) (*BitmapCache, *Budget) {
	b := NewBudget(0, func(model.Event) {})
	c := &BitmapCache{bound: bound}
	c.entry = b.AddCache(KindBitmapCache, c.empty)
	return c, b
}

// TestBitmapCacheBoundByBytes: the many small postings a prefix expands to
// all stay cached, however many; large ones fill the cache to its bound
// and then displace some of the others, not all of them; one larger than
// the cache may hold is not kept. The budget sees what the entries take.
func TestBitmapCacheBoundByBytes(t *testing.T) {
	const bound = 16 << 20
	c, budget := newTestCache(bound)
	small := roaring.BitmapOf(7)
	const n = 20000 // five times the entries a count bound used to keep
	for i := range n {
		c.Put(fmt.Sprintf("small%05d", i), small, 0)
	}
	for i := range n {
		b := c.Get(fmt.Sprintf("small%05d", i), 0)
		if b == nil || !b.Equals(small) {
			t.Fatalf("small entry %d: got %v, want %v", i, b, small)
		}
	}
	if used := budget.Stats().Used; used != c.bytes || used <= 0 || used > bound {
		t.Fatalf("budget counts %d bytes, the cache %d (bound %d)", used, c.bytes, bound)
	}

	// Every other row of 2^20 takes 128 KiB of bitmap containers.
	large := dense(1 << 20)
	per := bitmapBytes("large000", large)
	fit := int(bound / per)
	for i := range 2 * fit {
		c.Put(fmt.Sprintf("large%03d", i), large, 0)
		if c.bytes > bound {
			t.Fatalf("after %d large entries the cache takes %d bytes, over %d", i+1, c.bytes, bound)
		}
	}
	kept := 0
	for i := range 2 * fit {
		if b := c.Get(fmt.Sprintf("large%03d", i), 0); b != nil {
			if !b.Equals(large) {
				t.Fatalf("large entry %d changed", i)
			}
			kept++
		}
	}
	if last := c.Get(fmt.Sprintf("large%03d", 2*fit-1), 0); last == nil {
		t.Fatal("the entry just put is gone")
	}
	if kept < fit/2 || kept > fit {
		t.Fatalf("%d of %d large entries kept, want between %d and %d", kept, 2*fit, fit/2, fit)
	}
	if used := budget.Stats().Used; used != c.bytes {
		t.Fatalf("budget counts %d bytes, the cache %d", used, c.bytes)
	}

	huge := dense(8 * bound)
	if bitmapBytes("huge", huge) <= bound*cacheShrink/8 {
		t.Fatalf("the huge entry takes only %d bytes", bitmapBytes("huge", huge))
	}
	c.Put("huge", huge, 0)
	if c.Get("huge", 0) != nil {
		t.Fatal("an entry larger than the cache was kept")
	}
	if c.Get(fmt.Sprintf("large%03d", 2*fit-1), 0) == nil {
		t.Fatal("an entry too large to keep displaced others")
	}
}

// dense returns a bitmap of every other row below n: bitmap containers.
func dense(n int) *roaring.Bitmap {
	words := make([]uint64, n/64)
	for i := range words {
		words[i] = 0x5555555555555555
	}
	return roaring.FromDense(words, false)
}

// TestBitmapCacheGetAll: GetAll answers when every bitmap is cached at the
// epoch, with copies the caller may change, and leaves out alone when one
// is missing or was put at another epoch.
func TestBitmapCacheGetAll(t *testing.T) {
	c, _ := newTestCache(maxCachedBytes)
	c.Put("a", roaring.BitmapOf(1, 2), 0)
	c.Put("b", roaring.New(), 0)
	out := make([]*roaring.Bitmap, 3)
	if c.GetAll([]string{"a", "b", "c"}, 0, out) || out[0] != nil {
		t.Fatalf("GetAll with c missing: answered %v", out)
	}
	c.Put("c", roaring.BitmapOf(3), 0)
	if !c.GetAll([]string{"a", "b", "c"}, 0, out) {
		t.Fatal("GetAll missed with every bitmap cached")
	}
	if !out[0].Equals(roaring.BitmapOf(1, 2)) || !out[1].IsEmpty() || !out[2].Equals(roaring.BitmapOf(3)) {
		t.Fatalf("GetAll answered %v", out)
	}
	out[0].Add(9)
	if b := c.Get("a", 0); !b.Equals(roaring.BitmapOf(1, 2)) {
		t.Fatalf("changing a copy changed the cached bitmap: %v", b)
	}
	c.epoch.Store(2) // a write the log does not name: everything older is stale
	c.log.note(2, nil, nil, true)
	if c.GetAll([]string{"a"}, 2, out[:1]) {
		t.Fatal("GetAll answered with a bitmap of an older epoch")
	}
}
