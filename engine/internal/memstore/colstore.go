package memstore

import (
	"context"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/index"
)

// A column store keeps the values of every scalar column of one table of one
// branch in memory, by row id, so that range predicates, $contains, sorts
// and summaries scan arrays instead of storage. It is built on first use
// from the branch's records and kept current by the writes of that branch
// (slot.go says how a reader's snapshot and the stores it reads always
// agree). The orders, dictionaries and trigram indexes derived from a
// column's values (colindex.go) follow the same discipline.

// TableStore holds the column values of one table of one branch (the
// owner of its slot), shared with the branches that see exactly its rows.
type TableStore struct {
	cols map[uint32]*Column
	// grew is set when a reader built an order, dictionary or trigram
	// index: the store's size must be measured again.
	grew atomic.Bool
}

// Column holds the values of one column, by row. Only the field of the
// column's kind is used.
type Column struct {
	kind    codec.Kind
	ints    []int64 // int, datetime (unix nanos), bool (0/1)
	floats  []float64
	strs    strArena // string, email, link, multiple
	present roaring.Bitmap
	ix      colIndex    // structures derived from the values, built on use
	store   *TableStore // the store the column belongs to; nil in tests
}

// Get implements index.ColumnValues.
func (c *Column) Get(row uint32) codec.Value {
	if !c.present.Contains(row) {
		return codec.Null()
	}
	switch c.kind {
	case codec.KindInt, codec.KindDatetime, codec.KindBool:
		return codec.Value{Kind: c.kind, Int: c.ints[row]}
	case codec.KindFloat:
		return codec.Float(c.floats[row])
	case codec.KindString:
		return codec.String(c.strs.get(row))
	case codec.KindStrings:
		l := c.strs.list(row)
		if l == nil {
			l = []string{} // present and empty
		}
		return codec.Strings(l)
	}
	return codec.Null()
}

// set records a row's value (null: none), keeping the derived structures
// current.
func (c *Column) set(row uint32, v codec.Value) {
	c.written(row, v)
	if v.IsNull() {
		c.present.Remove(row)
		switch c.kind {
		case codec.KindString:
			c.strs.setStr(row, "", true)
		case codec.KindStrings:
			c.strs.setList(row, nil, true)
		}
		return
	}
	n := int(row) + 1
	switch c.kind {
	case codec.KindInt, codec.KindDatetime, codec.KindBool:
		c.ints = grow(c.ints, n)
		c.ints[row] = v.Int
	case codec.KindFloat:
		c.floats = grow(c.floats, n)
		c.floats[row] = v.Float
	case codec.KindString:
		c.strs.setStr(row, v.Str, false)
	case codec.KindStrings:
		c.strs.setList(row, v.Strs, false)
	}
	c.present.Add(row)
}

// grow returns s with at least n elements, growing by a quarter.
func grow[T any](s []T, n int) []T {
	if n <= len(s) {
		return s
	}
	if n <= cap(s) {
		return s[:n]
	}
	ns := make([]T, n, n+n/4+1024)
	copy(ns, s)
	return ns
}

// storedKind is the value kind a column type keeps in a store; ok is false
// for types without a store.
func storedKind(t model.ColumnType) (codec.Kind, bool) {
	switch t {
	case model.TypeBool:
		return codec.KindBool, true
	case model.TypeInt:
		return codec.KindInt, true
	case model.TypeFloat:
		return codec.KindFloat, true
	case model.TypeString, model.TypeEmail, model.TypeLink:
		return codec.KindString, true
	case model.TypeDatetime:
		return codec.KindDatetime, true
	case model.TypeMultiple:
		return codec.KindStrings, true
	}
	return 0, false
}

// newTableStore makes an empty store for the stored columns of t, meta
// columns included.
func newTableStore(t *model.Table) *TableStore {
	s := &TableStore{cols: map[uint32]*Column{
		index.MetaIDColumn:        {kind: codec.KindString},
		index.MetaVersionColumn:   {kind: codec.KindInt},
		index.MetaCreatedAtColumn: {kind: codec.KindDatetime},
		index.MetaUpdatedAtColumn: {kind: codec.KindDatetime},
	}}
	for _, c := range t.Leaves {
		if k, ok := storedKind(c.Type); ok {
			s.cols[c.ID] = &Column{kind: k}
		}
	}
	for _, c := range s.cols {
		c.store = s
	}
	return s
}

// clone returns a copy of s that changes apart from it: the values are
// copied (the entries of strings and multiples are never changed in
// place, so the copy shares them), and so are the orders, dictionaries and
// trigram indexes already built, which the copy's writes then keep
// current: copying a trigram index costs a fraction of building it again.
// The caller holds s for reading.
func (s *TableStore) clone() *TableStore {
	n := &TableStore{cols: make(map[uint32]*Column, len(s.cols))}
	for id, c := range s.cols {
		nc := &Column{kind: c.kind, ints: slices.Clone(c.ints), floats: slices.Clone(c.floats),
			strs: c.strs.clone(), store: n}
		nc.present = *c.present.Clone()
		c.ix.mu.Lock()
		if c.ix.hasOrder {
			nc.ix.order, nc.ix.hasOrder = slices.Clone(c.ix.order), true
			nc.ix.stale = *c.ix.stale.Clone()
		}
		if d := c.ix.dict; d != nil {
			nc.ix.dict = &colDict{codes: slices.Clone(d.codes), vals: slices.Clone(d.vals), byStr: maps.Clone(d.byStr)}
		}
		if t := c.ix.tri; t != nil {
			nc.ix.tri = t.clone()
		}
		if x := c.ix.ids.Load(); x != nil {
			nc.ix.ids.Store(x.clone())
		}
		nc.ix.noOrder, nc.ix.noDict = c.ix.noOrder, c.ix.noDict
		c.ix.mu.Unlock()
		n.cols[id] = nc
	}
	return n
}

