package index

import (
	"github.com/coppice-db/coppice/codec"
)

// ColumnType is the type of a column as the schema spells it (spec §2.3,
// plus json from the compat API). The engine's schema uses this type.
type ColumnType string

// The column types.
const (
	TypeBool      ColumnType = "bool"
	TypeInt       ColumnType = "int"
	TypeFloat     ColumnType = "float"
	TypeString    ColumnType = "string"
	TypeText      ColumnType = "text"
	TypeEmail     ColumnType = "email"
	TypeMultiple  ColumnType = "multiple"
	TypeLink      ColumnType = "link"
	TypeObject    ColumnType = "object"
	TypeDatetime  ColumnType = "datetime"
	TypeVector    ColumnType = "vector"
	TypeFile      ColumnType = "file"
	TypeFileArray ColumnType = "file[]"
	TypeJSON      ColumnType = "json"
)

// Indexed reports whether values of the type get an ordered posting index.
func (t ColumnType) Indexed() bool {
	switch t {
	case TypeBool, TypeInt, TypeFloat, TypeString, TypeEmail, TypeMultiple, TypeLink, TypeDatetime:
		return true
	}
	return false
}

// Column describes one column of a table to the filter parser and planner.
type Column struct {
	// Path is the dotted path from the table root ("address.city").
	Path string
	// ID is the leaf column id that data keys carry; 0 for object columns.
	ID   uint32
	Type ColumnType
	// Link is the target table of a link column.
	Link *Table
	// Dimension is the size of a vector column.
	Dimension int
}

// Table describes a table: its columns by dotted path, objects included.
// Link targets point at other Tables (possibly this one), so a Table graph
// may be cyclic.
type Table struct {
	ID      uint32
	Name    string
	Columns map[string]*Column
	// Leaves are the value columns (all but objects) in the schema's
	// order.
	Leaves []*Column
	// Meta is the record metadata key under which the table's meta
	// columns are named ("svc", or "xata" in compat mode): filters, sorts,
	// column lists and summaries read "<Meta>.createdAt" as the creation
	// time. "" for a table without meta columns (a summarize's results).
	Meta string
}

// Meta columns every table has. Their IDs are reserved: no user column
// uses them.
const (
	MetaIDColumn        uint32 = 1<<32 - 1 // "id"
	MetaVersionColumn   uint32 = 1<<32 - 2 // "<meta>.version"
	MetaCreatedAtColumn uint32 = 1<<32 - 3 // "<meta>.createdAt"
	MetaUpdatedAtColumn uint32 = 1<<32 - 4 // "<meta>.updatedAt"
)

// The meta columns as Columns. Their paths are relative to the record
// metadata key ("version" stands for "svc.version"), except "id".
var (
	IDColumn        = &Column{Path: "id", ID: MetaIDColumn, Type: TypeString}
	VersionColumn   = &Column{Path: "version", ID: MetaVersionColumn, Type: TypeInt}
	CreatedAtColumn = &Column{Path: "createdAt", ID: MetaCreatedAtColumn, Type: TypeDatetime}
	UpdatedAtColumn = &Column{Path: "updatedAt", ID: MetaUpdatedAtColumn, Type: TypeDatetime}
)

// Node is a node of a parsed filter: *And, *Or, *Not, *Pred or *Elements.
type Node interface{ node() }

// And matches rows matching every child; an empty And matches everything.
type And struct{ Children []Node }

// Or matches rows matching any child; an empty Or matches nothing.
type Or struct{ Children []Node }

// Not matches rows its child does not match.
type Not struct{ Child Node }

// Op is a predicate operator.
type Op uint8

// Predicate operators. Comparisons take Value; OpIn takes Values (an OR of
// equalities, $is with an array); string operators take a KindString Value.
const (
	OpEq Op = iota + 1
	OpIn
	OpLt
	OpLe
	OpGt
	OpGe
	OpContains
	OpIContains
	OpStartsWith
	OpEndsWith
	OpPattern
	OpIPattern
	// OpExists: the column is not null (for multiple: not null; an empty
	// array exists).
	OpExists
)

// Quantifier says how a predicate applies to the elements of a multiple
// column.
type Quantifier uint8

// Quantifiers of array operators.
const (
	// QuantNone: the column is a scalar (or the predicate is on the whole
	// column, such as $exists, or on one element inside Elements).
	QuantNone Quantifier = iota
	// QuantAny: some element matches ($includes, $includesAny, and plain
	// values on a multiple column).
	QuantAny
	// QuantAll: every element matches; null or empty arrays do not match.
	QuantAll
	// QuantNoElement: no element matches ($includesNone); null or empty
	// arrays match.
	QuantNoElement
)

// Pred is one condition on one column.
type Pred struct {
	// Links is the chain of link columns a filter goes through, outermost
	// first ({"owner.team.name": x} has Links [owner, team]); empty for a
	// column of the table itself. A row matches when its linked record
	// exists and matches.
	Links  []*Column
	Column *Column
	Op     Op
	Quant  Quantifier
	Value  codec.Value
	Values []codec.Value
	// Pattern is the compiled form of $pattern / $iPattern.
	Pattern *Pattern
	// JSONPath is the key path inside a json column ("col->a->b"); empty
	// otherwise.
	//
	// A json path predicate is false on a record without the path (a key
	// missing or JSON null), and so is its negation: the parser never puts
	// a Not above one, except in the guard form
	// And{Pred{OpExists, same path}, Not{Pred}}, and pushes negations of
	// larger filters down to such guards (Not{Or{a, b}} becomes And{not a,
	// not b}). OpExists on a path is plain two-valued. At the path, numbers
	// are KindFloat, strings KindString, booleans KindBool, and objects and
	// arrays their compact JSON text.
	JSONPath []string
}

// Elements is a condition on the elements of a multiple column that no
// quantified Pred expresses, such as "some element starts with a and ends
// with z" ({"$includes": {"$all": [...]}}) or "every element is x or
// starts with y": Quant says whether some element, every element of a
// non-empty list, or no element must match Cond. Cond is a tree of And,
// Or, Not and Preds that each test one element: their Column is the
// multiple column, their Quant QuantNone, and they have no Links (the
// Elements node has them).
type Elements struct {
	Links  []*Column
	Column *Column
	Quant  Quantifier
	Cond   Node
}

func (*And) node()      {}
func (*Or) node()       {}
func (*Not) node()      {}
func (*Pred) node()     {}
func (*Elements) node() {}
