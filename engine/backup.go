package engine

import (
	"io"

	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// BackupDatabase writes a consistent snapshot of a database to w.
func (e *Engine) BackupDatabase(ws, name string, w io.Writer) error {
	d, err := e.database(ws, name)
	if err != nil {
		return err
	}
	snap := e.pdb.NewSnapshot()
	defer snap.Close()
	return layers.WriteRange(snap, d.ID, w)
}

// RestoreDatabase reads a backup into a new database of a workspace. A
// backup that fails its checksum or is malformed restores nothing. One
// catalog command places the database and fills its range.
func (e *Engine) RestoreDatabase(ws, name, region string, r io.Reader) error {
	if err := model.CheckName("database", name); err != nil {
		return err
	}
	backup, err := io.ReadAll(r)
	if err != nil {
		return model.Invalidf("backup is truncated or malformed: %v", err)
	}
	_, err = e.applyCatalog(&catalog.RestoreDatabase{
		Database: catalog.Database{Workspace: ws, Name: name, Region: region, CreatedAt: e.now()},
		Backup:   backup,
	})
	return err
}
