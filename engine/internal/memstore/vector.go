package memstore

import (
	"context"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/index/vector"
)

// VectorStore holds the non-null vectors of one column of one table of one
// branch, by row.
type VectorStore struct {
	col uint32
	dim int
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

// size estimates the memory the store takes: a vector and a norm for every
// row up to the highest one that holds a vector.
func (vs *VectorStore) size() int64 {
	p := vs.Present()
	if p.IsEmpty() {
		return 128
	}
	rows := int64(p.Maximum()) + 1
	return 128 + rows*8*int64(vs.dim+1) + int64(p.GetSizeInBytes())
}

// buildVectorStore reads the vector of every row of a table, through a
// lineage, whose column c is not null. It stops with ctx's error when ctx
// ends.
func buildVectorStore(ctx context.Context, r pebble.Reader, d *DB, lin model.Lineage, t *model.Table, c *model.Column) (*VectorStore, error) {
	rows, err := layers.ReadBitmap(r, d.ID, lin, t.ID, codec.ExistsBitmapID(c.ID), nil)
	if err != nil {
		return nil, err
	}
	n := 0
	if !rows.IsEmpty() {
		n = int(rows.Maximum()) + 1
	}
	vs := &VectorStore{col: c.ID, dim: c.Dimension, Store: vector.NewStore(c.Dimension, n)}
	pruned := d.Filled.Prune(r, d.ID, lin, t.ID, codec.KindRecordCur)
	var rec codec.Record
	it := rows.Iterator()
	for i := 0; it.HasNext(); i++ {
		if i%4096 == 4095 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		row := it.Next()
		_, ok, err := layers.ReadRow(r, d.ID, pruned, t.ID, row, &rec)
		if err != nil {
			return nil, err
		}
		if ok {
			vs.apply(row, &rec)
		}
	}
	return vs, nil
}
