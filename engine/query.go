package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/index"
)

// Doc is a projected record ready for output: id, metadata and the
// selected values by column name. Objects are nested map[string]any, an
// expanded link is a *Doc, an unexpanded one a Link, and a reverse link a
// RevLinkResult. Other values have the types FromValue documents.
type Doc struct {
	ID        string
	Version   uint64
	CreatedAt time.Time
	UpdatedAt time.Time
	Values    map[string]any
}

// RevLinkResult is the value of a reverse-link projection.
type RevLinkResult struct {
	Records []*Doc
}

// The requests of queries, summaries and aggregations and their parts are
// the index package's, named here so that callers of the engine need not
// import it: index.ReadFilter and its kin read them from JSON, and
// index.FilterOf and its kin build them from Go values.
type (
	QueryRequest     = index.QueryRequest
	PageInput        = index.PageInput
	Filter           = index.Filter
	Sort             = index.Sort
	Columns          = index.Columns
	SummarizeRequest = index.SummarizeRequest
	Summary          = index.Summary
	SummarizeResult  = index.SummarizeResult
	SummaryRow       = index.SummaryRow
	AggregateRequest = index.AggregateRequest
	Aggs             = index.Aggs
	AggregateResult  = index.AggregateResult
	AggResult        = index.AggResult
	AggBucket        = index.AggBucket
	QueryPlan        = index.QueryPlan
	SummarizePlan    = index.SummarizePlan
	ExplainNode      = index.ExplainNode
)

// FilterOf makes a Filter of a value built in Go (or decoded from JSON):
// maps, []any, strings, bools, nil, numbers and time.Time, as the filter
// language of the spec reads them; nil is no filter.
func FilterOf(v any) Filter { return index.FilterOf(v) }

// SortOf makes a Sort of a value such as "name", map[string]any{"price":
// "desc"} or []any of those; nil is no sort.
func SortOf(v any) Sort { return index.SortOf(v) }

// QueryOptions are the server settings of a query.
type QueryOptions struct {
	// MaxSize, MaxOffset and MaxDepth are the page limits (spec §8 or the
	// compat ones); zero values mean the spec's 200, 800 and 1000.
	MaxSize, MaxOffset, MaxDepth int
	// NoDepthLimit turns off the size+offset rule (compat mode).
	NoDepthLimit bool
	// Views asks for the page as QueryResult.Views instead of Records
	// when the columns need no other record read (no expanded link, no
	// reverse link, no file column): the stored values with their
	// columns, for callers that encode records themselves.
	Views bool
	// Records, when not nil, is the record cache the views of a page are
	// read through and kept in, as GetView reads and keeps them.
	Records *RecordCache
}

func (o *QueryOptions) defaults() {
	if o.MaxSize == 0 {
		o.MaxSize = 200
	}
	if o.MaxOffset == 0 {
		o.MaxOffset = 800
	}
	if o.MaxDepth == 0 && !o.NoDepthLimit {
		o.MaxDepth = 1000
	}
}

// QueryResult is a page of records, its meta, and the plan that found it.
type QueryResult struct {
	// Records is the page, unless Views holds it.
	Records []*Doc
	// Views is the page when QueryOptions.Views asked for it and the
	// columns allowed it; then Records is nil. A view holds the selected
	// columns only.
	Views  []*RecordView
	Cursor string
	More   bool
	Size   int
	// Plan is how the query found the page. With QueryRequest.Explain its
	// steps carry rows and times, and a "records" step, reading and
	// projecting the page, sits between the query and the order.
	Plan *QueryPlan
}

// cursorSecretName is the server-state entry holding the cursor key.
const cursorSecretName = "cursor-secret"

// cursorSecret returns the per-server secret that signs cursors.
func (e *Engine) cursorSecret() ([]byte, error) { return e.serverSecret(cursorSecretName) }

