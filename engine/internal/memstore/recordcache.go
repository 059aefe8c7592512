package memstore

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// RecordCache keeps records as read, up to a memory budget, as views of
// type V: a cached record is handed out as the same view until it is
// written, which lets a caller keep what it derives from a view (such as
// its encoding) for as long as the view lives. An entry is valid with one
// table object, at the epoch of its table's BitmapCache it was read at and
// at every later (or earlier) epoch no command in between wrote its row
// (the BitmapCache's writeLog): the engine's GetView documents why that makes
// it exact. Entries are found by id (Get) and by row (GetRow): a row holds
// the same record for as long as no command writes the row, so the same
// rule makes an entry found by its row exact. It is safe for concurrent
// use and may serve several engines and databases; the caller owns it.
type RecordCache[V any] struct {
	seed   maphash.Seed
	limit  int // bytes per shard
	shards [recordCacheShards]recordShard[V]
	// rows finds the entries of shards by table cache and row. An entry
	// is in rows only while it is in shards; a row whose entries are
	// several (of several ids the row held) finds the latest put.
	rows [recordCacheShards]rowShard[V]

	// entry puts the cache under the memory budget of the first engine
	// whose records it keeps; total is the bytes of all shards.
	entry atomic.Pointer[Entry]
	once  sync.Mutex
	total atomic.Int64

	door doorkeeper  // see Admit
	freq frequencies // see admitOver
}

// frequencies estimates how often each record was read lately: a
// count-min sketch of four-bit counters, four per record, sixteen to a
// word, all halved once it counted ten reads per word. It is safe for
// concurrent use without locks; a count lost to a concurrent one only
// makes the estimate lower.
type frequencies struct {
	words []atomic.Uint64 // a power of two of them
	added atomic.Int64
}

// init sizes f for a cache of about records records: four counters each.
func (f *frequencies) init(records int) {
	f.words = make([]atomic.Uint64, max(1<<12, nextPow2(records/4)))
}

// counter returns the word and the shift of the i-th counter of hash h.
func (f *frequencies) counter(h uint64, i int) (*atomic.Uint64, uint) {
	h = (h + uint64(i)*0x9e3779b97f4a7c15) * 0xbf58476d1ce4e5b9
	h ^= h >> 31
	return &f.words[h&uint64(len(f.words)-1)], uint(h>>56) % 16 * 4
}

// add counts a read of the record of hash h.
func (f *frequencies) add(h uint64) {
	for i := range 4 {
		w, shift := f.counter(h, i)
		for {
			old := w.Load()
			if old>>shift&15 == 15 || w.CompareAndSwap(old, old+1<<shift) {
				break
			}
		}
	}
	if f.added.Add(1) == 10*int64(len(f.words)) {
		for k := range f.words {
			w := &f.words[k]
			for {
				old := w.Load()
				if w.CompareAndSwap(old, old>>1&0x7777777777777777) {
					break
				}
			}
		}
		f.added.Store(0)
	}
}

// estimate returns how often the record of hash h was read lately, at
// most 15.
func (f *frequencies) estimate(h uint64) uint64 {
	n := uint64(15)
	for i := range 4 {
		w, shift := f.counter(h, i)
		n = min(n, w.Load()>>shift&15)
	}
	return n
}

// doorkeeper remembers which records were read lately, approximately: a
// bloom filter of two bits per record over a window of as many records
// as the cache holds, cleared when the window is full. It is safe for
// concurrent use without locks.
type doorkeeper struct {
	bits []atomic.Uint64 // a power of two of them
	// added counts the records set since the last clearing, up to window.
	added  atomic.Int64
	window int64
}

// init sizes d for a cache of about records records: sixteen bits each,
// so that a full window leaves about one bit in four set, where about one
// record in twenty not read lately is taken for one that was.
func (d *doorkeeper) init(records int) {
	d.bits = make([]atomic.Uint64, max(1<<10, nextPow2(records/4)))
	d.window = int64(len(d.bits)) * 64 / 16
}

