package engine

import (
	"slices"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/files"
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
		d.filled.markFilled(layer, t.ID, codec.KindRecordCur)
		d.filled.markFilled(layer, t.ID, codec.KindIDMapCur)
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

// materialize writes the content of a (frozen) lineage, as the tables of s
// see it, into layer as a root layer: records, id map and full bitmaps.
func (e *Engine) materialize(db uint32, s *model.Schema, lin model.Lineage, layer uint32) error {
	snap := e.pdb.NewSnapshot()
	defer snap.Close()
	batch := e.pdb.NewBatch()
	flush := func() error {
		if batch.Empty() {
			return nil
		}
		err := e.pdb.Apply(batch, pebble.NoSync) // the swap command's sync covers it
		batch.Close()
		batch = e.pdb.NewBatch()
		return err
	}
	defer func() { batch.Close() }()
	var kb []byte
	for _, t := range s.Tables {
		live, err := readBitmap(snap, db, lin, t.ID, codec.LiveBitmapID(), nil)
		if err != nil {
			return err
		}
		sets := map[string]*roaring.Bitmap{}
		var rec codec.Record
		it := live.Iterator()
		for it.HasNext() {
			row := it.Next()
			_, ok, err := readRow(snap, db, lin, t.ID, row, &rec)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			kb = codec.RecordKey(kb[:0], db, layer, t.ID, row)
			if err := batch.Set(kb, codec.AppendRecord(nil, &rec), nil); err != nil {
				return err
			}
			if err := files.CopyContents(snap, batch, db, lin, layer, t, &rec); err != nil {
				return err
			}
			kb = codec.IDMapKey(kb[:0], db, layer, t.ID, rec.ID)
			if err := batch.Set(kb, encodeIDEntry(idEntry{Row: row, Seq: rec.Seq}), nil); err != nil {
				return err
			}
			for id := range memberships(t, &rec) {
				set := sets[id]
				if set == nil {
					set = roaring.New()
					sets[id] = set
				}
				set.Add(row)
			}
			if batch.Len() > 4<<20 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		ids := model.SortedKeys(sets)
		for _, id := range ids {
			if err := writeFullBitmap(batch, db, layer, t.ID, []byte(id), sets[id]); err != nil {
				return err
			}
		}
		if err := writeTermKeys(batch, db, layer, t.ID, ids); err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
	}
	return nil
}

// writeFullBitmap writes a whole set as full chunk values.
func writeFullBitmap(batch *pebble.Batch, db, layer, tableID uint32, bitmapID []byte, set *roaring.Bitmap) error {
	chunks := map[uint16]*roaring.Bitmap{}
	it := set.Iterator()
	for it.HasNext() {
		r := it.Next()
		c := chunks[uint16(r>>16)]
		if c == nil {
			c = roaring.New()
			chunks[uint16(r>>16)] = c
		}
		c.Add(r)
	}
	keys := make([]int, 0, len(chunks))
	for c := range chunks {
		keys = append(keys, int(c))
	}
	sort.Ints(keys)
	for _, c := range keys {
		d := codec.Delta{Adds: chunks[uint16(c)], Dels: roaring.New(), Full: true}
		if err := batch.Merge(codec.BitmapKey(nil, db, layer, tableID, bitmapID, uint16(c)), codec.AppendDelta(nil, d), nil); err != nil {
			return err
		}
	}
	return nil
}
