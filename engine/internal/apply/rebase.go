package apply

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// Applying edits compared against another migration (MigrationRequest's
// Source). A client compares a schema with one branch and applies the
// edits to another (the CLI's CSV import compares with main whatever
// branch it imports into), or applies them after the branch has moved on. The edits then carry over to the
// branch's current schema the way a rebase carries a commit: the schema
// the edits were compared against is rebuilt from the history, and each
// step (see stepLen) is judged by the part of the schema it touches.
//
//   - That part is on the branch as it was in the source schema: the step
//     applies.
//   - The branch already has the step's effect (the table exists, the
//     column is defined the same way, the removed column is gone): the
//     step is skipped.
//   - Anything else is a conflict, and the whole apply is refused with
//     model.CodeConflict naming the operation and what is in the way.
//
// The migration recorded on the branch lists the operations applied, so
// that its history replays to its schema.

// ErrNoChange ends a schema change that has nothing to record.
var ErrNoChange = errors.New("engine: no schema change")

// schemaAt rebuilds the schema a branch had when migration id was its head
// by replaying, from an empty schema, the history that ends at id: b's own
// history when it holds id, else that of the branch that recorded id. ""
// is the empty schema of a branch before its first migration.
func (tx *Tx) schemaAt(b *model.Branch, id string) (*model.Schema, error) {
	s := &model.Schema{}
	s.Index()
	if id == "" {
		return s, nil
	}
	var others []uint32
	for bid := range tx.st.ByID {
		if bid != b.ID {
			others = append(others, bid)
		}
	}
	slices.Sort(others)
	for _, bid := range append([]uint32{b.ID}, others...) {
		br := tx.st.ByID[bid]
		if br != b {
			own, err := readMigrations(tx.batch, tx.d.ID, br.ID)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(own, func(m model.Migration) bool { return m.ID == id }) {
				continue
			}
		}
		chain, err := MigrationChain(tx.batch, tx.d.ID, tx.st, br)
		if err != nil {
			return nil, err
		}
		k := slices.IndexFunc(chain, func(m model.Migration) bool { return m.ID == id })
		if k < 0 {
			continue
		}
		for j := len(chain) - 1; j >= k; j-- {
			if err := scratchTx(s).applyOps(nil, s, chain[j].Operations); err != nil {
				return nil, model.Errorf(model.CodeConflict, "the schema at migration [%s] cannot be rebuilt: migration [%s]: %s", id, chain[j].ID, err.Error())
			}
		}
		return s, nil
	}
	return nil, model.Invalidf("migration [%s] is not in the history of any branch of this database", id)
}

// scratchTx returns a command that changes s without records, allocating
// table ids above those of s.
func scratchTx(s *model.Schema) *Tx {
	tx := &Tx{}
	for _, t := range s.Tables {
		tx.nextTable = max(tx.nextTable, t.ID)
	}
	return tx
}

// stepAction is what rebaseOps does with a step.
type stepAction int

// The actions of a step: apply it, skip it, refuse the edits.
const (
	stepApply stepAction = iota
	stepSkip
	stepConflict
)

// rebaseOps applies ops, compared against src (the schema at migration
// source), to s, the current schema of branch b, and returns the
// operations it applied. src is changed along the way.
func (tx *Tx) rebaseOps(b *model.Branch, s, src *model.Schema, source string, ops []model.MigrationOp) ([]model.MigrationOp, error) {
	var applied []model.MigrationOp
	for i := 0; i < len(ops); {
		step := ops[i : i+stepLen(ops, i)]
		before := src.Clone()
		if at, err := scratchTx(src).applyStep(nil, src, step); err != nil {
			return nil, migrationOpError(model.CodeInvalid, i+at, ops[i+at], err)
		}
		act, at, why := judgeStep(b.Name, source, before, src, s, step)
		switch act {
		case stepConflict:
			return nil, migrationOpError(model.CodeConflict, i+at, ops[i+at], model.Errorf(model.CodeConflict, "%s", why))
		case stepApply:
			// A step that does not fit the branch's schema is a conflict;
			// one that fits it but not its records is bad input.
			probe := s.Clone()
			if at, err := scratchTx(probe).applyStep(nil, probe, step); err != nil {
				var ee *model.Error
				if !errors.As(err, &ee) {
					return nil, err
				}
				return nil, migrationOpError(model.CodeConflict, i+at, ops[i+at], model.Errorf(model.CodeConflict, "%s on branch [%s]", ee.Message, b.Name))
			}
			if at, err := tx.applyStep(b, s, step); err != nil {
				return nil, migrationOpError(model.CodeInvalid, i+at, ops[i+at], err)
			}
			applied = append(applied, step...)
		}
		i += len(step)
	}
	return applied, nil
}

