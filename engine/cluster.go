package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/consensus"
	"github.com/coppice-db/coppice/engine/internal/files"
	"github.com/coppice-db/coppice/engine/internal/layers"
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
// for a write, may apply later: its message says the outcome is unknown.
// The server answers 503 with Retry-After.
type UnavailableError struct {
	Message    string
	RetryAfter time.Duration
	// Forward, when set, is where to send the request instead: the API
	// address (host:port) of a node holding a replica of the database the
	// request names, which this node does not hold.
	Forward string
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

// checkDataDirKind refuses a data directory of the other kind: a single
// server's (or one `coppice restore` made) under a node of a cluster, whose
// catalog's group would never carry what it holds, and a node's replica
// under a single server, whose writes would part it from its groups. A
// node's catalog has the index of the last meta-group entry it applied; a
// single server's has none.
func checkDataDirKind(pdb *pebble.DB, dir string, clustered bool) error {
	has := func(k []byte) (bool, error) {
		it, err := pdb.NewIter(&pebble.IterOptions{LowerBound: k, UpperBound: codec.PrefixEnd(k)})
		if err != nil {
			return false, err
		}
		found := it.First()
		return found, it.Close()
	}
	node, err := has(replica.CatalogAppliedKey())
	if err != nil {
		return err
	}
	switch {
	case clustered && !node:
		for _, kind := range []byte{codec.CatUser, codec.CatDatabase, codec.CatServerState} {
			single, err := has(codec.CatalogKey(kind))
			if err != nil {
				return err
			}
			if single {
				return fmt.Errorf("engine: %s holds a single server's data (or a restored backup), which a node of a cluster cannot take over: "+
					"start the node on an empty data directory, then move each database in with coppice dump (from the single server) and coppice load (into the cluster)", dir)
			}
		}
	case !clustered && node:
		return fmt.Errorf("engine: %s is the data directory of a node of a cluster: start it with its cluster flags (--node-id, --raft-addr, --join); "+
			"to take a database to a single server, dump it from the cluster (coppice dump) and load it there (coppice load)", dir)
	}
	return nil
}

// close stops the node; the engine closes the storage after it.
func (c *Cluster) close() error { return c.node.Close() }

// propose replicates a command and returns its result, as Apply would.
func (c *Cluster) propose(cmd apply.Command) (any, error) {
	res, err := c.node.Propose(context.Background(), cmd)
	return res, c.mapErr(err)
}

// mapErr turns the failures of a write (a proposal, a membership change)
// into the engine's: one that timed out may still apply.
func (c *Cluster) mapErr(err error) error {
	return c.unavailable(err, ": the outcome is unknown, a write may still apply")
}

// mapReadErr turns the failures of a read (a barrier) into the engine's:
// nothing was changed, so the message promises nothing about writes.
func (c *Cluster) mapReadErr(err error) error { return c.unavailable(err, "") }

// unavailable maps the cluster's failures to UnavailableError, with tail
// after the messages of those that leave a write's outcome unknown.
func (c *Cluster) unavailable(err error, tail string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, consensus.ErrUnavailable):
		return &UnavailableError{Message: "the cluster found no leader or no majority in time" + tail, RetryAfter: c.node.RetryAfter()}
	case errors.Is(err, replica.ErrNotHosted):
		return &UnavailableError{Message: "the database has no replica on this node", RetryAfter: c.node.RetryAfter()}
	case errors.Is(err, consensus.ErrClosed):
		return &UnavailableError{Message: "the node is shutting down" + tail, RetryAfter: c.node.RetryAfter()}
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
		return c.restore(cmd)
	}
	return c.propose(apply.OnCatalog(cmd))
}

// loadPart bounds the part of a backup one entry of a database's log
// carries.
const loadPart = 8 << 20

