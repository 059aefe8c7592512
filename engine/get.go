package engine

import (
	"sync"
	"time"
	"unsafe"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/index"
)

// Point reads by id are the most frequent request of the service, and Get
// pays for two storage reads (the id map, then the row) and for building
// Record.Values. GetView returns the stored record with its columns instead,
// for callers that encode it themselves, and keeps what it read in a
// RecordCache so that the next read of the same record reads no storage.
//
// A cached view is exact, not merely recent. It is tagged with the epoch of
// its table's cache (memstore.BitmapCache) at which it was read, and with the
// row the record is stored in: every command that writes a row of a table of
// a branch makes that epoch odd before its batch becomes visible and even
// again after, so a view read while the epoch was even and unchanged from
// before the first storage read to after the last shows the table as of that
// epoch. The cache also remembers the rows each of the last commands wrote,
// and the view stays the answer at a later epoch when none of the commands
// in between wrote its row (and, while the epoch is odd, when the command
// in flight does not write it either): a record's content and its id's row change only
// by a write of that row (an update or a delete writes it; an insert under
// the same id follows the delete), and a command that changes branches
// counts as writing every row. Nothing else changes the visible rows of a
// branch: forks and branch deletions do not touch an existing branch's rows
// (and ids of branches and tables are never reused), and flattening rewrites
// layers without changing what a branch sees. Schema changes publish new
// table objects; a view is used only with the table object it was built
// from. TestGetViewModel holds this against random writes, forks, branch
// deletions, flattening and reopens, and TestCachesUnderWrites against
// concurrent writers.

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

	cached bool // put in a RecordCache
}

// Cached reports whether the view is one a RecordCache keeps: the cache
// hands out this same view for the record until the record is written, so
// what a caller derives from it (such as its encoding) may be kept with
// it. Other views are a single read's.
func (v *RecordView) Cached() bool { return v.cached }

// FieldView is one value of a RecordView. A record cache keeps thousands
// of views, which every garbage collection scans: a field carries its
// column once, and reads its path and type from it.
type FieldView struct {
	Value codec.Value

	col   *model.Column
	files *fileScope // the record's location, for file fields (files_output.go)
}

// Path is the dotted path of the field's column from the table root.
func (f *FieldView) Path() string { return f.col.Path }

// Type is the field's column type; it says which member of Value is set,
// as FromValue reads them.
func (f *FieldView) Type() ColumnType { return f.col.Type }

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
// columns, of those p selects (nil: every column). The view shares the
// record's values: they must not change afterwards.
func newRecordView(t *model.Table, rec *codec.Record, p *index.Projection) *RecordView {
	v := &RecordView{}
	fillRecordView(v, nil, t, rec, p)
	return v
}

// viewStackFields is the most fields of a record whose view is built
// without allocating for its order.
const viewStackFields = 64

// fillRecordView builds a view as newRecordView does into v, taking its
// fields from the front of *pool when it has room, so that the views of a
// page can share one allocation.
func fillRecordView(v *RecordView, pool *[]FieldView, t *model.Table, rec *codec.Record, p *index.Projection) {
	*v = RecordView{
		ID: rec.ID, Version: rec.Version,
		CreatedAt: time.Unix(0, rec.CreatedAt).UTC(), UpdatedAt: time.Unix(0, rec.UpdatedAt).UTC(),
	}
	// Sort the fields' indexes, not the fields: moving views costs write
	// barriers. A record of up to viewStackFields fields sorts them on the
	// stack; stored fields come in column id order, which is mostly the
	// path order already, so an insertion sort does little work.
	var colsBuf [viewStackFields]*model.Column
	var orderBuf [viewStackFields]int
	cols, order := colsBuf[:0], orderBuf[:0]
	if len(rec.Fields) > viewStackFields {
		cols, order = make([]*model.Column, 0, len(rec.Fields)), make([]int, 0, len(rec.Fields))
	}
	cols = cols[:len(rec.Fields)]
	for i, f := range rec.Fields {
		if cols[i] = t.ByID[f.Col]; cols[i] != nil && (p == nil || p.Selected(cols[i].Path)) { // else a deleted or unselected column
			order = append(order, i)
		}
	}
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && ComparePaths(cols[order[j-1]].Path, cols[order[j]].Path) > 0; j-- {
			order[j-1], order[j] = order[j], order[j-1]
		}
	}
	if pool != nil && cap(*pool)-len(*pool) >= len(order) {
		n := len(*pool)
		*pool = (*pool)[:n+len(order)]
		v.Fields = (*pool)[n : n+len(order) : n+len(order)]
	} else {
		v.Fields = make([]FieldView, len(order))
	}
	for j, i := range order {
		c := cols[i]
		v.Fields[j] = FieldView{Value: rec.Fields[i].Val, col: c}
	}
}

