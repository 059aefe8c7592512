package apply

import (
	"slices"

	"github.com/coppice-db/coppice/codec"
)

// Write marks. A branch that has not written a table since its fork sees
// exactly the rows its parent saw then; while the parent has not written
// the table since either, the two see the same rows, and the structures
// derived from them in memory can be shared. Whether a layer's table was
// written, and when last, is kept with the data (MetaWriteMark, one key per
// layer and table, set by every command that writes rows), so that this
// holds after a restart too. The marks are part of the database's range:
// the same commands write the same marks on every copy.

// layerTable names one table in one layer.
type layerTable struct{ layer, table uint32 }

// markKey is the key of the write mark of a table in a layer; with a nil
// table, the prefix of the layer's marks.
func markKey(db, layer uint32, table *uint32) []byte {
	k := codec.MetaKey(db, codec.MetaWriteMark, codec.AppendU32(nil, layer))
	if table != nil {
		k = codec.AppendU32(k, *table)
	}
	return k
}

// noteWrites notes the layers and tables the command's rows were written
// to; finish writes their marks.
func (tx *Tx) noteWrites() {
	if len(tx.changes) == 0 {
		return
	}
	st := tx.state()
	for _, c := range tx.changes {
		b := st.ByID.At(c.Branch)
		if b == nil {
			continue
		}
		m := layerTable{b.Lineage[0].Layer, c.Table}
		if !slices.Contains(tx.marks, m) {
			tx.marks = append(tx.marks, m)
		}
	}
	slices.SortFunc(tx.marks, func(a, b layerTable) int {
		if a.layer != b.layer {
			return int(int64(a.layer) - int64(b.layer))
		}
		return int(int64(a.table) - int64(b.table))
	})
}

// writeMarks puts the write marks of the command in its batch.
func (tx *Tx) writeMarks() error {
	tx.noteWrites()
	for _, m := range tx.marks {
		if err := tx.batch.Set(markKey(tx.d.ID, m.layer, &m.table), u64(tx.seq), nil); err != nil {
			return err
		}
	}
	return nil
}

// Written returns the seq of the last command that wrote rows of table in
// layer, 0 when none did. A layer made before the marks were kept (data
// from an older version) counts as written when the database was opened,
// unless a later mark says more: the answer is never earlier than the
// truth.
func (d *DB) Written(layer, table uint32) uint64 {
	d.marksMu.RLock()
	seq, ok := d.marks[layerTable{layer, table}]
	d.marksMu.RUnlock()
	if !ok && layer <= d.untracked {
		return d.openSeq
	}
	return seq
}

// forgetMarks drops the marks of dropped layers.
func (d *DB) forgetMarks(layers []uint32) {
	d.marksMu.Lock()
	defer d.marksMu.Unlock()
	for m := range d.marks {
		if slices.Contains(layers, m.layer) {
			delete(d.marks, m)
		}
	}
}