// size estimates the memory the store takes, with the structures its
// readers built. The caller holds it for reading.
func (s *TableStore) size() int64 {
	n := int64(64)
	for _, c := range s.cols {
		n += 96 + 8*int64(cap(c.ints)+cap(c.floats)) + c.strs.bytes() + int64(c.present.GetSizeInBytes())
		c.ix.mu.Lock()
		n += 4*int64(cap(c.ix.order)) + int64(c.ix.stale.GetSizeInBytes())
		if d := c.ix.dict; d != nil {
			n += 2*int64(cap(d.codes)) + 64*int64(len(d.vals))
		}
		if t := c.ix.tri; t != nil {
			n += t.bytes
		}
		if x := c.ix.ids.Load(); x != nil {
			n += x.bytes()
		}
		c.ix.mu.Unlock()
	}
	return n
}

// apply records a row's new version (nil: deleted).
func (s *TableStore) apply(row uint32, rec *codec.Record) {
	if rec == nil || rec.Deleted {
		for _, c := range s.cols {
			c.set(row, codec.Null())
		}
		return
	}
	s.cols[index.MetaIDColumn].set(row, codec.String(rec.ID))
	s.cols[index.MetaVersionColumn].set(row, codec.Int(int64(rec.Version)))
	s.cols[index.MetaCreatedAtColumn].set(row, codec.Value{Kind: codec.KindDatetime, Int: rec.CreatedAt})
	s.cols[index.MetaUpdatedAtColumn].set(row, codec.Value{Kind: codec.KindDatetime, Int: rec.UpdatedAt})
	for id, c := range s.cols {
		if id >= index.MetaUpdatedAtColumn {
			continue
		}
		v, ok := rec.Get(id)
		if !ok {
			c.set(row, codec.Null())
			continue
		}
		c.set(row, v)
	}
}

// buildTableStore reads every visible row of a table through a lineage,
// bottom layer first so that upper layers override. It stops with ctx's
// error when ctx ends.
func buildTableStore(ctx context.Context, r pebble.Reader, db uint32, lin model.Lineage, t *model.Table) (*TableStore, error) {
	s := newTableStore(t)
	for i := len(lin) - 1; i >= 0; i-- {
		if err := s.readLayer(ctx, r, db, lin[i], t); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// readLayer applies the rows of table t that one level of a lineage holds,
// as of the seq it is read at.
func (s *TableStore) readLayer(ctx context.Context, r pebble.Reader, db uint32, lr model.LayerRef, t *model.Table) error {
	prefix := codec.TablePrefix(nil, db, lr.Layer, codec.KindRecordCur, t.ID)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return err
	}
	var rec codec.Record
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				it.Close()
				return err
			}
		}
		n++
		k := it.Key()
		if len(k) != len(prefix)+4 {
			continue
		}
		row := be32(k[len(prefix):])
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		if err := codec.DecodeRecord(v, &rec); err != nil {
			it.Close()
			return err
		}
		if rec.Seq > lr.Seq {
			// Written after the fork this level is read at: take the
			// version visible then, if any.
			hp := codec.RecordHistKey(nil, db, lr.Layer, t.ID, row, 0)
			found, err := layers.GetVersion(r, k, hp[:len(hp)-8], lr.Seq, codec.RecordSeq, func(hv []byte) error { return codec.DecodeRecord(hv, &rec) })
			if err != nil {
				it.Close()
				return err
			}
			if !found {
				continue
			}
		}
		s.apply(row, &rec)
	}
	return it.Close()
}

// be32 reads a big-endian u32.
func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

var _ index.DenseValues = (*Column)(nil)

// Present returns the rows that hold a value.
func (c *Column) Present() *roaring.Bitmap { return &c.present }

// Ints returns the values of an int, datetime or bool column by row.
func (c *Column) Ints() []int64 {
	switch c.kind {
	case codec.KindInt, codec.KindDatetime, codec.KindBool:
		return c.ints
	}
	return nil
}

// Floats returns the values of a float column by row.
func (c *Column) Floats() []float64 {
	if c.kind == codec.KindFloat {
		return c.floats
	}
	return nil
}

// Strings returns the values of a string, email or link column by row.
func (c *Column) Strings() index.PackedStrings {
	if c.kind == codec.KindString {
		return index.PackedStrings{Data: c.strs.data, Offs: c.strs.offs}
	}
	return index.PackedStrings{}
}

// Column returns the values of the column with id, or nil for a column
// without a store.
func (s *TableStore) Column(id uint32) *Column { return s.cols[id] }

// indexBuilt notes that a reader built a structure of column c.
func (c *Column) indexBuilt() {
	if c.store != nil {
		c.store.grew.Store(true)
	}
}
