package model

import (
	"slices"
	"strings"
)

// A schema change must cost the same in a schema of ten thousand tables as
// in one of ten. Published schemas are immutable, so a change builds a new
// schema; it shares with the old one every table it does not touch
// (Clone is shallow, Edit copies one table), and the lookup maps, which
// would cost a rebuild of every entry, are a shared base plus a small
// overlay of the tables changed since the base was built. The overlay is
// folded into a new base once it holds a fair share of the entries, so a
// change costs, amortized, a constant number of map operations.

// tableIndex finds a schema's tables by name, by name in any letter case,
// and by id. It is immutable once a published schema holds it.
type tableIndex struct {
	base *tableMaps
	over *tableMaps // entries changed since base; a nil value: removed
}

// tableMaps are the three lookups of a tableIndex.
type tableMaps struct {
	byName map[string]*Table
	byFold map[string]*Table
	byID   map[uint32]*Table
}

// newTableMaps returns empty lookups sized for n tables.
func newTableMaps(n int) *tableMaps {
	return &tableMaps{byName: make(map[string]*Table, n), byFold: make(map[string]*Table, n), byID: make(map[uint32]*Table, n)}
}

// clone returns a copy of the lookups that changes apart from them.
func (m *tableMaps) clone() *tableMaps {
	n := newTableMaps(len(m.byID) + 1)
	for k, v := range m.byName {
		n.byName[k] = v
	}
	for k, v := range m.byFold {
		n.byFold[k] = v
	}
	for k, v := range m.byID {
		n.byID[k] = v
	}
	return n
}

// fold is the key of a name in any letter case. Names hold ASCII letters,
// digits and a few signs only (CheckName), for which this is Unicode's
// simple folding.
func fold(name string) string { return strings.ToLower(name) }

// buildIndex indexes every table of tables.
func buildIndex(tables []*Table) *tableIndex {
	m := newTableMaps(len(tables))
	for _, t := range tables {
		m.byName[t.Name] = t
		m.byFold[fold(t.Name)] = t
		m.byID[t.ID] = t
	}
	return &tableIndex{base: m, over: newTableMaps(0)}
}

// name finds a table by name, the overlay first.
func (ix *tableIndex) name(name string) *Table {
	if t, ok := ix.over.byName[name]; ok {
		return t
	}
	return ix.base.byName[name]
}

// folded finds a table by name in any letter case, the overlay first.
func (ix *tableIndex) folded(name string) *Table {
	k := fold(name)
	if t, ok := ix.over.byFold[k]; ok {
		return t
	}
	return ix.base.byFold[k]
}

// id finds a table by id, the overlay first.
func (ix *tableIndex) id(id uint32) *Table {
	if t, ok := ix.over.byID[id]; ok {
		return t
	}
	return ix.base.byID[id]
}

// schemaEdit is what a schema being changed (a Clone not yet published)
// knows of its changes.
type schemaEdit struct {
	from *Schema // the schema it was cloned from
	// owned are the tables this schema made and may change in place: its
	// copies of tables of from (Edit) and the tables it added; indexed
	// holds the name each table is indexed under ("" for none yet).
	owned   map[uint32]*Table
	indexed map[uint32]string
	// changed holds the ids of every table added, changed or removed
	// since from, for writers that store only what changed.
	changed map[uint32]bool
	// ownIndex is set once the index is this schema's own copy.
	ownIndex bool
}

// Clone returns a schema that can be changed without affecting readers of
// s: it shares s's tables until Edit copies one. The tables of s are
// shared from then on: a later change of s copies them too. Clone is
// called by writers only (a published schema is cloned under its
// database's writer lock).
func (s *Schema) Clone() *Schema {
	if s.ix == nil {
		s.Index()
	}
	if s.tail == nil {
		s.tail = &tablesTail{n: len(s.Tables)}
	}
	n := &Schema{Tables: s.Tables, tail: s.tail, ix: s.ix, edit: &schemaEdit{
		from: s, owned: map[uint32]*Table{}, indexed: map[uint32]string{}, changed: map[uint32]bool{},
	}}
	if s.edit == nil {
		// From now on s shares its tables too: its changes copy them.
		s.edit = &schemaEdit{owned: map[uint32]*Table{}, indexed: map[uint32]string{}, changed: map[uint32]bool{}}
	}
	clear(s.edit.owned)
	clear(s.edit.indexed)
	s.edit.ownIndex = false
	return n
}