// seen reports whether a record of hash h was set since the last clearing,
// and sets it.
func (d *doorkeeper) seen(h uint64) bool {
	mask := uint64(len(d.bits))*64 - 1
	i, j := h&mask, (h>>32)&mask
	wi, bi := &d.bits[i/64], uint64(1)<<(i%64)
	wj, bj := &d.bits[j/64], uint64(1)<<(j%64)
	if wi.Load()&bi != 0 && wj.Load()&bj != 0 {
		return true
	}
	wi.Or(bi)
	wj.Or(bj)
	if d.added.Add(1) == d.window {
		for k := range d.bits {
			d.bits[k].Store(0)
		}
		d.added.Store(0)
	}
	return false
}

// Admit reports whether a record of bc's table read from storage should
// be cached: when it was read before, lately. A record read once is not:
// on a working set larger than the cache, caching every read would only
// evict records read again for records that are not, and pay for both.
func (c *RecordCache[V]) Admit(bc *BitmapCache, id string) bool {
	h, _ := c.slot(bc, id)
	return c.door.seen(h)
}

// recordCacheShards spreads the cache's lock over this many maps.
const recordCacheShards = 16

// recordShard is one lock's share of a RecordCache. Its map is keyed by a
// hash of the record's table cache and id, which the entry repeats: two
// records of the same hash take turns, and neither is ever mistaken for
// the other.
type recordShard[V any] struct {
	mu    sync.RWMutex // a leaf of the lock order
	m     map[uint64]*cachedView[V]
	bytes int
}

// rowShard is one lock's share of a RecordCache's row index, keyed by a
// hash of the table cache and row, which the entry repeats. Its lock is
// taken under a recordShard's, never the other way round.
type rowShard[V any] struct {
	mu sync.RWMutex
	m  map[uint64]*cachedView[V]
}

// cachedView is a view with what makes it valid: the cache of its table
// (which names the database, branch and table), the row of the record, the
// latest epoch of the cache it is known to hold at, and the table object
// the view was built with.
type cachedView[V any] struct {
	bc    *BitmapCache
	hash  uint64 // the key of its recordShard
	id    string // in idBuf when it fits (setID)
	idBuf [inlineID]byte
	row   uint32
	epoch atomic.Uint64
	t     *model.Table
	view  V
	size  int
}

// inlineID is the longest record id an entry of a RecordCache keeps in
// itself.
const inlineID = 32

// setID keeps a copy of id in cv: in the entry itself when it fits, so
// that the entry and its id are one object for the collector, not two.
func (cv *cachedView[V]) setID(id string) {
	if len(id) > len(cv.idBuf) {
		cv.id = strings.Clone(id)
		return
	}
	n := copy(cv.idBuf[:], id)
	cv.id = unsafe.String(&cv.idBuf[0], n)
}

// entrySize is the memory the cache takes for an entry of record id
// besides its view: the entry, its copy of the id when the entry does
// not hold it, and its slots in the two maps (a slot of key and value, a
// control byte, and the eighth of slots a map keeps free).
func entrySize[V any](id string) int {
	const slot = (8 + 8 + 1) * 8 / 7
	n := int(unsafe.Sizeof(cachedView[V]{})) + 2*slot
	if len(id) > inlineID {
		n += len(id)
	}
	return n
}

// Bytes returns the memory the cached records take, as the memory budget
// counts it: their views as Put was told, and the cache's entries.
func (c *RecordCache[V]) Bytes() int64 { return c.total.Load() }

// NewRecordCache returns a cache that holds about maxBytes of records.
func NewRecordCache[V any](maxBytes int) *RecordCache[V] {
	c := &RecordCache[V]{seed: maphash.MakeSeed(), limit: max(maxBytes/recordCacheShards, 1)}
	// Sized for small records, so as not to forget larger ones: 4 MiB
	// each per GiB of records, 128 KiB each at the default 32 MiB.
	records := maxBytes / smallRecord
	c.door.init(records)
	c.freq.init(records)
	for i := range c.shards {
		c.shards[i].m = map[uint64]*cachedView[V]{}
		c.rows[i].m = map[uint64]*cachedView[V]{}
	}
	return c
}

