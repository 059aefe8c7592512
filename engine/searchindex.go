package engine

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/fts"
)

// Full-text indexing. A text field of a record puts its row in three kinds
// of bitmaps, maintained with the record's other bitmaps in the same batch
// and inherited by branches like them:
//
//   - a term bitmap per distinct word (codec.TermBitmapID);
//   - term-frequency bitmaps per word the field holds at least
//     fts.TFLevels[i] times (codec.TermTFBitmapID);
//   - one length bitmap, the field's length bucket (codec.LengthBitmapID).
//
// A word new to a table's layer is also recorded as a KindTerm key, so that
// a branch's vocabulary is the union of its layers' terms, read without
// walking the postings. The vocabulary and the field lengths by row are kept
// in memory per table of a branch (searchStore), built on the first search
// and kept current by writes like the column stores.

// fieldPool recycles the analysis buffers of textMemberships.
var fieldPool = sync.Pool{New: func() any { return new(fts.Field) }}

// textMemberships adds the search bitmaps of one text field to out.
func textMemberships(out map[string]struct{}, c *model.Column, v codec.Value) {
	f := fieldPool.Get().(*fts.Field)
	defer fieldPool.Put(f)
	f.Reset()
	switch v.Kind {
	case codec.KindString:
		f.Add(v.Str)
	case codec.KindStrings:
		for _, s := range v.Strs {
			f.Add(s)
		}
	default:
		return
	}
	out[string(codec.LengthBitmapID(nil, c.ID, fts.LengthBucket(f.Words)))] = struct{}{}
	var buf []byte
	for term, n := range f.TF {
		buf = codec.TermBitmapID(buf[:0], c.ID, term)
		out[string(buf)] = struct{}{}
		for i, l := range fts.TFLevels {
			if n < int(l) {
				break
			}
			buf = codec.TermTFBitmapID(buf[:0], c.ID, uint8(i), term)
			out[string(buf)] = struct{}{}
		}
	}
}

// termOf returns the word a term bitmap id names: 05 · col u32 · 40 ·
// escaped term · 00 01. Words hold no 00 byte, so the escaped form is the
// word itself and the result shares the id's memory.
func termOf(bitmapID string) (string, bool) {
	n := len(bitmapID)
	if n < 8 || bitmapID[0] != codec.BitmapTerm || bitmapID[5] != 0x40 || bitmapID[n-2:] != "\x00\x01" {
		return "", false
	}
	term := bitmapID[6 : n-2]
	if strings.IndexByte(term, 0) >= 0 {
		v, _, err := codec.DecodeOrdered([]byte(bitmapID[5:]))
		if err != nil || v.Kind != codec.KindString {
			return "", false
		}
		return v.Str, true
	}
	return term, true
}

// lengthOf returns the column and bucket a length bitmap id names.
func lengthOf(bitmapID string) (col uint32, bucket uint8, ok bool) {
	if len(bitmapID) != 6 || bitmapID[0] != codec.BitmapLength {
		return 0, 0, false
	}
	return be32([]byte(bitmapID[1:5])), bitmapID[5], true
}

// termsOf returns the set of words new to the top layer of a branch's
// table in this command, for writeTerms and the vocabulary.
func (tx *dbTx) termsOf(branch, table uint32) map[string]struct{} {
	k := storeKey{branch, table}
	if tx.terms == nil {
		tx.terms = map[storeKey]map[string]struct{}{}
	}
	set := tx.terms[k]
	if set == nil {
		set = map[string]struct{}{}
		tx.terms[k] = set
	}
	return set
}

