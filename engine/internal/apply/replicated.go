package apply

import (
	"bytes"
	"io"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// What a replicated deployment needs besides Apply (Options.Replicated):
// each database is a group whose log carries the database's commands and
// whose snapshot is the database's key range, and the catalog is a group
// of its own. A replica applies its log's entries with ApplyLogged,
// catches up from a snapshot with ReplaceDatabase or ReplaceCatalog, and
// keeps, opens and forgets the databases it holds with OpenDatabase and
// ForgetDatabase.

// ApplyLogged applies cmd as Apply does, as an entry of a replicated log:
// unsynced (Options.Replicated), with write staging the entry's own
// bookkeeping (the log index it reached, the request it answers) into the
// command's batch, so that the two commit together. A command that fails
// writes nothing.
func (a *Applier) ApplyLogged(cmd Command, write func(b *pebble.Batch, res any) error) (any, error) {
	if l, ok := cmd.DB.(*LoadRange); ok {
		return nil, a.loadRange(cmd.Database, l, write)
	}
	if d, ok := cmd.DB.(*FinishFlatten); ok {
		if err := a.copyForFlatten(cmd.Database, d); err != nil {
			return nil, err
		}
	}
	return a.applyWith(cmd, write)
}

// Record commits bookkeeping of a replicated log that goes with no command
// (write stages it), as ApplyLogged commits a command's: unsynced, and a
// failure of the storage engine is the applier's fault from then on.
func (a *Applier) Record(write func(b *pebble.Batch) error) error {
	b := a.pdb.NewBatch()
	if err := write(b); err != nil {
		b.Close()
		return err
	}
	return a.commit(b, nil, nil)
}

// copyForFlatten makes the copy a FinishFlatten swaps in, on a replica:
// a replica applies the two flatten commands of its log, and the copy
// between them is made here, just before the second, whenever it will
// swap the layer in. Copying again after a crash writes the same keys.
func (a *Applier) copyForFlatten(db uint32, c *FinishFlatten) error {
	d := a.DB(db)
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	cur := d.State().ByID.At(c.Branch)
	if d.dropped || cur == nil || !slices.Equal(cur.Lineage[1:], c.Frozen) {
		return nil // FinishFlatten drops the layer
	}
	if err := a.Materialize(d.ID, cur.Schema, c.Frozen, c.Layer); err != nil {
		return err
	}
	for _, t := range cur.Schema.Tables {
		d.Filled.MarkFilled(c.Layer, t.ID, codec.KindRecordCur)
		d.Filled.MarkFilled(c.Layer, t.ID, codec.KindIDMapCur)
		d.IDs.Forget(c.Layer, t.ID)
	}
	return nil
}

// replicatedHost is the catalogHost of a replicated catalog: a new
// database starts empty, its first branch coming through its own log,
// and its range is deleted when it is dropped.
type replicatedHost struct{ catalogHost }

// InitDatabase opens the new database, empty: its first command comes
// through its own log.
func (h replicatedHost) InitDatabase(t *catalog.Tx, p *catalog.Database, _ *catalog.FirstBranch) error {
	id := p.ID
	t.Then(func(*catalog.Catalog) { h.a.OpenDatabase(id) })
	return nil
}

// RestoreDatabase is refused: a backup is restored through the new
// database's own log.
func (replicatedHost) RestoreDatabase(*catalog.Tx, *catalog.Database, []byte) error {
	return model.Errorf(model.CodeUnsupported, "a replicated catalog restores a backup through the database's own log")
}

// OpenDatabase makes database id reachable as its range holds it (empty
// for a new one), unless it is open already, and returns it.
func (a *Applier) OpenDatabase(id uint32) (*DB, error) {
	if d := a.DB(id); d != nil {
		return d, nil
	}
	d, err := loadDB(a.pdb, id)
	if err != nil {
		return nil, err
	}
	a.dbMu.Lock()
	if old := a.dbs[id]; old != nil {
		a.dbMu.Unlock()
		return old, nil
	}
	a.dbMu.Unlock()
	a.addDB(d)
	return d, nil
}

// ForgetDatabase deletes database id's range on this copy and forgets it,
// its observers told (Observer.Dropped): a node that no longer holds a
// replica of a database does so. The catalog still places it.
func (a *Applier) ForgetDatabase(id uint32) error {
	d := a.DB(id)
	if d != nil {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.gcMu.Lock()
		defer d.gcMu.Unlock()
	}
	b := a.pdb.NewBatch()
	pre := codec.DatabasePrefix(id)
	if err := b.DeleteRange(pre, codec.PrefixEnd(pre), nil); err != nil {
		b.Close()
		return err
	}
	if err := a.storage(func() error { return a.pdb.Apply(b, pebble.Sync) }); err != nil {
		return err
	}
	if d != nil {
		a.dbMu.Lock()
		if a.dbs[id] == d {
			delete(a.dbs, id)
		}
		a.dbMu.Unlock()
		d.dropped = true
		for _, o := range d.observers {
			o.Dropped()
		}
	}
	return nil
}

// ReplaceDatabase replaces database id's whole range with a copy of
// another replica's (layers.WriteRange), durably, and reopens it: its old
// observers are told it was dropped, and new ones observe the new state.
// The copy is one batch: it must fit in memory.
func (a *Applier) ReplaceDatabase(id uint32, r io.Reader) error {
	old := a.DB(id)
	if old != nil {
		// No command, and no reader, sees the range change under it.
		old.mu.Lock()
		defer old.mu.Unlock()
		old.gcMu.Lock()
		defer old.gcMu.Unlock()
	}
	b := a.pdb.NewBatch()
	defer b.Close()
	pre := codec.DatabasePrefix(id)
	if err := b.DeleteRange(pre, codec.PrefixEnd(pre), nil); err != nil {
		return err
	}
	if err := layers.ReadRange(r, func(k, v []byte) error {
		return b.Set(append(slices.Clip(pre), k...), v, nil)
	}); err != nil {
		return err
	}
	if err := a.storage(func() error { return a.pdb.Apply(b, pebble.Sync) }); err != nil {
		return err
	}
	d, err := loadDB(a.pdb, id)
	if err != nil {
		return err
	}
	if old != nil {
		old.dropped = true
		for _, o := range old.observers {
			o.Dropped()
		}
	}
	a.addDB(d)
	return nil
}

// ReplaceCatalog replaces the whole catalog with a copy of another
// replica's (WriteCatalog), durably, reloads it, and opens or forgets the
// databases it now places or no longer places. Those it no longer places
// were dropped: their ranges are deleted as DropDatabase would.
func (a *Applier) ReplaceCatalog(r io.Reader) error {
	a.catMu.Lock()
	defer a.catMu.Unlock()
	b := a.pdb.NewBatch()
	defer b.Close()
	pre := []byte{codec.NSCatalog}
	if err := b.DeleteRange(pre, codec.PrefixEnd(pre), nil); err != nil {
		return err
	}
	if err := layers.ReadPrefixed(r, catalogMagic, func(k, v []byte) error {
		return b.Set(append(slices.Clip(pre), k...), v, nil)
	}); err != nil {
		return err
	}
	if err := a.storage(func() error { return a.pdb.Apply(b, pebble.Sync) }); err != nil {
		return err
	}
	if err := a.cat.Reload(a.pdb); err != nil {
		return err
	}
	placed := map[uint32]bool{}
	for _, id := range a.cat.DatabaseIDs() {
		placed[id] = true
		if _, err := a.OpenDatabase(id); err != nil {
			return err
		}
	}
	a.dbMu.RLock()
	var gone []uint32
	for id := range a.dbs {
		if !placed[id] {
			gone = append(gone, id)
		}
	}
	a.dbMu.RUnlock()
	for _, id := range gone {
		if err := a.ForgetDatabase(id); err != nil {
			return err
		}
	}
	return nil
}

// catalogMagic opens a copy of a catalog.
const catalogMagic = "coppice-catalog-1\n"

// WriteCatalog writes the whole catalog as r holds it, a snapshot, to w:
// what ReplaceCatalog reads.
func WriteCatalog(r pebble.Reader, w io.Writer) error {
	return layers.WritePrefixed(r, []byte{codec.NSCatalog}, catalogMagic, nil, w)
}

// Rehydrate gives a decoded result (DecodeResult) the schema objects a
// result applied in this process carries, from the database's current
// state: the table of each written record, the branch, table and column
// of a written file. It fails when they no longer exist: the write
// applied, but its result cannot be shown as it was.
func (a *Applier) Rehydrate(cmd Command, res any) (any, error) {
	gone := model.Errorf(model.CodeConflict, "the write applied, but its branch changed before its result could be read")
	d := a.DB(cmd.Database)
	if cmd.DB == nil {
		return res, nil
	}
	if d == nil {
		return nil, gone
	}
	st := d.State()
	switch r := res.(type) {
	case []OpResult:
		w, _ := cmd.DB.(*WriteRecords)
		if w == nil || st.Branches.At(w.Branch) == nil {
			return nil, gone
		}
		s := st.Branches.At(w.Branch).Schema
		for i := range r {
			if r[i].Tbl = s.TableByID(r[i].Table); r[i].Tbl == nil && r[i].Rec != nil {
				return nil, gone
			}
		}
	case *FileWritten:
		if r.Br = st.ByID.At(r.Branch); r.Br != nil {
			if r.Tbl = r.Br.Schema.TableByID(r.Table); r.Tbl != nil {
				r.Col = r.Tbl.ByID[r.Column]
			}
		}
		if r.Col == nil {
			return nil, gone
		}
	}
	return res, nil
}

// LoadRange is one part of a backup (layers.WriteRange) loaded into a new
// database through the database's replicated log, whose entries are
// bounded: the parts are staged in the database's range, in order, and
// the last one checks the whole backup and installs it as the database's
// contents, in one batch. It applies through ApplyLogged only, to a
// database without branches; its result is nil.
type LoadRange struct {
	Part uint32 `json:"part"`
	Data []byte `json:"data"`
	Last bool   `json:"last,omitempty"`
}

// apply refuses a LoadRange outside a replicated log.
func (c *LoadRange) apply(*Tx) (any, error) {
	return nil, model.Errorf(model.CodeUnsupported, "a backup is loaded part by part through a replicated log only")
}

// loadRange applies a LoadRange to database db (see LoadRange), with
// write staging the entry's bookkeeping.
func (a *Applier) loadRange(db uint32, c *LoadRange, write func(b *pebble.Batch, res any) error) error {
	d := a.DB(db)
	if d == nil {
		return model.NotFoundf("database not found")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dropped {
		return model.NotFoundf("database not found")
	}
	if d.State().Branches.Len() > 0 {
		return model.Errorf(model.CodeAlreadyExists, "a backup loads into an empty database only")
	}
	staged := codec.MetaKey(db, codec.MetaLoad, nil)
	var parts [][]byte
	it, err := a.pdb.NewIter(&pebble.IterOptions{LowerBound: staged, UpperBound: codec.PrefixEnd(staged)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		parts = append(parts, slices.Clone(it.Value()))
	}
	if err := it.Close(); err != nil {
		return err
	}
	if int(c.Part) != len(parts) {
		return model.Invalidf("part %d of a backup, where part %d is due", c.Part, len(parts))
	}
	b := a.pdb.NewBatch()
	defer b.Close()
	if !c.Last {
		if err := b.Set(codec.MetaKey(db, codec.MetaLoad, codec.AppendU32(nil, c.Part)), c.Data, nil); err != nil {
			return err
		}
		if err := write(b, nil); err != nil {
			return err
		}
		return a.pdb.Apply(b, pebble.NoSync)
	}
	all := bytes.Join(append(parts, c.Data), nil)
	pre := codec.DatabasePrefix(db)
	if err := b.DeleteRange(staged, codec.PrefixEnd(staged), nil); err != nil {
		return err
	}
	if err := layers.ReadRange(bytes.NewReader(all), func(k, v []byte) error {
		if Bookkeeping(k) {
			return nil // of the group the backup came from, if any
		}
		return b.Set(append(slices.Clip(pre), k...), v, nil)
	}); err != nil {
		return err
	}
	if err := write(b, nil); err != nil {
		return err
	}
	if err := a.pdb.Apply(b, pebble.NoSync); err != nil {
		return err
	}
	nd, err := loadDB(a.pdb, db)
	if err != nil {
		return err
	}
	d.dropped = true
	for _, o := range d.observers {
		o.Dropped()
	}
	a.addDB(nd)
	return nil
}

// appliedCounter is the counter of a database's range holding, in a
// cluster, the last entry of its group applied to it.
const appliedCounter = "applied"

// AppliedKey is the key of that counter.
func AppliedKey(db uint32) []byte { return counterKey(db, appliedCounter) }

// Bookkeeping reports whether k, a key of a database's range without the
// range's prefix, is a replicated log's bookkeeping rather than the
// database's contents: the applied index, the recent requests, a load's
// parts. Backups leave them out.
func Bookkeeping(k []byte) bool {
	meta := codec.LayerPrefix(0, codec.MetaLayer)[len(codec.DatabasePrefix(0)):]
	if !bytes.HasPrefix(k, meta) || len(k) == len(meta) {
		return false
	}
	switch k[len(meta)] {
	case codec.MetaRequest, codec.MetaRequestAt, codec.MetaLoad:
		return true
	case codec.MetaCounter:
		return string(k[len(meta)+1:]) == appliedCounter
	}
	return false
}