// smallRecord is the size of a small record in a RecordCache, view and
// keys, by which the doorkeeper and the frequencies count the records a
// cache holds.
const smallRecord = 512

// nextPow2 returns the least power of two at least n.
func nextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// rowSlot returns the row index key of row of the table bc caches, and its
// shard.
func (c *RecordCache[V]) rowSlot(bc *BitmapCache, row uint32) (uint64, *rowShard[V]) {
	h := uint64(row)*0x9e3779b97f4a7c15 ^ bc.salt
	return h, &c.rows[h%recordCacheShards]
}

// link makes cv the entry its row finds. The caller holds cv's recordShard.
func (c *RecordCache[V]) link(cv *cachedView[V]) {
	h, r := c.rowSlot(cv.bc, cv.row)
	r.mu.Lock()
	r.m[h] = cv
	r.mu.Unlock()
}

// unlink drops cv from the row index when its row finds it. The caller
// holds cv's recordShard.
func (c *RecordCache[V]) unlink(cv *cachedView[V]) {
	h, r := c.rowSlot(cv.bc, cv.row)
	r.mu.Lock()
	if r.m[h] == cv {
		delete(r.m, h)
	}
	r.mu.Unlock()
}

// slot returns the map key of record id of the table bc caches, and its
// shard.
func (c *RecordCache[V]) slot(bc *BitmapCache, id string) (uint64, *recordShard[V]) {
	h := maphash.String(c.seed, id) ^ bc.salt
	return h, &c.shards[h%recordCacheShards]
}

// Get returns the view of record id of bc's table if one is cached with
// table t that holds at epoch e of bc; at an odd e (a write in flight), one
// that holds both before and after the write.
func (c *RecordCache[V]) Get(bc *BitmapCache, id string, e uint64, t *model.Table) (V, bool) {
	return LookupRecord(c, bc, id, e, t)
}

// LookupRecord is c.Get of an id given as a string or as bytes, which it
// does not keep.
func LookupRecord[V any, ID string | []byte](c *RecordCache[V], bc *BitmapCache, id ID, e uint64, t *model.Table) (V, bool) {
	var h uint64
	switch id := any(id).(type) {
	case string:
		h = maphash.String(c.seed, id)
	case []byte:
		h = maphash.Bytes(c.seed, id)
	}
	h ^= bc.salt
	s := &c.shards[h%recordCacheShards]
	s.mu.RLock()
	cv := s.m[h]
	s.mu.RUnlock()
	if cv == nil || cv.bc != bc || cv.id != string(id) || cv.t != t {
		var zero V
		return zero, false
	}
	return c.hit(cv, e)
}

// GetRow returns the view of the record stored in row of bc's table if
// one is cached with table t that holds at epoch e of bc, as Get does for
// an id.
func (c *RecordCache[V]) GetRow(bc *BitmapCache, row uint32, e uint64, t *model.Table) (V, bool) {
	h, r := c.rowSlot(bc, row)
	r.mu.RLock()
	cv := r.m[h]
	r.mu.RUnlock()
	if cv == nil || cv.bc != bc || cv.row != row || cv.t != t {
		var zero V
		return zero, false
	}
	return c.hit(cv, e)
}

// hit returns the view of a found entry of bc if it holds at epoch e.
func (c *RecordCache[V]) hit(cv *cachedView[V], e uint64) (V, bool) {
	bc := cv.bc
	if at := cv.epoch.Load(); at != e {
		if !bc.rowHolds(at, e, cv.row) {
			var zero V
			return zero, false
		}
		// Known to hold at e too: later checks start from there.
		for e%2 == 0 && at < e && !cv.epoch.CompareAndSwap(at, e) {
			at = cv.epoch.Load()
		}
	}
	c.freq.add(cv.hash)
	if en := c.entry.Load(); en != nil {
		en.Touch()
	}
	return cv.view, true
}

