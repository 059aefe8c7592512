package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/coppice-db/coppice/codec"
)

// MigrationOp is one schema operation of a migration (compat-api.md §5.4).
type MigrationOp struct {
	AddTable     *struct{ Table string }                   `json:"addTable,omitempty"`
	RemoveTable  *struct{ Table string }                   `json:"removeTable,omitempty"`
	RenameTable  *struct{ OldName, NewName string }        `json:"renameTable,omitempty"`
	AddColumn    *AddColumnOp                              `json:"addColumn,omitempty"`
	RemoveColumn *struct{ Table, Column string }           `json:"removeColumn,omitempty"`
	RenameColumn *struct{ Table, OldName, NewName string } `json:"renameColumn,omitempty"`
}

// AddColumnOp adds a column to a table.
type AddColumnOp struct {
	Table  string    `json:"table"`
	Column ColumnDef `json:"column"`
}

// Migration is one recorded schema change of a branch.
type Migration struct {
	ID         string        `json:"id"`
	ParentID   string        `json:"parentID,omitempty"`
	Checksum   string        `json:"checksum"`
	CreatedAt  time.Time     `json:"createdAt"`
	Operations []MigrationOp `json:"operations"`
}

// SchemaChange is the result of a schema change.
type SchemaChange struct {
	MigrationID       string
	ParentMigrationID string
}

// changeSchema applies fn to a copy of a branch's schema and records the
// change as a migration: it bumps the branch version and moves its head.
func (e *Engine) changeSchema(ref Ref, fn func(tx *dbTx, b *branch, s *schema) ([]MigrationOp, error)) (SchemaChange, error) {
	_, d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return SchemaChange{}, err
	}
	now := e.now()
	migID := e.ids.next("mig_", now)
	var out SchemaChange
	err = e.run(d, func(tx *dbTx) error {
		b, err := tx.st.branch(ref.Branch)
		if err != nil {
			return err
		}
		s := b.Schema.clone()
		ops, err := fn(tx, b, s)
		if err != nil {
			return err
		}
		s.index()
		m := Migration{ID: migID, ParentID: b.LastMigrationID, CreatedAt: now, Operations: ops}
		m.Checksum = migrationChecksum(m.ParentID, ops)
		v, err := json.Marshal(m)
		if err != nil {
			return err
		}
		mk := codec.MetaKey(d.id, codec.MetaMigration, codec.AppendU64(codec.AppendU32(nil, b.ID), tx.seq))
		if err := tx.batch.Set(mk, v, nil); err != nil {
			return err
		}
		nb := *b
		nb.Schema = s
		nb.Version++
		nb.LastMigrationID = migID
		out = SchemaChange{MigrationID: migID, ParentMigrationID: b.LastMigrationID}
		return tx.putBranch(&nb)
	})
	return out, err
}

// migrationChecksum is "1:" + SHA-256 of the canonical JSON of the parent id
// and the operations.
func migrationChecksum(parent string, ops []MigrationOp) string {
	b, _ := json.Marshal(struct {
		ParentID   string        `json:"parentID"`
		Operations []MigrationOp `json:"operations"`
	}{parent, ops})
	sum := sha256.Sum256(b)
	return "1:" + hex.EncodeToString(sum[:])
}

// CreateTable adds an empty table to a branch; a name that exists (in any
// letter case) is CodeAlreadyExists.
func (e *Engine) CreateTable(ref Ref, name string) (SchemaChange, error) {
	if err := checkName("table", name); err != nil {
		return SchemaChange{}, err
	}
	return e.changeSchema(ref, func(tx *dbTx, b *branch, s *schema) ([]MigrationOp, error) {
		for _, t := range s.Tables {
			if strings.EqualFold(t.Name, name) {
				return nil, Errorf(CodeAlreadyExists, "table [%s] already exists", name)
			}
		}
		s.Tables = append(s.Tables, &table{ID: tx.allocTable(), Name: name, Columns: []*column{}})
		return []MigrationOp{{AddTable: &struct{ Table string }{name}}}, nil
	})
}

