package engine

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/index"
)

// source is an index.Source over one table of one branch at one snapshot.
type source struct {
	ctx   context.Context // the request's: long loops stop when it ends
	e     *Engine
	d     *database
	snap  pebble.Reader
	st    *apply.State // the state b was read from
	b     *model.Branch
	t     *model.Table
	it    *index.Table
	store *tableStore // nil for linked tables read without a store
	live  *roaring.Bitmap
	cache *bitmapCache // nil unless the snapshot shows the cache's epoch
	epoch uint64
}

// checkEvery is how many rows a loop of the engine visits between two
// looks at the request's context.
const checkEvery = 256

// stopped returns the source's context error on every checkEvery-th call
// of a loop counting n from 1, else nil.
func (s *source) stopped(n int) error {
	if n%checkEvery != 0 {
		return nil
	}
	return s.ctx.Err()
}

// resolveTable finds the database, branch and table a request names.
func (e *Engine) resolveTable(ref Ref, tableName string) (*database, *model.Branch, *model.Table, error) {
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return nil, nil, nil, err
	}
	b, err := d.State().Branch(ref.Branch)
	if err != nil {
		return nil, nil, nil, err
	}
	t, err := b.Schema.Table(tableName)
	if err != nil {
		return nil, nil, nil, err
	}
	return d, b, t, nil
}

// storeUse says how a reader of a table depends on its column store.
type storeUse int

const (
	// storeOptional readers (queries, searches) read storage while the
	// store of a large table is built in the background.
	storeOptional storeUse = iota
	// storeRequired readers (summaries, aggregations) visit every
	// candidate's values: without the store they would take longer than
	// building it, so they wait for it.
	storeRequired
)

// openSource returns a Source for a table of a branch. The caller must call
// release when done; until then the branch's column store cannot change.
func (e *Engine) openSource(ctx context.Context, ref Ref, tableName string, use storeUse) (*source, func(), error) {
	d, b, t, err := e.resolveTable(ref, tableName)
	if err != nil {
		return nil, nil, err
	}
	store, err := e.storeFor(d, b, t, use)
	if err != nil {
		return nil, nil, err
	}
	cacheKey := storeKey{Branch: b.ID, Table: t.ID}
	cache := d.cacheFor(cacheKey)
	// From here until release, the layers of the lineage read stay.
	d.Pin()
	st := d.State()
	if b, err = st.Branch(ref.Branch); err == nil {
		t, err = b.Schema.Table(tableName)
	}
	if err != nil {
		d.Unpin()
		return nil, nil, err
	}
	d.storeMu.RLock()
	// The store may have been dropped by a schema change since: check again
	// under the lock and fall back to reading without it.
	if cur := d.stores[storeKey{Branch: b.ID, Table: t.ID}]; cur != store {
		store = nil
	}
	e0 := cache.epoch.Load()
	snap := e.pdb.NewSnapshot()
	src := &source{ctx: ctx, e: e, d: d, snap: snap, st: st, b: b, t: t, it: b.Schema.IndexTables()[t.ID], store: store}
	if e1 := cache.epoch.Load(); e0 == e1 && e0%2 == 0 && cacheKey == (storeKey{Branch: b.ID, Table: t.ID}) {
		src.cache, src.epoch = cache, e0
	}
	return src, func() {
		snap.Close()
		d.storeMu.RUnlock()
		d.Unpin()
	}, nil
}

