package engine

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Point reads by id are the most frequent request of the service, and Get
// pays for two storage reads (the id map, then the row) and for building
// Record.Values. GetView returns the stored record with its columns instead,
// for callers that encode it themselves, and keeps what it read in a
// RecordCache so that the next read of the same record reads no storage.
//
// A cached view is exact, not merely recent. It is tagged with the epoch of
// its table's cache (bitmapcache.go) at which it was read: every command that
// writes a row of a table of a branch makes that epoch odd before its batch
// becomes visible and even again after, so a view read while the epoch was
// even and unchanged from before the first storage read to after the last
// shows the table as of that epoch, and stays the answer for as long as the
// epoch has not moved. Nothing else changes the visible rows of a branch:
// forks and branch deletions do not touch an existing branch's rows (and
// ids of branches and tables are never reused), and flattening rewrites
// layers without changing what a branch sees. Schema changes publish new
// table objects; a view is used only with the table object it was built
// from. TestGetViewModel holds this against random writes, forks, branch
// deletions, flattening and reopens.

// RecordView is one record as GetView reads it: its stored values with
// their columns, for callers that encode records without going through
// Record.Values. A view may be shared by concurrent callers and by the
// cache: nobody may change it or anything it refers to.
type RecordView struct {
	ID        string
	Version   uint64
	CreatedAt time.Time
	UpdatedAt time.Time
	// Fields are the values of the record's live columns in the key order
	// of the record's JSON form: by column path compared segment by segment
	// (ComparePaths), so that the columns of an object are adjacent and
	// every level is sorted.
	Fields []FieldView
}

// FieldView is one value of a RecordView.
type FieldView struct {
	// Path is the dotted path of the column from the table root.
	Path string
	// Type is the column's type; it says which member of Value is set, as
	// FromValue reads them.
	Type  ColumnType
	Value codec.Value

	col   *model.Column
	files *fileScope // the record's location, for file fields (files_output.go)
}

// Any returns the value in the form Record.Values holds it; files carry
// their access ids.
func (f *FieldView) Any() any {
	if f.files != nil {
		v, err := f.files.files(f.col, f.Value, fileWant{})
		if err == nil {
			return v
		}
	}
	return model.FromValue(f.col, f.Value)
}

// ComparePaths orders dotted column paths segment by segment: the order of
// the keys of nested JSON objects. It returns -1, 0 or +1.
func ComparePaths(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		// A segment that ends sorts before one that goes on.
		switch {
		case x == '.':
			return -1
		case y == '.':
			return +1
		case x < y:
			return -1
		}
		return +1
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return +1
	}
	return 0
}

// newRecordView builds the view of a stored record through a table's
// columns. rec must not change afterwards: the view shares its values.
func newRecordView(t *model.Table, rec *codec.Record) *RecordView {
	v := &RecordView{
		ID: rec.ID, Version: rec.Version,
		CreatedAt: time.Unix(0, rec.CreatedAt).UTC(), UpdatedAt: time.Unix(0, rec.UpdatedAt).UTC(),
	}
	// Sort the fields' indexes, not the fields: moving views costs write
	// barriers.
	cols := make([]*model.Column, len(rec.Fields))
	order := make([]int, 0, len(rec.Fields))
	for i, f := range rec.Fields {
		if cols[i] = t.ByID[f.Col]; cols[i] != nil { // else a deleted column
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return ComparePaths(cols[a].Path, cols[b].Path) })
	v.Fields = make([]FieldView, len(order))
	for j, i := range order {
		c := cols[i]
		v.Fields[j] = FieldView{Path: c.Path, Type: c.Type, Value: rec.Fields[i].Val, col: c}
	}
	return v
}

// readRecord reads the visible version of a record of a table of a branch
// into rec; a missing or deleted record is a not-found error. The caller
// holds d.gcMu for reading, and loaded b after taking it.
func (e *Engine) readRecord(d *database, b *model.Branch, t *model.Table, id string, rec *codec.Record) error {
	ent, _, ok, err := layers.LookupID(e.pdb, d.ID, d.Filled.Prune(e.pdb, d.ID, b.Lineage, t.ID, codec.KindIDMapCur), t.ID, id)
	if err != nil {
		return err
	}
	if !ok {
		return model.NotFoundf("record [%s] not found", id)
	}
	_, ok, err = layers.ReadRow(e.pdb, d.ID, d.Filled.Prune(e.pdb, d.ID, b.Lineage, t.ID, codec.KindRecordCur), t.ID, ent.Row, rec)
	if err != nil {
		return err
	}
	if !ok {
		return model.NotFoundf("record [%s] not found", id)
	}
	return nil
}

// GetView reads one record of a branch, as Get does, as a view. With a
// cache (c not nil) it answers from the cache when the record has not been
// written since it was cached, and caches what it reads; the answer is the
// same as without.
func (e *Engine) GetView(c *RecordCache, ref Ref, tableName, id string) (*RecordView, error) {
	cv, err := e.getCached(c, ref, tableName, id)
	if err != nil {
		return nil, err
	}
	return cv.view, nil
}