// readRecord reads the visible version of a record of a table of a branch
// into rec and returns its row; a missing or deleted record is a not-found
// error. The caller holds d.gcMu for reading, and loaded b after taking it.
// The record's strings share one copy of its stored form
// (codec.DecodeRecordShared): its readers answer it or keep it whole.
func (e *Engine) readRecord(d *database, b *model.Branch, t *model.Table, id string, rec *codec.Record) (uint32, error) {
	return e.readRecordHinted(d, b, t, id, rowHint{}, rec)
}

// rowHint is the row a table's column store gave for a record id
// (memstore.DB.RowOf), taken before the read that uses it.
type rowHint struct {
	row uint32
	ok  bool
}

// hintRow asks the column store of a table of a branch for the row of id.
// With storage failed there is no hint: the store's table lock may be held
// by a write stuck in it.
func (e *Engine) hintRow(d *database, b *model.Branch, t *model.Table, id string) rowHint {
	if e.storageFault() != nil {
		return rowHint{}
	}
	row, ok := d.RowOf(b, t, id)
	return rowHint{row, ok}
}

// readRecordHinted is readRecord given a hint of the record's row. A row
// read through the hint is the record's when its visible version is live
// and holds id: a branch maps an id to at most one live row, so no write
// between the hint and the read can make that answer wrong. Otherwise the
// id map in storage says which row it is.
func (e *Engine) readRecordHinted(d *database, b *model.Branch, t *model.Table, id string, h rowHint, rec *codec.Record) (uint32, error) {
	rows := d.Filled.Prune(e.pdb, d.ID, b.Lineage, t.ID, codec.KindRecordCur)
	if h.ok {
		_, ok, err := layers.ReadRowShared(e.pdb, d.ID, rows, t.ID, h.row, rec)
		if err != nil {
			return 0, err
		}
		if ok && rec.ID == id {
			return h.row, nil
		}
	}
	ent, _, ok, err := layers.LookupID(e.pdb, d.ID, d.Filled.Prune(e.pdb, d.ID, b.Lineage, t.ID, codec.KindIDMapCur), t.ID, id)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, model.NotFoundf("record [%s] not found", id)
	}
	_, ok, err = layers.ReadRowShared(e.pdb, d.ID, rows, t.ID, ent.Row, rec)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, model.NotFoundf("record [%s] not found", id)
	}
	return ent.Row, nil
}

// GetView reads one record of a branch, as Get does, as a view. With a
// cache (c not nil) it answers from the cache when the record has not been
// written since it was cached, and caches what it reads when it read the
// record lately before (RecordCache.Admit); the answer is the same as
// without.
func (e *Engine) GetView(c *RecordCache, ref Ref, tableName, id string) (*RecordView, error) {
	return getView(e, c, ref, tableName, id, nil)
}

// GetViewBytes is GetView of an id given as bytes, which it does not keep
// nor change: a read the cache answers copies nothing of the id.
func (e *Engine) GetViewBytes(c *RecordCache, ref Ref, tableName string, id []byte) (*RecordView, error) {
	return getView(e, c, ref, tableName, id, nil)
}

// ViewWriter takes the view of a record ReadView read.
type ViewWriter interface {
	// WriteView is called once with the view. It may keep the view only
	// when it is Cached: a view read for this call alone is valid until
	// WriteView returns, for its strings are the storage engine's copy of
	// the record. It must not call the engine.
	WriteView(v *RecordView) error
}

// ViewFunc is a function as a ViewWriter.
type ViewFunc func(v *RecordView) error

// WriteView implements ViewWriter.
func (f ViewFunc) WriteView(v *RecordView) error { return f(v) }

// ReadView reads one record of a branch as GetView does and hands its view
// to w, returning w's error. A read answered at once so goes without the
// copies a view its caller keeps costs.
func (e *Engine) ReadView(c *RecordCache, ref Ref, tableName, id string, w ViewWriter) error {
	_, err := getView(e, c, ref, tableName, id, w)
	return err
}