// restore restores a backup as a new database: it places the database,
// empty, then loads the backup through the database's own group, part by
// part (apply.LoadRange). A backup that does not check out is refused
// before anything is placed; a load that fails midway drops the database.
func (c *Cluster) restore(cmd *catalog.RestoreDatabase) (any, error) {
	if err := layers.ReadRange(bytes.NewReader(cmd.Backup), func(k, v []byte) error { return nil }); err != nil {
		return nil, err
	}
	res, err := c.node.PlaceDatabase(context.Background(), &catalog.PlaceDatabase{Database: cmd.Database})
	if err != nil {
		return nil, c.mapErr(err)
	}
	p := res.(*catalog.Database)
	backup := cmd.Backup
	for part := uint32(0); ; part++ {
		n := min(len(backup), loadPart)
		load := &apply.LoadRange{Part: part, Data: backup[:n], Last: n == len(backup)}
		if _, err := c.propose(apply.OnDatabase(p.ID, load)); err != nil {
			if _, derr := c.propose(apply.OnCatalog(&catalog.DropDatabase{WS: p.Workspace, Name: p.Name})); derr != nil {
				c.e.opts.Logger.Error("a database whose load failed could not be dropped", "database", p.Name, "err", derr)
			}
			return nil, err
		}
		if load.Last {
			return p, nil
		}
		backup = backup[n:]
	}
}

// flatten flattens a deep branch through its database's group: the two
// commands of apply.Flatten, the copy between them made by each replica.
func (c *Cluster) flatten(d *database, branchID uint32) error {
	b := d.State().ByID.At(branchID)
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

// check fails for a database without a replica here, naming a node that
// has one, and reports one that is not started yet (no first branch) as
// missing.
func (c *Cluster) check(d *database, name string) error {
	if !c.node.Placed(d.ID) {
		return c.notHosted(d.ID)
	}
	if d.State().Branches.Len() == 0 {
		return Errorf(CodeNotFound, "database [%s] not found", name)
	}
	return nil
}

// notHosted is the failure of a request for database db, which has no
// replica on this node, naming a node that has one.
func (c *Cluster) notHosted(db uint32) error {
	err := c.mapErr(replica.ErrNotHosted).(*UnavailableError)
	err.Forward = c.holder(db)
	return err
}

// caughtUp is how a file URL (a capability: it is served without a read
// barrier) is answered by a replica that lags behind the write that made
// it: when reading it failed as only a lagging replica could make it fail
// (the file, or the secret that signs it, not here yet), caughtUp passes
// the barriers of the catalog and of the URL's database and reports
// whether the read is worth making again.
func (c *Cluster) caughtUp(accessID string, err error) bool {
	if code := CodeOf(err); code != CodeNotFound && code != CodeForbidden {
		return false
	}
	loc, derr := files.DecodeAccessID(accessID)
	if derr != nil || c.node.Barrier(context.Background(), 0) != nil {
		return false
	}
	return !c.node.Placed(loc.DB) || c.node.Barrier(context.Background(), loc.DB) == nil
}

// holder returns the API address of a node holding a replica of database
// db, "" when none is known.
func (c *Cluster) holder(db uint32) string {
	p, ok := c.e.cat.PlacementOf(db)
	if !ok {
		return ""
	}
	addrs := map[uint64]string{}
	for _, n := range c.e.cat.Nodes() {
		addrs[n.ID] = n.APIAddr
	}
	for _, r := range p.Replicas {
		if !r.Removed && addrs[r.Node] != "" {
			return addrs[r.Node]
		}
	}
	return ""
}

// NodeID is this node's id.
func (c *Cluster) NodeID() uint64 { return c.node.ID() }

// CatalogBarrier waits until this node's catalog holds every change
// acknowledged anywhere before the call: users, keys, workspaces and
// databases read after it are current. Without a leader it waits up to
// ctx's deadline (ClusterOptions.MaxWait without one), then fails with
// *UnavailableError.
func (c *Cluster) CatalogBarrier(ctx context.Context) error {
	return c.mapReadErr(c.node.Barrier(ctx, 0))
}

// DatabaseBarrier is CatalogBarrier for the database ws/name as this
// node's catalog knows it: reads of it after the barrier see every write
// acknowledged before. It returns the id of that database, 0 when there is
// none here (a database that does not exist, or has no replica here,
// passes: the request that follows says so).
func (c *Cluster) DatabaseBarrier(ctx context.Context, ws, name string) (uint32, error) {
	id := c.DatabaseID(ws, name)
	if id == 0 {
		return 0, nil
	}
	return id, c.mapReadErr(c.node.Barrier(ctx, id))
}

// DatabaseID returns the id of the database ws/name when this node holds a
// replica of it, else 0.
func (c *Cluster) DatabaseID(ws, name string) uint32 {
	id, err := c.e.cat.FindDatabase(ws, name)
	if err != nil || !c.node.Placed(id) {
		return 0
	}
	return id
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