// getCached reads a record through the cache c (nil: read storage).
func (e *Engine) getCached(c *RecordCache, ref Ref, tableName, id string) (*cachedView, error) {
	d, b, t, err := e.resolveTable(ref, tableName)
	if err != nil {
		return nil, err
	}
	var (
		bc *bitmapCache
		e0 uint64
	)
	branchID, tableID := b.ID, t.ID
	if c != nil {
		bc = d.cacheFor(storeKey{Branch: branchID, Table: tableID})
		if e0 = bc.epoch.Load(); e0%2 == 0 {
			if cv := c.get(bc, id, e0, t); cv != nil {
				return cv, nil
			}
		}
	}
	d.Pin()
	defer d.Unpin()
	// The lineage read must be loaded under gcMu: layers it names stay.
	if b, err = d.State().Branch(ref.Branch); err != nil {
		return nil, err
	}
	if t, err = b.Schema.Table(tableName); err != nil {
		return nil, err
	}
	rec := &codec.Record{}
	if err := e.readRecord(d, b, t, id, rec); err != nil {
		return nil, err
	}
	cv := &cachedView{bc: bc, id: id, epoch: e0, t: t, view: newRecordView(t, rec)}
	scopeViewFiles(cv.view, e, d, b, t)
	if c != nil && e0%2 == 0 && bc.epoch.Load() == e0 && b.ID == branchID && t.ID == tableID {
		c.put(cv)
	}
	return cv, nil
}

// RecordCache keeps the records GetView read, up to a memory budget, as
// views: a cached record is handed out as the same *RecordView until it is
// written, which lets a caller keep what it derives from a view (such as
// its encoding) for as long as the view lives. It is safe for concurrent
// use and may serve several engines and databases; the caller owns it.
type RecordCache struct {
	seed   maphash.Seed
	limit  int // bytes per shard
	shards [recordCacheShards]recordShard
}

// recordCacheShards spreads the cache's lock over this many maps.
const recordCacheShards = 16

// recordShard is one lock's share of a RecordCache. Its map is keyed by a
// hash of the record's table cache and id, which the entry repeats: two
// records of the same hash take turns, and neither is ever mistaken for
// the other.
type recordShard struct {
	mu    sync.RWMutex
	m     map[uint64]*cachedView
	bytes int
}

// cachedView is a view with what makes it valid: the cache of its table
// (which names the database, branch and table) and the epoch of it the
// record was read at, and the table object the view was built with.
type cachedView struct {
	bc    *bitmapCache
	id    string
	epoch uint64
	t     *model.Table
	view  *RecordView
	size  int
}

// NewRecordCache returns a cache that holds about maxBytes of records.
func NewRecordCache(maxBytes int) *RecordCache {
	c := &RecordCache{seed: maphash.MakeSeed(), limit: max(maxBytes/recordCacheShards, 1)}
	for i := range c.shards {
		c.shards[i].m = map[uint64]*cachedView{}
	}
	return c
}

// slot returns the map key of record id of the table bc caches, and its
// shard.
func (c *RecordCache) slot(bc *bitmapCache, id string) (uint64, *recordShard) {
	h := maphash.String(c.seed, id) ^ bc.salt
	return h, &c.shards[h%recordCacheShards]
}

// get returns the entry of record id of bc's table if it is cached at
// epoch e of bc with table t.
func (c *RecordCache) get(bc *bitmapCache, id string, e uint64, t *model.Table) *cachedView {
	h, s := c.slot(bc, id)
	s.mu.RLock()
	cv := s.m[h]
	s.mu.RUnlock()
	if cv == nil || cv.bc != bc || cv.id != id || cv.epoch != e || cv.t != t {
		return nil
	}
	return cv
}

// put caches a view, dropping other entries of its shard, in the map's
// random order, while the shard is over its budget.
func (c *RecordCache) put(cv *cachedView) {
	cv.id = strings.Clone(cv.id) // the entry outlives the caller's string
	cv.size = cachedSize(cv)
	h, s := c.slot(cv.bc, cv.id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.m[h]; old != nil {
		s.bytes -= old.size
	}
	s.m[h] = cv
	s.bytes += cv.size
	for victim, old := range s.m {
		if s.bytes <= c.limit {
			break
		}
		if victim != h {
			delete(s.m, victim)
			s.bytes -= old.size
		}
	}
}

// cachedSize estimates the memory a cache entry holds.
func cachedSize(cv *cachedView) int {
	const entry = 256 // key, entry, view header and map overhead
	v := cv.view
	n := entry + 2*len(v.ID)
	for _, f := range v.Fields {
		n += 64 + len(f.Value.Str) + 8*len(f.Value.Vec)
		for _, s := range f.Value.Strs {
			n += 16 + len(s)
		}
	}
	return n
}
