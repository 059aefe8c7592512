package apply

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// SchemaCommand is a command that changes a branch's schema, recorded as
// a migration.
type SchemaCommand interface {
	DBCommand
	Header() *SchemaHeader
}

// SchemaHeader is what every schema command holds: the branch, and the
// migration the change is recorded as, with its id and time resolved.
type SchemaHeader struct {
	Branch string `json:"branch"`
	ID     string `json:"id"`
	// Parent, when set, is the head the branch must be at.
	Parent  *string   `json:"parent,omitempty"`
	Title   string    `json:"title,omitempty"`
	Message string    `json:"message,omitempty"`
	Now     time.Time `json:"now"`
}

// Header returns the header, for callers that resolve its id and time.
func (h *SchemaHeader) Header() *SchemaHeader { return h }

// change applies edit to a copy of the branch's schema and records the
// result as the migration h describes: it bumps the branch version, moves
// its head and backfills what the edit asks. edit returns the operations
// it applied. Everything is one command: when edit fails, nothing
// changes. The result is the model.SchemaChange.
func (h *SchemaHeader) change(tx *Tx, edit func(b *model.Branch, s *model.Schema) ([]model.MigrationOp, error)) (any, error) {
	b, err := tx.st.Branch(h.Branch)
	if err != nil {
		return nil, err
	}
	if h.Parent != nil && *h.Parent != b.LastMigrationID {
		return nil, NotHead(*h.Parent, b)
	}
	s := b.Schema.Clone()
	ops, err := edit(b, s)
	if err != nil {
		return nil, err
	}
	s.Index()
	m := model.Migration{ID: h.ID, ParentID: b.LastMigrationID, Title: h.Title, Message: h.Message, CreatedAt: h.Now, Operations: ops}
	m.Checksum = model.MigrationChecksum(m.ParentID, ops)
	v, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	mk := codec.MetaKey(tx.d.ID, codec.MetaMigration, codec.AppendU64(codec.AppendU32(nil, b.ID), tx.seq))
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
	return model.SchemaChange{MigrationID: h.ID, ParentMigrationID: b.LastMigrationID}, nil
}

// columnRef names a column of a table by ids, which renames keep.
type columnRef struct{ table, column uint32 }

