package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
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

// kind names the operation by its JSON key, or "" unless exactly one field
// is set.
func (op *MigrationOp) kind() string {
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

// schemaCommand is a command that changes a branch's schema, recorded as
// a migration.
type schemaCommand interface {
	dbCommand
	header() *schemaHeader
}

// schemaHeader is what every schema command holds: the branch, and the
// migration the change is recorded as, with its id and time resolved.
type schemaHeader struct {
	Branch string `json:"branch"`
	ID     string `json:"id"`
	// Parent, when set, is the head the branch must be at.
	Parent  *string   `json:"parent,omitempty"`
	Title   string    `json:"title,omitempty"`
	Message string    `json:"message,omitempty"`
	Now     time.Time `json:"now"`
}

func (h *schemaHeader) header() *schemaHeader { return h }

// changeSchema applies a schema command to the branch ref names and
// returns the change: it resolves the migration's time and, unless the
// command has one, its id.
func (e *Engine) changeSchema(ref Ref, cmd schemaCommand) (SchemaChange, error) {
	_, d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return SchemaChange{}, err
	}
	h := cmd.header()
	h.Branch, h.Now = ref.Branch, e.now()
	if h.ID == "" {
		h.ID = e.ids.next("mig_", h.Now)
	}
	res, err := e.apply(d, cmd)
	if err != nil {
		return SchemaChange{}, err
	}
	return res.(SchemaChange), nil
}

// change applies edit to a copy of the branch's schema and records the
// result as the migration h describes: it bumps the branch version, moves
// its head and backfills what the edit asks. edit returns the operations
// it applied. Everything is one command: when edit fails, nothing
// changes. The result is the SchemaChange.
func (h *schemaHeader) change(tx *dbTx, edit func(b *branch, s *schema) ([]MigrationOp, error)) (any, error) {
	b, err := tx.st.branch(h.Branch)
	if err != nil {
		return nil, err
	}
	if h.Parent != nil && *h.Parent != b.LastMigrationID {
		return nil, errNotHead(*h.Parent, b)
	}
	s := b.Schema.clone()
	ops, err := edit(b, s)
	if err != nil {
		return nil, err
	}
	s.index()
	m := Migration{ID: h.ID, ParentID: b.LastMigrationID, Title: h.Title, Message: h.Message, CreatedAt: h.Now, Operations: ops}
	m.Checksum = migrationChecksum(m.ParentID, ops)
	v, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	mk := codec.MetaKey(tx.d.id, codec.MetaMigration, codec.AppendU64(codec.AppendU32(nil, b.ID), tx.seq))
	if err := tx.batch.Set(mk, v, nil); err != nil {
		return nil, err
	}
	nb := *b
	nb.Schema = s
	nb.Version++
	nb.LastMigrationID = h.ID
	if err := tx.putBranch(&nb); err != nil {
		return nil, err
	}
	if err := tx.backfill(&nb, h.Now); err != nil {
		return nil, err
	}
	return SchemaChange{MigrationID: h.ID, ParentMigrationID: b.LastMigrationID}, nil
}

// columnRef names a column of a table by ids, which renames keep.
type columnRef struct{ table, column uint32 }

// backfill gives every live record of b without a value the default value
// of each notNull column this command added to a table that had records,
// or made notNull, unless a later operation of the migration removed it
// again. The records are updated like any other (version and updatedAt
// move), in this command's batch.
func (tx *dbTx) backfill(b *branch, now time.Time) error {
	for _, ref := range tx.backfills {
		t := b.Schema.byID[ref.table]
		if t == nil {
			continue
		}
		c := t.byID[ref.column]
		if c == nil || c.Default == nil {
			continue
		}
		v := c.defaultVal
		if c.defaultNow {
			v = now.Format(time.RFC3339Nano)
		}
		missing, err := tx.rowsWithout(b, t, c.ID)
		if err != nil {
			return err
		}
		w := &writer{tx: tx, br: b, now: now}
		var rec codec.Record
		for it := missing.Iterator(); it.HasNext(); {
			_, ok, err := readRow(tx.batch, tx.d.id, b.Lineage, t.ID, it.Next(), &rec)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			op := Op{Kind: OpUpdate, Table: t.Name, ID: rec.ID, Values: nestedValue(c.path, v), MissingNotFound: true}
			if _, err := w.apply(&op); err != nil {
				return err
			}
		}
	}
	tx.backfills = nil
	return nil
}