// writeTerms puts the KindTerm keys of the words noted by the command in
// the top layer of their branch, in key order.
func (tx *dbTx) writeTerms() error {
	keys := make([]storeKey, 0, len(tx.terms))
	for k := range tx.terms {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].branch < keys[j].branch || keys[i].branch == keys[j].branch && keys[i].table < keys[j].table
	})
	st := tx.state()
	var kb []byte
	for _, k := range keys {
		b := st.byID[k.branch]
		if b == nil {
			continue
		}
		layer := b.Lineage[0].Layer
		for _, term := range model.SortedKeys(tx.terms[k]) {
			kb = codec.TermKey(kb[:0], tx.d.id, layer, k.table, term)
			if err := tx.batch.Set(kb, nil, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeTermKeys writes the KindTerm keys of the term bitmaps among ids in
// a layer (flattening copies a vocabulary this way).
func writeTermKeys(batch *pebble.Batch, db, layer, table uint32, ids []string) error {
	var kb []byte
	for _, id := range ids {
		if term, ok := termOf(id); ok {
			kb = codec.TermKey(kb[:0], db, layer, table, term)
			if err := batch.Set(kb, nil, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldLength is the length bucket of one text field of a written row.
type fieldLength struct {
	col    uint32
	bucket uint8
}

// fieldLengths picks the length bitmaps out of a row's memberships.
func fieldLengths(ids map[string]struct{}) []fieldLength {
	var out []fieldLength
	for id := range ids {
		if col, b, ok := lengthOf(id); ok {
			out = append(out, fieldLength{col, b})
		}
	}
	return out
}

// searchStore is what search keeps in memory for one table of one branch:
// the vocabulary, and per searchable column the length bucket of each
// row's field.
type searchStore struct {
	version uint64
	lex     atomic.Pointer[fts.Lexicon] // set under storeMu; a search may compact it
	cols    map[uint32]*fts.FieldLengths
	// compacting is set while a compaction of lex runs in the background.
	compacting atomic.Bool
}

// maxPendingTerms is how many words a vocabulary keeps outside its
// automaton before a search has it rebuilt.
const maxPendingTerms = 2048

// buildSearchStore reads the vocabulary and field lengths of a table of a
// branch at snapshot r.
func buildSearchStore(r pebble.Reader, db uint32, b *model.Branch, t *model.Table) (*searchStore, error) {
	s := &searchStore{version: b.Version, cols: map[uint32]*fts.FieldLengths{}}
	var terms []string
	for _, lr := range b.Lineage {
		p := codec.TablePrefix(nil, db, lr.Layer, codec.KindTerm, t.ID)
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: codec.PrefixEnd(p)})
		if err != nil {
			return nil, err
		}
		for it.First(); it.Valid(); it.Next() {
			terms = append(terms, string(it.Key()[len(p):]))
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	d, err := fts.BuildDict(terms)
	if err != nil {
		return nil, err
	}
	s.lex.Store(fts.NewLexicon(d))
	for _, c := range t.Leaves {
		if !fts.Searchable(c.Type) {
			continue
		}
		fs := &fts.FieldLengths{}
		s.cols[c.ID] = fs
		for bucket := range 128 {
			rows, err := readBitmap(r, db, b.Lineage, t.ID, codec.LengthBitmapID(nil, c.ID, uint8(bucket)), nil)
			if err != nil {
				return nil, err
			}
			it := rows.Iterator()
			for it.HasNext() {
				fs.Set(it.Next(), uint8(bucket), true)
			}
		}
	}
	return s, nil
}

// apply updates the store for a command's change of one row.
func (s *searchStore) apply(c *rowChange) {
	lens := map[uint32]uint8{}
	for _, l := range c.lens {
		lens[l.col] = l.bucket
	}
	for col, fs := range s.cols {
		b, ok := lens[col]
		fs.Set(c.row, b, ok && c.rec != nil)
	}
}

// ensureSearchStore returns the search store of a table of a branch,
// building it if needed.
func (e *Engine) ensureSearchStore(d *database, b *model.Branch, t *model.Table) (*searchStore, error) {
	return ensureBuilt(e, d, b, t, &d.search, storeKey{b.ID, t.ID}, func(r pebble.Reader, b *model.Branch, t *model.Table) (*searchStore, error) {
		return buildSearchStore(r, d.id, b, t)
	})
}

func (s *searchStore) schemaVersion() uint64 { return s.version }

// updateSearch applies a command to the search stores. The caller holds
// storeMu.
func (d *database) updateSearch(tx *dbTx) {
	st := d.state.Load()
	for k, s := range d.search {
		if b := st.byID[k.branch]; b == nil || b.Version != s.version {
			delete(d.search, k)
		}
	}
	for k, terms := range tx.terms {
		if s := d.search[k]; s != nil {
			list := make([]string, 0, len(terms))
			for t := range terms {
				list = append(list, t)
			}
			s.lex.Store(s.lex.Load().With(list))
		}
	}
	for i := range tx.changes {
		c := &tx.changes[i]
		if s := d.search[storeKey{c.branch, c.table}]; s != nil {
			s.apply(c)
		}
	}
}

// searchSource is the fts.Source of one table search: the planner's
// source, and the table's search store and vocabulary as of its snapshot.
type searchSource struct {
	*source
	store *searchStore
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
func (s *searchSource) Lengths(col uint32) *fts.FieldLengths { return s.store.cols[col] }

// Terms returns the rows of the table whose column col holds term, and
// the rows holding it at least fts.TFLevels[i] times. On a one-layer
// lineage the four bitmaps share a key prefix and come from one scan.
func (s *searchSource) Terms(col uint32, term string) (rows *roaring.Bitmap, levels [len(fts.TFLevels)]*roaring.Bitmap, err error) {
	id := codec.TermBitmapID(nil, col, term)
	ids := [len(fts.TFLevels) + 1]string{string(id)}
	for i := range fts.TFLevels {
		ids[i+1] = string(codec.TermTFBitmapID(nil, col, uint8(i), term))
	}
	var out [len(fts.TFLevels) + 1]*roaring.Bitmap
	if s.cache != nil {
		hit := true
		for i, id := range ids {
			if out[i] = s.cache.get(id, s.epoch); out[i] == nil {
				hit = false
				break
			}
		}
		if hit {
			return out[0], [len(fts.TFLevels)]*roaring.Bitmap(out[1:]), nil
		}
	}
	if lr := s.b.Lineage[0]; len(s.b.Lineage) == 1 && lr.Seq == model.MaxSeq {
		for i := range out {
			out[i] = roaring.New()
		}
		prefix := codec.BitmapPrefix(nil, s.d.id, lr.Layer, codec.KindBitmapCur, s.t.ID, id)
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
			if out[i], err = readBitmap(s.snap, s.d.id, s.b.Lineage, s.t.ID, []byte(id), nil); err != nil {
				return nil, levels, err
			}
		}
	}
	if s.cache != nil {
		for i, id := range ids {
			s.cache.put(id, out[i], s.epoch)
		}
	}
	return out[0], [len(fts.TFLevels)]*roaring.Bitmap(out[1:]), nil
}
