package engine

import (
	"time"

	"github.com/coppice-db/coppice/codec"
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
	Workspace string // workspace core id
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
		return nil, nil, notFoundf("database [%s] not found", name)
	}
	e.dbMu.RLock()
	d := e.dbs[p.ID]
	e.dbMu.RUnlock()
	if d == nil {
		return nil, nil, notFoundf("database [%s] not found", name)
	}
	return p, d, nil
}

// CreateDatabase creates a database and its first branch (an empty schema).
func (e *Engine) CreateDatabase(req CreateDatabaseRequest) (DatabaseInfo, error) {
	if err := checkName("database", req.Name); err != nil {
		return DatabaseInfo{}, err
	}
	if req.BranchName == "" {
		req.BranchName = "main"
	}
	if err := checkName("branch", req.BranchName); err != nil {
		return DatabaseInfo{}, err
	}
	if req.Region == "" {
		return DatabaseInfo{}, invalidf("region is required")
	}
	now := e.now()
	branchPublicID := e.ids.next("bb_", now)
	var info DatabaseInfo
	err := e.runCatalog(func(c *catalog, t *catTx) error {
		if c.workspaces[req.Workspace] == nil {
			return notFoundf("workspace [%s] not found", req.Workspace)
		}
		if c.findDatabase(req.Workspace, req.Name) != nil {
			return Errorf(CodeAlreadyExists, "database [%s] already exists", req.Name)
		}
		id := c.dbCounter + 1
		p := &Database{ID: id, Workspace: req.Workspace, Name: req.Name, Region: req.Region, CreatedAt: now, UIColor: req.UIColor}
		if err := t.putJSON(databaseKey(id), p); err != nil {
			return err
		}
		if err := t.batch.Set(codec.CatalogKey(codec.CatCounter, []byte("db")), u64(uint64(id)), nil); err != nil {
			return err
		}
		// The database's own range: counters and the first branch.
		d := &database{id: id, rows: map[uint32]uint32{}}
		d.state.Store(newDBState(map[string]*branch{}, map[string]string{}))
		tx := &dbTx{e: e, d: d, batch: t.batch, st: d.state.Load(), seq: 1, rows: map[uint32]uint32{}}
		b := &branch{
			ID: tx.allocBranch(), PublicID: branchPublicID, Name: req.BranchName, CreatedAt: now,
			Metadata: req.Metadata, Lineage: lineage{{Layer: tx.allocLayer(), Seq: maxSeq}}, Schema: &schema{},
		}
		b.Schema.index()
		if err := tx.putBranch(b); err != nil {
			return err
		}
		if err := tx.finish(); err != nil {
			return err
		}
		d.seq, d.nextLayer, d.nextBranch = tx.seq, tx.nextLayer, tx.nextBranch
		d.state.Store(tx.state())
		info = dbInfo(p)
		t.after = append(t.after, func(c *catalog) {
			c.setDatabase(p)
			c.dbCounter = id
			e.addDatabase(d)
		})
		return nil
	})
	return info, err
}

// DeleteDatabase deletes a database with all its branches and data.
func (e *Engine) DeleteDatabase(ws, name string) error {
	return e.runCatalog(func(c *catalog, t *catTx) error {
		p := c.findDatabase(ws, name)
		if p == nil {
			return notFoundf("database [%s] not found", name)
		}
		return e.dropDatabase(t, p)
	})
}

// GetDatabase returns a database's metadata.
func (e *Engine) GetDatabase(ws, name string) (DatabaseInfo, error) {
	e.cat.mu.RLock()
	defer e.cat.mu.RUnlock()
	p := e.cat.findDatabase(ws, name)
	if p == nil {
		return DatabaseInfo{}, notFoundf("database [%s] not found", name)
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
	for _, n := range sortedKeys(byName) {
		out = append(out, byName[n])
	}
	return out
}

// UpdateDatabase changes a database's UI color (and, when newName is not
// empty, its name: branches, data and git mapping follow, since keys carry
// ids only).
func (e *Engine) UpdateDatabase(ws, name, newName string, uiColor *string) (DatabaseInfo, error) {
	var info DatabaseInfo
	err := e.runCatalog(func(c *catalog, t *catTx) error {
		p := c.findDatabase(ws, name)
		if p == nil {
			return notFoundf("database [%s] not found", name)
		}
		np := *p
		if newName != "" && newName != name {
			if err := checkName("database", newName); err != nil {
				return err
			}
			if c.findDatabase(ws, newName) != nil {
				return Errorf(CodeAlreadyExists, "database [%s] already exists", newName)
			}
			np.Name = newName
		}
		if uiColor != nil {
			np.UIColor = *uiColor
		}
		if err := t.putJSON(databaseKey(p.ID), &np); err != nil {
			return err
		}
		info = dbInfo(&np)
		t.after = append(t.after, func(c *catalog) { c.setDatabase(&np) })
		return nil
	})
	return info, err
}
