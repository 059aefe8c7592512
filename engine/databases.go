package engine

import (
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// DatabaseInfo is the public metadata of a database (spec §2.8).
type DatabaseInfo = catalog.DatabaseInfo

// CreateDatabaseRequest creates a database with one branch.
type CreateDatabaseRequest struct {
	// Workspace is the core id of the workspace the database belongs to;
	// "" creates it outside every workspace, which needs no accounts
	// (Refs then name no workspace either).
	Workspace string
	Name      string
	Region    string
	// BranchName is the first branch; "" means main.
	BranchName string
	UIColor    string
	Metadata   BranchMetadata
}

// database returns the open database ws/name names.
func (e *Engine) database(ws, name string) (*database, error) {
	id, err := e.cat.FindDatabase(ws, name)
	if err != nil {
		return nil, err
	}
	d := e.mem.DB(id)
	if d == nil {
		return nil, model.NotFoundf("database [%s] not found", name)
	}
	if e.cl != nil {
		if err := e.cl.check(d, name); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// CreateDatabase creates a database and its first branch (an empty
// schema), in one catalog command that places the database and starts it
// with its first branch.
func (e *Engine) CreateDatabase(req CreateDatabaseRequest) (DatabaseInfo, error) {
	if err := model.CheckName("database", req.Name); err != nil {
		return DatabaseInfo{}, err
	}
	if req.BranchName == "" {
		req.BranchName = "main"
	}
	if err := model.CheckName("branch", req.BranchName); err != nil {
		return DatabaseInfo{}, err
	}
	if req.Region == "" {
		return DatabaseInfo{}, model.Invalidf("region is required")
	}
	now := e.now()
	res, err := e.applyCatalog(&catalog.PlaceDatabase{
		Database: catalog.Database{Workspace: req.Workspace, Name: req.Name, Region: req.Region, CreatedAt: now, UIColor: req.UIColor},
		First:    &catalog.FirstBranch{Name: req.BranchName, PublicID: e.ids.Next("bb_", now), Now: now, Metadata: req.Metadata},
	})
	if err != nil {
		return DatabaseInfo{}, err
	}
	return res.(*catalog.Database).Info(), nil
}

// DeleteDatabase deletes a database with all its branches and data.
func (e *Engine) DeleteDatabase(ws, name string) error {
	_, err := e.applyCatalog(&catalog.DropDatabase{WS: ws, Name: name})
	return err
}

// GetDatabase returns a database's metadata.
func (e *Engine) GetDatabase(ws, name string) (DatabaseInfo, error) {
	return e.cat.DatabaseInfo(ws, name)
}

// ListDatabases returns the databases of a workspace by name.
func (e *Engine) ListDatabases(ws string) []DatabaseInfo { return e.cat.Databases(ws) }

// UpdateDatabase changes a database's UI color (and, when newName is not
// empty, its name: branches, data and git mapping follow, since keys carry
// ids only).
func (e *Engine) UpdateDatabase(ws, name, newName string, uiColor *string) (DatabaseInfo, error) {
	res, err := e.applyCatalog(&catalog.UpdateDatabase{WS: ws, Name: name, NewName: newName, UIColor: uiColor})
	if err != nil {
		return DatabaseInfo{}, err
	}
	return res.(DatabaseInfo), nil
}
