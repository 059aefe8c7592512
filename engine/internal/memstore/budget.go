package memstore

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// One memory budget covers every structure derived in memory: column
// stores with their orders, dictionaries and trigram indexes, search
// stores (vocabularies and field lengths), vector stores, the bitmap
// and record caches, and the writers' filters of each table's ids. Each
// structure is an Entry that says its size; past the limit the least
// recently used entries are evicted until the total is back under it. An
// evicted store is gone for new readers (those holding it finish with it,
// and the memory goes with the last of them): the next reader that needs
// it builds it again, or answers from storage as it does while a store
// is built. A cache that is evicted is emptied.
//
// Eviction takes the locks of the structures it drops, so it runs where
// the caller holds none: Reclaim is called after a store is built, when a
// reader has what it needs, and after a write.

// Kind is what kind of structure an Entry is.
type Kind uint8

// The kinds of Entry.
const (
	KindColumnStore Kind = iota
	KindSearchStore
	KindVectorStore
	KindBitmapCache
	KindRecordCache
	KindIDFilter
	kinds
)

// String names the kind as stats and logs do.
func (k Kind) String() string {
	switch k {
	case KindColumnStore:
		return "column_store"
	case KindSearchStore:
		return "search_store"
	case KindVectorStore:
		return "vector_store"
	case KindBitmapCache:
		return "bitmap_cache"
	case KindRecordCache:
		return "record_cache"
	case KindIDFilter:
		return "id_filter"
	}
	return "unknown"
}

// Budget accounts for the derived structures of a data directory and
// evicts the least recently used ones past its limit. It is safe for
// concurrent use.
type Budget struct {
	limit atomic.Int64 // bytes; 0: no limit
	used  atomic.Int64
	byKin [kinds]atomic.Int64
	tick  atomic.Uint64 // the clock of Entry.Touch

	mu      sync.Mutex // guards entries; a leaf of the lock order
	entries map[*Entry]struct{}

	reclaimMu sync.Mutex // one reclaimer at a time

	evictions    [kinds]atomic.Int64 // by kind of the structure evicted
	evictedBytes [kinds]atomic.Int64
	event        func(model.Event)
}

// NewBudget returns a budget of limit bytes (0: none) that reports its
// evictions to event.
func NewBudget(limit int64, event func(model.Event)) *Budget {
	b := &Budget{entries: map[*Entry]struct{}{}, event: event}
	b.limit.Store(max(limit, 0))
	return b
}

// SetLimit changes the limit (0: none); the next Reclaim applies it.
func (b *Budget) SetLimit(limit int64) { b.limit.Store(max(limit, 0)) }

// Entry is one structure under a budget: its size, when it was last
// used, and how to drop it.
type Entry struct {
	b     *Budget
	kind  Kind
	last  atomic.Uint64
	evict func() // drops the structure, or empties a cache; holding no lock
	cache bool   // a cache: eviction empties it, and it stays
	gone  bool   // taken out of the budget's list; guarded by b.mu

	mu      sync.Mutex // guards size against removed; a leaf
	size    atomic.Int64
	removed bool // counted no more: Resize and Grow do nothing
}

// Add puts a structure of kind k under the budget, sized 0 until Resize;
// evict drops it when the budget needs its memory, and may take the locks
// of the structure (the reclaimer holds none).
func (b *Budget) Add(k Kind, evict func()) *Entry { return b.add(k, false, evict) }

// add is Add and AddCache.
func (b *Budget) add(k Kind, cache bool, evict func()) *Entry {
	e := &Entry{b: b, kind: k, evict: evict, cache: cache}
	e.Touch()
	b.mu.Lock()
	b.entries[e] = struct{}{}
	b.mu.Unlock()
	return e
}

// AddCache puts a cache of kind k under the budget: evict empties it and
// sets its size to 0 (Resize) under the cache's own lock, and the cache
// stays under the budget.
func (b *Budget) AddCache(k Kind, evict func()) *Entry { return b.add(k, true, evict) }

// Touch marks the entry as just used. It writes only when the clock moved
// since the last Touch, so that hot readers of one entry do not contend.
func (e *Entry) Touch() {
	if t := e.b.tick.Load(); e.last.Load() != t {
		e.last.Store(t)
	}
}

// Resize sets the entry's size in bytes.
func (e *Entry) Resize(n int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.removed {
		return
	}
	d := n - e.size.Swap(n)
	e.b.used.Add(d)
	e.b.byKin[e.kind].Add(d)
}

