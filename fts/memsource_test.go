package fts

import (
	"errors"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

// memSource is a table held in memory and indexed for search the way the
// engine indexes it (a posting and frequency levels per column and term,
// field lengths by row), for tests and benchmarks of Search that need no
// storage. Filters and boosters read its records by scanning them.
type memSource struct {
	t     *index.Table
	rows  map[uint32]*codec.Record
	live  *roaring.Bitmap
	terms map[uint32]map[string]*memPosting // by column, by term
	lens  map[uint32]*FieldLengths
	lex   *Lexicon
	// noIDs hides the id values, as a source without a column store
	// does: ties are then broken by reading records.
	noIDs bool
}

// memPosting is what the engine keeps for a term of a column.
type memPosting struct {
	rows   *roaring.Bitmap
	levels [len(TFLevels)]*roaring.Bitmap
}

// newMemSource indexes recs, record i at rows[i], for table t.
func newMemSource(t *index.Table, rows []uint32, recs []*codec.Record) *memSource {
	m := &memSource{t: t, rows: map[uint32]*codec.Record{}, live: roaring.New(),
		terms: map[uint32]map[string]*memPosting{}, lens: map[uint32]*FieldLengths{}}
	var vocab []string
	var f Field
	for _, c := range t.Leaves {
		if Searchable(c.Type) {
			m.lens[c.ID] = &FieldLengths{}
			m.terms[c.ID] = map[string]*memPosting{}
		}
	}
	for i, rec := range recs {
		row := rows[i]
		m.rows[row] = rec
		m.live.Add(row)
		for _, c := range t.Leaves {
			if !Searchable(c.Type) {
				continue
			}
			v, ok := rec.Get(c.ID)
			if !ok {
				continue
			}
			f.Reset()
			if v.Kind == codec.KindStrings {
				for _, s := range v.Strs {
					f.Add(s)
				}
			} else {
				f.Add(v.Str)
			}
			m.lens[c.ID].Set(row, LengthBucket(f.Words), true)
			for term, n := range f.TF {
				p := m.terms[c.ID][term]
				if p == nil {
					p = &memPosting{rows: roaring.New()}
					for l := range p.levels {
						p.levels[l] = roaring.New()
					}
					m.terms[c.ID][term] = p
					vocab = append(vocab, term)
				}
				p.rows.Add(row)
				for l, min := range TFLevels {
					if n >= int(min) {
						p.levels[l].Add(row)
					}
				}
			}
		}
	}
	d, err := BuildDict(vocab)
	if err != nil {
		panic(err)
	}
	m.lex = NewLexicon(d)
	return m
}

func (m *memSource) Lexicon() *Lexicon                { return m.lex }
func (m *memSource) Lengths(col uint32) *FieldLengths { return m.lens[col] }

func (m *memSource) Terms(col uint32, term string) (*roaring.Bitmap, [len(TFLevels)]*roaring.Bitmap, error) {
	var levels [len(TFLevels)]*roaring.Bitmap
	p := m.terms[col][term]
	if p == nil {
		for l := range levels {
			levels[l] = roaring.New()
		}
		return roaring.New(), levels, nil
	}
	for l := range levels {
		levels[l] = p.levels[l].Clone()
	}
	return p.rows.Clone(), levels, nil
}

func (m *memSource) Table() *index.Table { return m.t }

func (m *memSource) Live() (*roaring.Bitmap, error) { return m.live.Clone(), nil }

// value returns the value of a column of a row, meta columns included.
func (m *memSource) value(row uint32, c *index.Column) codec.Value {
	rec := m.rows[row]
	switch c.ID {
	case index.MetaIDColumn:
		return codec.String(rec.ID)
	case index.MetaCreatedAtColumn:
		return codec.Value{Kind: codec.KindDatetime, Int: rec.CreatedAt}
	case index.MetaUpdatedAtColumn:
		return codec.Value{Kind: codec.KindDatetime, Int: rec.UpdatedAt}
	case index.MetaVersionColumn:
		return codec.Int(int64(rec.Version))
	}
	v, _ := rec.Get(c.ID)
	return v
}

// where returns the live rows satisfying keep.
func (m *memSource) where(keep func(row uint32) bool) *roaring.Bitmap {
	out := roaring.New()
	it := m.live.Iterator()
	for it.HasNext() {
		if row := it.Next(); keep(row) {
			out.Add(row)
		}
	}
	return out
}

func (m *memSource) Exists(c *index.Column) (*roaring.Bitmap, error) {
	return m.where(func(row uint32) bool { return !m.value(row, c).IsNull() }), nil
}

func (m *memSource) Posting(c *index.Column, v codec.Value) (*roaring.Bitmap, error) {
	return m.where(func(row uint32) bool {
		got := m.value(row, c)
		if got.Kind == codec.KindStrings {
			return v.Kind == codec.KindString && slices.Contains(got.Strs, v.Str)
		}
		return !got.IsNull() && codec.Equal(got, v)
	}), nil
}

func (m *memSource) Scan(c *index.Column, b index.Bounds, desc bool, fn func(v codec.Value, rows *roaring.Bitmap) bool) error {
	if c.ID >= index.MetaUpdatedAtColumn || !c.Type.Indexed() || c.Type == index.TypeMultiple {
		return index.ErrNoOrderedIndex
	}
	type entry struct {
		v   codec.Value
		row uint32
	}
	var all []entry
	it := m.live.Iterator()
	for it.HasNext() {
		row := it.Next()
		if v := m.value(row, c); !v.IsNull() && inBounds(v, b) {
			all = append(all, entry{v, row})
		}
	}
	slices.SortStableFunc(all, func(a, b entry) int { return codec.Compare(a.v, b.v) })
	if desc {
		slices.Reverse(all)
	}
	for i := 0; i < len(all); {
		rows := roaring.New()
		j := i
		for ; j < len(all) && codec.Equal(all[j].v, all[i].v); j++ {
			rows.Add(all[j].row)
		}
		if !fn(all[i].v, rows) {
			break
		}
		i = j
	}
	return nil
}

// inBounds reports whether v lies within b.
func inBounds(v codec.Value, b index.Bounds) bool {
	if b.Prefix != nil && !strings.HasPrefix(v.Str, *b.Prefix) {
		return false
	}
	if b.Lo != nil {
		if c := codec.Compare(v, *b.Lo); c < 0 || c == 0 && !b.LoIncl {
			return false
		}
	}
	if b.Hi != nil {
		if c := codec.Compare(v, *b.Hi); c > 0 || c == 0 && !b.HiIncl {
			return false
		}
	}
	return true
}

// memValues are the values of one column by row.
type memValues struct {
	m *memSource
	c *index.Column
}

func (v memValues) Get(row uint32) codec.Value {
	if v.m.rows[row] == nil {
		return codec.Null()
	}
	return v.m.value(row, v.c)
}

func (m *memSource) Values(c *index.Column) (index.ColumnValues, error) {
	if c.ID == index.MetaIDColumn && m.noIDs {
		return nil, nil
	}
	if c.ID != index.MetaIDColumn && !c.Type.Indexed() {
		return nil, nil
	}
	return memValues{m, c}, nil
}

func (m *memSource) Record(row uint32, rec *codec.Record) (bool, error) {
	r := m.rows[row]
	if r == nil {
		return false, nil
	}
	*rec = *r.Clone()
	return true, nil
}

func (m *memSource) Records(rows []uint32, fn func(i int, rec *codec.Record) error) error {
	var rec codec.Record
	for i, row := range rows {
		if ok, _ := m.Record(row, &rec); ok {
			if err := fn(i, &rec); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *memSource) Rows(ids []string) (*roaring.Bitmap, error) {
	return m.where(func(row uint32) bool { return slices.Contains(ids, m.rows[row].ID) }), nil
}

func (m *memSource) Linked(*index.Column) (index.Source, error) {
	return nil, errors.New("memSource: no linked tables")
}