// storeFor returns the column store of a table of a branch for a reader,
// or nil when the reader goes without. A table of Options.BackgroundBuildRows
// records or more gets its store built in the background on first use, and
// optional readers answer from storage meanwhile: a restarted server
// answers its first queries at once instead of after a scan of the table.
func (e *Engine) storeFor(d *database, b *model.Branch, t *model.Table, use storeUse) (*tableStore, error) {
	if e.storeless {
		return nil, nil
	}
	k := storeKey{Branch: b.ID, Table: t.ID}
	d.storeMu.RLock()
	s, building := d.stores[k], d.building[k]
	d.storeMu.RUnlock()
	if s != nil && s.version == b.Version {
		return s, nil
	}
	if !building {
		if s := e.borrowStore(d, b, t); s != nil {
			return s, nil
		}
	}
	if use == storeOptional && e.opts.BackgroundBuildRows > 0 {
		if building {
			return nil, nil
		}
		n, err := e.liveRows(d, b, t)
		if err != nil {
			return nil, err
		}
		if n >= uint64(e.opts.BackgroundBuildRows) {
			e.buildStoreInBackground(d, b, t)
			return nil, nil
		}
	}
	return e.ensureStore(d, b, t)
}

// borrowStore lends a branch the column store of the branch it was forked
// from while neither has written the table since the fork and their
// schemas are one: the child then sees exactly the parent's rows, and
// answers from the parent's store at once instead of building a copy. The
// loan ends at the first write of either (updateStores). Writes from before
// the database was opened are not known, so only forks since then borrow.
func (e *Engine) borrowStore(d *database, b *model.Branch, t *model.Table) *tableStore {
	if len(b.Lineage) < 2 || b.Lineage[1].Seq < d.OpenSeq() {
		return nil
	}
	d.LockWriter()
	defer d.UnlockWriter()
	st := d.State()
	if b = st.ByID[b.ID]; b == nil || len(b.Lineage) < 2 {
		return nil
	}
	k := storeKey{Branch: b.ID, Table: t.ID}
	if _, wrote := d.written[k]; wrote {
		return nil
	}
	fork := b.Lineage[1]
	var parent *model.Branch
	for _, p := range st.ByID {
		if p.Lineage[0].Layer == fork.Layer {
			parent = p
			break
		}
	}
	if parent == nil || parent.Schema != b.Schema || parent.Version != b.Version ||
		!slices.Equal(parent.Lineage[1:], b.Lineage[2:]) || d.written[storeKey{Branch: parent.ID, Table: t.ID}] > fork.Seq {
		return nil
	}
	d.storeMu.Lock()
	defer d.storeMu.Unlock()
	if cur := d.stores[k]; cur != nil && cur.version == b.Version {
		return cur
	}
	s := d.stores[storeKey{Branch: parent.ID, Table: t.ID}]
	if s == nil || s.version != b.Version {
		return nil
	}
	s.lent = true
	d.stores[k] = s
	return s
}

// endLoans takes a store back from the branches that borrow it, before a
// write of its owner changes it. The caller holds storeMu.
func (d *database) endLoans(s *tableStore) {
	for k, o := range d.stores {
		if o == s && k.Branch != s.owner {
			delete(d.stores, k)
		}
	}
	s.lent = false
}

// liveRows counts the records of a table of a branch.
func (e *Engine) liveRows(d *database, b *model.Branch, t *model.Table) (uint64, error) {
	d.Pin()
	defer d.Unpin()
	// The lineage read must be loaded under gcMu: layers it names stay.
	cur := d.State().ByID[b.ID]
	if cur == nil {
		return 0, nil // gone: building says so
	}
	live, err := layers.ReadBitmap(e.pdb, d.ID, cur.Lineage, t.ID, codec.LiveBitmapID(), nil)
	if err != nil {
		return 0, err
	}
	return live.GetCardinality(), nil
}

// buildStoreInBackground starts building the column store of a table of a
// branch unless a build of it is under way. A failed build is dropped: the
// next reader starts another.
func (e *Engine) buildStoreInBackground(d *database, b *model.Branch, t *model.Table) {
	k := storeKey{Branch: b.ID, Table: t.ID}
	d.storeMu.Lock()
	if d.building[k] {
		d.storeMu.Unlock()
		return
	}
	if d.building == nil {
		d.building = map[storeKey]bool{}
	}
	d.building[k] = true
	d.storeMu.Unlock()
	done := func() {
		d.storeMu.Lock()
		delete(d.building, k)
		d.storeMu.Unlock()
	}
	if !e.background(func() {
		// A build reports itself; a failure has no caller to go to.
		if _, err := e.ensureStore(d, b, t); err != nil {
			e.obs.event(Event{Kind: EventStoreBuild, Err: err})
		}
		done()
	}) {
		done()
	}
}