// serverSecret returns the per-server secret stored under name, creating it
// on first use (as cursorSecret does for cursors).
func (e *Engine) serverSecret(name string) ([]byte, error) {
	if s := e.cat.ServerState(name); s != nil {
		return s, nil
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	res, err := e.applyCatalog(&catalog.SetServerState{Name: name, Value: fresh})
	if err != nil {
		return nil, err
	}
	return res.([]byte), nil
}

// Meta is the record metadata key of Options.Meta: what filters and other
// requests name the metadata columns under.
func (e *Engine) Meta() string { return e.opts.Meta }

// Query runs a query (filter, sort, page, columns) on a table of a branch.
// It stops with ctx's error when ctx ends.
func (e *Engine) Query(ctx context.Context, ref Ref, tableName string, in QueryRequest, opts QueryOptions) (*QueryResult, error) {
	var start time.Time
	if in.Explain {
		start = time.Now()
	}
	opts.defaults()
	secret, err := e.cursorSecret()
	if err != nil {
		return nil, err
	}
	var own ownEpoch
	if opts.Views {
		own = e.loadOwnEpoch(ref, tableName, opts.Records)
	}
	src, release, err := e.openSource(ctx, ref, tableName, memstore.Need{})
	if err != nil {
		return nil, err
	}
	defer release()
	// Right after the snapshot: the later the second look at the epoch, the
	// likelier a write in between makes the page read storage.
	pc := src.cachedRecords(opts.Records, own)
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, err
	}
	page, err := index.Query(ctx, src, in, index.QueryOptions{
		Secret: secret, MaxSize: opts.MaxSize, MaxOffset: opts.MaxOffset,
		MaxDepth: opts.MaxDepth, DefaultSize: 20, Seed: binary.BigEndian.Uint64(seed[:]),
	})
	if err != nil {
		return nil, queryError(err)
	}
	proj, err := index.ParseColumns(src.it, page.Columns, src.tableByName)
	if err != nil {
		return nil, queryError(err)
	}
	var records *ExplainNode
	var read time.Time
	if in.Explain {
		records = &ExplainNode{Kind: "records", Detail: "read and project"}
		read = records.Begin()
	}
	res := &QueryResult{Cursor: page.Cursor, More: page.More, Size: page.Size, Plan: &page.Plan}
	n := 0
	if opts.Views && src.plain(proj) {
		res.Views, err = src.views(page.Rows, proj, pc)
		n = len(res.Views)
	} else {
		res.Records, err = src.docs(page.Rows, proj)
		n = len(res.Records)
	}
	if err != nil {
		return nil, err
	}
	if in.Explain {
		root := page.Plan.Tree()
		records.End(read, uint64(len(page.Rows)), uint64(n))
		records.Time += root.Children[0].Time
		records.Children, root.Children = root.Children, []*ExplainNode{records}
		root.Actual, root.Time = uint64(n), time.Since(start)
	}
	return res, nil
}

// plain reports whether a projection reads nothing but the records of the
// page: no expanded link, no reverse link and no file column, whose
// values come from other reads.
func (s *source) plain(p *index.Projection) bool {
	if len(p.Links) > 0 || len(p.RevLinks) > 0 || len(p.FileFields) > 0 {
		return false
	}
	for _, c := range s.t.ByID {
		if model.IsFileType(c.Type) && p.Selected(c.Path) {
			return false
		}
	}
	return true
}

