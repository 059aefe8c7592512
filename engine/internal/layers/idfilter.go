package layers

import (
	"hash/maphash"
	"math/bits"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// IDFilters keeps, for each table of a layer that writers looked ids up
// in, a filter of the record ids whose id-map key the layer may hold, so
// that looking up an id that is new (every record of a bulk load) skips
// the layers that cannot hold it instead of searching the batch, the
// memtables and every level of the storage engine for it.
//
// A filter answers "may hold" for every id whose current id-map key is in
// its layer: it is built from the layer's keys the first time a lookup
// needs it, and every later write of a key into the layer adds its id
// (Add) before the write becomes visible. It may answer "may hold" for
// ids the layer does not hold (a deleted key, a write whose command
// failed, a false positive of the filter): those are looked up as before.
// A range whose keys are written another way (a flattened layer) is
// forgotten (Forget) and built again when next needed.
//
// It is safe for concurrent use. Its memory is 12 bits per id of room,
// which grows fourfold when full: about 2 MB for a table of a million
// records, 24 KiB for a small one. Under a memory budget (SetBudget) it
// counts what it holds, and the budget may drop every filter (Clear):
// they are built again when next needed.
type IDFilters struct {
	mu     sync.Mutex
	m      map[layerTable]*idFilter
	bytes  int64   // what the filters of m hold
	budget Charger // told of bytes and uses; nil: none
}

// A Charger is the memory budget's account of a structure: told of the
// bytes it gains or loses, and that it was used.
type Charger interface {
	Grow(n int64)
	Touch()
}

// SetBudget puts the filters under a memory budget's account c, charged
// with what they hold now and later.
func (f *IDFilters) SetBudget(c Charger) {
	f.mu.Lock()
	f.budget = c
	c.Grow(f.bytes)
	f.mu.Unlock()
}

// Clear drops every filter, for the memory budget.
func (f *IDFilters) Clear() {
	f.mu.Lock()
	clear(f.m)
	f.charge(-f.bytes)
	f.mu.Unlock()
}

// charge counts n more bytes held (negative: fewer). The caller holds mu.
func (f *IDFilters) charge(n int64) {
	f.bytes += n
	if f.budget != nil && n != 0 {
		f.budget.Grow(n)
	}
}

// drop forgets the filter of lt, if any. The caller holds mu.
func (f *IDFilters) drop(lt layerTable) {
	if flt := f.m[lt]; flt != nil {
		delete(f.m, lt)
		f.charge(-flt.size())
	}
}

// idSeed seeds the hash of the ids filters hold; filters live only in
// memory, so it need not be stable across processes.
var idSeed = maphash.MakeSeed()

// Add records that the id-map of a table in a layer may hold id, before
// a batch writing its key becomes visible.
func (f *IDFilters) Add(layer, table uint32, id string) {
	f.mu.Lock()
	if flt := f.m[layerTable{layer, table}]; flt != nil {
		f.charge(flt.add(maphash.String(idSeed, id)))
	}
	f.mu.Unlock()
}

// Forget drops the filter of a table's id-map in a layer, to be built
// again from the keys the layer holds when next needed.
func (f *IDFilters) Forget(layer, table uint32) {
	f.mu.Lock()
	f.drop(layerTable{layer, table})
	f.mu.Unlock()
}

// ForgetLayers drops the filters of every table of the layers given, which
// were deleted.
func (f *IDFilters) ForgetLayers(dropped []uint32) {
	if len(dropped) == 0 {
		return
	}
	f.mu.Lock()
	for lt := range f.m {
		for _, l := range dropped {
			if lt.layer == l {
				f.drop(lt)
				break
			}
		}
	}
	f.mu.Unlock()
}

// LookupID resolves a record id as LookupID does, without reading the
// layers whose filter says they cannot hold it. r must see every key of
// the lineage's id-maps that was written (a writer's indexed batch
// reading through to the store): a filter built by a lookup is built
// from r.
func (f *IDFilters) LookupID(r pebble.Reader, db uint32, lin model.Lineage, tableID uint32, id string) (e IDEntry, level int, ok bool, err error) {
	h := maphash.String(idSeed, id)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.budget != nil {
		f.budget.Touch()
	}
	return lookupID(r, db, lin, tableID, id, func(layer uint32) (bool, error) {
		flt, err := f.filter(r, db, layer, tableID)
		if err != nil {
			return false, err
		}
		return flt.mayHold(h), nil
	})
}

// filter returns the filter of a table's id-map in a layer, building it
// from the keys r holds when there is none. The caller holds mu.
func (f *IDFilters) filter(r pebble.Reader, db, layer, table uint32) (*idFilter, error) {
	lt := layerTable{layer, table}
	if flt := f.m[lt]; flt != nil {
		return flt, nil
	}
	prefix := codec.TablePrefix(nil, db, layer, codec.KindIDMapCur, table)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	var hashes []uint64
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		// The key is the prefix, the id and a terminating zero (IDMapKey).
		hashes = append(hashes, maphash.Bytes(idSeed, k[len(prefix):len(k)-1]))
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	flt := newIDFilter(2 * len(hashes))
	for _, h := range hashes {
		flt.add(h)
	}
	if f.m == nil {
		f.m = map[layerTable]*idFilter{}
	}
	f.m[lt] = flt
	f.charge(flt.size())
	return flt, nil
}

// idFilter is a filter of hashed ids that grows with them: a list of
// blocked Bloom filters, each with room for four times the ids of the one
// before, ids going into the last. An id's bits are all in one 64-bit word
// of each part, so that a test costs a cache miss per part.
type idFilter struct {
	parts []idFilterPart
}

// idFilterPart is one Bloom filter of an idFilter: n ids of room for
// capacity, idFilterBits bits each.
type idFilterPart struct {
	words       []uint64
	n, capacity int
}

// idFilterBits is the bits per id of a filter, idFilterProbes the bits an
// id sets in its word: about 1% of absent ids test as present.
const (
	idFilterBits   = 12
	idFilterProbes = 7
	// idFilterMinCap is the room of a table's first part: a small table
	// costs 24 KiB.
	idFilterMinCap = 1 << 14
)

// newIDFilter returns an empty filter with room for capacity ids in its
// first part.
func newIDFilter(capacity int) *idFilter {
	f := &idFilter{}
	f.grow(max(capacity, idFilterMinCap))
	return f
}

// grow adds a part with room for capacity ids.
func (f *idFilter) grow(capacity int) {
	f.parts = append(f.parts, idFilterPart{words: make([]uint64, (capacity*idFilterBits+63)/64), capacity: capacity})
}

// add adds a hashed id, and returns the bytes the filter grew by.
func (f *idFilter) add(h uint64) (grown int64) {
	p := &f.parts[len(f.parts)-1]
	if p.n == p.capacity {
		f.grow(4 * p.capacity)
		p = &f.parts[len(f.parts)-1]
		grown = 8 * int64(len(p.words))
	}
	w, m := idFilterBlock(h, len(p.words))
	p.words[w] |= m
	p.n++
	return grown
}

// size is the bytes the filter's parts hold.
func (f *idFilter) size() int64 {
	var n int64
	for i := range f.parts {
		n += 8 * int64(len(f.parts[i].words))
	}
	return n
}

// mayHold reports whether a hashed id may have been added.
func (f *idFilter) mayHold(h uint64) bool {
	for i := range f.parts {
		p := &f.parts[i]
		w, m := idFilterBlock(h, len(p.words))
		if p.words[w]&m == m {
			return true
		}
	}
	return false
}

// idFilterBlock returns the word of a part of nwords words that holds a
// hashed id's bits, and those bits.
func idFilterBlock(h uint64, nwords int) (word int, mask uint64) {
	hi, _ := bits.Mul64(h, uint64(nwords))
	g := h * 0x9e3779b97f4a7c15 // the bits' positions, independent of the word's
	for range idFilterProbes {
		mask |= 1 << (g >> 58)
		g <<= 6
	}
	return int(hi), mask
}
