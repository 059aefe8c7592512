package catalog

import (
	"sort"
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

// ServerState returns a server-wide setting, or nil when it is not set.
func (c *Catalog) ServerState(name string) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.state[name]
}
