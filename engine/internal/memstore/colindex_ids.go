package memstore

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/coppice-db/coppice/index"
)

// A store's record-id column may carry one more derived structure: a hash
// index from id to row, so that a point read whose record the record cache
// does not hold finds its row without reading the id map from storage. It
// is built by the first reader that asks for it and kept exactly current by
// the writes of the store, as the other structures of a column are
// (colindex.go). The index keeps no strings: a slot holds 32 bits of an
// id's hash and its row, and the point read that asks confirms the row it
// gets against storage (RowHint).

// idIndex is an open-addressing hash table of the rows holding a value,
// probed linearly from the slot the low bits of a value's hash name, with
// backward-shift deletion, so that no slot is ever a tombstone.
type idIndex struct {
	// slots holds hash<<32 | row+1 per entry; 0 is an empty slot. Its
	// length is a power of two.
	slots []uint64
	n     int // entries
}

// idSeed seeds the hash of ids; one per process, as the index is.
var idSeed = maphash.MakeSeed()

// hashID is the 32 bits of an id's hash the index keys by.
func hashID(id string) uint32 { return uint32(maphash.String(idSeed, id)) }

// minIDSlots is the size of the smallest table.
const minIDSlots = 64

// newIDIndex returns an index with room for n entries.
func newIDIndex(n int) *idIndex {
	size := minIDSlots
	for size*3 < n*4 {
		size *= 2
	}
	return &idIndex{slots: make([]uint64, size)}
}

// insert adds row under hash h. The same (h, row) must not be in already.
func (x *idIndex) insert(h, row uint32) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.grow()
	}
	x.place(uint64(h)<<32 | uint64(row) + 1)
	x.n++
}

// place puts an entry in the first free slot of its probe sequence.
func (x *idIndex) place(e uint64) {
	mask := uint32(len(x.slots) - 1)
	for i := uint32(e>>32) & mask; ; i = (i + 1) & mask {
		if x.slots[i] == 0 {
			x.slots[i] = e
			return
		}
	}
}

// grow doubles the table.
func (x *idIndex) grow() {
	old := x.slots
	x.slots = make([]uint64, 2*len(old))
	for _, e := range old {
		if e != 0 {
			x.place(e)
		}
	}
}

// remove takes out the entry of row under hash h, if there is one, and
// moves the entries after it in its run back so that every entry stays
// reachable from its home slot.
func (x *idIndex) remove(h, row uint32) {
	mask := uint32(len(x.slots) - 1)
	want := uint64(h)<<32 | uint64(row) + 1
	i := h & mask
	for ; x.slots[i] != want; i = (i + 1) & mask {
		if x.slots[i] == 0 {
			return
		}
	}
	for j := i; ; {
		j = (j + 1) & mask
		e := x.slots[j]
		if e == 0 {
			break
		}
		// The entry at j stays when its home lies cyclically in (i, j]:
		// its probe does not pass the hole at i.
		home := uint32(e>>32) & mask
		if (i < j && i < home && home <= j) || (i > j && (i < home || home <= j)) {
			continue
		}
		x.slots[i] = e
		i = j
	}
	x.slots[i] = 0
	x.n--
}

// lookup returns a row under hash h for which same is true.
func (x *idIndex) lookup(h uint32, same func(row uint32) bool) (uint32, bool) {
	mask := uint32(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := x.slots[i]
		if e == 0 {
			return 0, false
		}
		if uint32(e>>32) == h && same(uint32(e)-1) {
			return uint32(e) - 1, true
		}
	}
}

// bytes is the memory the index takes.
func (x *idIndex) bytes() int64 { return 8 * int64(cap(x.slots)) }

// clone returns a copy that changes apart from x.
func (x *idIndex) clone() *idIndex {
	return &idIndex{slots: append([]uint64(nil), x.slots...), n: x.n}
}

// idsWritten keeps the index, if built, current as row's value changes to
// newStr, or to null when isNull. The caller holds the store's write lock;
// the column still holds the old value.
func (c *Column) idsWritten(row uint32, newStr string, isNull bool) {
	x := c.ix.ids.Load()
	if x == nil {
		return
	}
	if c.present.Contains(row) {
		x.remove(hashID(c.strs.get(row)), row)
	}
	if !isNull {
		x.insert(hashID(newStr), row)
	}
}

// RowHint returns the row holding id in the store's record-id column, or
// false when none does, building the column's id index on first use. It
// does not read the column's value of the row: the row is the first of the
// index under the id's 32-bit hash, which is id's unless another id of the
// store has the same hash (one chance in about four billion per other id
// its probe passes). A point read confirms the row against storage anyway,
// and the column's value lies elsewhere in memory: at a million ids, a
// cache miss of its own. The caller holds the store for reading.
func (s *TableStore) RowHint(id string) (uint32, bool) {
	c := s.cols[index.MetaIDColumn]
	x := c.ix.ids.Load()
	if x == nil {
		x = c.buildIDs()
	}
	return x.lookup(hashID(id), func(uint32) bool { return true })
}

// buildIDs builds the column's id index, once among its readers.
func (c *Column) buildIDs() *idIndex {
	c.ix.mu.Lock()
	defer c.ix.mu.Unlock()
	if x := c.ix.ids.Load(); x != nil {
		return x
	}
	x := newIDIndex(int(c.present.GetCardinality()))
	it := c.present.Iterator()
	for it.HasNext() {
		row := it.Next()
		x.insert(hashID(c.strs.get(row)), row)
	}
	c.ix.ids.Store(x)
	c.indexBuilt()
	return x
}

// idIndexPtr is where a column keeps its id index: readers load it without
// a lock, as writers change it only while no reader holds the store.
type idIndexPtr = atomic.Pointer[idIndex]
