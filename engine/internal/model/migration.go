package model

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// MigrationOp is one schema operation of a migration (compat-api.md §5.4):
// exactly one of its fields is set.
type MigrationOp struct {
	AddTable     *TableOp        `json:"addTable,omitempty"`
	RemoveTable  *TableOp        `json:"removeTable,omitempty"`
	RenameTable  *RenameTableOp  `json:"renameTable,omitempty"`
	AddColumn    *AddColumnOp    `json:"addColumn,omitempty"`
	RemoveColumn *RemoveColumnOp `json:"removeColumn,omitempty"`
	RenameColumn *RenameColumnOp `json:"renameColumn,omitempty"`
}

// TableOp names the table of addTable and removeTable.
type TableOp struct {
	Table string `json:"table"`
}

// RenameTableOp renames a table.
type RenameTableOp struct {
	OldName string `json:"oldName"`
	NewName string `json:"newName"`
}

// AddColumnOp adds a column to a table; a dotted name adds a sub-column to
// an object column.
type AddColumnOp struct {
	Table  string    `json:"table"`
	Column ColumnDef `json:"column"`
}

// RemoveColumnOp removes a column (a dotted path for a sub-column).
type RemoveColumnOp struct {
	Table  string `json:"table"`
	Column string `json:"column"`
}

// RenameColumnOp renames the column at the dotted path OldName; NewName is
// the new last element of the path.
type RenameColumnOp struct {
	Table   string `json:"table"`
	OldName string `json:"oldName"`
	NewName string `json:"newName"`
}

// Kind names the operation by its JSON key, or "" unless exactly one field
// is set.
func (op *MigrationOp) Kind() string {
	kind, n := "", 0
	for _, k := range []struct {
		set  bool
		name string
	}{
		{op.AddTable != nil, "addTable"}, {op.RemoveTable != nil, "removeTable"}, {op.RenameTable != nil, "renameTable"},
		{op.AddColumn != nil, "addColumn"}, {op.RemoveColumn != nil, "removeColumn"}, {op.RenameColumn != nil, "renameColumn"},
	} {
		if k.set {
			kind, n = k.name, n+1
		}
	}
	if n != 1 {
		return ""
	}
	return kind
}

// Migration is one recorded schema change of a branch.
type Migration struct {
	ID         string        `json:"id"`
	ParentID   string        `json:"parentID,omitempty"`
	Checksum   string        `json:"checksum"`
	Title      string        `json:"title,omitempty"`
	Message    string        `json:"message,omitempty"`
	CreatedAt  time.Time     `json:"createdAt"`
	Operations []MigrationOp `json:"operations"`
}

// SchemaChange is the result of a schema change.
type SchemaChange struct {
	MigrationID       string
	ParentMigrationID string
}

// MigrationChecksum is "1:" + SHA-256 of the canonical JSON of the parent id
// and the operations: the encoding of json.Marshal, whose field order and
// omitted empty fields are fixed by the types.
func MigrationChecksum(parent string, ops []MigrationOp) string {
	if ops == nil {
		ops = []MigrationOp{}
	}
	b, _ := json.Marshal(struct {
		ParentID   string        `json:"parentID"`
		Operations []MigrationOp `json:"operations"`
	}{parent, ops})
	sum := sha256.Sum256(b)
	return "1:" + hex.EncodeToString(sum[:])
}