// ReadViewBytes is ReadView of an id given as bytes, as GetViewBytes is.
func (e *Engine) ReadViewBytes(c *RecordCache, ref Ref, tableName string, id []byte, w ViewWriter) error {
	_, err := getView(e, c, ref, tableName, id, w)
	return err
}

// getView is GetView and GetViewBytes, and with w ReadView and
// ReadViewBytes (which return no view).
func getView[ID string | []byte](e *Engine, c *RecordCache, ref Ref, tableName string, rawID ID, w ViewWriter) (*RecordView, error) {
	d, b, t, err := e.resolveTable(ref, tableName)
	if err != nil {
		return nil, err
	}
	var (
		bc *memstore.BitmapCache
		e0 uint64
	)
	branchID, tableID := b.ID, t.ID
	if c != nil && e.storageFault() != nil {
		// Making a cache takes the table's lock, which a write stuck in
		// failed storage may hold.
		c = nil
	}
	if c != nil {
		bc = d.CacheFor(storeKey{Branch: branchID, Table: tableID})
		// An odd epoch is a write in flight: the cache knows what it
		// writes, and answers for what it leaves alone.
		e0 = bc.Epoch()
		v, ok := memstore.LookupRecord(c, bc, rawID, e0, t)
		if !ok {
			v, ok = sharedView(c, d, b, t, rawID)
		}
		if ok {
			if w != nil {
				return nil, w.WriteView(v)
			}
			return v, nil
		}
	}
	// The id is read in place: the cache copies what it keeps.
	id := borrowString(rawID)
	hint := e.hintRow(d, b, t, id)
	read := false                   // w was given a view of storage's buffer
	asked, admitted := false, false // RecordCache.Admit, asked before the read
	v, row, err := func() (*RecordView, uint32, error) {
		d.Pin()
		defer d.Unpin()
		// The lineage read must be loaded under the pin: layers it names
		// stay.
		if b, err = d.State().Branch(ref.Branch); err != nil {
			return nil, 0, err
		}
		if t, err = b.Schema.Table(tableName); err != nil {
			return nil, 0, err
		}
		// A read the cache will not take is answered from storage's
		// buffer. Files are not: their fields read the engine, which w
		// may not do under the pin.
		if w != nil && !hasFileColumns(t) {
			asked = true
			if admitted = c != nil && e0%2 == 0 && c.Admit(bc, id); !admitted {
				read = true
				return nil, 0, e.readBorrowedView(d, b, t, id, hint, w)
			}
		}
		rec := readRecords.Get().(*codec.Record)
		row, err := e.readRecordHinted(d, b, t, id, hint, rec)
		var v *RecordView
		if err == nil {
			v = newRecordView(t, rec, nil)
			scopeViewFiles(v, e, d, b, t)
		}
		// The view holds the record's values, not the record: it goes
		// back to the pool, without the values.
		clear(rec.Fields)
		*rec = codec.Record{Fields: rec.Fields[:0]}
		readRecords.Put(rec)
		return v, row, err
	}()
	if err != nil || read {
		return nil, err
	}
	if c != nil && e0%2 == 0 && bc.Epoch() == e0 && b.ID == branchID && t.ID == tableID && (admitted || !asked && c.Admit(bc, id)) {
		// The view is shared once cached: it is marked before, and
		// unmarked when the cache did not take it, which nobody saw.
		v.cached = true
		if !c.Put(bc, id, row, e0, t, v, viewSize(v)) {
			v.cached = false
		}
	}
	if w != nil {
		return nil, w.WriteView(v)
	}
	return v, nil
}

// sharedView returns the view of record id of table t of a fork that
// reads its ancestor's rows of the table, as the ancestor's entry in the
// record cache c holds it, when the fork's views are the ancestor's
// (viewsAlike): a fork finds the records its parent's reads cached, and
// the views its own pages found there (query.go).
func sharedView[ID string | []byte](c *RecordCache, d *database, b *model.Branch, t *model.Table, id ID) (*RecordView, bool) {
	sc, epoch, rt, ok := d.SharedCache(b, t)
	if !ok || !viewsAlike(t, rt) {
		return nil, false
	}
	return memstore.LookupRecord(c, sc, id, epoch, rt)
}

