package apply

import (
	"bytes"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/layers"
)

// applyCatalog applies a catalog command as one synced batch and returns
// its result; write, when not nil, stages more writes into the batch.
func (a *Applier) applyCatalog(cmd catalog.Command, write func(b *pebble.Batch, res any) error) (any, error) {
	a.catMu.Lock()
	defer a.catMu.Unlock()
	t := catalog.NewTx(a.pdb.NewBatch())
	defer t.Release()
	var h catalog.Host = catalogHost{a}
	if a.opts.Replicated {
		h = replicatedHost{catalogHost{a}}
	}
	res, err := catalog.Stage(a.cat, t, h, cmd)
	if err == nil && write != nil {
		err = write(t.Batch(), res)
	}
	if err != nil {
		t.Batch().Close()
		return nil, err
	}
	if err := a.commit(t.Batch(), func() { t.Publish(a.cat) }, nil); err != nil {
		return nil, err
	}
	return res, nil
}

// catalogHost does for catalog commands what they start in databases, in
// the catalog command's batch.
type catalogHost struct{ a *Applier }

// InitDatabase stages the first command of a new database, its first
// branch, as every database command is staged.
func (h catalogHost) InitDatabase(t *catalog.Tx, p *catalog.Database, first *catalog.FirstBranch) error {
	d := newDB(p.ID)
	publish, err := h.a.stage(d, t.Batch(), &InitDatabase{Branch: first.Name, PublicID: first.PublicID, Now: first.Now, Metadata: first.Metadata})
	if err != nil {
		return err
	}
	t.Then(func(*catalog.Catalog) {
		publish()
		h.a.addDB(d)
	})
	return nil
}

// RestoreDatabase stages a backup's key range as the contents of a new
// database.
func (h catalogHost) RestoreDatabase(t *catalog.Tx, p *catalog.Database, backup []byte) error {
	prefix := codec.DatabasePrefix(p.ID)
	if err := layers.ReadRange(bytes.NewReader(backup), func(k, v []byte) error {
		return t.Batch().Set(append(append([]byte(nil), prefix...), k...), v, nil)
	}); err != nil {
		return err
	}
	t.Then(func(*catalog.Catalog) {
		// The batch is applied: the database's range is readable.
		d, err := loadDB(h.a.pdb, p.ID)
		if err != nil {
			// Its keys are durable: the next open reads them.
			h.a.opts.Logger.Error("restored database cannot be opened until restart",
				slog.String("database", p.Name), slog.Any("err", err))
			return
		}
		h.a.addDB(d)
	})
	return nil
}

// DropDatabase stages the deletion of database p with all its branches and
// data. It waits for the database's in-flight command and keeps new ones
// out until the catalog command ends; once the deletion is durable,
// commands on the database fail with CodeNotFound and its observers are
// told.
func (h catalogHost) DropDatabase(t *catalog.Tx, p *catalog.Database) error {
	d := h.a.DB(p.ID)
	if d != nil {
		d.mu.Lock()
		t.Finally(d.mu.Unlock)
	}
	pre := codec.DatabasePrefix(p.ID)
	if err := t.Batch().DeleteRange(pre, codec.PrefixEnd(pre), nil); err != nil {
		return err
	}
	t.Then(func(*catalog.Catalog) {
		h.a.dbMu.Lock()
		delete(h.a.dbs, p.ID)
		h.a.dbMu.Unlock()
		if d != nil {
			d.dropped = true
			for _, o := range d.observers {
				o.Dropped()
			}
		}
	})
	return nil
}
