package engine

import (
	"io"
	"log/slog"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// BackupDatabase writes a consistent snapshot of a database to w.
func (e *Engine) BackupDatabase(ws, name string, w io.Writer) error {
	_, d, err := e.database(ws, name)
	if err != nil {
		return err
	}
	snap := e.pdb.NewSnapshot()
	defer snap.Close()
	return layers.WriteRange(snap, d.id, w)
}

// RestoreDatabase reads a backup into a new database of a workspace. A
// backup that fails its checksum or is malformed restores nothing. The
// catalog's command places the database; the backup fills its range in
// the same batch.
func (e *Engine) RestoreDatabase(ws, name, region string, r io.Reader) error {
	if err := model.CheckName("database", name); err != nil {
		return err
	}
	place := &placeDatabase{Database: Database{Workspace: ws, Name: name, Region: region, CreatedAt: e.now()}}
	_, err := e.applyCatalog(place, func(t *catTx, res any) error {
		id := res.(*Database).ID
		prefix := codec.DatabasePrefix(id)
		if err := layers.ReadRange(r, func(k, v []byte) error {
			return t.batch.Set(append(append([]byte(nil), prefix...), k...), v, nil)
		}); err != nil {
			return err
		}
		t.after = append(t.after, func(*catalog) {
			// The batch is applied: the database's range is readable.
			d, err := loadDatabase(e.pdb, id)
			if err != nil {
				// Its keys are durable: the next open reads them.
				e.obs.log.Error("restored database cannot be opened until restart",
					slog.String("database", name), slog.Any("err", err))
				return
			}
			e.addDatabase(d)
		})
		return nil
	})
	return err
}