// Grow adds n bytes (negative: fewer) to the entry's size.
func (e *Entry) Grow(n int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.removed {
		return
	}
	e.size.Add(n)
	e.b.used.Add(n)
	e.b.byKin[e.kind].Add(n)
}

// Remove takes the entry out of the budget: its structure was dropped (for
// another reason than eviction: a deleted branch, a changed schema) and
// counts no more.
func (e *Entry) Remove() {
	e.b.mu.Lock()
	e.gone = true
	delete(e.b.entries, e)
	e.b.mu.Unlock()
	e.drop()
}

// drop stops counting the entry.
func (e *Entry) drop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.removed {
		return
	}
	e.removed = true
	n := e.size.Swap(0)
	e.b.used.Add(-n)
	e.b.byKin[e.kind].Add(-n)
}

// Advance moves the budget's clock: entries touched after it count as
// more recently used than entries touched before. Readers call it once
// per request.
func (b *Budget) Advance() { b.tick.Add(1) }

// Over reports whether the budget is past its limit.
func (b *Budget) Over() bool {
	l := b.limit.Load()
	return l > 0 && b.used.Load() > l
}

// Reclaim evicts the least recently used entries while the budget is past
// its limit, down to fifteen sixteenths of it, so that the next few
// structures fit without another round. The caller holds no lock of any
// structure.
func (b *Budget) Reclaim() {
	if !b.Over() {
		return
	}
	b.reclaimMu.Lock()
	defer b.reclaimMu.Unlock()
	limit := b.limit.Load()
	target := limit - limit/16
	if b.used.Load() <= limit {
		return
	}
	start := time.Now()
	b.mu.Lock()
	victims := make([]*Entry, 0, len(b.entries))
	for e := range b.entries {
		if e.size.Load() > 0 {
			victims = append(victims, e)
		}
	}
	b.mu.Unlock()
	slices.SortFunc(victims, func(x, y *Entry) int {
		lx, ly := x.last.Load(), y.last.Load()
		switch {
		case lx < ly:
			return -1
		case lx > ly:
			return 1
		}
		return int(y.size.Load() - x.size.Load()) // the larger first
	})
	var n int
	var freed int64
	for _, e := range victims {
		if b.used.Load() <= target {
			break
		}
		size := e.size.Load()
		if e.cache {
			e.evict()
		} else {
			b.mu.Lock()
			if e.gone {
				b.mu.Unlock()
				continue
			}
			e.gone = true
			delete(b.entries, e)
			b.mu.Unlock()
			e.evict()
			e.drop()
		}
		b.evictions[e.kind].Add(1)
		b.evictedBytes[e.kind].Add(size)
		n++
		freed += size
	}
	if n > 0 {
		b.event(model.Event{Kind: model.EventEviction, Count: n, Bytes: uint64(freed), Duration: time.Since(start)})
	}
}

// Overflowed counts a cache of kind k that emptied itself, of size
// bytes, because it held more entries than it may: an eviction, though
// not one of the budget's.
func (b *Budget) Overflowed(k Kind, size int64) {
	b.evictions[k].Add(1)
	b.evictedBytes[k].Add(size)
	b.event(model.Event{Kind: model.EventEviction, Count: 1, Bytes: uint64(max(size, 0))})
}

// Stats are a budget's figures at one moment.
type Stats struct {
	// Limit is the budget in bytes (0: none); Used what its structures
	// take now.
	Limit, Used int64
	// Entries is the number of structures under the budget.
	Entries int
	// Evictions counts the structures evicted, and the caches emptied,
	// since the engine opened, and EvictedBytes their sizes.
	Evictions, EvictedBytes int64
	// Kinds are the same figures by kind of structure (Kind.String).
	Kinds map[string]KindStats
}

// KindStats are a budget's figures for one kind of structure.
type KindStats struct {
	Used                    int64
	Entries                 int
	Evictions, EvictedBytes int64
}

// Stats returns the budget's figures.
func (b *Budget) Stats() Stats {
	var by [kinds]KindStats
	for k := range kinds {
		by[k] = KindStats{Used: b.byKin[k].Load(), Evictions: b.evictions[k].Load(), EvictedBytes: b.evictedBytes[k].Load()}
	}
	b.mu.Lock()
	for e := range b.entries {
		by[e.kind].Entries++
	}
	b.mu.Unlock()
	s := Stats{Limit: b.limit.Load(), Used: b.used.Load(), Kinds: make(map[string]KindStats, kinds)}
	for k := range kinds {
		s.Entries += by[k].Entries
		s.Evictions += by[k].Evictions
		s.EvictedBytes += by[k].EvictedBytes
		s.Kinds[k.String()] = by[k]
	}
	return s
}