// ensureStore returns the column store of a table of a branch, building it
// if needed.
func (e *Engine) ensureStore(d *database, b *model.Branch, t *model.Table) (*tableStore, error) {
	return ensureBuilt(e, d, b, t, &d.stores, storeKey{Branch: b.ID, Table: t.ID}, func(r pebble.Reader, b *model.Branch, t *model.Table) (*tableStore, error) {
		return buildTableStore(r, d.ID, b, t)
	})
}

// builtStore is an in-memory structure built for one schema version of a
// branch (a column store, a search store).
type builtStore interface {
	comparable
	schemaVersion() uint64
}

func (s *tableStore) schemaVersion() uint64 { return s.version }

// ensureBuilt returns the store m[k] of a table of a branch, building it
// from a snapshot when it is missing or was built for another schema.
// Building holds the writer lock: no write can slip between the snapshot
// the store is built from and the store's installation, after which writes
// keep it current under storeMu.
func ensureBuilt[K comparable, S builtStore](e *Engine, d *database, b *model.Branch, t *model.Table, m *map[K]S, k K,
	build func(r pebble.Reader, b *model.Branch, t *model.Table) (S, error)) (S, error) {
	var zero S
	current := func() (S, bool) {
		d.storeMu.RLock()
		defer d.storeMu.RUnlock()
		s, ok := (*m)[k]
		return s, ok && s.schemaVersion() == b.Version
	}
	if s, ok := current(); ok {
		return s, nil
	}
	d.LockWriter()
	defer d.UnlockWriter()
	if s, ok := current(); ok {
		return s, nil
	}
	// Under d.mu the state is current: no lineage swap can happen, and
	// layers still to be dropped are in no current lineage.
	if b = d.State().ByID[b.ID]; b == nil {
		return zero, model.NotFoundf("branch not found")
	}
	if t = b.Schema.ByID[t.ID]; t == nil {
		return zero, model.NotFoundf("table not found")
	}
	d.Pin()
	defer d.Unpin()
	snap := e.pdb.NewSnapshot()
	defer snap.Close()
	start := time.Now()
	s, err := build(snap, b, t)
	if err != nil {
		return zero, err
	}
	e.obs.event(Event{Kind: EventStoreBuild, Duration: time.Since(start)})
	d.storeMu.Lock()
	if *m == nil {
		*m = map[K]S{}
	}
	(*m)[k] = s
	d.hasStores.Store(true)
	d.storeMu.Unlock()
	return s, nil
}

func (s *source) Table() *index.Table { return s.it }

func (s *source) Live() (*roaring.Bitmap, error) {
	if s.live == nil {
		l, err := s.bitmap(codec.LiveBitmapID())
		if err != nil {
			return nil, err
		}
		s.live = l
	}
	return s.live.Clone(), nil
}

// bitmap reads one composed bitmap of the table, through the cache when
// the source may use it. The result is the caller's.
func (s *source) bitmap(id []byte) (*roaring.Bitmap, error) {
	if s.cache != nil {
		if b := s.cache.get(string(id), s.epoch); b != nil {
			return b, nil
		}
	}
	b, err := layers.ReadBitmap(s.snap, s.d.ID, s.b.Lineage, s.t.ID, id, nil)
	if err == nil && s.cache != nil {
		s.cache.put(string(id), b, s.epoch)
	}
	return b, err
}

func (s *source) Exists(c *index.Column) (*roaring.Bitmap, error) {
	if isMeta(c) {
		return s.Live()
	}
	return s.bitmap(codec.ExistsBitmapID(c.ID))
}

