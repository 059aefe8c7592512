package engine

import (
	"bytes"
	"log/slog"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/layers"
)

// applyCatalog applies a catalog command as one synced batch and returns
// its result.
func (e *Engine) applyCatalog(cmd catalog.Command) (any, error) {
	e.catMu.Lock()
	defer e.catMu.Unlock()
	t := catalog.NewTx(e.pdb.NewBatch())
	defer t.Release()
	res, err := catalog.Stage(e.cat, t, catalogHost{e}, cmd)
	if err != nil {
		t.Batch().Close()
		return nil, err
	}
	if err := e.commit(t.Batch(), func() { t.Publish(e.cat) }, nil); err != nil {
		return nil, err
	}
	return res, nil
}

// catalogHost does for catalog commands what they start in databases.
type catalogHost struct{ e *Engine }

// InitDatabase stages the first command of a new database, its first
// branch, into the catalog command that places it.
func (h catalogHost) InitDatabase(t *catalog.Tx, p *catalog.Database, first *catalog.FirstBranch) error {
	e := h.e
	d := newDatabase(p.ID)
	publish, err := e.stage(d, t.Batch(), &initDatabase{Branch: first.Name, PublicID: first.PublicID, Now: first.Now, Metadata: first.Metadata})
	if err != nil {
		return err
	}
	t.Then(func(*catalog.Catalog) {
		publish()
		e.addDatabase(d)
	})
	return nil
}

// RestoreDatabase stages a backup's key range as the contents of a new
// database, into the catalog command that places it.
func (h catalogHost) RestoreDatabase(t *catalog.Tx, p *catalog.Database, backup []byte) error {
	e := h.e
	prefix := codec.DatabasePrefix(p.ID)
	if err := layers.ReadRange(bytes.NewReader(backup), func(k, v []byte) error {
		return t.Batch().Set(append(append([]byte(nil), prefix...), k...), v, nil)
	}); err != nil {
		return err
	}
	t.Then(func(*catalog.Catalog) {
		// The batch is applied: the database's range is readable.
		d, err := loadDatabase(e.pdb, p.ID)
		if err != nil {
			// Its keys are durable: the next open reads them.
			e.obs.log.Error("restored database cannot be opened until restart",
				slog.String("database", p.Name), slog.Any("err", err))
			return
		}
		e.addDatabase(d)
	})
	return nil
}

// DropDatabase stages the deletion of database p with all its branches and
// data into a catalog command. It waits for the database's in-flight command
// and keeps new ones out until the catalog command ends; once the deletion is
// durable, commands on the database fail with CodeNotFound.
func (h catalogHost) DropDatabase(t *catalog.Tx, p *catalog.Database) error {
	e := h.e
	e.dbMu.RLock()
	d := e.dbs[p.ID]
	e.dbMu.RUnlock()
	if d != nil {
		d.mu.Lock()
		t.Finally(d.mu.Unlock)
	}
	pre := codec.DatabasePrefix(p.ID)
	if err := t.Batch().DeleteRange(pre, codec.PrefixEnd(pre), nil); err != nil {
		return err
	}
	t.Then(func(*catalog.Catalog) {
		if d != nil {
			d.dropped = true
		}
		e.dbMu.Lock()
		delete(e.dbs, p.ID)
		e.dbMu.Unlock()
	})
	return nil
}