// Edit returns table name for a change: on a clone, its own copy of it,
// made on first use. Every change of a table of a cloned schema goes
// through Edit (or AddTable), never through Table or the Tables slice.
func (s *Schema) Edit(name string) (*Table, error) {
	t, err := s.Table(name)
	if err != nil || s.edit == nil {
		return t, err
	}
	return s.editTable(t), nil
}

// editTable returns s's own copy of t, a table of s.
func (s *Schema) editTable(t *Table) *Table {
	e := s.edit
	if e.owned[t.ID] == t {
		return t
	}
	nt := &Table{ID: t.ID, Name: t.Name, NextCol: t.NextCol, Columns: cloneColumns(t.Columns)}
	nt.index()
	s.ownTables()
	for i, x := range s.Tables {
		if x == t {
			s.Tables[i] = nt
			break
		}
	}
	e.owned[t.ID], e.indexed[t.ID], e.changed[t.ID] = nt, t.Name, true
	s.indexSet(t.Name, nt)
	return nt
}

// AddTable adds a new table to s, last.
func (s *Schema) AddTable(t *Table) {
	s.appendTable(t)
	if s.edit != nil {
		s.edit.owned[t.ID], s.edit.indexed[t.ID], s.edit.changed[t.ID] = t, "", true
	}
	t.index()
	if s.ix != nil {
		s.indexSet("", t)
	}
}

// indexSet makes the index find t under its name instead of under old
// ("" for none) on a clone, whose index becomes its own first.
func (s *Schema) indexSet(old string, t *Table) {
	if s.edit == nil {
		// A schema being built: indexed whole by Index.
		return
	}
	s.ownIndex()
	o := s.ix.over
	if old != "" && old != t.Name {
		o.byName[old], o.byFold[fold(old)] = nil, nil
	}
	o.byName[t.Name], o.byFold[fold(t.Name)], o.byID[t.ID] = t, t, t
}

// indexRemove makes the index of a clone forget t.
func (s *Schema) indexRemove(t *Table) {
	if s.edit == nil {
		return
	}
	s.ownIndex()
	o := s.ix.over
	o.byName[s.edit.nameOf(t)], o.byFold[fold(s.edit.nameOf(t))], o.byID[t.ID] = nil, nil, nil
	delete(s.edit.owned, t.ID)
	delete(s.edit.indexed, t.ID)
	s.edit.changed[t.ID] = true
}

// nameOf is the name t is indexed under.
func (e *schemaEdit) nameOf(t *Table) string {
	if n, ok := e.indexed[t.ID]; ok && n != "" {
		return n
	}
	return t.Name
}

// ownIndex gives a clone its own copy of the overlay, shared with the
// schema it was cloned from until then.
func (s *Schema) ownIndex() {
	if s.edit.ownIndex {
		return
	}
	s.ix = &tableIndex{base: s.ix.base, over: s.ix.over.clone()}
	s.edit.ownIndex = true
}

// Changes reports what s changed since it was cloned from: whether from
// is the schema it was cloned from, and the ids of the tables added,
// changed or removed since, in ascending order. Writers store only those.
func (s *Schema) Changes(from *Schema) (ids []uint32, ok bool) {
	if s.edit == nil || s.edit.from != from {
		return nil, false
	}
	for id := range s.edit.changed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, true
}

// tablesTail is shared by the schemas whose Tables share one array: n is
// the length of the longest of them, and the elements past n are free.
// A clone appends in place when its Tables end at n, as a schema that
// only adds tables does, instead of copying them all.
type tablesTail struct{ n int }

// appendTable appends t to s.Tables, in place when no other schema uses the
// array past s's end.
func (s *Schema) appendTable(t *Table) {
	if s.tail != nil && s.tail.n == len(s.Tables) && len(s.Tables) < cap(s.Tables) {
		s.Tables = append(s.Tables, t)
		s.tail.n++
		return
	}
	tables := make([]*Table, len(s.Tables), len(s.Tables)*2+8)
	copy(tables, s.Tables)
	s.Tables, s.tail = append(tables, t), &tablesTail{n: len(s.Tables) + 1}
}

// ownTables gives s its own copy of its Tables before it changes one in
// place; a schema that was never cloned owns them already.
func (s *Schema) ownTables() {
	if s.tail == nil {
		return
	}
	s.Tables, s.tail = slices.Clone(s.Tables), nil
}
