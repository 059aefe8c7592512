package model

import "math/bits"

// Map is an immutable hash map (a hash array mapped trie): With and
// Without return a new map that shares all but a few nodes with the old
// one, so that a database's state, which every branch change republishes,
// costs the same to change with ten thousand branches as with ten.
// Iteration follows the keys' hashes: it is the same for the same keys on
// every run, and callers that need an order sort. The zero Map is not
// usable; make one with NewMap. A Map is safe for concurrent use.
type Map[K comparable, V any] struct {
	root *pnode[K, V]
	n    int
	hash func(K) uint64
}

// pnode is a node of a Map: up to 32 slots, present ones stored in slot
// order. Below the last level of hash bits, a node is a plain list of the
// entries whose hashes are equal.
type pnode[K comparable, V any] struct {
	used    uint32
	entries []pentry[K, V]
}

// pentry is a slot: an entry, or a child node.
type pentry[K comparable, V any] struct {
	hash  uint64
	key   K
	val   V
	child *pnode[K, V]
}

// The shape of a Map's trie: five bits of hash choose a slot at each
// level.
const (
	pbits     = 5
	pmaxDepth = 64 / pbits // levels of 5 hash bits; deeper nodes are lists
)

// NewMap returns an empty map whose keys are hashed by hash.
func NewMap[K comparable, V any](hash func(K) uint64) Map[K, V] {
	return Map[K, V]{hash: hash}
}

// HashString hashes a string key (64-bit FNV-1a): the same on every run.
func HashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// HashU32 hashes an integer key, spreading its bits.
func HashU32(k uint32) uint64 { return HashU64(uint64(k)) }

// HashU64 hashes an integer key, spreading its bits (splitmix64's
// finalizer).
func HashU64(k uint64) uint64 {
	k ^= k >> 30
	k *= 0xbf58476d1ce4e5b9
	k ^= k >> 27
	k *= 0x94d049bb133111eb
	return k ^ k>>31
}

// Len is the number of entries.
func (m Map[K, V]) Len() int { return m.n }

// Get returns the value of k.
func (m Map[K, V]) Get(k K) (V, bool) {
	h := m.hash(k)
	n := m.root
	for depth := 0; n != nil; depth++ {
		if depth >= pmaxDepth {
			for i := range n.entries {
				if n.entries[i].key == k {
					return n.entries[i].val, true
				}
			}
			break
		}
		bit := uint32(1) << ((h >> (depth * pbits)) & 31)
		if n.used&bit == 0 {
			break
		}
		e := &n.entries[bits.OnesCount32(n.used&(bit-1))]
		if e.child != nil {
			n = e.child
			continue
		}
		if e.key == k {
			return e.val, true
		}
		break
	}
	var zero V
	return zero, false
}

// At returns the value of k, or the zero value.
func (m Map[K, V]) At(k K) V {
	v, _ := m.Get(k)
	return v
}

// With returns the map with k set to v.
func (m Map[K, V]) With(k K, v V) Map[K, V] {
	root, added := m.root.with(m.hash(k), k, v, 0)
	if added {
		m.n++
	}
	m.root = root
	return m
}

// Without returns the map without k.
func (m Map[K, V]) Without(k K) Map[K, V] {
	root, removed := m.root.without(m.hash(k), k, 0)
	if removed {
		m.n--
		m.root = root
	}
	return m
}

// All iterates over the entries, in hash order.
func (m Map[K, V]) All(yield func(K, V) bool) {
	m.root.all(yield)
}

// all yields the entries under n; false when yield stopped it.
func (n *pnode[K, V]) all(yield func(K, V) bool) bool {
	if n == nil {
		return true
	}
	for i := range n.entries {
		e := &n.entries[i]
		if e.child != nil {
			if !e.child.all(yield) {
				return false
			}
		} else if !yield(e.key, e.val) {
			return false
		}
	}
	return true
}

