package engine

import (
	"regexp"
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
	return TableDef{}, notFoundf("table [%s] not found", name)
}

// column is a stored column: the public definition plus the ids that data keys
// carry. Object columns hold sub-columns; only leaves hold values.
type column struct {
	ID         uint32     `json:"id"`
	Name       string     `json:"name"`
	Type       ColumnType `json:"type"`
	LinkTable  uint32     `json:"linkTable,omitempty"`
	Dimension  int        `json:"dimension,omitempty"`
	FilePublic *bool      `json:"filePublic,omitempty"`
	NotNull    bool       `json:"notNull,omitempty"`
	Unique     bool       `json:"unique,omitempty"`
	Default    *string    `json:"default,omitempty"`
	Columns    []*column  `json:"columns,omitempty"`
	path       string     // dotted path from the table root
	defaultVal any        // parsed Default; nil for none
	defaultNow bool       // Default is "now" on a datetime column
}

// table is a stored table of a branch's schema.
type table struct {
	ID      uint32    `json:"id"`
	Name    string    `json:"name"`
	Columns []*column `json:"columns"`
	NextCol uint32    `json:"nextCol"`

	byPath map[string]*column // every column, objects included, by dotted path
	leaves []*column          // value-holding columns in path order
	byID   map[uint32]*column // leaves by id
}

// schema is the stored schema of a branch. It is immutable once published;
// changes build a new one.
type schema struct {
	Tables []*table `json:"tables"`
	byName map[string]*table
	byID   map[uint32]*table

	itOnce  sync.Once
	itables map[uint32]*index.Table
}

