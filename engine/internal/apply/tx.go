package apply

import (
	"encoding/json"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Tx is one command being applied to a database: a Pebble batch plus the
// in-memory changes to publish if it commits. It is used under the
// database's writer lock. Observers read what it changed through its
// methods (Rows, Terms, ChangedBranches), during the notification only.
type Tx struct {
	d     *DB
	batch *pebble.Batch
	st    *State // state the command started from
	seq   uint64 // this command's commit sequence number

	// staged changes
	next *State // the state after the command; nil until it changes
	// branchesChanged is set once the command adds, changes or removes
	// a branch; changedIDs holds their ids.
	branchesChanged bool
	changedIDs      []uint32
	nextLayer       uint32
	nextTable       uint32
	nextBranch      uint32
	rows            map[uint32]uint32
	marks           []layerTable    // tables whose rows the command wrote, by layer
	pending         *layers.Pending // bitmap deltas of this command
	dropLayers      []uint32
	changes         []RowChange                            // rows written, for the column stores
	terms           map[model.TableKey]map[string]struct{} // words new to a table's layer
	newTerms        map[layerTable]map[string]struct{}     // the same by layer, once written
	backfills       []columnRef                            // notNull columns added to tables with records
	// oneBitmaps and oneJoins count the bitmaps and rows that a group's
	// prepared single-record inserts join in all (applyGroup): the first
	// of them makes room for all of them (flushJoins), where each would
	// otherwise grow the staged changes a little.
	oneBitmaps, oneJoins int
	// yield is called where staging the bitmaps yields the processor
	// (layers.Pending.Yield): the first WriterYield of the commands
	// applied, if any.
	yield func()
}

// RowChange is one row written by a command: its new version, or nil when
// deleted.
type RowChange struct {
	Branch, Table, Row uint32
	Rec                *codec.Record
	Lens               []layers.FieldLength // text field lengths of Rec
}

// DB is the database the command changes.
func (tx *Tx) DB() *DB { return tx.d }

// Seq is the command's commit sequence number.
func (tx *Tx) Seq() uint64 { return tx.seq }

// Rows are the rows the command wrote, in the order it wrote them.
func (tx *Tx) Rows() []RowChange { return tx.changes }

// Terms are the words new to the top layer of each table of a branch the
// command wrote.
func (tx *Tx) Terms() map[model.TableKey]map[string]struct{} { return tx.terms }

// BitmapsChanged returns the ids of the bitmaps of a table (of any branch)
// the command changed, when there are at most limit of them; ok is false
// when there are more.
func (tx *Tx) BitmapsChanged(table uint32, limit int) (ids []string, ok bool) {
	return tx.pending.ChangedIDs(table, limit)
}

// ApplyBitmapChanges applies to set (unless nil) the changes the command
// made to a bitmap of a table in one layer, and reports whether it made
// any.
func (tx *Tx) ApplyBitmapChanges(layer, table uint32, id string, set *roaring.Bitmap) bool {
	return tx.pending.ApplyTo(layer, table, id, set)
}

// BitmapLayers returns the layers in which the command changed bitmaps of
// a table.
func (tx *Tx) BitmapLayers(table uint32) []uint32 { return tx.pending.Layers(table) }

// ChangedBranches reports whether the command added, changed or removed
// branches (their schemas and lineages included): the state published
// after it is a new one.
func (tx *Tx) ChangedBranches() bool { return tx.branchesChanged }

// BranchesChanged are the ids of the branches the command added, changed
// or removed.
func (tx *Tx) BranchesChanged() []uint32 { return tx.changedIDs }

// beginTx starts a command on d that stages its writes into b; the
// caller holds d.mu, or d is not reachable yet.
func beginTx(d *DB, b *pebble.Batch) *Tx {
	return &Tx{
		d: d, batch: b, st: d.State(), seq: d.seq + 1,
		nextLayer: d.nextLayer, nextTable: d.nextTable, nextBranch: d.nextBranch,
		rows: map[uint32]uint32{},
	}
}

// state returns the state as this command sees it: staged branches included.
func (tx *Tx) state() *State {
	if tx.next != nil {
		return tx.next
	}
	return tx.st
}

// putBranch stages a new or changed branch (and persists it).
func (tx *Tx) putBranch(b *model.Branch) error {
	st := tx.state()
	prev := st.ByID.At(b.ID)
	if err := tx.putSchema(prev, b); err != nil {
		return err
	}
	tx.next, tx.branchesChanged = st.with(prev, b), true
	tx.changedIDs = append(tx.changedIDs, b.ID)
	rec := *b
	rec.Schema = nil
	v, err := json.Marshal(&rec)
	if err != nil {
		return err
	}
	return tx.batch.Set(codec.MetaKey(tx.d.ID, codec.MetaBranch, codec.AppendU32(nil, b.ID)), v, nil)
}

// removeBranch stages the removal of a branch.
func (tx *Tx) removeBranch(b *model.Branch) error {
	tx.next, tx.branchesChanged = tx.state().without(b), true
	tx.changedIDs = append(tx.changedIDs, b.ID)
	if err := tx.deleteSchema(b.ID); err != nil {
		return err
	}
	return tx.batch.Delete(codec.MetaKey(tx.d.ID, codec.MetaBranch, codec.AppendU32(nil, b.ID)), nil)
}

// setGit stages a git mapping change; to == "" removes the entry.
func (tx *Tx) setGit(gitBranch, to string) error {
	tx.next = tx.state().withGit(gitBranch, to)
	k := codec.MetaKey(tx.d.ID, codec.MetaGitBranch, []byte(gitBranch))
	if to == "" {
		return tx.batch.Delete(k, nil)
	}
	return tx.batch.Set(k, []byte(to), nil)
}

// allocRow returns a new row id of a table; row ids are never reused in a
// database, so no two branches of a lineage ever mean different rows by one id.
func (tx *Tx) allocRow(tableID uint32) (uint32, error) {
	n, ok := tx.rows[tableID]
	if !ok {
		n = tx.d.rows[tableID]
	}
	if n == ^uint32(0) {
		return 0, model.Invalidf("table has exhausted its row ids")
	}
	n++
	tx.rows[tableID] = n
	return n, nil
}

// allocLayer returns a new layer id.
func (tx *Tx) allocLayer() uint32 {
	tx.nextLayer++
	return tx.nextLayer
}

// allocTable returns a new table id.
func (tx *Tx) allocTable() uint32 {
	tx.nextTable++
	return tx.nextTable
}

// allocBranch returns a new branch id.
func (tx *Tx) allocBranch() uint32 {
	tx.nextBranch++
	return tx.nextBranch
}

// finish writes staged counters and bitmap deltas into the batch, in sorted
// key order so the batch bytes are deterministic.
func (tx *Tx) finish() error {
	b, id := tx.batch, tx.d.ID
	if err := b.Set(counterKey(id, ctrSeq), u64(tx.seq), nil); err != nil {
		return err
	}
	if tx.nextLayer != tx.d.nextLayer {
		if err := b.Set(counterKey(id, ctrLayer), u64(uint64(tx.nextLayer)), nil); err != nil {
			return err
		}
	}
	if tx.nextTable != tx.d.nextTable {
		if err := b.Set(counterKey(id, ctrTable), u64(uint64(tx.nextTable)), nil); err != nil {
			return err
		}
	}
	if tx.nextBranch != tx.d.nextBranch {
		if err := b.Set(counterKey(id, ctrBranch), u64(uint64(tx.nextBranch)), nil); err != nil {
			return err
		}
	}
	tables := make([]uint32, 0, len(tx.rows))
	for t := range tx.rows {
		tables = append(tables, t)
	}
	sort.Slice(tables, func(i, j int) bool { return tables[i] < tables[j] })
	for _, t := range tables {
		if err := b.Set(rowsCounterKey(id, t), u64(uint64(tx.rows[t])), nil); err != nil {
			return err
		}
	}
	if err := tx.writeTerms(); err != nil {
		return err
	}
	if err := tx.writeMarks(); err != nil {
		return err
	}
	if tx.pending == nil {
		return nil
	}
	tx.pending.Yield = tx.yield
	return tx.pending.Write(tx.batch, tx.state().Fork, tx.seq)
}

// pendingTable returns the staged bitmap changes of a table of a layer.
func (tx *Tx) pendingTable(layer, tableID uint32) *layers.PendingTable {
	if tx.pending == nil {
		tx.pending = layers.NewPending(tx.d.ID)
	}
	return tx.pending.Table(layer, tableID)
}

// termsOf returns the set of words new to the top layer of a branch's
// table in this command, for writeTerms and the vocabulary.
func (tx *Tx) termsOf(branch, table uint32) map[string]struct{} {
	k := model.TableKey{Branch: branch, Table: table}
	if tx.terms == nil {
		tx.terms = map[model.TableKey]map[string]struct{}{}
	}
	set := tx.terms[k]
	if set == nil {
		set = map[string]struct{}{}
		tx.terms[k] = set
	}
	return set
}

// writeTerms puts the KindTerm keys of the words noted by the command in
// the top layer of their branch, in key order. A word whose key the layer
// already holds is no word new to it: it is left out of the command's
// words, and its key is not written again.
func (tx *Tx) writeTerms() error {
	keys := make([]model.TableKey, 0, len(tx.terms))
	for k := range tx.terms {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].Branch < keys[j].Branch || keys[i].Branch == keys[j].Branch && keys[i].Table < keys[j].Table
	})
	st := tx.state()
	var kb []byte
	for _, k := range keys {
		b := st.ByID.At(k.Branch)
		if b == nil {
			continue
		}
		lt := layerTable{b.Lineage[0].Layer, k.Table}
		set := tx.terms[k]
		for term := range set {
			known, err := tx.d.knownTerm(lt, term, kb)
			if err != nil {
				return err
			}
			if known {
				delete(set, term)
			}
		}
		for _, term := range model.SortedKeys(set) {
			kb = codec.TermKey(kb[:0], tx.d.ID, lt.layer, lt.table, term)
			if err := tx.batch.Set(kb, nil, nil); err != nil {
				return err
			}
		}
		if tx.newTerms == nil {
			tx.newTerms = map[layerTable]map[string]struct{}{}
		}
		tx.newTerms[lt] = set
	}
	return nil
}