// backfill gives every live record of b without a value the default value
// of each notNull column this command added to a table that had records,
// or made notNull, unless a later operation of the migration removed it
// again. The records are updated like any other (version and updatedAt
// move), in this command's batch.
func (tx *Tx) backfill(b *model.Branch, now time.Time) error {
	for _, ref := range tx.backfills {
		t := b.Schema.ByID[ref.table]
		if t == nil {
			continue
		}
		c := t.ByID[ref.column]
		if c == nil || c.Default == nil {
			continue
		}
		v := c.DefaultVal
		if c.DefaultNow {
			v = now.Format(time.RFC3339Nano)
		}
		missing, err := tx.rowsWithout(b, t, c.ID)
		if err != nil {
			return err
		}
		w := &writer{tx: tx, br: b, now: now}
		var rec codec.Record
		for it := missing.Iterator(); it.HasNext(); {
			_, ok, err := layers.ReadRow(tx.batch, tx.d.ID, b.Lineage, t.ID, it.Next(), &rec)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			op := model.Op{Kind: model.OpUpdate, Table: t.Name, ID: rec.ID, Values: nestedValue(c.Path, v), MissingNotFound: true}
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

// NotHead is the answer to a change made against a migration that is
// not the branch's head.
func NotHead(parent string, b *model.Branch) error {
	head := b.LastMigrationID
	if head == "" {
		head = "none"
	}
	return model.Invalidf("migration [%s] is not the head of branch [%s]: the head is [%s]", parent, b.Name, head)
}

// SchemaOp applies one operation as it applies on its own endpoint (see
// applyOp), recorded as a migration.
type SchemaOp struct {
	SchemaHeader
	Op model.MigrationOp `json:"op"`
}

func (c *SchemaOp) apply(tx *Tx) (any, error) {
	return c.change(tx, func(b *model.Branch, s *model.Schema) ([]model.MigrationOp, error) {
		if err := tx.applyOp(b, s, c.Op); err != nil {
			return nil, err
		}
		return []model.MigrationOp{c.Op}, nil
	})
}

// applyOp applies one operation to s, the schema of branch b being changed
// by tx, and re-indexes s so that the next operation sees the change.
func (tx *Tx) applyOp(b *model.Branch, s *model.Schema, op model.MigrationOp) error {
	var err error
	switch op.Kind() {
	case "addTable":
		err = tx.addTable(s, op.AddTable.Table)
	case "removeTable":
		err = s.RemoveTable(op.RemoveTable.Table)
	case "renameTable":
		err = s.RenameTable(op.RenameTable.OldName, op.RenameTable.NewName)
	case "addColumn":
		err = tx.addColumn(b, s, op.AddColumn.Table, op.AddColumn.Column)
	case "removeColumn":
		err = s.RemoveColumn(op.RemoveColumn.Table, op.RemoveColumn.Column)
	case "renameColumn":
		err = s.RenameColumn(op.RenameColumn.Table, op.RenameColumn.OldName, op.RenameColumn.NewName)
	default:
		err = model.Invalidf("an operation must have exactly one of addTable, removeTable, renameTable, addColumn, removeColumn, renameColumn")
	}
	if err != nil {
		return err
	}
	s.Index()
	return nil
}

// addTable adds an empty table to s with a new table id.
func (tx *Tx) addTable(s *model.Schema, name string) error {
	if err := model.CheckName("table", name); err != nil {
		return err
	}
	for _, t := range s.Tables {
		if strings.EqualFold(t.Name, name) {
			return model.Errorf(model.CodeAlreadyExists, "table [%s] already exists", name)
		}
	}
	s.Tables = append(s.Tables, &model.Table{ID: tx.allocTable(), Name: name, Columns: []*model.Column{}})
	return nil
}

// rowsWithout returns the live rows of table t in branch b that hold no
// value in the column with id col.
func (tx *Tx) rowsWithout(b *model.Branch, t *model.Table, col uint32) (*roaring.Bitmap, error) {
	live, err := layers.ReadBitmap(tx.batch, tx.d.ID, b.Lineage, t.ID, codec.LiveBitmapID(), tx.pending)
	if err != nil {
		return nil, err
	}
	has, err := layers.ReadBitmap(tx.batch, tx.d.ID, b.Lineage, t.ID, codec.ExistsBitmapID(col), tx.pending)
	if err != nil {
		return nil, err
	}
	live.AndNot(has)
	return live, nil
}

// tableIsEmpty reports whether a table has no live rows in the branch; a
// nil branch, whose schema is changed without records, has none.
func (tx *Tx) tableIsEmpty(b *model.Branch, t *model.Table) (bool, error) {
	if b == nil {
		return true, nil
	}
	live, err := layers.ReadBitmap(tx.batch, tx.d.ID, b.Lineage, t.ID, codec.LiveBitmapID(), tx.pending)
	if err != nil {
		return false, err
	}
	return live.IsEmpty(), nil
}

// addColumn adds a column (with its sub-columns) to a table of s, the
// schema of branch b being changed by tx; records get its default when it
// is notNull (backfill).
func (tx *Tx) addColumn(b *model.Branch, s *model.Schema, tableName string, def model.ColumnDef) error {
	t, err := s.Table(tableName)
	if err != nil {
		return err
	}
	parent, prefix, name := t.Columns, "", def.Name
	var obj *model.Column
	if i := strings.LastIndexByte(def.Name, '.'); i >= 0 {
		obj = t.ByPath[def.Name[:i]]
		if obj == nil || obj.Type != model.TypeObject {
			return model.Invalidf("column [%s]: object column [%s] not found", def.Name, def.Name[:i])
		}
		parent, prefix, name = obj.Columns, def.Name[:i+1], def.Name[i+1:]
	}
	for _, c := range parent {
		if c.Name == name {
			return model.Invalidf("column [%s] already exists", def.Name)
		}
	}
	empty := true
	if def.NotNull {
		if empty, err = tx.tableIsEmpty(b, t); err != nil {
			return err
		}
		if !empty && def.DefaultValue == nil {
			return model.Invalidf("column [%s]: a notNull column on a non-empty table needs a defaultValue", def.Name)
		}
	}
	nd := def
	nd.Name = name
	c, err := s.NewColumn(t, nd, prefix)
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

// SetTableColumns replaces a table's column set (see SetTableColumns),
// recorded as the operations that do it.
type SetTableColumns struct {
	SchemaHeader
	Table   string            `json:"table"`
	Columns []model.ColumnDef `json:"columns"`
}

func (c *SetTableColumns) apply(tx *Tx) (any, error) {
	tableName, defs := c.Table, c.Columns
	return c.change(tx, func(b *model.Branch, s *model.Schema) ([]model.MigrationOp, error) {
		t, err := s.Table(tableName)
		if err != nil {
			return nil, err
		}
		old := map[string]*model.Column{}
		for _, c := range t.Columns {
			old[c.Name] = c
		}
		var ops []model.MigrationOp
		var cols []*model.Column
		seen := map[string]bool{}
		var empty *bool
		for _, def := range defs {
			if seen[def.Name] {
				return nil, model.Invalidf("column [%s] is defined twice", def.Name)
			}
			seen[def.Name] = true
			if oc := old[def.Name]; oc != nil {
				cur, _ := json.Marshal(oc.Def(s))
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
					return nil, model.Errorf(model.CodeConflict, "column [%s]: changing the definition of a column of a non-empty table is not supported", def.Name)
				}
				ops = append(ops, model.MigrationOp{RemoveColumn: &model.RemoveColumnOp{Table: tableName, Column: def.Name}})
			}
			c, err := s.NewColumn(t, def, "")
			if err != nil {
				return nil, err
			}
			cols = append(cols, c)
			ops = append(ops, model.MigrationOp{AddColumn: &model.AddColumnOp{Table: tableName, Column: def}})
		}
		for _, c := range t.Columns {
			if !seen[c.Name] {
				ops = append(ops, model.MigrationOp{RemoveColumn: &model.RemoveColumnOp{Table: tableName, Column: c.Name}})
			}
		}
		t.Columns = cols
		return ops, nil
	})
}