// with returns a copy of n with k set, and whether k is new.
func (n *pnode[K, V]) with(h uint64, k K, v V, depth int) (*pnode[K, V], bool) {
	if depth >= pmaxDepth {
		out := &pnode[K, V]{}
		if n != nil {
			out.entries = append(make([]pentry[K, V], 0, len(n.entries)+1), n.entries...)
		}
		for i := range out.entries {
			if out.entries[i].key == k {
				out.entries[i].val = v
				return out, false
			}
		}
		out.entries = append(out.entries, pentry[K, V]{hash: h, key: k, val: v})
		return out, true
	}
	bit := uint32(1) << ((h >> (depth * pbits)) & 31)
	if n == nil {
		return &pnode[K, V]{used: bit, entries: []pentry[K, V]{{hash: h, key: k, val: v}}}, true
	}
	i := bits.OnesCount32(n.used & (bit - 1))
	if n.used&bit == 0 {
		out := &pnode[K, V]{used: n.used | bit, entries: make([]pentry[K, V], len(n.entries)+1)}
		copy(out.entries, n.entries[:i])
		out.entries[i] = pentry[K, V]{hash: h, key: k, val: v}
		copy(out.entries[i+1:], n.entries[i:])
		return out, true
	}
	out := &pnode[K, V]{used: n.used, entries: append([]pentry[K, V](nil), n.entries...)}
	e := &out.entries[i]
	switch {
	case e.child != nil:
		c, added := e.child.with(h, k, v, depth+1)
		e.child = c
		return out, added
	case e.key == k:
		e.val = v
		return out, false
	}
	// Two keys in one slot: push both a level down.
	c, _ := (*pnode[K, V])(nil).with(e.hash, e.key, e.val, depth+1)
	c, _ = c.with(h, k, v, depth+1)
	*e = pentry[K, V]{child: c}
	return out, true
}

// without returns a copy of n without k (nil when nothing is left), and
// whether k was there.
func (n *pnode[K, V]) without(h uint64, k K, depth int) (*pnode[K, V], bool) {
	if n == nil {
		return nil, false
	}
	if depth >= pmaxDepth {
		for i := range n.entries {
			if n.entries[i].key == k {
				if len(n.entries) == 1 {
					return nil, true
				}
				out := &pnode[K, V]{entries: make([]pentry[K, V], 0, len(n.entries)-1)}
				out.entries = append(append(out.entries, n.entries[:i]...), n.entries[i+1:]...)
				return out, true
			}
		}
		return n, false
	}
	bit := uint32(1) << ((h >> (depth * pbits)) & 31)
	if n.used&bit == 0 {
		return n, false
	}
	i := bits.OnesCount32(n.used & (bit - 1))
	e := n.entries[i]
	if e.child != nil {
		c, removed := e.child.without(h, k, depth+1)
		if !removed {
			return n, false
		}
		out := &pnode[K, V]{used: n.used, entries: append([]pentry[K, V](nil), n.entries...)}
		switch {
		case c == nil:
			return out.drop(bit, i), true
		case c.used != 0 && len(c.entries) == 1 && c.entries[0].child == nil:
			// A lone entry moves back up.
			out.entries[i] = c.entries[0]
		default:
			out.entries[i].child = c
		}
		return out, true
	}
	if e.key != k {
		return n, false
	}
	return (&pnode[K, V]{used: n.used, entries: n.entries}).drop(bit, i), true
}

// drop returns n without slot bit at index i, or nil when it was the last.
func (n *pnode[K, V]) drop(bit uint32, i int) *pnode[K, V] {
	if len(n.entries) == 1 {
		return nil
	}
	out := &pnode[K, V]{used: n.used &^ bit, entries: make([]pentry[K, V], 0, len(n.entries)-1)}
	out.entries = append(append(out.entries, n.entries[:i]...), n.entries[i+1:]...)
	return out
}
