package memstore

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
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
// and kept current by writes like the column stores.

// SearchStore is what search keeps in memory for one table of one branch:
// the vocabulary, and per searchable column the length bucket of each
// row's field.
type SearchStore struct {
	version uint64
	lex     atomic.Pointer[fts.Lexicon] // set under storeMu; a search may compact it
	cols    map[uint32]*fts.FieldLengths
	// background runs the compaction of lex (Options.Background); nil for
	// a store built for one snapshot, whose vocabulary is compact.
	background func(fn func()) bool
	// compacting is set while a compaction of lex runs.
	compacting atomic.Bool
}

// MaxPendingTerms is how many words a vocabulary keeps outside its
// automaton before a search has it rebuilt.
const MaxPendingTerms = 2048

// BuildSearchStore reads the vocabulary and field lengths of a table of a
// branch at snapshot r.
func BuildSearchStore(r pebble.Reader, db uint32, b *model.Branch, t *model.Table) (*SearchStore, error) {
	s := &SearchStore{version: b.Version, cols: map[uint32]*fts.FieldLengths{}}
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
			rows, err := layers.ReadBitmap(r, db, b.Lineage, t.ID, codec.LengthBitmapID(nil, c.ID, uint8(bucket)), nil)
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
func (s *SearchStore) apply(c *apply.RowChange) {
	lens := map[uint32]uint8{}
	for _, l := range c.Lens {
		lens[l.Col] = l.Bucket
	}
	for col, fs := range s.cols {
		b, ok := lens[col]
		fs.Set(c.Row, b, ok && c.Rec != nil)
	}
}

// EnsureSearchStore returns the search store of a table of a branch,
// building it if needed.
func (d *DB) EnsureSearchStore(b *model.Branch, t *model.Table) (*SearchStore, error) {
	return ensureBuilt(d, b, t, &d.search, storeKey{Branch: b.ID, Table: t.ID}, func(r pebble.Reader, b *model.Branch, t *model.Table) (*SearchStore, error) {
		s, err := BuildSearchStore(r, d.ID, b, t)
		if s != nil {
			s.background = d.reg.opts.Background
		}
		return s, err
	})
}

// schemaVersion implements builtStore.
func (s *SearchStore) schemaVersion() uint64 { return s.version }

// updateSearch applies a command to the search stores. The caller holds
// storeMu.
func (d *DB) updateSearch(tx *apply.Tx) {
	st := d.State()
	for k, s := range d.search {
		if b := st.ByID[k.Branch]; b == nil || b.Version != s.version {
			delete(d.search, k)
		}
	}
	for k, terms := range tx.Terms() {
		if s := d.search[k]; s != nil {
			list := make([]string, 0, len(terms))
			for t := range terms {
				list = append(list, t)
			}
			s.lex.Store(s.lex.Load().With(list))
		}
	}
	for i := range tx.Rows() {
		c := &tx.Rows()[i]
		if s := d.search[storeKey{Branch: c.Branch, Table: c.Table}]; s != nil {
			s.apply(c)
		}
	}
}

// Version is the branch schema version the store was built for.
func (s *SearchStore) Version() uint64 { return s.version }

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
