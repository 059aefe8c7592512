package engine

import (
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Flattening keeps lineages short. Forks of forks stack frozen views; every
// read of a deep branch walks them all. A branch whose lineage is deeper than
// Options.FlattenDepth gets its frozen part (every layer below its own)
// copied into one new layer in the background, then its lineage becomes
// [own layer, new layer]. Two commands frame the copy: startFlatten takes
// the new layer's id, and finishFlatten swaps the layer in, or drops it when
// the branch changed meanwhile. The copy between them is a consequence of
// the first: the frozen views never change, so it reads the same whenever
// and wherever it runs, and needs no lock. Layers nobody reads any more are
// dropped.

// maybeFlatten starts a background flatten of the named branch if it is too
// deep.
func (e *Engine) maybeFlatten(d *database, name string) {
	b := d.state.Load().branches[name]
	if b == nil || len(b.Lineage) <= e.opts.FlattenDepth {
		return
	}
	// A failed flatten leaves the branch as it was; the next fork retries.
	e.background(func() { e.obs.timed(EventFlatten, func() error { return e.flatten(d, b.ID) }) })
}

// flatten copies the frozen part of a branch's lineage into one layer and
// swaps it in.
func (e *Engine) flatten(d *database, branchID uint32) error {
	b := d.state.Load().byID[branchID]
	if b == nil || len(b.Lineage) <= 2 {
		return nil
	}
	frozen := slices.Clone(b.Lineage[1:])
	res, err := e.apply(d, &startFlatten{Branch: branchID, Frozen: frozen})
	if err != nil {
		return err
	}
	layer := res.(uint32)
	if err := e.materialize(d.id, b.Schema, frozen, layer); err != nil {
		return err
	}
	for _, t := range b.Schema.Tables {
		d.filled.MarkFilled(layer, t.ID, codec.KindRecordCur)
		d.filled.MarkFilled(layer, t.ID, codec.KindIDMapCur)
	}
	_, err = e.apply(d, &finishFlatten{Branch: branchID, Frozen: frozen, Layer: layer})
	return err
}

// startFlatten begins flattening the frozen part of a branch's lineage:
// it takes the id of the layer the copy goes to, which is its result.
type startFlatten struct {
	Branch uint32        `json:"branch"`
	Frozen model.Lineage `json:"frozen"`
}

func (c *startFlatten) apply(tx *dbTx) (any, error) { return tx.allocLayer(), nil }

// finishFlatten swaps a branch's frozen layers for the layer they were
// copied to, when the branch still reads them, and drops the layers nobody
// reads any more; otherwise it drops the copy.
type finishFlatten struct {
	Branch uint32        `json:"branch"`
	Frozen model.Lineage `json:"frozen"`
	Layer  uint32        `json:"layer"`
}

func (c *finishFlatten) apply(tx *dbTx) (any, error) {
	cur := tx.st.byID[c.Branch]
	if cur == nil || !slices.Equal(cur.Lineage[1:], c.Frozen) {
		tx.dropLayers = append(tx.dropLayers, c.Layer)
		return nil, nil
	}
	nb := *cur
	nb.Lineage = model.Lineage{cur.Lineage[0], {Layer: c.Layer, Seq: model.MaxSeq}}
	if err := tx.putBranch(&nb); err != nil {
		return nil, err
	}
	refs := tx.state().refs
	for _, lr := range c.Frozen {
		if refs[lr.Layer] == 0 {
			tx.dropLayers = append(tx.dropLayers, lr.Layer)
		}
	}
	return nil, nil
}

// materialize copies a frozen lineage of database db, as the tables of s
// see it, into layer (layers.Materialize), from one snapshot.
func (e *Engine) materialize(db uint32, s *model.Schema, lin model.Lineage, layer uint32) error {
	snap := e.pdb.NewSnapshot()
	defer snap.Close()
	return layers.Materialize(snap, func() *pebble.Batch { return e.pdb.NewBatch() }, func(b *pebble.Batch) error {
		return e.pdb.Apply(b, pebble.NoSync) // the swap command's sync covers it
	}, db, s, lin, layer)
}
