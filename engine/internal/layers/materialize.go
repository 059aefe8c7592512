package layers

import (
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/files"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Materialize writes the content of a (frozen) lineage of database db,
// read from snap as the tables of s see it, into layer as a root layer:
// records, id map, file contents and full bitmaps. It writes in batches of
// newBatch that write applies, without waiting for them to be synced: the
// command that swaps the layer in syncs them with its own.
func Materialize(snap pebble.Reader, newBatch func() *pebble.Batch, write func(*pebble.Batch) error,
	db uint32, s *model.Schema, lin model.Lineage, layer uint32) error {
	batch := newBatch()
	flush := func() error {
		if batch.Empty() {
			return nil
		}
		err := write(batch)
		batch.Close()
		batch = newBatch()
		return err
	}
	defer func() { batch.Close() }()
	var kb []byte
	for _, t := range s.Tables {
		live, err := ReadBitmap(snap, db, lin, t.ID, codec.LiveBitmapID(), nil)
		if err != nil {
			return err
		}
		sets := map[string]*roaring.Bitmap{}
		var rec codec.Record
		it := live.Iterator()
		for it.HasNext() {
			row := it.Next()
			_, ok, err := ReadRow(snap, db, lin, t.ID, row, &rec)
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
			if err := batch.Set(kb, EncodeIDEntry(IDEntry{Row: row, Seq: rec.Seq}), nil); err != nil {
				return err
			}
			for id := range Memberships(t, &rec) {
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
		if err := WriteTermKeys(batch, db, layer, t.ID, ids); err != nil {
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
