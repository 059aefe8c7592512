package engine

import (
	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/fts"
)

// searchSource is the fts.Source of one table search: the planner's
// source, and the table's search store and vocabulary as of its snapshot.
type searchSource struct {
	*source
	store *memstore.SearchStore
	lex   *fts.Lexicon
	// iter reads the postings of one-layer lineages, its bounds moved from
	// term to term: a search reads hundreds of terms for a prefix or for
	// typos, and opening an iterator for each costs more than reading.
	iter *pebble.Iterator
}

// close releases what the search read with.
func (s *searchSource) close() error {
	if s.iter == nil {
		return nil
	}
	err := s.iter.Close()
	s.iter = nil
	return err
}

// Lexicon returns the table's vocabulary.
func (s *searchSource) Lexicon() *fts.Lexicon { return s.lex }

// Lengths returns the field lengths of a searchable column.
func (s *searchSource) Lengths(col uint32) *fts.FieldLengths { return s.store.Lengths(col) }

// Terms returns the rows of the table whose column col holds term, and
// the rows holding it at least fts.TFLevels[i] times. On a one-layer
// lineage the four bitmaps share a key prefix and come from one scan.
func (s *searchSource) Terms(col uint32, term string) (rows *roaring.Bitmap, levels [len(fts.TFLevels)]*roaring.Bitmap, err error) {
	// The four ids are written into one buffer and made one string: a
	// prefix looks up hundreds of terms, each in every searched column.
	var buf [256]byte
	all := codec.TermBitmapID(buf[:0], col, term)
	n := len(all)
	for i := range fts.TFLevels {
		all = append(append(all, all[:n]...), uint8(i))
	}
	id, joined := all[:n], string(all)
	ids := [len(fts.TFLevels) + 1]string{joined[:n]}
	for i := range fts.TFLevels {
		at := n + i*(n+1)
		ids[i+1] = joined[at : at+n+1]
	}
	var out [len(fts.TFLevels) + 1]*roaring.Bitmap
	if s.cache != nil && s.cache.GetAll(ids[:], s.epoch, out[:]) {
		return out[0], [len(fts.TFLevels)]*roaring.Bitmap(out[1:]), nil
	}
	if lr := s.b.Lineage[0]; len(s.b.Lineage) == 1 && lr.Seq == model.MaxSeq {
		for i := range out {
			out[i] = roaring.New()
		}
		prefix := codec.BitmapPrefix(nil, s.d.ID, lr.Layer, codec.KindBitmapCur, s.t.ID, id)
		if s.iter == nil {
			if s.iter, err = s.snap.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)}); err != nil {
				return nil, levels, err
			}
		} else {
			s.iter.SetBounds(prefix, codec.PrefixEnd(prefix))
		}
		it := s.iter
		for ok := it.First(); ok; ok = it.Next() {
			k := it.Key()
			i := 0
			switch len(k) {
			case len(prefix) + 2:
			case len(prefix) + 3:
				if i = int(k[len(prefix)]) + 1; i >= len(out) {
					continue
				}
			default:
				continue // another term that starts with this one's bytes
			}
			v, err := it.ValueAndErr()
			if err != nil {
				return nil, levels, err
			}
			b, err := codec.DecodeBitmapStored(v)
			if err != nil {
				return nil, levels, err
			}
			if out[i].IsEmpty() {
				out[i] = b // decoded into its own memory: no copy needed
			} else {
				out[i].Or(b)
			}
		}
		if err := it.Error(); err != nil {
			return nil, levels, err
		}
	} else {
		for i, id := range ids {
			if out[i], err = layers.ReadBitmap(s.snap, s.d.ID, s.b.Lineage, s.t.ID, []byte(id), nil); err != nil {
				return nil, levels, err
			}
		}
	}
	if s.cache != nil {
		for i, id := range ids {
			// Copy-on-write, the cache's copy shares the containers just
			// decoded, where it would copy every one of a large posting.
			out[i].SetCopyOnWrite(true)
			s.cache.Put(id, out[i], s.epoch)
		}
	}
	return out[0], [len(fts.TFLevels)]*roaring.Bitmap(out[1:]), nil
}

// Records reads the live records of rows with one iterator forward over
// the branch's own layer.
func (s *searchSource) Records(rows []uint32, fn func(i int, rec *codec.Record) error) error {
	return s.readRows(rows, fn)
}
