package engine

import (
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Schema is the schema of an engine's branches: its tables and columns,
// changed one operation at a time or by migrations (lists of operations,
// compared, previewed, applied or pushed), and its history. Every change
// is one command, recorded as a migration of the branch.
type Schema struct {
	e *Engine
}

// Schema returns the engine's schema operations.
func (e *Engine) Schema() *Schema { return &e.schema }

// changeSchema applies a schema command to the branch ref names and
// returns the change: it resolves the migration's time and, unless the
// command has one, its id.
func (e *Engine) changeSchema(ref Ref, cmd apply.SchemaCommand) (SchemaChange, error) {
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return SchemaChange{}, err
	}
	h := cmd.Header()
	h.Branch, h.Now = ref.Branch, e.now()
	if h.ID == "" {
		h.ID = e.ids.Next("mig_", h.Now)
	}
	res, err := e.apply(d, cmd)
	if err != nil {
		return SchemaChange{}, err
	}
	return res.(SchemaChange), nil
}

// applyOne records one operation as a migration of its own.
func (e *Engine) applyOne(ref Ref, op MigrationOp) (SchemaChange, error) {
	return e.changeSchema(ref, &apply.SchemaOp{Op: op})
}

// CreateTable adds an empty table to a branch; a name that exists (in any
// letter case) is CodeAlreadyExists.
func (sc *Schema) CreateTable(ref Ref, name string) (SchemaChange, error) {
	e := sc.e
	return e.applyOne(ref, MigrationOp{AddTable: &TableOp{Table: name}})
}

// DeleteTable removes a table from a branch. Its rows stay readable by
// branches forked earlier; table ids are never reused.
func (sc *Schema) DeleteTable(ref Ref, name string) (SchemaChange, error) {
	e := sc.e
	return e.applyOne(ref, MigrationOp{RemoveTable: &TableOp{Table: name}})
}

// RenameTable renames a table; keys carry ids, so no data moves.
func (sc *Schema) RenameTable(ref Ref, name, newName string) (SchemaChange, error) {
	e := sc.e
	return e.applyOne(ref, MigrationOp{RenameTable: &RenameTableOp{OldName: name, NewName: newName}})
}

func (e *Engine) branchSchema(ref Ref) (*model.Schema, error) {
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return nil, err
	}
	b, err := d.State().Branch(ref.Branch)
	if err != nil {
		return nil, err
	}
	return b.Schema, nil
}

// AddColumn adds a column (with its sub-columns) to a table.
func (sc *Schema) AddColumn(ref Ref, tableName string, def ColumnDef) (SchemaChange, error) {
	e := sc.e
	return e.applyOne(ref, MigrationOp{AddColumn: &AddColumnOp{Table: tableName, Column: def}})
}

// DeleteColumn removes a column (an object column with all its sub-columns).
// Stored values of the column are ignored from now on.
func (sc *Schema) DeleteColumn(ref Ref, tableName, path string) (SchemaChange, error) {
	e := sc.e
	return e.applyOne(ref, MigrationOp{RemoveColumn: &RemoveColumnOp{Table: tableName, Column: path}})
}

// RenameColumn renames a column (the last element of a dotted path).
func (sc *Schema) RenameColumn(ref Ref, tableName, path, newName string) (SchemaChange, error) {
	e := sc.e
	return e.applyOne(ref, MigrationOp{RenameColumn: &RenameColumnOp{Table: tableName, OldName: path, NewName: newName}})
}

// SetTableColumns replaces a table's column set: columns kept with the same
// definition keep their data, new ones are added, unlisted ones removed. A
// changed definition on a non-empty table is a conflict.
func (sc *Schema) SetTableColumns(ref Ref, tableName string, defs []ColumnDef) (SchemaChange, error) {
	e := sc.e
	return e.changeSchema(ref, &apply.SetTableColumns{Table: tableName, Columns: defs})
}
