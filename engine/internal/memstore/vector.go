package memstore

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/index/vector"
)

// VectorKey names the vector store of one vector column of one table of
// one branch.
type VectorKey struct {
	Branch, Table, Column uint32
}

// VectorStore holds the non-null vectors of one column of one table of one
// branch, by row.
type VectorStore struct {
	version uint64 // branch schema version it was built for
	col     uint32
	*vector.Store
}

// apply records a row's new version (nil: deleted).
func (vs *VectorStore) apply(row uint32, rec *codec.Record) {
	var vec []float64
	if rec != nil && !rec.Deleted {
		if v, found := rec.Get(vs.col); found && v.Kind == codec.KindVector {
			vec = v.Vec
		}
	}
	vs.Set(row, vec)
}

// EnsureVectorStore builds the vector store of a column of a table of a
// branch unless a current one exists. A path that names no vector column
// (any more) builds nothing: the caller checks its request again.
func (d *DB) EnsureVectorStore(b *model.Branch, t *model.Table, path string) error {
	c := t.ByPath[path]
	if c == nil || c.Type != model.TypeVector {
		return nil
	}
	_, err := ensureBuilt(d, b, t, &d.vectors, VectorKey{b.ID, t.ID, c.ID}, func(r pebble.Reader, b *model.Branch, t *model.Table) (*VectorStore, error) {
		c := t.ByID[c.ID]
		if c == nil || c.Type != model.TypeVector {
			return nil, errNoVectorColumn
		}
		return buildVectorStore(r, d, b, t, c)
	})
	if errors.Is(err, errNoVectorColumn) {
		return nil
	}
	return err
}

// errNoVectorColumn stops building a vector store whose column a schema
// change removed meanwhile.
var errNoVectorColumn = errors.New("engine: not a vector column")

// schemaVersion implements builtStore.
func (s *VectorStore) schemaVersion() uint64 { return s.version }

// buildVectorStore reads the vector of every row of a branch's table
// whose column is not null.
func buildVectorStore(r pebble.Reader, d *DB, b *model.Branch, t *model.Table, c *model.Column) (*VectorStore, error) {
	rows, err := layers.ReadBitmap(r, d.ID, b.Lineage, t.ID, codec.ExistsBitmapID(c.ID), nil)
	if err != nil {
		return nil, err
	}
	n := 0
	if !rows.IsEmpty() {
		n = int(rows.Maximum()) + 1
	}
	vs := &VectorStore{version: b.Version, col: c.ID, Store: vector.NewStore(c.Dimension, n)}
	lin := d.Filled.Prune(r, d.ID, b.Lineage, t.ID, codec.KindRecordCur)
	var rec codec.Record
	it := rows.Iterator()
	for it.HasNext() {
		row := it.Next()
		_, ok, err := layers.ReadRow(r, d.ID, lin, t.ID, row, &rec)
		if err != nil {
			return nil, err
		}
		if ok {
			vs.apply(row, &rec)
		}
	}
	return vs, nil
}

// updateVectorStores does for the vector stores what updateStores does for
// the column stores: drops those of removed branches and changed schemas,
// and applies a command's row changes to the others. The caller holds
// storeMu.
func (d *DB) updateVectorStores(tx *apply.Tx) {
	if len(d.vectors) == 0 {
		return
	}
	st := d.State()
	for k, vs := range d.vectors {
		if b := st.ByID[k.Branch]; b == nil || b.Version != vs.version {
			delete(d.vectors, k)
		}
	}
	for _, c := range tx.Rows() {
		for k, vs := range d.vectors {
			if k.Branch == c.Branch && k.Table == c.Table {
				vs.apply(c.Row, c.Rec)
			}
		}
	}
}

// Version is the branch schema version the store was built for.
func (vs *VectorStore) Version() uint64 { return vs.version }