// nestedValue is the record body that sets the column at a dotted path.
func nestedValue(path string, v any) map[string]any {
	parts := strings.Split(path, ".")
	out := map[string]any{parts[len(parts)-1]: v}
	for i := len(parts) - 2; i >= 0; i-- {
		out = map[string]any{parts[i]: out}
	}
	return out
}

// errNotHead is the answer to a change made against a migration that is
// not the branch's head.
func errNotHead(parent string, b *branch) error {
	head := b.LastMigrationID
	if head == "" {
		head = "none"
	}
	return invalidf("migration [%s] is not the head of branch [%s]: the head is [%s]", parent, b.Name, head)
}

// migrationChecksum is "1:" + SHA-256 of the canonical JSON of the parent id
// and the operations: the encoding of json.Marshal, whose field order and
// omitted empty fields are fixed by the types.
func migrationChecksum(parent string, ops []MigrationOp) string {
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

// applyOne records one operation as a migration of its own.
func (e *Engine) applyOne(ref Ref, op MigrationOp) (SchemaChange, error) {
	return e.changeSchema(ref, &schemaOp{Op: op})
}

// schemaOp applies one operation as it applies on its own endpoint (see
// applyOp), recorded as a migration.
type schemaOp struct {
	schemaHeader
	Op MigrationOp `json:"op"`
}

func (c *schemaOp) apply(tx *dbTx) (any, error) {
	return c.change(tx, func(b *branch, s *schema) ([]MigrationOp, error) {
		if err := tx.applyOp(b, s, c.Op); err != nil {
			return nil, err
		}
		return []MigrationOp{c.Op}, nil
	})
}

// applyOp applies one operation to s, the schema of branch b being changed
// by tx, and re-indexes s so that the next operation sees the change.
func (tx *dbTx) applyOp(b *branch, s *schema, op MigrationOp) error {
	var err error
	switch op.kind() {
	case "addTable":
		err = tx.addTable(s, op.AddTable.Table)
	case "removeTable":
		err = s.removeTable(op.RemoveTable.Table)
	case "renameTable":
		err = s.renameTable(op.RenameTable.OldName, op.RenameTable.NewName)
	case "addColumn":
		err = tx.addColumn(b, s, op.AddColumn.Table, op.AddColumn.Column)
	case "removeColumn":
		err = s.removeColumn(op.RemoveColumn.Table, op.RemoveColumn.Column)
	case "renameColumn":
		err = s.renameColumn(op.RenameColumn.Table, op.RenameColumn.OldName, op.RenameColumn.NewName)
	default:
		err = invalidf("an operation must have exactly one of addTable, removeTable, renameTable, addColumn, removeColumn, renameColumn")
	}
	if err != nil {
		return err
	}
	s.index()
	return nil
}

// CreateTable adds an empty table to a branch; a name that exists (in any
// letter case) is CodeAlreadyExists.
func (e *Engine) CreateTable(ref Ref, name string) (SchemaChange, error) {
	return e.applyOne(ref, MigrationOp{AddTable: &TableOp{Table: name}})
}

func (tx *dbTx) addTable(s *schema, name string) error {
	if err := checkName("table", name); err != nil {
		return err
	}
	for _, t := range s.Tables {
		if strings.EqualFold(t.Name, name) {
			return Errorf(CodeAlreadyExists, "table [%s] already exists", name)
		}
	}
	s.Tables = append(s.Tables, &table{ID: tx.allocTable(), Name: name, Columns: []*column{}})
	return nil
}

// DeleteTable removes a table from a branch. Its rows stay readable by
// branches forked earlier; table ids are never reused.
func (e *Engine) DeleteTable(ref Ref, name string) (SchemaChange, error) {
	return e.applyOne(ref, MigrationOp{RemoveTable: &TableOp{Table: name}})
}

func (s *schema) removeTable(name string) error {
	t, err := s.table(name)
	if err != nil {
		return err
	}
	for _, other := range s.Tables {
		if other == t {
			continue
		}
		for _, c := range other.leaves {
			if c.Type == TypeLink && c.LinkTable == t.ID {
				return invalidf("table [%s] is linked from column [%s] of table [%s]", name, c.path, other.Name)
			}
		}
	}
	kept := s.Tables[:0]
	for _, x := range s.Tables {
		if x != t {
			kept = append(kept, x)
		}
	}
	s.Tables = kept
	return nil
}

// RenameTable renames a table; keys carry ids, so no data moves.
func (e *Engine) RenameTable(ref Ref, name, newName string) (SchemaChange, error) {
	return e.applyOne(ref, MigrationOp{RenameTable: &RenameTableOp{OldName: name, NewName: newName}})
}

func (s *schema) renameTable(name, newName string) error {
	if err := checkName("table", newName); err != nil {
		return err
	}
	t, err := s.table(name)
	if err != nil {
		return err
	}
	for _, o := range s.Tables {
		if o != t && strings.EqualFold(o.Name, newName) {
			return Errorf(CodeAlreadyExists, "table [%s] already exists", newName)
		}
	}
	t.Name = newName
	return nil
}

func (e *Engine) branchSchema(ref Ref) (*schema, error) {
	_, d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return nil, err
	}
	b, err := d.state.Load().branch(ref.Branch)
	if err != nil {
		return nil, err
	}
	return b.Schema, nil
}

