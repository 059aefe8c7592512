package engine

import "github.com/coppice-db/coppice/engine/internal/layers"

// addBitmap stages a change of one row in a bitmap of the top layer. Each
// call must be exact: add only a row not in the set, remove only one in it.
func (tx *dbTx) addBitmap(layer, tableID uint32, bitmapID string, row uint32, add bool) {
	if tx.pending == nil {
		tx.pending = layers.NewPending()
	}
	tx.pending.Add(tx.d.id, layer, tableID, bitmapID, row, add)
}
