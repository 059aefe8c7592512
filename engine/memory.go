package engine

// Memory. Options.MemoryLimit is what the whole engine may take: the
// storage engine's block cache and memtables, the structures derived in
// memory (column stores with their orders, dictionaries and trigram
// indexes, search vocabularies and field lengths, vector stores, bitmap
// and record caches, the writers' filters of table ids), and room for
// the requests in flight. PlanMemory shares it out; the derived
// structures live under one budget that evicts the least recently used
// past it (internal/memstore).

// MemoryPlan is how a memory limit is shared out.
type MemoryPlan struct {
	// Limit is the whole (Options.MemoryLimit); 0: none.
	Limit int64
	// CacheSize is the storage engine's block cache.
	CacheSize int64
	// MemtableSize is the size of one memtable of the storage engine;
	// Memtables what the storage engine may hold of them at once:
	// heldMemtables, one filling while the others wait to be written out
	// (past them writes stop until a flush ends).
	MemtableSize, Memtables int64
	// Reserve is left for requests in flight and the Go runtime: a quarter
	// of the limit, at least 64 MiB.
	Reserve int64
	// Derived is the budget of the structures derived in memory: what the
	// rest leaves, at least 16 MiB; 0 when there is no limit.
	Derived int64
	// GoLimit is the memory limit the Go runtime should keep to
	// (runtime/debug.SetMemoryLimit): the limit without the storage
	// engine's block cache and memtables when they live outside the Go
	// heap, as they do in builds with cgo. 0 when there is no limit.
	GoLimit int64
}

// Memory sizes of the plan.
const (
	// maxMemtableSize is the memtable size without a limit, and the most
	// with one.
	maxMemtableSize = 64 << 20
	minDerived      = 16 << 20
	minReserve      = 64 << 20
	minMemtableSize = 4 << 20
)

// heldMemtables is how many memtables the storage engine may hold
// (pebble.Options.MemTableStopWritesThreshold): a bulk load that outruns
// the flushes fills them all before its writes stop, so the plan counts
// them all, and they take an eighth of the limit together.
const heldMemtables = 4

// PlanMemory shares out a memory limit (0: none) with a block cache of
// cacheSize bytes (0: a default: DefaultCacheSize without a limit, an
// eighth of the limit with one, between 8 MiB and DefaultCacheSize).
func PlanMemory(limit, cacheSize int64) MemoryPlan {
	p := MemoryPlan{Limit: max(limit, 0), CacheSize: cacheSize, MemtableSize: maxMemtableSize}
	if p.Limit == 0 {
		if p.CacheSize == 0 {
			p.CacheSize = DefaultCacheSize
		}
		p.Memtables = heldMemtables * p.MemtableSize
		return p
	}
	if p.CacheSize == 0 {
		p.CacheSize = min(max(p.Limit/8, 8<<20), DefaultCacheSize)
	}
	p.MemtableSize = min(max(p.Limit/(8*heldMemtables), minMemtableSize), maxMemtableSize)
	p.Memtables = heldMemtables * p.MemtableSize
	p.Reserve = max(p.Limit/4, minReserve)
	p.Derived = max(p.Limit-p.CacheSize-p.Memtables-p.Reserve, minDerived)
	p.GoLimit = p.Limit
	if manualStorageMemory {
		p.GoLimit -= p.CacheSize + p.Memtables
	}
	p.GoLimit = max(p.GoLimit, p.Derived+p.Reserve)
	return p
}

// MemoryStats are the figures of the memory budget of the derived
// structures, for metrics and operators.
type MemoryStats struct {
	// MemoryLimit is what the whole engine may take (Options.MemoryLimit;
	// 0: none).
	MemoryLimit int64
	// Limit is the budget of the derived structures in bytes
	// (MemoryPlan.Derived; 0: none), and Used what they take now.
	Limit, Used int64
	// Structures is the number of structures under the budget.
	Structures int
	// Evictions counts the structures evicted, and the caches emptied, to
	// stay within the budget since Open, and EvictedBytes their sizes.
	Evictions, EvictedBytes int64
	// Kinds are the same figures by kind of structure: column_store,
	// search_store, vector_store, bitmap_cache, record_cache, id_filter.
	Kinds map[string]MemoryKindStats
}

// MemoryKindStats are the budget's figures for one kind of structure.
type MemoryKindStats struct {
	Used                    int64
	Structures              int
	Evictions, EvictedBytes int64
}

// MemoryStats returns the figures of the memory budget now.
func (e *Engine) MemoryStats() MemoryStats {
	s := e.mem.Budget().Stats()
	m := MemoryStats{MemoryLimit: e.plan.Limit, Limit: s.Limit, Used: s.Used, Structures: s.Entries,
		Evictions: s.Evictions, EvictedBytes: s.EvictedBytes, Kinds: make(map[string]MemoryKindStats, len(s.Kinds))}
	for name, k := range s.Kinds {
		m.Kinds[name] = MemoryKindStats{Used: k.Used, Structures: k.Entries, Evictions: k.Evictions, EvictedBytes: k.EvictedBytes}
	}
	return m
}