var (
	namePattern     = regexp.MustCompile(`^[a-zA-Z0-9_\-~]+$`)
	recordIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_\-~:]+$`)
)

// checkName enforces the naming rule of spec §2.1 for branch, database,
// table and column names; what names the kind in the message.
func checkName(what, name string) error {
	if len(name) == 0 {
		return invalidf("%s name must not be empty", what)
	}
	if len(name) > 255 {
		return invalidf("%s name [%.20s…] is longer than 255 characters", what, name)
	}
	if !namePattern.MatchString(name) {
		return invalidf("%s name [%s] is invalid: use only letters, digits, '_', '-' and '~'", what, name)
	}
	return nil
}

// CheckRecordID enforces the RecordID rule of spec §2.1.
func CheckRecordID(id string) error {
	if err := recordIDError(id); err != nil {
		return err
	}
	return nil
}

// index builds the lookup maps of a schema after decoding or a change.
func (s *schema) index() {
	s.byName = make(map[string]*table, len(s.Tables))
	s.byID = make(map[uint32]*table, len(s.Tables))
	for _, t := range s.Tables {
		t.index()
		s.byName[t.Name] = t
		s.byID[t.ID] = t
	}
}

func (t *table) index() {
	t.byPath = map[string]*column{}
	t.byID = map[uint32]*column{}
	t.leaves = t.leaves[:0]
	var walk func(prefix string, cols []*column)
	walk = func(prefix string, cols []*column) {
		for _, c := range cols {
			c.path = prefix + c.Name
			c.parseDefault()
			t.byPath[c.path] = c
			if c.Type == TypeObject {
				walk(c.path+".", c.Columns)
				continue
			}
			t.byID[c.ID] = c
			t.leaves = append(t.leaves, c)
		}
	}
	walk("", t.Columns)
}

// parseDefault parses the stored default value; it was validated when the
// column was created.
func (c *column) parseDefault() {
	c.defaultVal, c.defaultNow = nil, false
	if c.Default == nil {
		return
	}
	if c.Type == TypeDatetime && *c.Default == "now" {
		c.defaultNow = true
		return
	}
	v, err := parseDefault(c.Type, *c.Default)
	if err == nil {
		c.defaultVal = v
	}
}

// parseDefault turns a schema defaultValue string into a JSON-like input value.
func parseDefault(t ColumnType, s string) (any, error) {
	switch t {
	case TypeInt:
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return nil, invalidf("default value [%s] is not an int", s)
		}
		return jsonNumber(s), nil
	case TypeFloat:
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return nil, invalidf("default value [%s] is not a float", s)
		}
		return jsonNumber(s), nil
	case TypeBool:
		switch s {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, invalidf("default value [%s] is not a bool", s)
	case TypeString, TypeText:
		return s, nil
	case TypeEmail:
		if !validEmail(s) {
			return nil, invalidf("default value [%s] is not an email address", s)
		}
		return s, nil
	case TypeDatetime:
		if s == "now" {
			return s, nil
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, invalidf("default value [%s] is not an RFC 3339 datetime", s)
		}
		return s, nil
	}
	return nil, invalidf("column type %s cannot have a default value", t)
}

// clone returns a deep copy that can be changed without affecting readers of
// the original.
func (s *schema) clone() *schema {
	n := &schema{Tables: make([]*table, len(s.Tables))}
	for i, t := range s.Tables {
		nt := &table{ID: t.ID, Name: t.Name, NextCol: t.NextCol, Columns: cloneColumns(t.Columns)}
		n.Tables[i] = nt
	}
	n.index()
	return n
}

func cloneColumns(cols []*column) []*column {
	out := make([]*column, len(cols))
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

// table returns the table with the given name or a not-found error.
func (s *schema) table(name string) (*table, error) {
	t := s.byName[name]
	if t == nil {
		return nil, notFoundf("table [%s] not found", name)
	}
	return t, nil
}

// newColumn validates a public column definition and turns it into a stored
// column, allocating ids from t.NextCol. Link targets resolve against s.
func (s *schema) newColumn(t *table, def ColumnDef, prefix string) (*column, error) {
	if strings.HasPrefix(def.Name, "$") {
		return nil, invalidf("column name [%s] must not start with '$'", def.Name)
	}
	if err := checkName("column", def.Name); err != nil {
		return nil, err
	}
	if prefix == "" && (def.Name == "id" || def.Name == "svc" || def.Name == "xata") {
		return nil, invalidf("column name [%s] is reserved", def.Name)
	}
	if def.Type == "fileMap" {
		def.Type = TypeFileArray
	}
	c := &column{Name: def.Name, Type: def.Type, NotNull: def.NotNull, Unique: def.Unique}
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
			return nil, invalidf("column [%s]: type %s takes no settings", prefix+def.Name, def.Type)
		}
	case TypeLink:
		if def.Link == nil || def.Link.Table == "" || settings != 1 {
			return nil, invalidf("column [%s]: a link column needs link.table", prefix+def.Name)
		}
		target := s.byName[def.Link.Table]
		if target == nil && def.Link.Table != t.Name {
			return nil, invalidf("column [%s]: link target table [%s] not found", prefix+def.Name, def.Link.Table)
		}
		if target == nil {
			target = t
		}
		c.LinkTable = target.ID
	case TypeVector:
		if def.Vector == nil || settings != 1 {
			return nil, invalidf("column [%s]: a vector column needs vector.dimension", prefix+def.Name)
		}
		if def.Vector.Dimension < 2 || def.Vector.Dimension > 10000 {
			return nil, invalidf("column [%s]: vector dimension must be between 2 and 10000", prefix+def.Name)
		}
		c.Dimension = def.Vector.Dimension
	case TypeFile, TypeFileArray:
		fd := def.File
		if def.Type == TypeFileArray {
			fd = def.FileArray
			if def.File != nil {
				return nil, invalidf("column [%s]: a file[] column takes file[] settings", prefix+def.Name)
			}
		} else if def.FileArray != nil {
			return nil, invalidf("column [%s]: a file column takes file settings", prefix+def.Name)
		}
		if fd != nil {
			c.FilePublic = fd.DefaultPublicAccess
		}
	case TypeObject:
		if settings > 0 {
			return nil, invalidf("column [%s]: an object column takes only columns", prefix+def.Name)
		}
		if def.NotNull || def.Unique || def.DefaultValue != nil {
			return nil, invalidf("column [%s]: an object column cannot be notNull, unique or have a default", prefix+def.Name)
		}
		seen := map[string]bool{}
		for _, sub := range def.Columns {
			if seen[sub.Name] {
				return nil, invalidf("column [%s.%s] is defined twice", prefix+def.Name, sub.Name)
			}
			seen[sub.Name] = true
			sc, err := s.newColumn(t, sub, prefix+def.Name+".")
			if err != nil {
				return nil, err
			}
			c.Columns = append(c.Columns, sc)
		}
		return c, nil
	case "":
		return nil, invalidf("column [%s]: type is required", prefix+def.Name)
	default:
		return nil, invalidf("column [%s]: unknown type [%s]", prefix+def.Name, def.Type)
	}
	if def.Unique {
		switch def.Type {
		case TypeText, TypeJSON, TypeVector, TypeFile, TypeFileArray, TypeMultiple:
			return nil, invalidf("column [%s]: type %s cannot be unique", prefix+def.Name, def.Type)
		}
	}
	if def.DefaultValue != nil {
		if _, err := parseDefault(def.Type, *def.DefaultValue); err != nil {
			return nil, invalidf("column [%s]: %s", prefix+def.Name, err.Error())
		}
		d := *def.DefaultValue
		c.Default = &d
	}
	t.NextCol++
	c.ID = t.NextCol
	return c, nil
}

// def returns the public definition of a stored column.
func (c *column) def(s *schema) ColumnDef {
	d := ColumnDef{Name: c.Name, Type: c.Type, NotNull: c.NotNull, Unique: c.Unique}
	if c.Default != nil {
		v := *c.Default
		d.DefaultValue = &v
	}
	switch c.Type {
	case TypeLink:
		name := ""
		if lt := s.byID[c.LinkTable]; lt != nil {
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
			d.Columns = append(d.Columns, sc.def(s))
		}
	}
	return d
}

// public returns the public schema, with revLinks in the wire form of
// compat-api.md §5.3.
func (s *schema) public() SchemaDef {
	out := SchemaDef{Tables: make([]TableDef, 0, len(s.Tables))}
	for _, t := range s.Tables {
		out.Tables = append(out.Tables, s.tableDef(t))
	}
	return out
}

func (s *schema) tableDef(t *table) TableDef {
	td := TableDef{Name: t.Name, Columns: make([]ColumnDef, 0, len(t.Columns))}
	for _, c := range t.Columns {
		td.Columns = append(td.Columns, c.def(s))
	}
	for _, other := range s.Tables {
		for _, c := range other.leaves {
			if c.Type == TypeLink && c.LinkTable == t.ID {
				td.RevLinks = append(td.RevLinks, RevLink{Table: other.Name, Column: c.path})
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

// recordIDError is CheckRecordID's error as an *Error, nil for a valid id.
func recordIDError(id string) *Error {
	if len(id) == 0 || len(id) > 255 || !recordIDPattern.MatchString(id) {
		return invalidf("record id [%s] is invalid: 1..255 letters, digits, '_', '-', '~' or ':'", id)
	}
	return nil
}
