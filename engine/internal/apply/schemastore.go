package apply

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// A branch's schema is stored apart from the branch's record: whole under
// MetaSchema, then table by table under MetaSchemaTable as commands change
// them, so that adding the ten-thousandth table writes one table, not ten
// thousand. Once the tables written one by one outnumber a quarter of the
// schema, the next change writes it whole again: a change costs, amortized,
// what the tables it changes cost, and changes of the same few tables
// never write it whole. codec/KEYS.md has the keys.

// schemaKey is the key of a branch's whole schema.
func schemaKey(db, branch uint32) []byte {
	return codec.MetaKey(db, codec.MetaSchema, codec.AppendU32(nil, branch))
}

// schemaTablePrefix is the prefix of the tables of a branch written one by
// one.
func schemaTablePrefix(db, branch uint32) []byte {
	return codec.MetaKey(db, codec.MetaSchemaTable, codec.AppendU32(nil, branch))
}

// maxSchemaEdits is how many tables written one by one a schema of n
// tables keeps before it is written whole again. A table written one by
// one again replaces its key and counts once.
func maxSchemaEdits(n int) int { return 16 + n/4 }

// putSchema stages the schema of b, which replaces prev (nil for a new
// branch): nothing when it is prev's, the tables it changed when it is a
// clone of prev's, else the whole schema. It sets b.SchemaEdits.
func (tx *Tx) putSchema(prev, b *model.Branch) error {
	if prev != nil && prev.Schema == b.Schema {
		b.SchemaEdits = prev.SchemaEdits
		return nil
	}
	if prev != nil {
		ids, ok := b.Schema.Changes(prev.Schema)
		edits := prev.SchemaEdits
		keys := make([][]byte, len(ids))
		for i, id := range ids {
			if !ok {
				break
			}
			keys[i] = codec.AppendU32(schemaTablePrefix(tx.d.ID, b.ID), id)
			_, closer, err := tx.batch.Get(keys[i])
			switch {
			case err == nil:
				closer.Close() // written one by one already: replaced
			case errors.Is(err, pebble.ErrNotFound):
				edits++
			default:
				return err
			}
		}
		if ok && edits <= maxSchemaEdits(len(b.Schema.Tables)) {
			b.SchemaEdits = edits
			for i, id := range ids {
				var v []byte
				if t := b.Schema.TableByID(id); t != nil {
					var err error
					if v, err = json.Marshal(t); err != nil {
						return err
					}
				}
				if err := tx.batch.Set(keys[i], v, nil); err != nil {
					return err
				}
			}
			return nil
		}
	}
	b.SchemaEdits = 0
	v, err := json.Marshal(b.Schema)
	if err != nil {
		return err
	}
	if prev != nil {
		if err := tx.deleteSchemaTables(b.ID); err != nil {
			return err
		}
	}
	return tx.batch.Set(schemaKey(tx.d.ID, b.ID), v, nil)
}

// deleteSchemaTables stages the removal of the tables of a branch written
// one by one.
func (tx *Tx) deleteSchemaTables(branch uint32) error {
	p := schemaTablePrefix(tx.d.ID, branch)
	return tx.batch.DeleteRange(p, codec.PrefixEnd(p), nil)
}

// deleteSchema stages the removal of every key of a branch's schema.
func (tx *Tx) deleteSchema(branch uint32) error {
	if err := tx.batch.Delete(schemaKey(tx.d.ID, branch), nil); err != nil {
		return err
	}
	return tx.deleteSchemaTables(branch)
}

// schemaLoader puts the schema keys of a database together while its
// metadata is read in key order: branches, then whole schemas, then the
// tables written one by one.
type schemaLoader struct {
	byID map[uint32]*model.Branch
	// pos finds the tables of each schema being loaded by id.
	pos map[uint32]map[uint32]int
}

// add notes a branch read from its record.
func (l *schemaLoader) add(b *model.Branch) {
	if l.byID == nil {
		l.byID = map[uint32]*model.Branch{}
	}
	if b.Schema == nil {
		b.Schema = &model.Schema{}
	}
	l.byID[b.ID] = b
}

// schema reads a whole schema (MetaSchema, key suffix after the kind).
func (l *schemaLoader) schema(k, v []byte) error {
	if len(k) != 4 {
		return fmt.Errorf("engine: malformed schema key")
	}
	b := l.byID[binary.BigEndian.Uint32(k)]
	if b == nil {
		return nil // left by a crash mid-delete: nothing reads it
	}
	s := &model.Schema{}
	if err := json.Unmarshal(v, s); err != nil {
		return err
	}
	b.Schema = s
	return nil
}

// table reads a table written one by one (MetaSchemaTable).
func (l *schemaLoader) table(k, v []byte) error {
	if len(k) != 8 {
		return fmt.Errorf("engine: malformed schema table key")
	}
	b := l.byID[binary.BigEndian.Uint32(k)]
	if b == nil {
		return nil
	}
	id := binary.BigEndian.Uint32(k[4:])
	if l.pos == nil {
		l.pos = map[uint32]map[uint32]int{}
	}
	pos := l.pos[b.ID]
	if pos == nil {
		pos = make(map[uint32]int, len(b.Schema.Tables))
		for i, t := range b.Schema.Tables {
			pos[t.ID] = i
		}
		l.pos[b.ID] = pos
	}
	i, had := pos[id]
	if len(v) == 0 {
		if had {
			b.Schema.Tables[i] = nil
			delete(pos, id)
		}
		return nil
	}
	t := &model.Table{}
	if err := json.Unmarshal(v, t); err != nil {
		return err
	}
	if had {
		b.Schema.Tables[i] = t
		return nil
	}
	pos[id] = len(b.Schema.Tables)
	b.Schema.Tables = append(b.Schema.Tables, t)
	return nil
}

// finish indexes every schema loaded, without the tables removed.
func (l *schemaLoader) finish() {
	for _, b := range l.byID {
		kept := b.Schema.Tables[:0]
		for _, t := range b.Schema.Tables {
			if t != nil {
				kept = append(kept, t)
			}
		}
		b.Schema.Tables = kept
		b.Schema.Index()
	}
}