// DeleteTable removes a table from a branch. Its rows stay readable by
// branches forked earlier; table ids are never reused.
func (e *Engine) DeleteTable(ref Ref, name string) (SchemaChange, error) {
	return e.changeSchema(ref, func(tx *dbTx, b *branch, s *schema) ([]MigrationOp, error) {
		t, err := s.table(name)
		if err != nil {
			return nil, err
		}
		for _, other := range s.Tables {
			if other == t {
				continue
			}
			for _, c := range other.leaves {
				if c.Type == TypeLink && c.LinkTable == t.ID {
					return nil, invalidf("table [%s] is linked from column [%s] of table [%s]", name, c.path, other.Name)
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
		return []MigrationOp{{RemoveTable: &struct{ Table string }{name}}}, nil
	})
}

// RenameTable renames a table; keys carry ids, so no data moves.
func (e *Engine) RenameTable(ref Ref, name, newName string) (SchemaChange, error) {
	if err := checkName("table", newName); err != nil {
		return SchemaChange{}, err
	}
	return e.changeSchema(ref, func(tx *dbTx, b *branch, s *schema) ([]MigrationOp, error) {
		t, err := s.table(name)
		if err != nil {
			return nil, err
		}
		for _, o := range s.Tables {
			if o != t && strings.EqualFold(o.Name, newName) {
				return nil, Errorf(CodeAlreadyExists, "table [%s] already exists", newName)
			}
		}
		t.Name = newName
		return []MigrationOp{{RenameTable: &struct{ OldName, NewName string }{name, newName}}}, nil
	})
}

// TableColumns returns a table's columns as defined (objects nested).
func (e *Engine) TableColumns(ref Ref, name string) ([]ColumnDef, error) {
	det, err := e.branchSchema(ref)
	if err != nil {
		return nil, err
	}
	t, err := det.table(name)
	if err != nil {
		return nil, err
	}
	return det.tableDef(t).Columns, nil
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

// tableIsEmpty reports whether a table has no live rows in the branch.
func (tx *dbTx) tableIsEmpty(b *branch, t *table) (bool, error) {
	live, err := readBitmap(tx.batch, tx.d.id, b.Lineage, t.ID, codec.LiveBitmapID(), tx.pending)
	if err != nil {
		return false, err
	}
	return live.IsEmpty(), nil
}

// AddColumn adds a column (with its sub-columns) to a table.
func (e *Engine) AddColumn(ref Ref, tableName string, def ColumnDef) (SchemaChange, error) {
	return e.changeSchema(ref, func(tx *dbTx, b *branch, s *schema) ([]MigrationOp, error) {
		t, err := s.table(tableName)
		if err != nil {
			return nil, err
		}
		parent, prefix, name := t.Columns, "", def.Name
		var obj *column
		if i := strings.LastIndexByte(def.Name, '.'); i >= 0 {
			obj = t.byPath[def.Name[:i]]
			if obj == nil || obj.Type != TypeObject {
				return nil, invalidf("column [%s]: object column [%s] not found", def.Name, def.Name[:i])
			}
			parent, prefix, name = obj.Columns, def.Name[:i+1], def.Name[i+1:]
		}
		for _, c := range parent {
			if c.Name == name {
				return nil, invalidf("column [%s] already exists", def.Name)
			}
		}
		if def.NotNull && def.DefaultValue == nil {
			empty, err := tx.tableIsEmpty(b, t)
			if err != nil {
				return nil, err
			}
			if !empty {
				return nil, invalidf("column [%s]: a notNull column on a non-empty table needs a defaultValue", def.Name)
			}
		}
		nd := def
		nd.Name = name
		c, err := s.newColumn(t, nd, prefix)
		if err != nil {
			return nil, err
		}
		if obj != nil {
			obj.Columns = append(obj.Columns, c)
		} else {
			t.Columns = append(t.Columns, c)
		}
		return []MigrationOp{{AddColumn: &AddColumnOp{Table: tableName, Column: def}}}, nil
	})
}

// DeleteColumn removes a column (an object column with all its sub-columns).
// Stored values of the column are ignored from now on.
func (e *Engine) DeleteColumn(ref Ref, tableName, path string) (SchemaChange, error) {
	return e.changeSchema(ref, func(tx *dbTx, b *branch, s *schema) ([]MigrationOp, error) {
		t, err := s.table(tableName)
		if err != nil {
			return nil, err
		}
		if t.byPath[path] == nil {
			return nil, notFoundf("column [%s] not found", path)
		}
		removeColumn(&t.Columns, "", path)
		return []MigrationOp{{RemoveColumn: &struct{ Table, Column string }{tableName, path}}}, nil
	})
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
	if err := checkName("column", newName); err != nil {
		return SchemaChange{}, err
	}
	return e.changeSchema(ref, func(tx *dbTx, b *branch, s *schema) ([]MigrationOp, error) {
		t, err := s.table(tableName)
		if err != nil {
			return nil, err
		}
		c := t.byPath[path]
		if c == nil {
			return nil, notFoundf("column [%s] not found", path)
		}
		sibling := path[:len(path)-len(c.Name)] + newName
		if t.byPath[sibling] != nil {
			return nil, invalidf("column [%s] already exists", sibling)
		}
		if !strings.Contains(path, ".") && (newName == "id" || newName == "svc" || newName == "xata") {
			return nil, invalidf("column name [%s] is reserved", newName)
		}
		c.Name = newName
		return []MigrationOp{{RenameColumn: &struct{ Table, OldName, NewName string }{tableName, path, newName}}}, nil
	})
}

// SetTableColumns replaces a table's column set: columns kept with the same
// definition keep their data, new ones are added, unlisted ones removed. A
// changed definition on a non-empty table is a conflict.
func (e *Engine) SetTableColumns(ref Ref, tableName string, defs []ColumnDef) (SchemaChange, error) {
	return e.changeSchema(ref, func(tx *dbTx, b *branch, s *schema) ([]MigrationOp, error) {
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
				ops = append(ops, MigrationOp{RemoveColumn: &struct{ Table, Column string }{tableName, def.Name}})
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
				ops = append(ops, MigrationOp{RemoveColumn: &struct{ Table, Column string }{tableName, c.Name}})
			}
		}
		t.Columns = cols
		return ops, nil
	})
}
