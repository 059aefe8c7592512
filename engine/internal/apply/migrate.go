package apply

import (
	"encoding/json"
	"errors"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Migrate applies a list of operations as one migration. With Source set
// and not the branch's head, the operations were compared against that
// migration and carry over to the branch's schema as rebase.go describes;
// when nothing of them is left to apply, the command fails with
// ErrNoChange.
type Migrate struct {
	SchemaHeader
	Ops    []model.MigrationOp `json:"ops"`
	Source *string             `json:"source,omitempty"`
}

func (c *Migrate) apply(tx *Tx) (any, error) {
	return c.change(tx, func(b *model.Branch, s *model.Schema) ([]model.MigrationOp, error) {
		if c.Source == nil || *c.Source == b.LastMigrationID {
			if err := tx.applyOps(b, s, c.Ops); err != nil {
				return nil, err
			}
			return c.Ops, nil
		}
		src, err := tx.schemaAt(b, *c.Source)
		if err != nil {
			return nil, err
		}
		applied, err := tx.rebaseOps(b, s, src, *c.Source, c.Ops)
		if err != nil {
			return nil, err
		}
		if len(applied) == 0 {
			return nil, ErrNoChange
		}
		return applied, nil
	})
}

// applyOps applies a list of operations to s, step by step (see stepLen).
// A failing operation is bad input of the list, whatever its code on its
// own endpoint, and the error says which operation failed. A nil b changes
// the schema only.
func (tx *Tx) applyOps(b *model.Branch, s *model.Schema, ops []model.MigrationOp) error {
	for i := 0; i < len(ops); {
		n := stepLen(ops, i)
		if at, err := tx.applyStep(b, s, ops[i:i+n]); err != nil {
			return migrationOpError(model.CodeInvalid, i+at, ops[i+at], err)
		}
		i += n
	}
	return nil
}

// migrationOpError reports the failure err of ops[i] with code, naming the
// operation; an internal error stays as it is.
func migrationOpError(code model.Code, i int, op model.MigrationOp, err error) error {
	var ee *model.Error
	if !errors.As(err, &ee) || ee.Code == model.CodeInternal {
		return err
	}
	if k := op.Kind(); k != "" {
		return model.Errorf(code, "operation %d (%s): %s", i+1, k, ee.Message)
	}
	return model.Errorf(code, "operation %d: %s", i+1, ee.Message)
}

// BuildSchema returns the schema that ops build from an empty schema,
// without records: the checks that need records do not apply.
func BuildSchema(ops []model.MigrationOp) (*model.Schema, error) {
	s := &model.Schema{}
	s.Index()
	if err := (&Tx{}).applyOps(nil, s, ops); err != nil {
		return nil, err
	}
	return s, nil
}

// PushMigration appends a migration made elsewhere, keeping its id: its
// operations apply as a list, and their failures name the migration.
type PushMigration struct {
	SchemaHeader
	Ops []model.MigrationOp `json:"ops"`
}

func (c *PushMigration) apply(tx *Tx) (any, error) {
	return c.change(tx, func(b *model.Branch, s *model.Schema) ([]model.MigrationOp, error) {
		if err := tx.applyOps(b, s, c.Ops); err != nil {
			if model.CodeOf(err) != model.CodeInvalid {
				return nil, err
			}
			return nil, model.Invalidf("migration [%s]: %s", c.ID, err.Error())
		}
		return c.Ops, nil
	})
}

// MigrationChain returns the history of branch b, newest first (see
// SchemaHistory).
func MigrationChain(r pebble.Reader, db uint32, st *State, b *model.Branch) ([]model.Migration, error) {
	var out []model.Migration
	stop := "" // the migration a fork was created at: newer ones are not its history
	for cur := b; cur != nil; {
		own, err := readMigrations(r, db, cur.ID)
		if err != nil {
			return nil, err
		}
		i := len(own) - 1
		if cur != b {
			for i >= 0 && own[i].ID != stop {
				i--
			}
		}
		for ; i >= 0; i-- {
			out = append(out, own[i])
		}
		sf := cur.StartedFrom
		if sf == nil || sf.MigrationID == "" {
			break
		}
		stop, cur = sf.MigrationID, nil
		for _, o := range st.ByID {
			if o.PublicID == sf.DBBranchID {
				cur = o
			}
		}
	}
	return out, nil
}

// readMigrations returns the migrations recorded on one branch, oldest
// first.
func readMigrations(r pebble.Reader, db, branchID uint32) ([]model.Migration, error) {
	prefix := codec.MetaKey(db, codec.MetaMigration, codec.AppendU32(nil, branchID))
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []model.Migration
	for ok := it.First(); ok; ok = it.Next() {
		var m model.Migration
		if err := json.Unmarshal(it.Value(), &m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, it.Error()
}

// PreviewMigration returns a branch's schema and the schema it would have
// after a Migrate of ops. The operations run as in a command that is then
// discarded, so a preview fails exactly where the apply would, and
// changes nothing.
func (a *Applier) PreviewMigration(db uint32, branch string, ops []model.MigrationOp) (original, updated model.SchemaDef, err error) {
	d := a.DB(db)
	if d == nil {
		return original, updated, model.NotFoundf("database not found")
	}
	err = a.inspect(d, func(tx *Tx) error {
		b, err := tx.st.Branch(branch)
		if err != nil {
			return err
		}
		s := b.Schema.Clone()
		if err := tx.applyOps(b, s, ops); err != nil {
			return err
		}
		original, updated = b.Schema.Public(), s.Public()
		return nil
	})
	return original, updated, err
}
