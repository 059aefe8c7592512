package gen

import "github.com/coppice-db/coppice/engine"

// Table names of the dataset. Users must exist before the columns of docs
// are set, since docs.owner links to it.
const (
	UsersTable = "users"
	DocsTable  = "docs"
)

// UsersColumns returns the columns of the users table; the slice is the
// caller's.
func UsersColumns() []engine.ColumnDef {
	return []engine.ColumnDef{
		{Name: "name", Type: engine.TypeString},
		{Name: "email", Type: engine.TypeEmail},
	}
}

// DocsColumns returns the columns of the docs table; the slice is the
// caller's.
func DocsColumns() []engine.ColumnDef {
	return []engine.ColumnDef{
		{Name: "title", Type: engine.TypeString},
		{Name: "body", Type: engine.TypeText},
		{Name: "category", Type: engine.TypeString},
		{Name: "tags", Type: engine.TypeMultiple},
		{Name: "price", Type: engine.TypeFloat},
		{Name: "rating", Type: engine.TypeFloat},
		{Name: "views", Type: engine.TypeInt},
		{Name: "created_at", Type: engine.TypeDatetime},
		{Name: "active", Type: engine.TypeBool},
		{Name: "owner", Type: engine.TypeLink, Link: &engine.LinkDef{Table: UsersTable}},
	}
}
