package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/consensus"
	"github.com/coppice-db/coppice/engine/internal/replica"
)

// A cluster replicates every database and the catalog over nodes
// (engine/internal/replica). Writes are proposed to the group of the
// database (or the catalog) they change and applied on every replica
// through the one write path; the call returns once a majority has the
// command and this node applied it. Reads read the local replica: callers
// that need them linearizable first pass a barrier (Cluster.Barrier).

// ClusterOptions make an engine a node of a cluster (Options.Cluster).
type ClusterOptions struct {
	// NodeID is this node's id, ≥ 1, never reused by another node.
	NodeID uint64
	// RaftAddr is the host:port the other nodes replicate with this node
	// at; it must not change. ListenAddr, when set, is what to listen on
	// instead (such as 0.0.0.0:port).
	RaftAddr   string
	ListenAddr string
	// APIAddr is where this node serves the HTTP API, shown to the others.
	APIAddr string
	// Join lists the Raft addresses of the founding nodes, node 1 first
	// (or as "id@host:port"). A node not in the list waits to be added by
	// Cluster.AddNode on a member.
	Join []string
	// Replicas is how many replicas a new database gets; 0 means 3 (all
	// the nodes when there are fewer).
	Replicas int
	// MaxWait bounds how long a request waits for a group without a leader
	// before it fails with *UnavailableError; 0 means 5s.
	MaxWait time.Duration
	// Tick, HeartbeatTicks and ElectionTicks set Raft's timing; 0 keeps
	// the defaults (10ms, 5, 50). SnapshotEvery is the number of entries
	// between two snapshots of a group; 0 means 2000. Tests shorten them.
	Tick                          time.Duration
	HeartbeatTicks, ElectionTicks uint64
	SnapshotEvery                 uint64
	// Network, when set, connects the node to the others in memory: tests.
	Network *ClusterNetwork
}

// ClusterNetwork is an in-process network joining the nodes of a test
// cluster, whose links a test can cut.
type ClusterNetwork struct{ n *consensus.Network }

// NewClusterNetwork returns a network with no link cut.
func NewClusterNetwork() *ClusterNetwork { return &ClusterNetwork{n: consensus.NewNetwork()} }

// Partition cuts every link between the nodes at the given Raft addresses
// and the rest.
func (n *ClusterNetwork) Partition(raftAddrs ...string) { n.n.Partition(raftAddrs...) }

// Heal restores every link.
func (n *ClusterNetwork) Heal() { n.n.Heal() }

// UnavailableError is the failure of a request that a cluster could not
// serve in time: the group of its database or of the catalog has no leader
// or no majority, or this node is shutting down. It was not applied, or,
// for a write, may apply later. The server answers 503 with Retry-After.
type UnavailableError struct {
	Message    string
	RetryAfter time.Duration
}

// Error returns the message.
func (e *UnavailableError) Error() string { return e.Message }

// Cluster is the engine's part of a cluster, nil on a single server.
type Cluster struct {
	e    *Engine
	node *replica.Node
}

// Cluster returns the cluster this engine is a node of, or nil for a
// single server (Options.Cluster unset).
func (e *Engine) Cluster() *Cluster { return e.cl }

// startCluster starts this engine's node of the cluster opts describe.
func (e *Engine) startCluster(dir string, opts *ClusterOptions) error {
	cc := consensus.Config{Tick: opts.Tick, HeartbeatTicks: opts.HeartbeatTicks, ElectionTicks: opts.ElectionTicks,
		SnapshotEvery: opts.SnapshotEvery, MaxWait: opts.MaxWait, Logger: e.opts.Logger}
	if opts.Network != nil {
		cc.Network = opts.Network.n
	}
	node, err := replica.Start(replica.Config{
		NodeID: opts.NodeID, RaftAddr: opts.RaftAddr, ListenAddr: opts.ListenAddr, APIAddr: opts.APIAddr,
		Join: opts.Join, Dir: filepath.Join(dir, "raft"), Replicas: opts.Replicas, Consensus: cc, Logger: e.opts.Logger,
	}, e.ap, e.pdb)
	if err != nil {
		return fmt.Errorf("engine: start cluster node %d: %w", opts.NodeID, err)
	}
	e.cl = &Cluster{e: e, node: node}
	// The secrets that sign cursors and file URLs are made once a leader
	// takes proposals: every node proposes its own, the first one wins.
	e.background(func() {
		for _, name := range []string{cursorSecretName, fileSecretName} {
			for {
				if _, err := e.serverSecret(name); err == nil {
					break
				}
				select {
				case <-e.closing:
					return
				case <-time.After(time.Second):
				}
			}
		}
	})
	return nil
}

// close stops the node; the engine closes the storage after it.
func (c *Cluster) close() error { return c.node.Close() }