func (s *source) Posting(c *index.Column, v codec.Value) (*roaring.Bitmap, error) {
	if c.ID == index.MetaIDColumn {
		return s.Rows([]string{v.Str})
	}
	id, err := codec.PostingBitmapID(nil, c.ID, v)
	if err != nil {
		return nil, err
	}
	return s.bitmap(id)
}

func (s *source) Scan(c *index.Column, bd index.Bounds, desc bool, fn func(v codec.Value, rows *roaring.Bitmap) bool) error {
	if c.ID == index.MetaIDColumn {
		return s.scanIDs(bd, desc, fn)
	}
	if isMeta(c) {
		return index.ErrNoOrderedIndex // versions and timestamps have no postings
	}
	var lo, hi []byte
	colPrefix := codec.PostingColumnPrefix(nil, c.ID)
	if bd.Prefix != nil {
		lo = codec.OrderedStringPrefix(append([]byte(nil), colPrefix...), *bd.Prefix)
		hi = codec.PrefixEnd(lo)
	}
	if bd.Lo != nil {
		k, err := codec.AppendOrdered(append([]byte(nil), colPrefix...), *bd.Lo)
		if err != nil {
			return err
		}
		if !bd.LoIncl {
			k = append(k, 0xFF) // past every encoding that equals Lo
		}
		if lo == nil || string(k) > string(lo) {
			lo = k
		}
	}
	if bd.Hi != nil {
		k, err := codec.AppendOrdered(append([]byte(nil), colPrefix...), *bd.Hi)
		if err != nil {
			return err
		}
		if bd.HiIncl {
			k = append(k, 0xFF)
		}
		if hi == nil || string(k) < string(hi) {
			hi = k
		}
	}
	// A whole scan of a column with few values (the groups of a summary)
	// is served from, or kept in, the bitmap cache.
	whole := lo == nil && hi == nil && !desc && s.cache != nil
	scanKey := string(colPrefix)
	if whole {
		if entries, ok := s.cache.getScan(scanKey, s.epoch); ok {
			for _, e := range entries {
				if !fn(e.v, e.rows.Clone()) {
					break
				}
			}
			return nil
		}
	}
	var kept []scanEntry
	complete := true
	var ferr error
	err := layers.ScanPostings(s.snap, s.d.ID, s.b.Lineage, s.t.ID, c.ID, lo, hi, desc, func(bitmapID []byte, rows *roaring.Bitmap) bool {
		v, _, err := codec.DecodeOrdered(bitmapID[len(colPrefix):])
		if err != nil {
			ferr = err
			return false
		}
		if whole {
			if len(kept) < maxCachedScan {
				kept = append(kept, scanEntry{v: v, rows: rows.Clone()})
			} else {
				whole = false
			}
		}
		if !fn(v, rows) {
			complete = false
			return false
		}
		return true
	})
	if ferr != nil {
		return ferr
	}
	if err == nil && whole && complete {
		s.cache.putScan(scanKey, kept, s.epoch)
	}
	return err
}

func (s *source) Values(c *index.Column) (index.ColumnValues, error) {
	if s.store == nil {
		return nil, nil
	}
	if cv := s.store.cols[c.ID]; cv != nil {
		return cv, nil
	}
	return nil, nil
}

func (s *source) Record(row uint32, rec *codec.Record) (bool, error) {
	_, ok, err := layers.ReadRow(s.snap, s.d.ID, s.d.Filled.Prune(s.snap, s.d.ID, s.b.Lineage, s.t.ID, codec.KindRecordCur), s.t.ID, row, rec)
	return ok, err
}

func (s *source) Rows(ids []string) (*roaring.Bitmap, error) {
	out := roaring.New()
	for _, id := range ids {
		e, _, ok, err := layers.LookupID(s.snap, s.d.ID, s.b.Lineage, s.t.ID, id)
		if err != nil {
			return nil, err
		}
		if ok {
			out.Add(e.Row)
		}
	}
	return out, nil
}