// rowsWithout returns the live rows of table t in branch b that hold no
// value in the column with id col.
func (tx *dbTx) rowsWithout(b *branch, t *table, col uint32) (*roaring.Bitmap, error) {
	live, err := readBitmap(tx.batch, tx.d.id, b.Lineage, t.ID, codec.LiveBitmapID(), tx.pending)
	if err != nil {
		return nil, err
	}
	has, err := readBitmap(tx.batch, tx.d.id, b.Lineage, t.ID, codec.ExistsBitmapID(col), tx.pending)
	if err != nil {
		return nil, err
	}
	live.AndNot(has)
	return live, nil
}

// tableIsEmpty reports whether a table has no live rows in the branch; a
// nil branch, whose schema is changed without records, has none.
func (tx *dbTx) tableIsEmpty(b *branch, t *table) (bool, error) {
	if b == nil {
		return true, nil
	}
	live, err := readBitmap(tx.batch, tx.d.id, b.Lineage, t.ID, codec.LiveBitmapID(), tx.pending)
	if err != nil {
		return false, err
	}
	return live.IsEmpty(), nil
}

// AddColumn adds a column (with its sub-columns) to a table.
func (e *Engine) AddColumn(ref Ref, tableName string, def ColumnDef) (SchemaChange, error) {
	return e.applyOne(ref, MigrationOp{AddColumn: &AddColumnOp{Table: tableName, Column: def}})
}

func (tx *dbTx) addColumn(b *branch, s *schema, tableName string, def ColumnDef) error {
	t, err := s.table(tableName)
	if err != nil {
		return err
	}
	parent, prefix, name := t.Columns, "", def.Name
	var obj *column
	if i := strings.LastIndexByte(def.Name, '.'); i >= 0 {
		obj = t.byPath[def.Name[:i]]
		if obj == nil || obj.Type != TypeObject {
			return invalidf("column [%s]: object column [%s] not found", def.Name, def.Name[:i])
		}
		parent, prefix, name = obj.Columns, def.Name[:i+1], def.Name[i+1:]
	}
	for _, c := range parent {
		if c.Name == name {
			return invalidf("column [%s] already exists", def.Name)
		}
	}
	empty := true
	if def.NotNull {
		if empty, err = tx.tableIsEmpty(b, t); err != nil {
			return err
		}
		if !empty && def.DefaultValue == nil {
			return invalidf("column [%s]: a notNull column on a non-empty table needs a defaultValue", def.Name)
		}
	}
	nd := def
	nd.Name = name
	c, err := s.newColumn(t, nd, prefix)
	if err != nil {
		return err
	}
	if !empty {
		// The records already there get the default, or they would break
		// the constraint (backfill, once the migration's schema is known).
		tx.backfills = append(tx.backfills, columnRef{table: t.ID, column: c.ID})
	}
	if obj != nil {
		obj.Columns = append(obj.Columns, c)
	} else {
		t.Columns = append(t.Columns, c)
	}
	return nil
}

// DeleteColumn removes a column (an object column with all its sub-columns).
// Stored values of the column are ignored from now on.
func (e *Engine) DeleteColumn(ref Ref, tableName, path string) (SchemaChange, error) {
	return e.applyOne(ref, MigrationOp{RemoveColumn: &RemoveColumnOp{Table: tableName, Column: path}})
}

