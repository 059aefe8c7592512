package memstore

import (
	"context"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
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
// in memory per table of a branch (SearchStore), built on the first search
// and kept current by writes like the column stores, under the memory
// budget like them.

// SearchStore is what search keeps in memory for one table of one branch:
// the vocabulary, and per searchable column the length bucket of each
// row's field.
type SearchStore struct {
	lex  atomic.Pointer[fts.Lexicon] // set by writers; a search may compact it
	cols map[uint32]*fts.FieldLengths
	rows uint32 // one past the highest row it holds lengths of, for size
	// background runs the compaction of lex (Options.Background); nil for
	// a store built for one snapshot, whose vocabulary is compact.
	background func(fn func()) bool
	// compacting is set while a compaction of lex runs.
	compacting atomic.Bool
}

// MaxPendingTerms is how many words a vocabulary keeps outside its
// automaton before a search has it rebuilt.
const MaxPendingTerms = 2048

// BuildSearchStore reads the vocabulary and field lengths of a table
// through a lineage at snapshot r. It stops with ctx's error when ctx
// ends.
func BuildSearchStore(ctx context.Context, r pebble.Reader, db uint32, lin model.Lineage, t *model.Table) (*SearchStore, error) {
	s := &SearchStore{cols: map[uint32]*fts.FieldLengths{}}
	var terms []string
	for _, lr := range lin {
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
		if err := ctx.Err(); err != nil {
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
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			rows, err := layers.ReadBitmap(r, db, lin, t.ID, codec.LengthBitmapID(nil, c.ID, uint8(bucket)), nil)
			if err != nil {
				return nil, err
			}
			if !rows.IsEmpty() {
				s.rows = max(s.rows, rows.Maximum()+1)
			}
			it := rows.Iterator()
			for it.HasNext() {
				fs.Set(it.Next(), uint8(bucket), true)
			}
		}
	}
	return s, nil
}

// apply updates the store for a command's changes of its table: the words
// new to it, and the field lengths of the rows written.
func (s *SearchStore) apply(c change) {
	if len(c.terms) > 0 {
		list := make([]string, 0, len(c.terms))
		for t := range c.terms {
			list = append(list, t)
		}
		s.lex.Store(s.lex.Load().With(list))
	}
	for i := range c.rows {
		r := &c.rows[i]
		s.rows = max(s.rows, r.Row+1)
		lens := map[uint32]uint8{}
		for _, l := range r.Lens {
			lens[l.Col] = l.Bucket
		}
		for col, fs := range s.cols {
			b, ok := lens[col]
			fs.Set(r.Row, b, ok && r.Rec != nil)
		}
	}
}

// size estimates the memory the store takes: the vocabulary and a byte a
// row for each searchable column.
func (s *SearchStore) size() int64 {
	lex := s.lex.Load()
	return 256 + 12*int64(lex.Len()) + 32*int64(lex.Pending()) + int64(len(s.cols))*(64+int64(s.rows))
}

// Lengths returns the field lengths of a searchable column.
func (s *SearchStore) Lengths(col uint32) *fts.FieldLengths { return s.cols[col] }

// Lexicon returns the table's vocabulary. One that keeps many words
// outside its automaton has them folded into a new automaton in the
// background: rebuilding a large dictionary takes milliseconds that no
// search should wait for, and searches meanwhile read the written words
// from their sorted list. One compaction runs at a time per store.
func (s *SearchStore) Lexicon() *fts.Lexicon {
	lex := s.lex.Load()
	if lex.Pending() > MaxPendingTerms && s.background != nil && s.compacting.CompareAndSwap(false, true) {
		if !s.background(func() {
			defer s.compacting.Store(false)
			if compact, err := lex.Compact(); err == nil {
				// The same words in one automaton: other readers may
				// keep either; a write that extended it meanwhile wins.
				s.lex.CompareAndSwap(lex, compact)
			}
		}) {
			s.compacting.Store(false)
		}
	}
	return lex
}
