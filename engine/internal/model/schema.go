package model

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coppice-db/coppice/index"
)

// ColumnType is the type of a column (spec §2.3, plus json from the compat
// API): the index package's, named here so that callers of the engine need
// not import it.
type ColumnType = index.ColumnType

// Column types.
const (
	TypeBool      = index.TypeBool
	TypeInt       = index.TypeInt
	TypeFloat     = index.TypeFloat
	TypeString    = index.TypeString
	TypeText      = index.TypeText
	TypeEmail     = index.TypeEmail
	TypeMultiple  = index.TypeMultiple
	TypeLink      = index.TypeLink
	TypeObject    = index.TypeObject
	TypeDatetime  = index.TypeDatetime
	TypeVector    = index.TypeVector
	TypeFile      = index.TypeFile
	TypeFileArray = index.TypeFileArray
	TypeJSON      = index.TypeJSON
)

// ColumnDef is the public shape of a column, as the API reads and writes it.
type ColumnDef struct {
	Name         string      `json:"name"`
	Type         ColumnType  `json:"type"`
	Link         *LinkDef    `json:"link,omitempty"`
	Vector       *VectorDef  `json:"vector,omitempty"`
	File         *FileDef    `json:"file,omitempty"`
	FileArray    *FileDef    `json:"file[],omitempty"`
	NotNull      bool        `json:"notNull,omitempty"`
	DefaultValue *string     `json:"defaultValue,omitempty"`
	Unique       bool        `json:"unique,omitempty"`
	Columns      []ColumnDef `json:"columns,omitempty"`
}

// LinkDef names the table a link column points to.
type LinkDef struct {
	Table string `json:"table"`
}

// VectorDef is the dimension of a vector column.
type VectorDef struct {
	Dimension int `json:"dimension"`
}

// FileDef holds the settings of file and file[] columns.
type FileDef struct {
	DefaultPublicAccess *bool `json:"defaultPublicAccess,omitempty"`
}

// RevLink is one link column, in any table, that points at a table.
type RevLink struct {
	Table  string `json:"table"`
	Column string `json:"column"`
}

// TableDef is the public shape of a table in branch details.
type TableDef struct {
	Name     string      `json:"name"`
	Columns  []ColumnDef `json:"columns"`
	RevLinks []RevLink   `json:"revLinks,omitempty"`
}

// SchemaDef is the public schema of a branch.
type SchemaDef struct {
	Tables []TableDef `json:"tables"`
}

// Table returns the table named name, or CodeNotFound.
func (s SchemaDef) Table(name string) (TableDef, error) {
	for _, t := range s.Tables {
		if t.Name == name {
			return t, nil
		}
	}
	return TableDef{}, NotFoundf("table [%s] not found", name)
}

// Column is a stored column: the public definition plus the ids that data keys
// carry. Object columns hold sub-columns; only leaves hold values.
type Column struct {
	ID         uint32     `json:"id"`
	Name       string     `json:"name"`
	Type       ColumnType `json:"type"`
	LinkTable  uint32     `json:"linkTable,omitempty"`
	Dimension  int        `json:"dimension,omitempty"`
	FilePublic *bool      `json:"filePublic,omitempty"`
	NotNull    bool       `json:"notNull,omitempty"`
	Unique     bool       `json:"unique,omitempty"`
	Default    *string    `json:"default,omitempty"`
	Columns    []*Column  `json:"columns,omitempty"`
	// Path is the dotted path from the table root; DefaultVal the parsed
	// Default (nil for none), and DefaultNow whether Default is "now" on a
	// datetime column. Index sets them; they are not stored.
	Path       string `json:"-"`
	DefaultVal any    `json:"-"`
	DefaultNow bool   `json:"-"`
}

// Table is a stored table of a branch's schema.
type Table struct {
	ID      uint32    `json:"id"`
	Name    string    `json:"name"`
	Columns []*Column `json:"columns"`
	NextCol uint32    `json:"nextCol"`

	// ByPath holds every column, objects included, by dotted path;
	// Leaves the value-holding columns in path order, and ByID them by
	// id. Index sets them; they are not stored.
	ByPath map[string]*Column `json:"-"`
	Leaves []*Column          `json:"-"`
	ByID   map[uint32]*Column `json:"-"`
	// Sig names what the table's values are: the id, type and dimension of
	// each leaf, by id; Index sets it. Two tables of one signature hold the
	// same columns of rows the same way, whatever their names.
	Sig string `json:"-"`
}

