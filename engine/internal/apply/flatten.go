package apply

import (
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Flattening keeps lineages short. Forks of forks stack frozen views; every
// read of a deep branch walks them all. A deep branch gets its frozen part
// (every layer below its own) copied into one new layer, then its lineage
// becomes [own layer, new layer]. Two commands frame the copy:
// StartFlatten takes the new layer's id, and FinishFlatten swaps the
// layer in, or drops it when the branch changed meanwhile. The copy
// between them is a consequence of the first: the frozen views never
// change, so it reads the same whenever and wherever it runs, and needs
// no lock. Layers nobody reads any more are dropped.

// StartFlatten begins flattening the frozen part of a branch's lineage:
// it takes the id of the layer the copy goes to, which is its result.
type StartFlatten struct {
	Branch uint32        `json:"branch"`
	Frozen model.Lineage `json:"frozen"`
}

func (c *StartFlatten) apply(tx *Tx) (any, error) { return tx.allocLayer(), nil }

// FinishFlatten swaps a branch's frozen layers for the layer they were
// copied to, when the branch still reads them, and drops the layers nobody
// reads any more; otherwise it drops the copy.
type FinishFlatten struct {
	Branch uint32        `json:"branch"`
	Frozen model.Lineage `json:"frozen"`
	Layer  uint32        `json:"layer"`
}

func (c *FinishFlatten) apply(tx *Tx) (any, error) {
	cur := tx.st.ByID.At(c.Branch)
	if cur == nil || !slices.Equal(cur.Lineage[1:], c.Frozen) {
		tx.dropLayers = append(tx.dropLayers, c.Layer)
		return nil, nil
	}
	nb := *cur
	nb.Lineage = model.Lineage{cur.Lineage[0], {Layer: c.Layer, Seq: model.MaxSeq}}
	if err := tx.putBranch(&nb); err != nil {
		return nil, err
	}
	refs := tx.state().Refs
	for _, lr := range c.Frozen {
		if refs.At(lr.Layer) == 0 {
			tx.dropLayers = append(tx.dropLayers, lr.Layer)
		}
	}
	return nil, nil
}

// Flatten copies the frozen part of a branch's lineage into one layer and
// swaps it in: StartFlatten, the copy, FinishFlatten.
func (a *Applier) Flatten(d *DB, branchID uint32) error {
	b := d.State().ByID.At(branchID)
	if b == nil || len(b.Lineage) <= 2 {
		return nil
	}
	frozen := slices.Clone(b.Lineage[1:])
	res, err := a.Apply(OnDatabase(d.ID, &StartFlatten{Branch: branchID, Frozen: frozen}))
	if err != nil {
		return err
	}
	layer := res.(uint32)
	if err := a.Materialize(d.ID, b.Schema, frozen, layer); err != nil {
		return err
	}
	for _, t := range b.Schema.Tables {
		d.Filled.MarkFilled(layer, t.ID, codec.KindRecordCur)
		d.Filled.MarkFilled(layer, t.ID, codec.KindIDMapCur)
		d.IDs.Forget(layer, t.ID)
	}
	_, err = a.Apply(OnDatabase(d.ID, &FinishFlatten{Branch: branchID, Frozen: frozen, Layer: layer}))
	return err
}

// Materialize copies a frozen lineage of database db, as the tables of s
// see it, into layer (layers.Materialize), from one snapshot: what a
// replica does between StartFlatten and FinishFlatten. Its writes are not
// synced; FinishFlatten's sync covers them.
func (a *Applier) Materialize(db uint32, s *model.Schema, lin model.Lineage, layer uint32) error {
	snap := a.pdb.NewSnapshot()
	defer snap.Close()
	return layers.Materialize(snap, func() *pebble.Batch { return a.pdb.NewBatch() }, func(b *pebble.Batch) error {
		return a.storage(func() error { return a.pdb.Apply(b, pebble.NoSync) })
	}, db, s, lin, layer)
}