// budgeted returns the cache's budget entry, putting the cache under the
// budget of reg when it is under none yet.
func (c *RecordCache[V]) budgeted(reg *Registry) *Entry {
	if en := c.entry.Load(); en != nil || reg == nil {
		return en
	}
	c.once.Lock()
	defer c.once.Unlock()
	if en := c.entry.Load(); en != nil {
		return en
	}
	en := reg.budget.AddCache(KindRecordCache, c.empty)
	en.Resize(c.total.Load())
	c.entry.Store(en)
	return en
}

// empty drops every record, for the memory budget. It holds every shard
// while it clears the row index, so that no put links an entry it drops.
func (c *RecordCache[V]) empty() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		clear(s.m)
		c.total.Add(-int64(s.bytes))
		s.bytes = 0
	}
	for i := range c.rows {
		r := &c.rows[i]
		r.mu.Lock()
		clear(r.m)
		r.mu.Unlock()
	}
	for i := range c.shards {
		c.shards[i].mu.Unlock()
	}
	if en := c.entry.Load(); en != nil {
		en.Resize(c.total.Load())
	}
}

// Put caches the view of record id, stored in row, of bc's table, read at
// epoch e with table t, whose view takes size bytes (the entry adds its
// own), dropping other entries of its shard, in the map's random order,
// while the shard is over its budget. It reports whether it did: a record
// that would evict others is cached only when it was read more often
// lately than the first of them (admitOver).
func (c *RecordCache[V]) Put(bc *BitmapCache, id string, row uint32, e uint64, t *model.Table, view V, size int) bool {
	h, s := c.slot(bc, id)
	c.freq.add(h)
	size += entrySize[V](id)
	s.mu.Lock()
	before := s.bytes
	old := s.m[h]
	var victims []uint64 // the entries it evicts, when admitted over them
	if old == nil && s.bytes+size > c.limit {
		var buf [8]uint64
		var ok bool
		if victims, ok = c.admitOver(s, h, s.bytes+size-c.limit, buf[:0]); !ok {
			// Read no more often than what it would evict: the entries stay.
			s.mu.Unlock()
			return false
		}
	}
	cv := &cachedView[V]{bc: bc, hash: h, row: row, t: t, view: view, size: size}
	cv.setID(id)
	cv.epoch.Store(e)
	if old != nil {
		if old.bc == bc && old.id == id && old.t == t && old.epoch.Load() > e {
			// Read at a later epoch (a query page or point read on an older
			// snapshot finishing after a newer one): the entry cached is
			// the one later reads can use.
			s.mu.Unlock()
			return false
		}
		s.bytes -= old.size
		c.unlink(old)
	}
	s.m[h] = cv
	s.bytes += cv.size
	c.link(cv)
	for _, victim := range victims {
		c.evict(s, victim)
	}
	for victim := range s.m {
		if s.bytes <= c.limit {
			break
		}
		if victim != h {
			c.evict(s, victim)
		}
	}
	total := c.total.Add(int64(s.bytes - before))
	s.mu.Unlock()
	if en := c.budgeted(bc.reg); en != nil {
		en.Resize(total)
		en.Touch()
	}
	return true
}

// evict drops the entry of key h from shard s, whose lock the caller
// holds.
func (c *RecordCache[V]) evict(s *recordShard[V], h uint64) {
	if cv := s.m[h]; cv != nil {
		delete(s.m, h)
		s.bytes -= cv.size
		c.unlink(cv)
	}
}

// admitOver reports whether the entry of hash h may evict entries of
// shard s, whose lock the caller holds, to free need bytes: when it was
// read more often lately than each of the entries the eviction would
// drop, which it appends to victims and returns. On a working set larger
// than the cache, read evenly, the cache then keeps what it holds rather
// than trading each entry for the next read, which pays for a put, an
// eviction and a new encoding per read and answers no more reads from the
// cache.
func (c *RecordCache[V]) admitOver(s *recordShard[V], h uint64, need int, victims []uint64) ([]uint64, bool) {
	freq := c.freq.estimate(h)
	for victim, cv := range s.m {
		if need <= 0 {
			break
		}
		if victim == h {
			continue
		}
		if freq <= c.freq.estimate(victim) {
			return nil, false
		}
		victims = append(victims, victim)
		need -= cv.size
	}
	return victims, true
}