// views reads rows in order as views of the columns p selects, for a
// plain projection. Through a record cache (pc from cachedRecords, or the
// zero pageCache for none), a row the cache holds at pc's epoch is not
// read, and the records read are cached whole, as GetView caches them;
// the views are the same as without.
func (s *source) views(rows []uint32, p *index.Projection, pc pageCache) ([]*RecordView, error) {
	byRow := make([]*RecordView, len(rows))
	// One allocation for the page's views and, while they fit, one for
	// their fields.
	var (
		views  []RecordView
		fields []FieldView
	)
	pooled := func(i int) *RecordView {
		if views == nil {
			views = make([]RecordView, len(rows))
			fields = make([]FieldView, 0, len(rows)*len(s.t.ByID))
		}
		return &views[i]
	}
	read, at := rows, []int(nil) // the rows to read, and where they go in rows
	c, bc := pc.c, pc.bc
	through := pc.c != nil
	if through {
		read = nil
		for i, row := range rows {
			if v, ok := pc.get(row, s.t); ok {
				byRow[i] = v
				if !p.All {
					byRow[i] = projectView(v, p, pooled(i), &fields)
				}
				continue
			}
			read, at = append(read, row), append(at, i)
		}
	}
	lin := s.d.Filled.Prune(s.snap, s.d.ID, s.b.Lineage, s.t.ID, codec.KindRecordCur)
	err := layers.ReadRows(s.snap, s.d.ID, lin, s.t.ID, read, func(j int, rec *codec.Record) error {
		// A view takes the decoded values, which the next decode into
		// rec leaves alone.
		if !through {
			fillRecordView(pooled(j), &fields, s.t, rec, p)
			byRow[j] = &views[j]
			return nil
		}
		i := at[j]
		if bc == nil { // no own cache to keep it in: a view of this page only
			fillRecordView(pooled(i), &fields, s.t, rec, p)
			byRow[i] = &views[i]
			return nil
		}
		v := newRecordView(s.t, rec, nil)
		scopeViewFiles(v, s.e, s.d, s.b, s.t)
		v.cached = true
		if !c.Put(bc, v.ID, read[j], pc.epoch, s.t, v, viewSize(v)) {
			v.cached = false // not shared: the cache did not take it
		}
		byRow[i] = v
		if !p.All {
			byRow[i] = projectView(v, p, pooled(i), &fields)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := byRow[:0]
	for _, v := range byRow {
		if v != nil {
			out = append(out, v)
		}
	}
	return out, nil
}

// The record cache keeps the records of a table of a branch under that
// branch's own table cache (memstore.BitmapCache), tagged with an epoch of
// it, whichever branch's structures the branch reads: GetView finds them
// there by id, and pages by row. A branch that reads its own structures
// (the view's Root is the branch) has its snapshot's epoch
// (memstore.View.Epoch) of its own cache.
//
// A fork whose table neither it nor its parent has written since the fork
// reads its ancestor's structures (the view's Root). Its rows are then
// exactly the ancestor's at the snapshot, whose epoch of the ancestor's
// cache is the view's; when its views of them are the ancestor's too
// (viewsAlike: the same columns under the same paths, and no file column,
// whose fields name the branch they were read on), the page first finds
// the ancestor's entries at that epoch, as the ancestor's own pages do: a
// fresh child's pages read from storage no record its parent's reads have
// cached. What it reads from storage it keeps under its own cache, at its
// own epoch, which it takes as a point read does:
//
//   - loadOwnEpoch gets the cache (made, when there is none, under the
//     table's lock, so that every write of the fork's table that starts
//     later finds it and makes its epoch odd before its batch becomes
//     visible) and loads its epoch before the snapshot is taken;
//     cachedRecords loads it again after. Both loads
//     equal and even: no write of the fork's table was in flight, nor
//     ended, from the first to the second, so the snapshot shows every
//     write of it up to that epoch and none after: the table as of that
//     epoch, which is what an entry tagged with it holds.
//   - A write of the fork's table in between changes the epoch, and the
//     page reads storage; in practice such a write before the snapshot also
//     ends the sharing (share.go decides it from the write marks that agree
//     with the snapshot), and the page takes the first case with the
//     fork's own epoch.
//   - A write of the parent changes none of the fork's rows: the fork reads
//     its parent's top layer as of the fork's seq. It changes the
//     parent's epochs only, which tag the parent's entries and the bitmaps the
//     query reads, never the fork's entries; once it ends the sharing, the
//     fork's next page takes the first case, with the same cache.
//
// A row means one record across forks: row ids are never reused in a
// database, an update or delete writes the record's row in the writing
// branch's top layer (copy-on-write), and the fork reads the rows its
// ancestor's column store returns through its own lineage, as a point
// read does; an entry of a row stays valid only while the fork's write
// log shows no write of that row.

// ownEpoch is a branch's own table cache and its epoch loaded before a
// source's snapshot, for cachedRecords; the zero value is none.
type ownEpoch struct {
	bc            *memstore.BitmapCache
	epoch         uint64
	branch, table uint32 // the ids the cache is of
}

// loadOwnEpoch returns the cache of a table of a branch that a page
// through the record cache c is kept in, with its epoch, loaded before the
// source is opened. With no record cache, an engine whose storage failed
// (making a cache takes the table's lock, which a write stuck in failed
// storage may hold), or a table not found (opening the source says why),
// it is none.
func (e *Engine) loadOwnEpoch(ref Ref, tableName string, c *RecordCache) ownEpoch {
	if c == nil || e.storageFault() != nil {
		return ownEpoch{}
	}
	d, b, t, err := e.resolveTable(ref, tableName)
	if err != nil {
		return ownEpoch{}
	}
	bc := d.CacheFor(storeKey{Branch: b.ID, Table: t.ID})
	return ownEpoch{bc: bc, epoch: bc.Epoch(), branch: b.ID, table: t.ID}
}

// pageCache is a record cache a page is read through: the table cache and
// the epoch of it its entries are found and kept under (bc nil for none),
// and for a fork sharing its ancestor's rows and views, the ancestor's
// table cache, epoch and table, under which it finds entries too (shared
// nil for none); c is nil when it has neither.
type pageCache struct {
	c      *RecordCache
	bc     *memstore.BitmapCache
	epoch  uint64
	shared *memstore.BitmapCache
	sEpoch uint64
	sTable *model.Table
}

// get returns the cached view of row, of the source's table t: the
// ancestor's entry, else the branch's own.
func (pc pageCache) get(row uint32, t *model.Table) (*RecordView, bool) {
	if pc.shared != nil {
		if v, ok := pc.c.GetRow(pc.shared, row, pc.sEpoch, pc.sTable); ok {
			return v, true
		}
	}
	if pc.bc != nil {
		return pc.c.GetRow(pc.bc, row, pc.epoch, t)
	}
	return nil, false
}

// cachedRecords returns how the record cache c serves the source's pages,
// given its branch's own table cache loaded before the snapshot (own): at
// the source's epoch when the branch reads its own structures; when it
// reads an ancestor's, at own's epoch if that is still current and even
// (see above), and, when the ancestor's views are its own, at the
// source's epoch of the ancestor's cache too; else not at all (none asked
// for, or a snapshot at no known epoch).
func (s *source) cachedRecords(c *RecordCache, own ownEpoch) pageCache {
	if c == nil || s.view == nil {
		return pageCache{}
	}
	if s.view.Root == s.b {
		if s.cache == nil {
			return pageCache{}
		}
		return pageCache{c: c, bc: s.cache, epoch: s.epoch}
	}
	pc := pageCache{c: c}
	if s.cache != nil && viewsAlike(s.t, s.view.RootTable) {
		pc.shared, pc.sEpoch, pc.sTable = s.cache, s.epoch, s.view.RootTable
	}
	if own.bc != nil && own.branch == s.b.ID && own.table == s.t.ID && own.epoch%2 == 0 && own.bc.Epoch() == own.epoch {
		pc.bc, pc.epoch = own.bc, own.epoch
	}
	if pc.bc == nil && pc.shared == nil {
		return pageCache{}
	}
	return pc
}

// viewsAlike reports whether the records of tables t and u, of two branches
// that share their rows, have the same views: their leaves have the same
// ids, types and paths (a fork shares its parent's table object until
// either changes the schema, and a reopened engine loads them apart), and
// neither has a file column, whose fields name the branch they were read
// on.
func viewsAlike(t, u *model.Table) bool {
	if t == nil || u == nil || t.Sig != u.Sig || hasFileColumns(t) {
		return false
	}
	if t == u {
		return true
	}
	for _, c := range t.Leaves {
		if uc := u.ByID[c.ID]; uc == nil || uc.Path != c.Path {
			return false
		}
	}
	return true
}

// projectView builds in dst the view of the columns p selects of a whole
// record's view v, taking its fields from the front of *pool when it has
// room, as fillRecordView does, and returns dst.
func projectView(v *RecordView, p *index.Projection, dst *RecordView, pool *[]FieldView) *RecordView {
	*dst = RecordView{ID: v.ID, Version: v.Version, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt}
	n := 0
	for i := range v.Fields {
		if p.Selected(v.Fields[i].Path()) {
			n++
		}
	}
	if cap(*pool)-len(*pool) >= n {
		k := len(*pool)
		*pool = (*pool)[:k+n]
		dst.Fields = (*pool)[k : k : k+n]
	} else {
		dst.Fields = make([]FieldView, 0, n)
	}
	for _, f := range v.Fields {
		if p.Selected(f.Path()) {
			dst.Fields = append(dst.Fields, f)
		}
	}
	return dst
}

// queryError turns the index package's input errors into CodeInvalid.
func queryError(err error) error {
	var ie *index.InputError
	if errors.As(err, &ie) {
		return model.Invalidf("%s", ie.Message)
	}
	return err
}

// tableByName finds a table of the source's branch for reverse links.
func (s *source) tableByName(name string) *index.Table {
	t := s.b.Schema.TableByName(name)
	if t == nil {
		return nil
	}
	return s.e.indexTable(s.b.Schema, t.ID)
}

// sourceFor returns a source for another table of the same branch and
// snapshot.
func (s *source) sourceFor(t *model.Table) *source {
	var store *memstore.TableStore
	if s.view != nil {
		store = s.view.Linked[t.ID]
	}
	return &source{ctx: s.ctx, e: s.e, d: s.d, view: s.view, snap: s.snap, st: s.st, b: s.b, t: t, it: s.e.indexTable(s.b.Schema, t.ID), store: store}
}

// readRows reads the live records of rows (in any order) and calls fn with
// the index in rows of each one found, in ascending row order: one
// iterator forward over the branch's own layer (layers.ReadRows). rec is
// reused between calls.
func (s *source) readRows(rows []uint32, fn func(i int, rec *codec.Record) error) error {
	lin := s.d.Filled.Prune(s.snap, s.d.ID, s.b.Lineage, s.t.ID, codec.KindRecordCur)
	return layers.ReadRows(s.snap, s.d.ID, lin, s.t.ID, rows, fn)
}

// docs reads and projects rows in order.
func (s *source) docs(rows []uint32, p *index.Projection) ([]*Doc, error) {
	byRow := make([]*Doc, len(rows))
	err := s.readRows(rows, func(i int, rec *codec.Record) error {
		d, err := s.doc(rec, p)
		byRow[i] = d
		return err
	})
	if err != nil {
		return nil, err
	}
	out := byRow[:0]
	for _, d := range byRow {
		if d != nil {
			out = append(out, d)
		}
	}
	return out, nil
}

// doc projects one stored record.
func (s *source) doc(rec *codec.Record, p *index.Projection) (*Doc, error) {
	n := len(rec.Fields)
	if !p.All {
		n = min(n, len(p.Leaves)+len(p.Links)+len(p.FileFields))
	}
	d := &Doc{
		ID: rec.ID, Version: rec.Version,
		CreatedAt: time.Unix(0, rec.CreatedAt).UTC(), UpdatedAt: time.Unix(0, rec.UpdatedAt).UTC(),
		// Sized for the selected fields up front: a map grown entry by
		// entry allocates and copies its tables again past eight.
		Values: make(map[string]any, n+len(p.RevLinks)),
	}
	cols := s.columnsByID()
	for _, f := range rec.Fields {
		var c *model.Column
		if int(f.Col) < len(cols) {
			c = cols[f.Col]
		}
		if c == nil {
			continue
		}
		if c.Type == TypeLink {
			if sub := p.Links[c.Path]; sub != nil {
				linked, err := s.linkedDoc(c, f.Val.Str, sub)
				if err != nil {
					return nil, err
				}
				if linked != nil {
					index.SetPath(d.Values, c.Path, linked)
				}
				continue
			}
		}
		if model.IsFileType(c.Type) {
			v, err := s.docFiles(c, rec, f.Val, p)
			if err != nil {
				return nil, err
			}
			if v != nil {
				index.SetPath(d.Values, c.Path, v)
			}
			continue
		}
		if p.Selected(c.Path) {
			index.SetPath(d.Values, c.Path, model.FromValue(c, f.Val))
		}
	}
	for _, rl := range p.RevLinks {
		res, err := s.revLink(rec.ID, rl)
		if err != nil {
			return nil, err
		}
		d.Values[rl.As] = res
	}
	return d, nil
}

// columnsByID returns the table's value columns indexed by id, made on
// first use: a page projects each field of each record by its column.
func (s *source) columnsByID() []*model.Column {
	if s.cols == nil {
		s.cols = make([]*model.Column, s.t.NextCol+1)
		for id, c := range s.t.ByID {
			if int(id) >= len(s.cols) {
				s.cols = append(s.cols, make([]*model.Column, int(id)+1-len(s.cols))...)
			}
			s.cols[id] = c
		}
	}
	return s.cols
}

// linkedDoc reads and projects the record a link points at; nil when it is
// gone.
func (s *source) linkedDoc(c *model.Column, id string, p *index.Projection) (*Doc, error) {
	t := s.b.Schema.TableByID(c.LinkTable)
	if t == nil {
		return nil, nil
	}
	ts := s.sourceFor(t)
	e, _, ok, err := layers.LookupID(ts.snap, ts.d.ID, ts.b.Lineage, t.ID, id)
	if err != nil || !ok {
		return nil, err
	}
	var rec codec.Record
	found, err := ts.Record(e.Row, &rec)
	if err != nil || !found {
		return nil, err
	}
	return ts.doc(&rec, p)
}

// revLink reads the records of another table linking to id.
func (s *source) revLink(id string, rl *index.RevLink) (*RevLinkResult, error) {
	t := s.b.Schema.TableByID(rl.Table.ID)
	res := &RevLinkResult{Records: []*Doc{}}
	if t == nil || rl.Limit == 0 {
		return res, nil
	}
	ts := s.sourceFor(t)
	rows, err := ts.Posting(rl.Column, codec.String(id))
	if err != nil {
		return nil, err
	}
	picked, _, err := index.Select(s.ctx, ts, rows, rl.Order, index.Window{Limit: rl.Offset + rl.Limit})
	if err != nil {
		return nil, err
	}
	if rl.Offset >= len(picked) {
		return res, nil
	}
	docs, err := ts.docs(picked[rl.Offset:], rl.Select)
	if err != nil {
		return nil, err
	}
	res.Records = docs
	return res, nil
}

// FilterRows returns the rows of a table that match a filter, for tests
// and benchmarks that check what a filter selects.
func (e *Engine) FilterRows(ref Ref, tableName string, filter Filter) (*roaring.Bitmap, error) {
	src, release, err := e.openSource(context.Background(), ref, tableName, memstore.Need{})
	if err != nil {
		return nil, err
	}
	defer release()
	rows, err := index.Matching(src.ctx, src, filter)
	if err != nil {
		return nil, queryError(err)
	}
	return rows, nil
}

// Project returns records, as writes and Get return them, projected by a
// columns list (the zero Columns selects every column) with links expanded
// and reverse links attached, read at one snapshot of the branch. Records
// that did not come from the engine are an error.
func (e *Engine) Project(ref Ref, tableName string, recs []*Record, columns Columns) ([]*Doc, error) {
	d, b, t, err := e.resolveTable(ref, tableName)
	if err != nil {
		return nil, err
	}
	// Projecting reads a bounded number of records: no deadline.
	src := &source{ctx: context.Background(), e: e, d: d, b: b, t: t, it: e.indexTable(b.Schema, t.ID)}
	proj, err := index.ParseColumns(src.it, columns, src.tableByName)
	if err != nil {
		return nil, queryError(err)
	}
	if len(proj.Links) > 0 || len(proj.RevLinks) > 0 || len(proj.FileFields) > 0 {
		// Expanding links reads other records: at one snapshot.
		var release func()
		if src, release, err = e.openSource(src.ctx, ref, tableName, memstore.Need{Store: memstore.Without}); err != nil {
			return nil, err
		}
		defer release()
	}
	out := make([]*Doc, 0, len(recs))
	for _, r := range recs {
		if r == nil || r.stored == nil {
			return nil, errors.New("engine: projecting a record the engine did not return")
		}
		doc, err := src.doc(r.stored, proj)
		if err != nil {
			return nil, err
		}
		out = append(out, doc)
	}
	return out, nil
}

// CheckColumns validates a columns list against a table without reading
// data, so that a write with a bad list changes nothing.
func (e *Engine) CheckColumns(ref Ref, tableName string, columns Columns) error {
	s, err := e.branchSchema(ref)
	if err != nil {
		return err
	}
	t, err := s.Table(tableName)
	if err != nil {
		return err
	}
	_, err = index.ParseColumns(e.indexTable(s, t.ID), columns, func(name string) *index.Table {
		if x := s.TableByName(name); x != nil {
			return e.indexTable(s, x.ID)
		}
		return nil
	})
	return queryError(err)
}
