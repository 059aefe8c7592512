package memstore

import (
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
// from the branch's records and kept current by the writes of that branch,
// under the database's store lock: writers hold it across making a batch visible and
// updating the stores, queries hold it for reading while they take their
// snapshot and scan, so a query's snapshot and its stores always agree.
// The orders, dictionaries and trigram indexes derived from a column's
// values (colindex.go) follow the same discipline.

// TableStore holds the column values of one table of one branch. The
// branch that owns it keeps it current; a child branch may borrow it while
// it sees exactly the owner's rows (DB.borrowStore).
type TableStore struct {
	version uint64 // branch schema version it was built for
	owner   uint32 // the branch whose writes it follows
	lent    bool   // some other branch borrows it; guarded by storeMu
	cols    map[uint32]*Column
}

// Column holds the values of one column, by row. Only the slice of the
// column's kind is used.
type Column struct {
	kind    codec.Kind
	ints    []int64 // int, datetime (unix nanos), bool (0/1)
	floats  []float64
	strs    []string
	lists   [][]string
	present roaring.Bitmap
	ix      colIndex // structures derived from the values, built on use
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
		return codec.String(c.strs[row])
	case codec.KindStrings:
		return codec.Strings(c.lists[row])
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
			if int(row) < len(c.strs) {
				c.strs[row] = ""
			}
		case codec.KindStrings:
			if int(row) < len(c.lists) {
				c.lists[row] = nil
			}
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
		c.strs = grow(c.strs, n)
		c.strs[row] = v.Str
	case codec.KindStrings:
		c.lists = grow(c.lists, n)
		c.lists[row] = v.Strs
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
func newTableStore(b *model.Branch, t *model.Table) *TableStore {
	s := &TableStore{version: b.Version, owner: b.ID, cols: map[uint32]*Column{
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
	return s
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

// buildTableStore reads every visible row of a table of a branch, bottom
// layer first so that upper layers override.
func buildTableStore(r pebble.Reader, db uint32, b *model.Branch, t *model.Table) (*TableStore, error) {
	s := newTableStore(b, t)
	var rec codec.Record
	for i := len(b.Lineage) - 1; i >= 0; i-- {
		lr := b.Lineage[i]
		prefix := codec.TablePrefix(nil, db, lr.Layer, codec.KindRecordCur, t.ID)
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
		if err != nil {
			return nil, err
		}
		for ok := it.First(); ok; ok = it.Next() {
			k := it.Key()
			if len(k) != len(prefix)+4 {
				continue
			}
			row := be32(k[len(prefix):])
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return nil, err
			}
			if err := codec.DecodeRecord(v, &rec); err != nil {
				it.Close()
				return nil, err
			}
			if rec.Seq > lr.Seq {
				// Written after the fork this level is read at: take the
				// version visible then, if any.
				hp := codec.RecordHistKey(nil, db, lr.Layer, t.ID, row, 0)
				hv, found, err := layers.GetVersion(r, k, hp[:len(hp)-8], lr.Seq, codec.RecordSeq)
				if err != nil {
					it.Close()
					return nil, err
				}
				if !found {
					continue
				}
				if err := codec.DecodeRecord(hv, &rec); err != nil {
					it.Close()
					return nil, err
				}
			}
			s.apply(row, &rec)
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	return s, nil
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
func (c *Column) Strings() []string {
	if c.kind == codec.KindString {
		return c.strs
	}
	return nil
}

// Column returns the values of the column with id, or nil for a column
// without a store.
func (s *TableStore) Column(id uint32) *Column { return s.cols[id] }

// Owner is the branch whose writes the store follows.
func (s *TableStore) Owner() uint32 { return s.owner }

// Version is the branch schema version the store was built for.
func (s *TableStore) Version() uint64 { return s.version }
