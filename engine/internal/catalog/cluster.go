package catalog

import (
	"slices"
	"sort"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// A cluster keeps its own shape in the catalog, which its meta group
// replicates: the nodes, and where each database's replicas are
// (Database.Replicas). A single server has neither.

// Node is a server of a cluster.
type Node struct {
	// ID is the node's id, ≥ 1, and its replica id in the meta group.
	ID uint64 `json:"id"`
	// RaftAddr is where the other nodes reach it for replication.
	RaftAddr string `json:"raftAddr"`
	// APIAddr is where it serves the HTTP API, host:port.
	APIAddr string `json:"apiAddr,omitempty"`
}

// Replica is one copy of a database, on one node, as a member of the
// database's group.
type Replica struct {
	// ID is the replica's id in the database's group. Ids are never
	// reused within a group: a node that hosts a database again gets a new
	// one.
	ID uint64 `json:"id"`
	// Node is the node that hosts it, and Addr that node's RaftAddr.
	Node uint64 `json:"node"`
	Addr string `json:"addr"`
	// Join marks a replica added to a running group, as opposed to one of
	// the group's founding members.
	Join bool `json:"join,omitempty"`
	// Removed marks a replica taken out of the group: its node deletes its
	// copy, and its id is never used again.
	Removed bool `json:"removed,omitempty"`
}

// nodeKey is the key of a node.
func nodeKey(id uint64) []byte { return codec.CatalogKey(codec.CatNode, codec.AppendU64(nil, id)) }

// Kinds of the cluster's commands.
const (
	kindSetNode Kind = iota + 40
	kindRemoveNode
	kindSetReplicas
)

// SetNode adds a node to the cluster's list or changes its addresses. The
// result is nil.
type SetNode struct {
	Node Node `json:"node"`
}

func (*SetNode) kind() Kind { return kindSetNode }

func (cmd *SetNode) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	if cmd.Node.ID == 0 || cmd.Node.RaftAddr == "" {
		return nil, model.Invalidf("a node needs an id and a raft address")
	}
	n := cmd.Node
	if err := t.putJSON(nodeKey(n.ID), &n); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) { c.nodes[n.ID] = &n })
	return nil, nil
}

// RemoveNode takes a node off the cluster's list. It fails while a
// database still has a replica on it. The result is nil.
type RemoveNode struct {
	ID uint64 `json:"id"`
}

func (*RemoveNode) kind() Kind { return kindRemoveNode }

func (cmd *RemoveNode) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	if c.nodes[cmd.ID] == nil {
		return nil, model.NotFoundf("node [%d] not found", cmd.ID)
	}
	for _, id := range sortedIDs(c.databases) {
		for _, r := range c.databases[id].Replicas {
			if r.Node == cmd.ID && !r.Removed {
				return nil, model.Errorf(model.CodeConflict, "node [%d] still holds a replica of database [%s]", cmd.ID, c.databases[id].Name)
			}
		}
	}
	if err := t.delete(nodeKey(cmd.ID)); err != nil {
		return nil, err
	}
	id := cmd.ID
	t.after = append(t.after, func(c *Catalog) { delete(c.nodes, id) })
	return nil, nil
}

// SetReplicas replaces the replicas of database DB, provided they are
// still Prev: a move of replicas is a series of these, each checked
// against the one before. The result is nil.
type SetReplicas struct {
	DB       uint32    `json:"db"`
	Prev     []Replica `json:"prev"`
	Replicas []Replica `json:"replicas"`
}

func (*SetReplicas) kind() Kind { return kindSetReplicas }

func (cmd *SetReplicas) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	p := c.databases[cmd.DB]
	if p == nil {
		return nil, model.NotFoundf("database [%d] not found", cmd.DB)
	}
	if !slices.Equal(p.Replicas, cmd.Prev) {
		return nil, model.Errorf(model.CodeConflict, "the replicas of database [%s] changed meanwhile", p.Name)
	}
	np := *p
	np.Replicas = slices.Clone(cmd.Replicas)
	for _, r := range np.Replicas {
		np.NextReplica = max(np.NextReplica, r.ID+1)
	}
	if err := t.putJSON(databaseKey(p.ID), &np); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) { c.setDatabase(&np) })
	return nil, nil
}

// sortedIDs returns the keys of m in order.
func sortedIDs[V any](m map[uint32]V) []uint32 {
	out := make([]uint32, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Nodes returns the cluster's nodes by id; none on a single server.
func (c *Catalog) Nodes() []Node {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// NextReplicaID is the least replica id d's group has never used.
func (d *Database) NextReplicaID() uint64 {
	next := max(d.NextReplica, 1)
	for _, r := range d.Replicas {
		next = max(next, r.ID+1)
	}
	return next
}

// PlacementOf returns a copy of the placement of database id.
func (c *Catalog) PlacementOf(id uint32) (Database, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d := c.databases[id]
	if d == nil {
		return Database{}, false
	}
	return *d, true
}

// Reload replaces the whole catalog with what r holds: a replica of a
// replicated catalog does so when it catches up from a snapshot.
func (c *Catalog) Reload(r pebble.Reader) error {
	fresh, err := Load(r)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users, c.emails, c.keys, c.userKeys = fresh.users, fresh.emails, fresh.keys, fresh.userKeys
	c.workspaces, c.members, c.invites, c.inviteKeys = fresh.workspaces, fresh.members, fresh.invites, fresh.inviteKeys
	c.databases, c.dbNames, c.dbCounter, c.state = fresh.databases, fresh.dbNames, fresh.dbCounter, fresh.state
	c.nodes = fresh.nodes
	return nil
}

func init() {
	commands[kindSetNode] = func() Command { return new(SetNode) }
	commands[kindRemoveNode] = func() Command { return new(RemoveNode) }
	commands[kindSetReplicas] = func() Command { return new(SetReplicas) }
}
