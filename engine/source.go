package engine

import (
	"bytes"
	"context"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/index"
)

// source is an index.Source over one table of one branch at one snapshot.
type source struct {
	ctx   context.Context // the request's: long loops stop when it ends
	e     *Engine
	d     *database
	view  *memstore.View // what the source reads; nil for Project without links
	snap  pebble.Reader
	st    *apply.State // the state b was read from
	b     *model.Branch
	t     *model.Table
	it    *index.Table
	store *memstore.TableStore // nil when the source reads storage
	live  *roaring.Bitmap
	cache *memstore.BitmapCache // nil unless the snapshot shows the cache's epoch
	epoch uint64
	cols  []*model.Column // t.ByID as a slice (columnsByID)
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

// openSource returns a Source for a table of a branch, with the
// structures need asks for. The caller must call release when done; until
// then the structures it holds show exactly its snapshot (writes go on:
// they wait to be applied to a structure until its readers are done).
func (e *Engine) openSource(ctx context.Context, ref Ref, tableName string, need memstore.Need) (*source, func(), error) {
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return nil, nil, err
	}
	v, err := d.Open(ctx, ref.Branch, tableName, need)
	if err != nil {
		return nil, nil, err
	}
	src := &source{ctx: ctx, e: e, d: d, view: v, snap: v.Snap, st: v.State, b: v.Branch, t: v.Table,
		it: e.indexTable(v.Branch.Schema, v.Table.ID), store: v.Store, cache: v.Cache, epoch: v.Epoch}
	return src, v.Release, nil
}

// indexTable describes table id of schema s to the index package, its
// meta columns named under Options.Meta.
func (e *Engine) indexTable(s *model.Schema, id uint32) *index.Table {
	return s.IndexTable(id, e.opts.Meta)
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
		if b := s.cache.Get(string(id), s.epoch); b != nil {
			return b, nil
		}
	}
	b, err := layers.ReadBitmap(s.snap, s.d.ID, s.b.Lineage, s.t.ID, id, nil)
	if err == nil && s.cache != nil {
		s.cache.Put(string(id), b, s.epoch)
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
		if entries, ok := s.cache.Scan(scanKey, s.epoch); ok {
			for _, e := range entries {
				if !fn(e.V, e.Rows.Clone()) {
					break
				}
			}
			return nil
		}
	}
	var kept []memstore.ScanEntry
	complete := true
	var ferr error
	err := layers.ScanPostings(s.snap, s.d.ID, s.b.Lineage, s.t.ID, c.ID, lo, hi, desc, func(bitmapID []byte, rows *roaring.Bitmap) bool {
		v, _, err := codec.DecodeOrdered(bitmapID[len(colPrefix):])
		if err != nil {
			ferr = err
			return false
		}
		if whole {
			if len(kept) < memstore.MaxCachedScan {
				kept = append(kept, memstore.ScanEntry{V: v, Rows: rows.Clone()})
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
		s.cache.PutScan(scanKey, kept, s.epoch)
	}
	return err
}

func (s *source) Values(c *index.Column) (index.ColumnValues, error) {
	if s.store == nil {
		return nil, nil
	}
	if cv := s.store.Column(c.ID); cv != nil {
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
	t := s.b.Schema.TableByID(c.Link.ID)
	if t == nil {
		return nil, model.NotFoundf("table of link [%s] not found", c.Path)
	}
	return s.sourceFor(t), nil
}

func isMeta(c *index.Column) bool { return c.ID >= index.MetaUpdatedAtColumn }

var _ index.Source = (*source)(nil)

// idLayer returns the layer whose current id map lists the branch's
// records: the layer of the branch's lineage when it is one layer (main,
// or a flattened branch), or that of the branch it shares its rows with
// (memstore's share root) when that one's is. ok is false otherwise:
// deeper lineages would need a merge across layers.
func (s *source) idLayer() (layer uint32, ok bool) {
	if len(s.b.Lineage) == 1 {
		return s.b.Lineage[0].Layer, true
	}
	if s.view == nil || s.view.RootTable.ID != s.t.ID || len(s.view.Root.Lineage) != 1 {
		return 0, false
	}
	return s.view.Root.Lineage[0].Layer, true
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