// propose replicates a command and returns its result, as Apply would.
func (c *Cluster) propose(cmd apply.Command) (any, error) {
	res, err := c.node.Propose(context.Background(), cmd)
	return res, c.mapErr(err)
}

// mapErr turns the cluster's failures into the engine's.
func (c *Cluster) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, consensus.ErrUnavailable):
		return &UnavailableError{Message: "the cluster could not serve the request in time (no leader or no majority): try again", RetryAfter: c.node.RetryAfter()}
	case errors.Is(err, replica.ErrNotHosted):
		return &UnavailableError{Message: "the database has no replica on this node", RetryAfter: c.node.RetryAfter()}
	case errors.Is(err, consensus.ErrClosed):
		return &UnavailableError{Message: "the node is shutting down", RetryAfter: c.node.RetryAfter()}
	}
	return err
}

// applyCatalog replicates a catalog command: a new database is placed on
// nodes and then started through its own group.
func (c *Cluster) applyCatalog(cmd catalog.Command) (any, error) {
	switch cmd := cmd.(type) {
	case *catalog.PlaceDatabase:
		res, err := c.node.PlaceDatabase(context.Background(), cmd)
		return res, c.mapErr(err)
	case *catalog.RestoreDatabase:
		return nil, Errorf(CodeUnsupported, "restoring a backup into a cluster is not supported yet: restore it on a single server")
	}
	return c.propose(apply.OnCatalog(cmd))
}

// flatten flattens a deep branch through its database's group: the two
// commands of apply.Flatten, the copy between them made by each replica.
func (c *Cluster) flatten(d *database, branchID uint32) error {
	b := d.State().ByID[branchID]
	if b == nil || len(b.Lineage) <= 2 {
		return nil
	}
	frozen := slices.Clone(b.Lineage[1:])
	res, err := c.propose(apply.OnDatabase(d.ID, &apply.StartFlatten{Branch: branchID, Frozen: frozen}))
	if err != nil {
		return err
	}
	_, err = c.propose(apply.OnDatabase(d.ID, &apply.FinishFlatten{Branch: branchID, Frozen: frozen, Layer: res.(uint32)}))
	return err
}

// check fails for a database without a replica here, and reports one that
// is not started yet (no first branch) as missing.
func (c *Cluster) check(d *database, name string) error {
	if !c.node.Placed(d.ID) {
		return c.mapErr(replica.ErrNotHosted)
	}
	if len(d.State().Branches) == 0 {
		return Errorf(CodeNotFound, "database [%s] not found", name)
	}
	return nil
}

// NodeID is this node's id.
func (c *Cluster) NodeID() uint64 { return c.node.ID() }

// CatalogBarrier waits until this node's catalog holds every change
// acknowledged anywhere before the call: users, keys, workspaces and
// databases read after it are current. Without a leader it waits up to
// ctx's deadline (ClusterOptions.MaxWait without one), then fails with
// *UnavailableError.
func (c *Cluster) CatalogBarrier(ctx context.Context) error {
	return c.mapErr(c.node.Barrier(ctx, 0))
}

// DatabaseBarrier is CatalogBarrier for the database ws/name: reads of it
// after the barrier see every write acknowledged before. A database that
// does not exist passes: the read that follows says so.
func (c *Cluster) DatabaseBarrier(ctx context.Context, ws, name string) error {
	id, err := c.e.cat.FindDatabase(ws, name)
	if err != nil || !c.node.Placed(id) {
		return nil
	}
	return c.mapErr(c.node.Barrier(ctx, id))
}

// ClusterNode is a node of a cluster as the catalog lists it.
type ClusterNode = catalog.Node

// Nodes returns the cluster's nodes by id, as this node's catalog has them.
func (c *Cluster) Nodes() []ClusterNode { return c.e.cat.Nodes() }

// GroupStatus is one node's view of one group: the catalog's (Database 0)
// or a database's.
type GroupStatus = replica.GroupStatus

// NodeStatus is one node's view of its groups.
type NodeStatus = replica.Status

// Status returns this node's view of its groups, read locally.
func (c *Cluster) Status() NodeStatus { return c.node.Status() }

// AddNode adds node id, started with ClusterOptions.Join and reachable at
// raftAddr, to the cluster, and gives it a replica of every database with
// fewer replicas than wanted.
func (c *Cluster) AddNode(ctx context.Context, id uint64, raftAddr string) error {
	return c.mapErr(c.node.AddNode(ctx, id, raftAddr))
}

// RemoveNode moves every replica off node id, then takes it out of the
// cluster. Run again after a failure, it goes on where it stopped.
func (c *Cluster) RemoveNode(ctx context.Context, id uint64) error {
	return c.mapErr(c.node.RemoveNode(ctx, id))
}

// Recovered counts the snapshots this node's replicas caught up from.
func (c *Cluster) Recovered() uint64 { return c.node.Recovered() }
