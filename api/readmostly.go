package api

import (
	"maps"
	"sync"
	"sync/atomic"
)

// readMostly is a map that every request reads and few requests change:
// readers load it through an atomic pointer, without a lock whose counter
// every core would move; a change replaces it by a copy, so that a map once
// published never changes. The zero value is an empty map, ready to use;
// it is safe for concurrent use.
type readMostly[K comparable, V any] struct {
	m  atomic.Pointer[map[K]V]
	mu sync.Mutex // serializes the copies; a leaf
}

// load returns the map as it is now, nil when empty; the caller only reads
// it.
func (c *readMostly[K, V]) load() map[K]V {
	if m := c.m.Load(); m != nil {
		return *m
	}
	return nil
}

// update applies fn to a copy of the map and publishes the copy when fn
// returns true. Updates are serialized: fn sees every update before it.
func (c *readMostly[K, V]) update(fn func(next map[K]V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := maps.Clone(c.load())
	if next == nil {
		next = map[K]V{}
	}
	if fn(next) {
		c.m.Store(&next)
	}
}

// put sets k to v while the map holds fewer than limit keys, or k already.
func (c *readMostly[K, V]) put(k K, v V, limit int) {
	if m := c.load(); len(m) >= limit {
		if _, ok := m[k]; !ok {
			return // full: no copy of the map for a key it will not take
		}
	}
	c.update(func(next map[K]V) bool {
		if _, ok := next[k]; !ok && len(next) >= limit {
			return false
		}
		next[k] = v
		return true
	})
}

// remove deletes k.
func (c *readMostly[K, V]) remove(k K) {
	c.update(func(next map[K]V) bool {
		if _, ok := next[k]; !ok {
			return false
		}
		delete(next, k)
		return true
	})
}
