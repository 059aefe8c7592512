package engine

import (
	"time"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// DatabaseInfo is the public metadata of a database (spec §2.8).
type DatabaseInfo struct {
	Name      string
	Region    string
	CreatedAt time.Time
	UIColor   string
}

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

func dbInfo(d *Database) DatabaseInfo {
	return DatabaseInfo{Name: d.Name, Region: d.Region, CreatedAt: d.CreatedAt, UIColor: d.UIColor}
}

// findDatabase returns the placement of a database of a workspace by name.
// The caller holds cat.mu (read or write).
func (c *catalog) findDatabase(ws, name string) *Database {
	return c.databases[c.dbNames[dbNameKey(ws, name)]]
}

func dbNameKey(ws, name string) string { return ws + "\x00" + name }

// setDatabase records a new or changed placement, keeping the name index.
// The caller holds mu for writing.
func (c *catalog) setDatabase(p *Database) {
	if old := c.databases[p.ID]; old != nil {
		delete(c.dbNames, dbNameKey(old.Workspace, old.Name))
	}
	c.databases[p.ID] = p
	c.dbNames[dbNameKey(p.Workspace, p.Name)] = p.ID
}

// removeDatabase forgets a placement. The caller holds mu for writing.
func (c *catalog) removeDatabase(id uint32) {
	if old := c.databases[id]; old != nil {
		delete(c.dbNames, dbNameKey(old.Workspace, old.Name))
	}
	delete(c.databases, id)
}

// database returns the placement and open database for ws/name.
func (e *Engine) database(ws, name string) (*Database, *database, error) {
	e.cat.mu.RLock()
	p := e.cat.findDatabase(ws, name)
	e.cat.mu.RUnlock()
	if p == nil {
		return nil, nil, model.NotFoundf("database [%s] not found", name)
	}
	e.dbMu.RLock()
	d := e.dbs[p.ID]
	e.dbMu.RUnlock()
	if d == nil {
		return nil, nil, model.NotFoundf("database [%s] not found", name)
	}
	return p, d, nil
}

// CreateDatabase creates a database and its first branch (an empty
// schema). Two commands do it: the catalog's, which places the database,
// and the database's first, which creates the branch; they apply as one.
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
	place := &placeDatabase{Database: Database{Workspace: req.Workspace, Name: req.Name, Region: req.Region, CreatedAt: now, UIColor: req.UIColor}}
	first := &initDatabase{Branch: req.BranchName, PublicID: e.ids.Next("bb_", now), Now: now, Metadata: req.Metadata}
	p, err := e.createDatabase(place, first)
	if err != nil {
		return DatabaseInfo{}, err
	}
	return dbInfo(p), nil
}

// createDatabase applies the catalog's command that places a database and
// the database's first command as one.
func (e *Engine) createDatabase(place *placeDatabase, first *initDatabase) (*Database, error) {
	res, err := e.applyCatalog(place, func(t *catTx, res any) error {
		d := newDatabase(res.(*Database).ID)
		publish, err := e.stage(d, t.batch, first)
		if err != nil {
			return err
		}
		t.after = append(t.after, func(*catalog) {
			publish()
			e.addDatabase(d)
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res.(*Database), nil
}

// DeleteDatabase deletes a database with all its branches and data.
func (e *Engine) DeleteDatabase(ws, name string) error {
	_, err := e.applyCatalog(&dropDatabase{WS: ws, Name: name}, nil)
	return err
}

// GetDatabase returns a database's metadata.
func (e *Engine) GetDatabase(ws, name string) (DatabaseInfo, error) {
	e.cat.mu.RLock()
	defer e.cat.mu.RUnlock()
	p := e.cat.findDatabase(ws, name)
	if p == nil {
		return DatabaseInfo{}, model.NotFoundf("database [%s] not found", name)
	}
	return dbInfo(p), nil
}

// ListDatabases returns the databases of a workspace by name.
func (e *Engine) ListDatabases(ws string) []DatabaseInfo {
	e.cat.mu.RLock()
	defer e.cat.mu.RUnlock()
	byName := map[string]DatabaseInfo{}
	for _, d := range e.cat.databases {
		if d.Workspace == ws {
			byName[d.Name] = dbInfo(d)
		}
	}
	out := make([]DatabaseInfo, 0, len(byName))
	for _, n := range model.SortedKeys(byName) {
		out = append(out, byName[n])
	}
	return out
}

// UpdateDatabase changes a database's UI color (and, when newName is not
// empty, its name: branches, data and git mapping follow, since keys carry
// ids only).
func (e *Engine) UpdateDatabase(ws, name, newName string, uiColor *string) (DatabaseInfo, error) {
	res, err := e.applyCatalog(&updateDatabase{WS: ws, Name: name, NewName: newName, UIColor: uiColor}, nil)
	if err != nil {
		return DatabaseInfo{}, err
	}
	return res.(DatabaseInfo), nil
}
