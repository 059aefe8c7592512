package apply

import (
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Changing a column's settings in place. The legacy operation language has
// no alter operation (compat-api.md §5.4): a changed column definition is a
// removeColumn immediately followed by an addColumn of the same path, and
// clients keep migration files that admit only those six operations. Read
// literally, the pair would drop the column's values. So a list of
// operations reads the pair as one step: when the column keeps its kind
// (type, link target, vector dimension), it keeps its id and its values and
// takes the new settings (unique, notNull, defaultValue, file settings,
// sub-columns of an object); otherwise the pair is what it says, a new
// column. The values must allow the new settings, or the step fails and the
// command with it.

// stepLen returns how many operations, from ops[i], make one step: 2 for a
// removeColumn followed by an addColumn of the same table and path, else 1.
func stepLen(ops []model.MigrationOp, i int) int {
	if i+1 >= len(ops) || ops[i].Kind() != "removeColumn" || ops[i+1].Kind() != "addColumn" {
		return 1
	}
	rm, add := ops[i].RemoveColumn, ops[i+1].AddColumn
	if rm.Table != add.Table || rm.Column != add.Column.Name {
		return 1
	}
	return 2
}

// applyStep applies one step (see stepLen) to s, the schema of branch b
// being changed by tx. On failure it also returns the index in step of the
// operation that failed. A nil b changes the schema only: there are no
// records to check or fill.
func (tx *Tx) applyStep(b *model.Branch, s *model.Schema, step []model.MigrationOp) (int, error) {
	if len(step) == 1 {
		return 0, tx.applyOp(b, s, step[0])
	}
	rm, add := step[0].RemoveColumn, step[1].AddColumn
	t, err := s.Table(rm.Table)
	if err != nil {
		return 0, err
	}
	old := t.ByPath[rm.Column]
	if old == nil {
		return 0, model.NotFoundf("column [%s] not found", rm.Column)
	}
	prefix := old.Path[:len(old.Path)-len(old.Name)]
	def := add.Column
	def.Name = old.Name
	nc, err := s.NewColumn(t, def, prefix)
	if err != nil {
		return 1, err
	}
	if !sameKind(old, nc) {
		if err := tx.applyOp(b, s, step[0]); err != nil {
			return 0, err
		}
		return 1, tx.applyOp(b, s, step[1])
	}
	keepIDs(old, nc)
	if b != nil {
		if err := tx.checkSettings(b, t, prefix, old, nc); err != nil {
			return 1, err
		}
	}
	parent := &t.Columns
	if prefix != "" {
		parent = &t.ByPath[prefix[:len(prefix)-1]].Columns
	}
	for i, c := range *parent {
		if c == old {
			(*parent)[i] = nc
		}
	}
	s.Index()
	return 0, nil
}

// sameKind reports whether a stored column can hold the values of another:
// same type, link target and vector dimension.
func sameKind(a, b *model.Column) bool {
	return a.Type == b.Type && a.LinkTable == b.LinkTable && a.Dimension == b.Dimension
}

// keepIDs gives nc, the new definition of column old, the ids of old, and
// to each sub-column of an object the id of the old sub-column of that name
// and kind. Sub-columns without one keep their new ids: they start empty.
func keepIDs(old, nc *model.Column) {
	nc.ID = old.ID
	for _, sub := range nc.Columns {
		for _, o := range old.Columns {
			if o.Name == sub.Name && sameKind(o, sub) {
				keepIDs(o, sub)
			}
		}
	}
}

// checkSettings checks that the records of b hold values that the settings
// of nc allow, where old held them before (nil for a new column), and
// arranges for the records without a value to get the default of a column
// that becomes notNull. prefix is the path of the column's parent.
func (tx *Tx) checkSettings(b *model.Branch, t *model.Table, prefix string, old, nc *model.Column) error {
	path := prefix + nc.Name
	if nc.Type == model.TypeObject {
		for _, sub := range nc.Columns {
			var o *model.Column
			if old != nil {
				for _, x := range old.Columns {
					if x.ID == sub.ID {
						o = x
					}
				}
			}
			if err := tx.checkSettings(b, t, path+".", o, sub); err != nil {
				return err
			}
		}
		return nil
	}
	if nc.Unique && (old == nil || !old.Unique) {
		if err := tx.checkUnique(b, t, path, nc.ID); err != nil {
			return err
		}
	}
	if !nc.NotNull || (old != nil && old.NotNull) {
		return nil
	}
	missing, err := tx.rowsWithout(b, t, nc.ID)
	if err != nil || missing.IsEmpty() {
		return err
	}
	if nc.Default == nil {
		var rec codec.Record
		if _, _, err := layers.ReadRow(tx.batch, tx.d.ID, b.Lineage, t.ID, missing.Minimum(), &rec); err != nil {
			return err
		}
		return model.Invalidf("column [%s] cannot become notNull: record [%s] has no value and the column has no defaultValue", path, rec.ID)
	}
	tx.backfills = append(tx.backfills, columnRef{table: t.ID, column: nc.ID})
	return nil
}

// checkUnique fails when two live records of b hold the same value in the
// column with id col; nulls never collide.
func (tx *Tx) checkUnique(b *model.Branch, t *model.Table, path string, col uint32) error {
	rows, err := layers.ReadBitmap(tx.batch, tx.d.ID, b.Lineage, t.ID, codec.LiveBitmapID(), tx.pending)
	if err != nil {
		return err
	}
	has, err := layers.ReadBitmap(tx.batch, tx.d.ID, b.Lineage, t.ID, codec.ExistsBitmapID(col), tx.pending)
	if err != nil {
		return err
	}
	rows.And(has)
	seen := make(map[string]string, rows.GetCardinality()) // value's posting id → first record id
	var rec codec.Record
	var key []byte
	for it := rows.Iterator(); it.HasNext(); {
		_, ok, err := layers.ReadRow(tx.batch, tx.d.ID, b.Lineage, t.ID, it.Next(), &rec)
		if err != nil {
			return err
		}
		v, has := rec.Get(col)
		if !ok || !has {
			continue
		}
		if key, err = codec.PostingBitmapID(key[:0], col, v); err != nil {
			return err
		}
		if first, dup := seen[string(key)]; dup {
			return model.Invalidf("column [%s] cannot become unique: records [%s] and [%s] have the same value", path, first, rec.ID)
		}
		seen[string(key)] = rec.ID
	}
	return nil
}