// borrowString returns the bytes of a string or byte slice as a string
// without copying them: it is valid while they are, and unchanged.
func borrowString[ID string | []byte](id ID) string {
	if len(id) == 0 {
		return ""
	}
	// A string and a slice both begin with the pointer to their bytes.
	return unsafe.String(*(**byte)(unsafe.Pointer(&id)), len(id))
}

// hasFileColumns reports whether a table has a column of a file type.
func hasFileColumns(t *model.Table) bool {
	for _, c := range t.Leaves {
		if model.IsFileType(c.Type) {
			return true
		}
	}
	return false
}

// borrowedView is what readBorrowedView reads a record into, recycled.
type borrowedView struct {
	rec    codec.Record
	view   RecordView
	fields []FieldView
}

// borrowedViews recycles the views of ReadView.
var borrowedViews = sync.Pool{New: func() any { return new(borrowedView) }}

// readBorrowedView reads a record as readRecordHinted does and hands its
// view to w while the storage engine's copy of it is valid: the view is
// decoded from that copy, and nothing of it is copied or allocated. The
// caller holds d.gcMu for reading, and loaded b after taking it.
func (e *Engine) readBorrowedView(d *database, b *model.Branch, t *model.Table, id string, h rowHint, w ViewWriter) error {
	bv := borrowedViews.Get().(*borrowedView)
	defer func() {
		// Nothing of the record may outlive the read.
		clear(bv.fields[:cap(bv.fields)])
		clear(bv.rec.Fields)
		bv.rec = codec.Record{Fields: bv.rec.Fields[:0]}
		bv.view = RecordView{}
		borrowedViews.Put(bv)
	}()
	called := false
	use := func(val []byte, rec *codec.Record) error {
		if err := codec.DecodeRecordBorrowed(val, rec); err != nil || rec.Deleted || rec.ID != id {
			return err
		}
		called = true
		if cap(bv.fields) < len(rec.Fields) {
			bv.fields = make([]FieldView, 0, len(rec.Fields))
		}
		fields := bv.fields[:0]
		fillRecordView(&bv.view, &fields, t, rec, nil)
		return w.WriteView(&bv.view)
	}
	rows := d.Filled.Prune(e.pdb, d.ID, b.Lineage, t.ID, codec.KindRecordCur)
	if h.ok {
		if _, _, err := layers.ReadRowWith(e.pdb, d.ID, rows, t.ID, h.row, &bv.rec, use); err != nil || called {
			return err
		}
	}
	ent, _, ok, err := layers.LookupID(e.pdb, d.ID, d.Filled.Prune(e.pdb, d.ID, b.Lineage, t.ID, codec.KindIDMapCur), t.ID, id)
	if err != nil {
		return err
	}
	if ok {
		if _, _, err := layers.ReadRowWith(e.pdb, d.ID, rows, t.ID, ent.Row, &bv.rec, use); err != nil {
			return err
		}
	}
	if !called {
		return model.NotFoundf("record [%s] not found", id)
	}
	return nil
}

// readRecords recycles the records GetView decodes its views from.
var readRecords = sync.Pool{New: func() any { return new(codec.Record) }}

// RecordCache keeps the records GetView read, up to a memory budget, as
// views: a cached record is handed out as the same *RecordView until it is
// written, which lets a caller keep what it derives from a view (such as
// its encoding) for as long as the view lives. It is safe for concurrent
// use and may serve several engines and databases; the caller owns it.
type RecordCache = memstore.RecordCache[*RecordView]

// NewRecordCache returns a cache that holds about maxBytes of records.
func NewRecordCache(maxBytes int) *RecordCache { return memstore.NewRecordCache[*RecordView](maxBytes) }

// viewSize is the memory a cached view holds: the view and its fields,
// and what of the record they keep: the one copy of its stored form its
// strings share (about their bytes, and a few bytes of each field's
// column, kind and number), the lists of multiple values and vectors.
func viewSize(v *RecordView) int {
	const storedField = 12 // a field's column, kind and number, stored
	n := int(unsafe.Sizeof(*v)) + cap(v.Fields)*int(unsafe.Sizeof(FieldView{})) + len(v.ID)
	for i := range v.Fields {
		val := &v.Fields[i].Value
		n += storedField + len(val.Str) + 8*cap(val.Vec) + int(unsafe.Sizeof(""))*cap(val.Strs)
		for _, s := range val.Strs {
			n += 1 + len(s)
		}
	}
	return n
}