func (s *source) Linked(c *index.Column) (index.Source, error) {
	if c.Link == nil {
		return nil, model.Invalidf("column [%s] is not a link", c.Path)
	}
	t := s.b.Schema.ByID[c.Link.ID]
	if t == nil {
		return nil, model.NotFoundf("table of link [%s] not found", c.Path)
	}
	return s.sourceFor(t), nil
}

func isMeta(c *index.Column) bool { return c.ID >= index.MetaUpdatedAtColumn }

var _ index.Source = (*source)(nil)

// storeState is embedded in database: the column stores and their lock.
type storeState struct {
	storeMu  sync.RWMutex
	stores   map[storeKey]*tableStore
	search   map[storeKey]*searchStore
	building map[storeKey]bool // column stores built in the background
}

// idLayer returns the layer whose current id map lists the branch's records:
// the branch's own when its lineage is one layer (main, or a flattened
// branch), or the owner's while the branch borrows the column store of a
// branch of one layer, whose rows it then shares. ok is false otherwise:
// deeper lineages would need a merge across layers.
func (s *source) idLayer() (layer uint32, ok bool) {
	if len(s.b.Lineage) == 1 {
		return s.b.Lineage[0].Layer, true
	}
	if s.store == nil || s.store.owner == s.b.ID {
		return 0, false
	}
	o := s.st.ByID[s.store.owner]
	if o == nil || len(o.Lineage) != 1 {
		return 0, false
	}
	return o.Lineage[0].Layer, true
}

// scanIDs walks the id map of the branch's records in id order, or reports
// index.ErrNoOrderedIndex when no one layer lists them (idLayer).
func (s *source) scanIDs(bd index.Bounds, desc bool, fn func(v codec.Value, rows *roaring.Bitmap) bool) error {
	layer, ok := s.idLayer()
	if !ok {
		return index.ErrNoOrderedIndex
	}
	prefix := codec.TablePrefix(nil, s.d.ID, layer, codec.KindIDMapCur, s.t.ID)
	opts := &pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)}
	// The key of id x is prefix, x, 0x00: ids hold no 0x00. Its own key
	// is the lowest key of x, and x, 0x00, 0x00 is just past it.
	idKey := func(x string, past bool) []byte {
		k := append(append(bytes.Clone(prefix), x...), 0)
		if past {
			k = append(k, 0)
		}
		return k
	}
	if bd.Prefix != nil {
		lo := append(bytes.Clone(prefix), *bd.Prefix...)
		opts.LowerBound, opts.UpperBound = lo, codec.PrefixEnd(lo)
	}
	if bd.Lo != nil {
		if k := idKey(bd.Lo.Str, !bd.LoIncl); bytes.Compare(k, opts.LowerBound) > 0 {
			opts.LowerBound = k
		}
	}
	if bd.Hi != nil {
		if k := idKey(bd.Hi.Str, bd.HiIncl); bytes.Compare(k, opts.UpperBound) < 0 {
			opts.UpperBound = k
		}
	}
	it, err := s.snap.NewIter(opts)
	if err != nil {
		return err
	}
	defer it.Close()
	ok = it.First()
	if desc {
		ok = it.Last()
	}
	for ; ok; ok = nextOrPrev(it, desc) {
		k := it.Key()
		if len(k) < len(prefix)+2 || k[len(k)-1] != 0 {
			continue
		}
		e, err := layers.DecodeIDEntry(it.Value())
		if err != nil {
			return err
		}
		if e.Deleted {
			continue
		}
		if !fn(codec.String(string(k[len(prefix):len(k)-1])), roaring.BitmapOf(e.Row)) {
			return nil
		}
	}
	return it.Error()
}

func nextOrPrev(it *pebble.Iterator, desc bool) bool {
	if desc {
		return it.Prev()
	}
	return it.Next()
}