func (s *schema) removeColumn(tableName, path string) error {
	t, err := s.table(tableName)
	if err != nil {
		return err
	}
	if t.byPath[path] == nil {
		return notFoundf("column [%s] not found", path)
	}
	removeColumn(&t.Columns, "", path)
	return nil
}

func removeColumn(cols *[]*column, prefix, path string) bool {
	for i, c := range *cols {
		p := prefix + c.Name
		if p == path {
			*cols = append((*cols)[:i:i], (*cols)[i+1:]...)
			return true
		}
		if c.Type == TypeObject && strings.HasPrefix(path, p+".") {
			return removeColumn(&c.Columns, p+".", path)
		}
	}
	return false
}

// RenameColumn renames a column (the last element of a dotted path).
func (e *Engine) RenameColumn(ref Ref, tableName, path, newName string) (SchemaChange, error) {
	return e.applyOne(ref, MigrationOp{RenameColumn: &RenameColumnOp{Table: tableName, OldName: path, NewName: newName}})
}

func (s *schema) renameColumn(tableName, path, newName string) error {
	if err := checkName("column", newName); err != nil {
		return err
	}
	t, err := s.table(tableName)
	if err != nil {
		return err
	}
	c := t.byPath[path]
	if c == nil {
		return notFoundf("column [%s] not found", path)
	}
	sibling := path[:len(path)-len(c.Name)] + newName
	if t.byPath[sibling] != nil {
		return invalidf("column [%s] already exists", sibling)
	}
	if !strings.Contains(path, ".") && (newName == "id" || newName == "svc" || newName == "xata") {
		return invalidf("column name [%s] is reserved", newName)
	}
	c.Name = newName
	return nil
}

// SetTableColumns replaces a table's column set: columns kept with the same
// definition keep their data, new ones are added, unlisted ones removed. A
// changed definition on a non-empty table is a conflict.
func (e *Engine) SetTableColumns(ref Ref, tableName string, defs []ColumnDef) (SchemaChange, error) {
	return e.changeSchema(ref, &setTableColumns{Table: tableName, Columns: defs})
}

// setTableColumns replaces a table's column set (see SetTableColumns),
// recorded as the operations that do it.
type setTableColumns struct {
	schemaHeader
	Table   string      `json:"table"`
	Columns []ColumnDef `json:"columns"`
}

func (c *setTableColumns) apply(tx *dbTx) (any, error) {
	tableName, defs := c.Table, c.Columns
	return c.change(tx, func(b *branch, s *schema) ([]MigrationOp, error) {
		t, err := s.table(tableName)
		if err != nil {
			return nil, err
		}
		old := map[string]*column{}
		for _, c := range t.Columns {
			old[c.Name] = c
		}
		var ops []MigrationOp
		var cols []*column
		seen := map[string]bool{}
		var empty *bool
		for _, def := range defs {
			if seen[def.Name] {
				return nil, invalidf("column [%s] is defined twice", def.Name)
			}
			seen[def.Name] = true
			if oc := old[def.Name]; oc != nil {
				cur, _ := json.Marshal(oc.def(s))
				want, _ := json.Marshal(def)
				if string(cur) == string(want) {
					cols = append(cols, oc)
					continue
				}
				if empty == nil {
					e, err := tx.tableIsEmpty(b, t)
					if err != nil {
						return nil, err
					}
					empty = &e
				}
				if !*empty {
					return nil, Errorf(CodeConflict, "column [%s]: changing the definition of a column of a non-empty table is not supported", def.Name)
				}
				ops = append(ops, MigrationOp{RemoveColumn: &RemoveColumnOp{Table: tableName, Column: def.Name}})
			}
			c, err := s.newColumn(t, def, "")
			if err != nil {
				return nil, err
			}
			cols = append(cols, c)
			ops = append(ops, MigrationOp{AddColumn: &AddColumnOp{Table: tableName, Column: def}})
		}
		for _, c := range t.Columns {
			if !seen[c.Name] {
				ops = append(ops, MigrationOp{RemoveColumn: &RemoveColumnOp{Table: tableName, Column: c.Name}})
			}
		}
		t.Columns = cols
		return ops, nil
	})
}