// Schema is the stored schema of a branch. It is immutable once published;
// changes build a new one (Clone, Edit).
type Schema struct {
	Tables []*Table `json:"tables"`

	ix   *tableIndex // finds the tables; Index sets it
	edit *schemaEdit // set on a clone being changed
	tail *tablesTail // set once Tables may share its array (appendTable)

	itMu    sync.Mutex
	itables map[uint32]*index.Table // IndexTable's, built on demand
	itMeta  string                  // the metadata key of itables
}

// TableByName returns the table named name, or nil.
func (s *Schema) TableByName(name string) *Table { return s.ix.name(name) }

// TableByFold returns the table whose name equals name in any letter case,
// or nil.
func (s *Schema) TableByFold(name string) *Table { return s.ix.folded(name) }

// TableByID returns the table with id, or nil.
func (s *Schema) TableByID(id uint32) *Table { return s.ix.id(id) }

var (
	namePattern     = regexp.MustCompile(`^[a-zA-Z0-9_\-~]+$`)
	recordIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_\-~:]+$`)
)

// CheckName enforces the naming rule of spec §2.1 for branch, database,
// table and column names; what names the kind in the message.
func CheckName(what, name string) error {
	if len(name) == 0 {
		return Invalidf("%s name must not be empty", what)
	}
	if len(name) > 255 {
		return Invalidf("%s name [%.20s…] is longer than 255 characters", what, name)
	}
	if !namePattern.MatchString(name) {
		return Invalidf("%s name [%s] is invalid: use only letters, digits, '_', '-' and '~'", what, name)
	}
	return nil
}

// CheckRecordID enforces the RecordID rule of spec §2.1.
func CheckRecordID(id string) error {
	if err := RecordIDError(id); err != nil {
		return err
	}
	return nil
}

// Index builds the lookups of a schema after decoding or building it, or
// brings them up to date after changes of a clone (Edit, AddTable,
// RemoveTable): on a clone it costs what the changed tables cost.
func (s *Schema) Index() {
	if s.edit == nil {
		for _, t := range s.Tables {
			t.index()
		}
		s.ix = buildIndex(s.Tables)
		return
	}
	e := s.edit
	for id, t := range e.owned {
		t.index()
		if e.indexed[id] != t.Name {
			s.indexSet(e.indexed[id], t)
			e.indexed[id] = t.Name
		}
	}
	// Folding the overlay into a new base costs every table; keeping it
	// costs its entries at every change. About the square root of the
	// tables balances the two.
	if over := len(s.ix.over.byID); over*over > 1024+len(s.ix.base.byID) {
		s.ix = buildIndex(s.Tables)
		e.ownIndex = true
	}
}

func (t *Table) index() {
	t.ByPath = map[string]*Column{}
	t.ByID = map[uint32]*Column{}
	t.Leaves = t.Leaves[:0]
	var walk func(prefix string, cols []*Column)
	walk = func(prefix string, cols []*Column) {
		for _, c := range cols {
			c.Path = prefix + c.Name
			c.parseDefault()
			t.ByPath[c.Path] = c
			if c.Type == TypeObject {
				walk(c.Path+".", c.Columns)
				continue
			}
			t.ByID[c.ID] = c
			t.Leaves = append(t.Leaves, c)
		}
	}
	walk("", t.Columns)
	t.Sig = t.signature()
}

// signature computes Sig.
func (t *Table) signature() string {
	leaves := slices.Clone(t.Leaves)
	slices.SortFunc(leaves, func(a, b *Column) int { return cmp.Compare(a.ID, b.ID) })
	var b strings.Builder
	for _, c := range leaves {
		fmt.Fprintf(&b, "%d:%s:%d;", c.ID, c.Type, c.Dimension)
	}
	return b.String()
}

// parseDefault parses the stored default value; it was validated when the
// column was created.
func (c *Column) parseDefault() {
	c.DefaultVal, c.DefaultNow = nil, false
	if c.Default == nil {
		return
	}
	if c.Type == TypeDatetime && *c.Default == "now" {
		c.DefaultNow = true
		return
	}
	v, err := parseDefault(c.Type, *c.Default)
	if err == nil {
		c.DefaultVal = v
	}
}

// parseDefault turns a schema defaultValue string into a JSON-like input value.
func parseDefault(t ColumnType, s string) (any, error) {
	switch t {
	case TypeInt:
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return nil, Invalidf("default value [%s] is not an int", s)
		}
		return jsonNumber(s), nil
	case TypeFloat:
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return nil, Invalidf("default value [%s] is not a float", s)
		}
		return jsonNumber(s), nil
	case TypeBool:
		switch s {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, Invalidf("default value [%s] is not a bool", s)
	case TypeString, TypeText:
		return s, nil
	case TypeEmail:
		if !ValidEmail(s) {
			return nil, Invalidf("default value [%s] is not an email address", s)
		}
		return s, nil
	case TypeDatetime:
		if s == "now" {
			return s, nil
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, Invalidf("default value [%s] is not an RFC 3339 datetime", s)
		}
		return s, nil
	}
	return nil, Invalidf("column type %s cannot have a default value", t)
}

func cloneColumns(cols []*Column) []*Column {
	out := make([]*Column, len(cols))
	for i, c := range cols {
		nc := *c
		if c.Columns != nil {
			nc.Columns = cloneColumns(c.Columns)
		}
		if c.Default != nil {
			d := *c.Default
			nc.Default = &d
		}
		out[i] = &nc
	}
	return out
}

// Table returns the table with the given name or a not-found error.
func (s *Schema) Table(name string) (*Table, error) {
	t := s.TableByName(name)
	if t == nil {
		return nil, NotFoundf("table [%s] not found", name)
	}
	return t, nil
}

// NewColumn validates a public column definition and turns it into a stored
// column, allocating ids from t.NextCol. Link targets resolve against s.
func (s *Schema) NewColumn(t *Table, def ColumnDef, prefix string) (*Column, error) {
	if strings.HasPrefix(def.Name, "$") {
		return nil, Invalidf("column name [%s] must not start with '$'", def.Name)
	}
	if err := CheckName("column", def.Name); err != nil {
		return nil, err
	}
	if prefix == "" && (def.Name == "id" || def.Name == "svc" || def.Name == "xata") {
		return nil, Invalidf("column name [%s] is reserved", def.Name)
	}
	if def.Type == "fileMap" {
		def.Type = TypeFileArray
	}
	c := &Column{Name: def.Name, Type: def.Type, NotNull: def.NotNull, Unique: def.Unique}
	settings := 0
	if def.Link != nil {
		settings++
	}
	if def.Vector != nil {
		settings++
	}
	if def.File != nil {
		settings++
	}
	if def.FileArray != nil {
		settings++
	}
	switch def.Type {
	case TypeBool, TypeInt, TypeFloat, TypeString, TypeText, TypeEmail, TypeDatetime, TypeMultiple, TypeJSON:
		if settings > 0 || len(def.Columns) > 0 {
			return nil, Invalidf("column [%s]: type %s takes no settings", prefix+def.Name, def.Type)
		}
	case TypeLink:
		if def.Link == nil || def.Link.Table == "" || settings != 1 {
			return nil, Invalidf("column [%s]: a link column needs link.table", prefix+def.Name)
		}
		target := s.TableByName(def.Link.Table)
		if target == nil && def.Link.Table != t.Name {
			return nil, Invalidf("column [%s]: link target table [%s] not found", prefix+def.Name, def.Link.Table)
		}
		if target == nil {
			target = t
		}
		c.LinkTable = target.ID
	case TypeVector:
		if def.Vector == nil || settings != 1 {
			return nil, Invalidf("column [%s]: a vector column needs vector.dimension", prefix+def.Name)
		}
		if def.Vector.Dimension < 2 || def.Vector.Dimension > 10000 {
			return nil, Invalidf("column [%s]: vector dimension must be between 2 and 10000", prefix+def.Name)
		}
		c.Dimension = def.Vector.Dimension
	case TypeFile, TypeFileArray:
		fd := def.File
		if def.Type == TypeFileArray {
			fd = def.FileArray
			if def.File != nil {
				return nil, Invalidf("column [%s]: a file[] column takes file[] settings", prefix+def.Name)
			}
		} else if def.FileArray != nil {
			return nil, Invalidf("column [%s]: a file column takes file settings", prefix+def.Name)
		}
		if fd != nil {
			c.FilePublic = fd.DefaultPublicAccess
		}
	case TypeObject:
		if settings > 0 {
			return nil, Invalidf("column [%s]: an object column takes only columns", prefix+def.Name)
		}
		if def.NotNull || def.Unique || def.DefaultValue != nil {
			return nil, Invalidf("column [%s]: an object column cannot be notNull, unique or have a default", prefix+def.Name)
		}
		seen := map[string]bool{}
		for _, sub := range def.Columns {
			if seen[sub.Name] {
				return nil, Invalidf("column [%s.%s] is defined twice", prefix+def.Name, sub.Name)
			}
			seen[sub.Name] = true
			sc, err := s.NewColumn(t, sub, prefix+def.Name+".")
			if err != nil {
				return nil, err
			}
			c.Columns = append(c.Columns, sc)
		}
		return c, nil
	case "":
		return nil, Invalidf("column [%s]: type is required", prefix+def.Name)
	default:
		return nil, Invalidf("column [%s]: unknown type [%s]", prefix+def.Name, def.Type)
	}
	if def.Unique {
		switch def.Type {
		case TypeText, TypeJSON, TypeVector, TypeFile, TypeFileArray, TypeMultiple:
			return nil, Invalidf("column [%s]: type %s cannot be unique", prefix+def.Name, def.Type)
		}
	}
	if def.DefaultValue != nil {
		if _, err := parseDefault(def.Type, *def.DefaultValue); err != nil {
			return nil, Invalidf("column [%s]: %s", prefix+def.Name, err.Error())
		}
		d := *def.DefaultValue
		c.Default = &d
	}
	t.NextCol++
	c.ID = t.NextCol
	return c, nil
}

// Def returns the public definition of a stored column.
func (c *Column) Def(s *Schema) ColumnDef {
	d := ColumnDef{Name: c.Name, Type: c.Type, NotNull: c.NotNull, Unique: c.Unique}
	if c.Default != nil {
		v := *c.Default
		d.DefaultValue = &v
	}
	switch c.Type {
	case TypeLink:
		name := ""
		if lt := s.TableByID(c.LinkTable); lt != nil {
			name = lt.Name
		}
		d.Link = &LinkDef{Table: name}
	case TypeVector:
		d.Vector = &VectorDef{Dimension: c.Dimension}
	case TypeFile:
		if c.FilePublic != nil {
			d.File = &FileDef{DefaultPublicAccess: c.FilePublic}
		}
	case TypeFileArray:
		if c.FilePublic != nil {
			d.FileArray = &FileDef{DefaultPublicAccess: c.FilePublic}
		}
	case TypeObject:
		d.Columns = make([]ColumnDef, 0, len(c.Columns))
		for _, sc := range c.Columns {
			d.Columns = append(d.Columns, sc.Def(s))
		}
	}
	return d
}

// Public returns the public schema, with revLinks in the wire form of
// compat-api.md §5.3.
func (s *Schema) Public() SchemaDef {
	out := SchemaDef{Tables: make([]TableDef, 0, len(s.Tables))}
	for _, t := range s.Tables {
		out.Tables = append(out.Tables, s.TableDef(t))
	}
	return out
}

func (s *Schema) TableDef(t *Table) TableDef {
	td := TableDef{Name: t.Name, Columns: make([]ColumnDef, 0, len(t.Columns))}
	for _, c := range t.Columns {
		td.Columns = append(td.Columns, c.Def(s))
	}
	for _, other := range s.Tables {
		for _, c := range other.Leaves {
			if c.Type == TypeLink && c.LinkTable == t.ID {
				td.RevLinks = append(td.RevLinks, RevLink{Table: other.Name, Column: c.Path})
			}
		}
	}
	sort.SliceStable(td.RevLinks, func(i, j int) bool {
		a, b := td.RevLinks[i], td.RevLinks[j]
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		return a.Column < b.Column
	})
	return td
}

// RecordIDError is CheckRecordID's error as an *Error, nil for a valid id.
func RecordIDError(id string) *Error {
	if len(id) == 0 || len(id) > 255 || !recordIDPattern.MatchString(id) {
		return Invalidf("record id [%s] is invalid: 1..255 letters, digits, '_', '-', '~' or ':'", id)
	}
	return nil
}

// IndexTable describes a table of the schema to the index package, with
// the tables its links reach, their meta columns named under meta (the
// engine's record metadata key); nil for no such table. Each is built on
// first use and kept (schemas are immutable once published); a schema
// serves one engine, so asking under another key starts afresh.
func (s *Schema) IndexTable(id uint32, meta string) *index.Table {
	s.itMu.Lock()
	defer s.itMu.Unlock()
	if meta != s.itMeta {
		s.itables, s.itMeta = nil, meta
	}
	return s.indexTable(id)
}

// indexTable is IndexTable under itMu. A table is kept before its columns
// are described, so that links that lead back to it find it.
func (s *Schema) indexTable(id uint32) *index.Table {
	if it, ok := s.itables[id]; ok {
		return it
	}
	t := s.TableByID(id)
	if t == nil {
		return nil
	}
	if s.itables == nil {
		s.itables = map[uint32]*index.Table{}
	}
	it := &index.Table{ID: t.ID, Name: t.Name, Columns: make(map[string]*index.Column, len(t.ByPath)), Meta: s.itMeta}
	s.itables[id] = it
	for path, c := range t.ByPath {
		ic := &index.Column{Path: path, Type: c.Type, Dimension: c.Dimension}
		if c.Type != TypeObject {
			ic.ID = c.ID
		}
		if c.Type == TypeLink {
			ic.Link = s.indexTable(c.LinkTable)
		}
		it.Columns[path] = ic
	}
	for _, c := range t.Leaves {
		it.Leaves = append(it.Leaves, it.Columns[c.Path])
	}
	return it
}
