package index

import (
	"errors"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
)

// Source is what the planner reads: one table of one branch, as of one
// consistent point in time. The engine implements it over a storage snapshot
// and the branch's lineage. Bitmaps returned are owned by the caller, which
// may modify them. A Source is used by one goroutine.
type Source interface {
	// Table describes the table.
	Table() *Table
	// Live returns the rows of the table.
	Live() (*roaring.Bitmap, error)
	// Exists returns the rows whose column is not null.
	Exists(c *Column) (*roaring.Bitmap, error)
	// Posting returns the rows whose indexed column holds v (for multiple
	// columns: contains v; for links: points at the record id v).
	Posting(c *Column, v codec.Value) (*roaring.Bitmap, error)
	// Scan calls fn for each distinct value of an indexed column within b,
	// in ascending order (descending when desc), with the rows holding it.
	// fn returns false to stop. Only rows of the table's live set appear.
	// On IDColumn it walks record ids (Lo and Hi are exclusive) or returns
	// ErrNoOrderedIndex when the source has no ordered id index.
	Scan(c *Column, b Bounds, desc bool, fn func(v codec.Value, rows *roaring.Bitmap) bool) error
	// Values returns the in-memory values of a column by row, or nil when
	// the column has no value store (text, json, vector, file columns).
	Values(c *Column) (ColumnValues, error)
	// Record reads a row; ok is false when the row does not exist.
	Record(row uint32, rec *codec.Record) (ok bool, err error)
	// Rows maps record ids to rows; missing ids are skipped.
	Rows(ids []string) (*roaring.Bitmap, error)
	// Linked returns the Source of a link column's target table, at the
	// same point in time.
	Linked(c *Column) (Source, error)
}

// ErrNoOrderedIndex is returned by a Scan the source cannot serve from an
// ordered index; the caller orders another way.
var ErrNoOrderedIndex = errors.New("index: no ordered index for this scan")

// Bounds limit a Scan. A nil Lo or Hi is unbounded on that side.
type Bounds struct {
	Lo, Hi         *codec.Value
	LoIncl, HiIncl bool
	// Prefix, when set, limits a string column to values starting with it.
	Prefix *string
}

// ColumnValues are the values of one column of every row, kept in memory
// so that range predicates, $contains and sorts scan memory instead of
// storage. Implementations are read-only while a Source is in use.
type ColumnValues interface {
	// Get returns the value of row (KindNull when null or no such row).
	Get(row uint32) codec.Value
}
