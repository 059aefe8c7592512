package catalog

import (
	"sort"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// DatabaseInfo is the public metadata of a database (spec §2.8).
type DatabaseInfo struct {
	Name      string
	Region    string
	CreatedAt time.Time
	UIColor   string
}

// Info returns the public metadata of a placement.
func (d *Database) Info() DatabaseInfo {
	return DatabaseInfo{Name: d.Name, Region: d.Region, CreatedAt: d.CreatedAt, UIColor: d.UIColor}
}

// findDatabase returns the placement of a database of a workspace by name.
// The caller holds mu, or runs a command.
func (c *Catalog) findDatabase(ws, name string) *Database {
	return c.databases[c.dbNames[dbNameKey(ws, name)]]
}

// dbNameKey is the key of a database in the name index.
func dbNameKey(ws, name string) string { return ws + "\x00" + name }

// setDatabase records a new or changed placement, keeping the name index.
// The caller holds mu for writing.
func (c *Catalog) setDatabase(p *Database) {
	if old := c.databases[p.ID]; old != nil {
		delete(c.dbNames, dbNameKey(old.Workspace, old.Name))
	}
	c.databases[p.ID] = p
	c.dbNames[dbNameKey(p.Workspace, p.Name)] = p.ID
}

// removeDatabase forgets a placement. The caller holds mu for writing.
func (c *Catalog) removeDatabase(id uint32) {
	if old := c.databases[id]; old != nil {
		delete(c.dbNames, dbNameKey(old.Workspace, old.Name))
	}
	delete(c.databases, id)
}

// databasesOf returns the databases of workspace core by id.
func (c *Catalog) databasesOf(core string) []*Database {
	var out []*Database
	for _, d := range c.databases {
		if d.Workspace == core {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// FindDatabase returns the id of the database of workspace ws (core id,
// or "" outside every workspace) called name, or CodeNotFound.
func (c *Catalog) FindDatabase(ws, name string) (uint32, error) {
	c.mu.RLock()
	p := c.findDatabase(ws, name)
	c.mu.RUnlock()
	if p == nil {
		return 0, model.NotFoundf("database [%s] not found", name)
	}
	return p.ID, nil
}

// DatabaseInfo returns the metadata of a database, or CodeNotFound.
func (c *Catalog) DatabaseInfo(ws, name string) (DatabaseInfo, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p := c.findDatabase(ws, name)
	if p == nil {
		return DatabaseInfo{}, model.NotFoundf("database [%s] not found", name)
	}
	return p.Info(), nil
}

// Databases returns the databases of a workspace by name.
func (c *Catalog) Databases(ws string) []DatabaseInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	byName := map[string]DatabaseInfo{}
	for _, d := range c.databases {
		if d.Workspace == ws {
			byName[d.Name] = d.Info()
		}
	}
	out := make([]DatabaseInfo, 0, len(byName))
	for _, n := range model.SortedKeys(byName) {
		out = append(out, byName[n])
	}
	return out
}

// DatabaseIDs returns the ids of every placed database, in order.
func (c *Catalog) DatabaseIDs() []uint32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]uint32, 0, len(c.databases))
	for id := range c.databases {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Placements returns a copy of the placement of every database, in id
// order: what reports over all databases walk.
func (c *Catalog) Placements() []Database {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Database, 0, len(c.databases))
	for _, d := range c.databases {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ServerState returns a server-wide setting, or nil when it is not set.
func (c *Catalog) ServerState(name string) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.state[name]
}

// PlaceDatabase registers a new database: it takes the next database id
// and records where the database lives and what it is called. Workspace ""
// places it outside every workspace, where embedders keep databases
// without accounts. First, when set, is the database's first branch,
// created by the database's first command in the same batch; without it
// the range stays empty. The result is the *Database with its id.
type PlaceDatabase struct {
	Database Database     `json:"database"`
	First    *FirstBranch `json:"first,omitempty"`
}

func (*PlaceDatabase) kind() Kind { return kindPlaceDatabase }

func (cmd *PlaceDatabase) apply(c *Catalog, t *Tx, h Host) (any, error) {
	p, err := c.place(t, cmd.Database)
	if err != nil {
		return nil, err
	}
	if cmd.First != nil {
		if err := h.InitDatabase(t, p, cmd.First); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// place stages the placement of a new database, with the next id, and
// returns it.
func (c *Catalog) place(t *Tx, p Database) (*Database, error) {
	if p.Workspace != "" && c.workspaces[p.Workspace] == nil {
		return nil, model.NotFoundf("workspace [%s] not found", p.Workspace)
	}
	if c.findDatabase(p.Workspace, p.Name) != nil {
		return nil, model.Errorf(model.CodeAlreadyExists, "database [%s] already exists", p.Name)
	}
	p.ID = c.dbCounter + 1
	if err := t.putJSON(databaseKey(p.ID), &p); err != nil {
		return nil, err
	}
	if err := t.batch.Set(codec.CatalogKey(codec.CatCounter, []byte("db")), codec.AppendU64(nil, uint64(p.ID)), nil); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) {
		c.setDatabase(&p)
		c.dbCounter = p.ID
	})
	return &p, nil
}

// RestoreDatabase places a new database, as PlaceDatabase does, whose
// contents are a backup's key range (layers.WriteRange): all of it, or
// nothing when the backup is malformed. The result is the *Database.
type RestoreDatabase struct {
	Database Database `json:"database"`
	Backup   []byte   `json:"backup"`
}

func (*RestoreDatabase) kind() Kind { return kindRestoreDatabase }

func (cmd *RestoreDatabase) apply(c *Catalog, t *Tx, h Host) (any, error) {
	p, err := c.place(t, cmd.Database)
	if err != nil {
		return nil, err
	}
	if err := h.RestoreDatabase(t, p, cmd.Backup); err != nil {
		return nil, err
	}
	return p, nil
}

// UpdateDatabase renames a database (NewName "" keeps the name) and sets
// its UI color (nil keeps it); the result is the DatabaseInfo.
type UpdateDatabase struct {
	WS      string  `json:"ws"`
	Name    string  `json:"name"`
	NewName string  `json:"newName,omitempty"`
	UIColor *string `json:"uiColor,omitempty"`
}

func (*UpdateDatabase) kind() Kind { return kindUpdateDatabase }

func (cmd *UpdateDatabase) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	p := c.findDatabase(cmd.WS, cmd.Name)
	if p == nil {
		return nil, model.NotFoundf("database [%s] not found", cmd.Name)
	}
	np := *p
	if cmd.NewName != "" && cmd.NewName != cmd.Name {
		if err := model.CheckName("database", cmd.NewName); err != nil {
			return nil, err
		}
		if c.findDatabase(cmd.WS, cmd.NewName) != nil {
			return nil, model.Errorf(model.CodeAlreadyExists, "database [%s] already exists", cmd.NewName)
		}
		np.Name = cmd.NewName
	}
	if cmd.UIColor != nil {
		np.UIColor = *cmd.UIColor
	}
	if err := t.putJSON(databaseKey(p.ID), &np); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) { c.setDatabase(&np) })
	return np.Info(), nil
}

// DropDatabase deletes a database with all its branches and data.
type DropDatabase struct {
	WS   string `json:"ws"`
	Name string `json:"name"`
}

func (*DropDatabase) kind() Kind { return kindDropDatabase }

func (cmd *DropDatabase) apply(c *Catalog, t *Tx, h Host) (any, error) {
	p := c.findDatabase(cmd.WS, cmd.Name)
	if p == nil {
		return nil, model.NotFoundf("database [%s] not found", cmd.Name)
	}
	return nil, c.drop(t, h, p)
}

// drop stages the deletion of database p: its placement, and through h its
// range.
func (c *Catalog) drop(t *Tx, h Host, p *Database) error {
	if err := t.delete(databaseKey(p.ID)); err != nil {
		return err
	}
	id := p.ID
	t.after = append(t.after, func(c *Catalog) { c.removeDatabase(id) })
	return h.DropDatabase(t, p)
}