// judgeStep decides what to do with a step on the current schema cur,
// given the source schema before and after the step. It also returns the
// index in step of the operation a conflict is about, and the conflict.
func judgeStep(branchName, source string, before, after, cur *model.Schema, step []model.MigrationOp) (stepAction, int, string) {
	on := "on branch [" + branchName + "]"
	changed := func(what string) string {
		return what + " has changed " + on + " since migration [" + source + "]"
	}
	op := step[0]
	switch op.Kind() {
	case "addTable":
		if cur.ByName[op.AddTable.Table] != nil {
			return stepSkip, 0, ""
		}
		return stepApply, 0, ""
	case "removeTable":
		name := op.RemoveTable.Table
		switch {
		case cur.ByName[name] == nil:
			return stepSkip, 0, ""
		case tableJSON(before, name) == tableJSON(cur, name):
			return stepApply, 0, ""
		}
		return stepConflict, 0, changed("table [" + name + "]")
	case "renameTable":
		r := op.RenameTable
		return judgeRename(cur.ByName[r.OldName] != nil, cur.ByName[r.NewName] != nil, "table ["+r.OldName+"]", "table ["+r.NewName+"]", on)
	case "renameColumn":
		r := op.RenameColumn
		t := cur.ByName[r.Table]
		if t == nil {
			return stepConflict, 0, "table [" + r.Table + "] is not " + on
		}
		sibling := r.OldName[:strings.LastIndexByte(r.OldName, '.')+1] + r.NewName
		of := "] of table [" + r.Table + "]"
		return judgeRename(t.ByPath[r.OldName] != nil, t.ByPath[sibling] != nil, "column ["+r.OldName+of, "column ["+sibling+of, on)
	case "addColumn":
		a := op.AddColumn
		if cur.ByName[a.Table] == nil {
			return stepConflict, 0, "table [" + a.Table + "] is not " + on
		}
		switch columnJSON(cur, a.Table, a.Column.Name) {
		case "":
			return stepApply, 0, ""
		case columnJSON(after, a.Table, a.Column.Name):
			return stepSkip, 0, ""
		}
		return stepConflict, 0, "column [" + a.Column.Name + "] of table [" + a.Table + "] is defined differently " + on
	}
	// removeColumn, alone or with the addColumn that redefines the column.
	r := op.RemoveColumn
	what := "column [" + r.Column + "] of table [" + r.Table + "]"
	cj := columnJSON(cur, r.Table, r.Column)
	switch {
	case cj == "" && len(step) == 1:
		return stepSkip, 0, ""
	case cj == "":
		return stepConflict, 0, what + " is not " + on
	case len(step) == 2 && cj == columnJSON(after, r.Table, r.Column):
		return stepSkip, 0, ""
	case cj == columnJSON(before, r.Table, r.Column):
		return stepApply, 0, ""
	}
	return stepConflict, len(step) - 1, changed(what)
}

// judgeRename decides a rename of old to new by which of the two exist.
func judgeRename(hasOld, hasNew bool, old, new, on string) (stepAction, int, string) {
	switch {
	case hasOld && !hasNew:
		return stepApply, 0, ""
	case !hasOld && hasNew:
		return stepSkip, 0, ""
	case hasOld:
		return stepConflict, 0, old + " and " + new + " both exist " + on
	}
	return stepConflict, 0, old + " is not " + on
}

// columnJSON returns the definition of a column of s as JSON text, or ""
// when the table or the column is not in s.
func columnJSON(s *model.Schema, table, path string) string {
	t := s.ByName[table]
	if t == nil || t.ByPath[path] == nil {
		return ""
	}
	b, _ := json.Marshal(t.ByPath[path].Def(s))
	return string(b)
}

// tableJSON returns the column definitions of a table of s as JSON text,
// sorted by name so that the order of columns does not count.
func tableJSON(s *model.Schema, table string) string {
	t := s.ByName[table]
	if t == nil {
		return ""
	}
	defs := s.TableDef(t).Columns
	slices.SortFunc(defs, func(a, b model.ColumnDef) int { return strings.Compare(a.Name, b.Name) })
	b, _ := json.Marshal(defs)
	return string(b)
}
