package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/consensus"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// MetaGroup is the group id of the catalog.
const MetaGroup uint64 = 1

// groupOf returns the group id of database db; 0 is the meta group.
func groupOf(db uint32) uint64 {
	if db == 0 {
		return MetaGroup
	}
	return 1<<32 | uint64(db)
}

// DatabaseOf returns the database of a group id, 0 for the meta group.
func DatabaseOf(group uint64) uint32 {
	if group>>32 != 1 {
		return 0
	}
	return uint32(group)
}

// Config configures a Node.
type Config struct {
	// NodeID, RaftAddr and ListenAddr are the node's identity and where it
	// replicates (consensus.Config).
	NodeID     uint64
	RaftAddr   string
	ListenAddr string
	// APIAddr is where the node serves the HTTP API, for the cluster's
	// list of nodes.
	APIAddr string
	// Join lists the Raft addresses of the cluster's founding nodes, node
	// 1 first: node i is the i-th, unless an entry says "id@host:port". A
	// node in the list founds the cluster with the others; a node that is
	// not waits to be added (Node.AddNode on a member).
	Join []string
	// Dir holds the Raft logs: <data>/raft.
	Dir string
	// Replicas is how many replicas a new database gets (all the nodes,
	// when fewer); 0 means 3.
	Replicas int
	// Consensus is the template of the Raft host's configuration: timing,
	// snapshots, the bound of waits (MaxWait), the logger and, in tests,
	// an in-process Network. Its identity fields are set from the above.
	Consensus consensus.Config
	// Logger receives the node's own log.
	Logger *slog.Logger
}

// ParseJoin reads the founding members from a Join list.
func ParseJoin(join []string) (map[uint64]string, error) {
	members := map[uint64]string{}
	for i, j := range join {
		id, addr := uint64(i+1), j
		if s, a, ok := strings.Cut(j, "@"); ok {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("join entry %q: the node id before @ must be a number ≥ 1", j)
			}
			id, addr = n, a
		}
		if addr == "" {
			return nil, fmt.Errorf("join entry %q has no address", j)
		}
		if _, dup := members[id]; dup {
			return nil, fmt.Errorf("join list names node %d twice", id)
		}
		members[id] = addr
	}
	return members, nil
}

// Node is this server's part of a cluster: its replica of the meta group
// and of the groups of the databases placed on it, and the proposals and
// read barriers of its requests. Its methods are safe for concurrent use.
type Node struct {
	cfg  Config
	log  *slog.Logger
	ap   *apply.Applier
	cat  *catalog.Catalog
	pdb  *pebble.DB
	host *consensus.Host
	ids  *reqIDs

	// waiters are the proposals of this node in flight, by request id: the
	// replica that applies one hands its result over in memory.
	waiters sync.Map // reqID → *waiter
	// recovered counts snapshots recovered, for tests and status.
	recovered atomic.Uint64

	mu     sync.Mutex
	groups map[uint32]uint64 // databases whose group runs here → replica id
	closed bool

	kick chan struct{}
	stop chan struct{}
	wg   sync.WaitGroup
}

// waiter is one proposal in flight.
type waiter struct{ out atomic.Pointer[outcome] }

// outcome is a command's result as the replica that applied it has it.
type outcome struct {
	res any
	err error
}

// Start starts the node: its Raft host, its replica of the meta group and,
// in the background, the groups of the databases placed on it. ap must be
// opened with apply.Options.Replicated over pdb.
func Start(cfg Config, ap *apply.Applier, pdb *pebble.DB) (*Node, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = 3
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ids, err := newReqIDs()
	if err != nil {
		return nil, err
	}
	founders, err := ParseJoin(cfg.Join)
	if err != nil {
		return nil, err
	}
	hc := cfg.Consensus
	hc.NodeID, hc.RaftAddr, hc.ListenAddr, hc.Dir = cfg.NodeID, cfg.RaftAddr, cfg.ListenAddr, cfg.Dir
	host, err := consensus.NewHost(hc)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger, ap: ap, cat: ap.Catalog(), pdb: pdb, host: host, ids: ids,
		groups: map[uint32]uint64{}, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	gc := consensus.GroupConfig{Group: MetaGroup, NewStateMachine: n.newStateMachine(0)}
	if founders[cfg.NodeID] == cfg.RaftAddr {
		gc.Members = founders
	} else {
		gc.Join = true
	}
	if err := host.StartGroup(gc); err != nil {
		host.Close()
		return nil, err
	}
	n.wg.Add(2)
	go n.reconcileLoop()
	go n.register()
	return n, nil
}

// newStateMachine makes the state machines of database db's group (0: the
// meta group).
func (n *Node) newStateMachine(db uint32) consensus.NewStateMachine {
	return func(uint64, uint64) consensus.StateMachine { return &stateMachine{n: n, db: db} }
}

// Close stops the node's groups and its Raft host. The storage stays open:
// it is the engine's.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	close(n.stop)
	n.wg.Wait()
	return n.host.Close()
}

// ID is the node's id.
func (n *Node) ID() uint64 { return n.cfg.NodeID }

// RetryAfter is the wait to suggest after a group was unavailable.
func (n *Node) RetryAfter() time.Duration { return n.host.RetryAfter() }

// Recovered counts the snapshots this node's replicas caught up from.
func (n *Node) Recovered() uint64 { return n.recovered.Load() }

// catalogChanged wakes the reconciler: the catalog may place databases
// differently.
func (n *Node) catalogChanged() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// deliver hands the outcome of request id to its proposer, if it waits on
// this node.
func (n *Node) deliver(id reqID, res any, err error) {
	if w, ok := n.waiters.Load(id); ok {
		w.(*waiter).out.Store(&outcome{res: res, err: err})
	}
}

// ErrNotHosted means this node holds no replica of the database a request
// names.
var ErrNotHosted = errors.New("replica: the database has no replica on this node")

// Propose replicates cmd through its group (the meta group for a catalog
// command) and returns its result once a majority has it and this node
// applied it. Without a leader it waits up to ctx's deadline (MaxWait
// without one). A command whose outcome it cannot learn it proposes again,
// as the same request, which applies once, until the deadline; then it
// fails with a *consensus.UnavailableError.
func (n *Node) Propose(ctx context.Context, cmd apply.Command) (any, error) {
	enc, err := apply.Encode(cmd)
	if err != nil {
		return nil, err
	}
	group := MetaGroup
	if cmd.Catalog == nil {
		group = groupOf(cmd.Database)
	}
	ctx, cancel := n.bound(ctx)
	defer cancel()
	id := n.ids.next()
	payload := encodeEntry(id, enc)
	w := &waiter{}
	n.waiters.Store(id, w)
	defer n.waiters.Delete(id)
	for {
		actx, acancel := context.WithTimeout(ctx, proposeAttempt)
		out, err := n.host.Propose(actx, group, payload)
		acancel()
		if err == nil {
			if o := w.out.Load(); o != nil {
				return o.res, o.err
			}
			res, err := decodeResult(cmd, out)
			if err != nil {
				return nil, err
			}
			return n.ap.Rehydrate(cmd, res)
		}
		if again, err := n.retry(ctx, err); !again {
			return nil, err
		}
	}
}

// proposeAttempt bounds one proposal of a request. A proposal that a
// follower passes on to the leader and whose message is lost gets no
// answer at all: the library neither sends it again nor reports it, and
// while the leader's term holds nothing tells it apart from a slow one.
// After this long without an outcome the request is proposed again,
// under the same id: should both entries reach the log, the second
// answers with the first's result and changes nothing.
const proposeAttempt = 2 * time.Second

// retry says whether a failed proposal or barrier may be tried again
// within ctx, after a pause, or returns the error to give.
func (n *Node) retry(ctx context.Context, err error) (bool, error) {
	switch {
	case errors.Is(err, consensus.ErrTooLarge):
		return false, model.Invalidf("the request is too large to replicate")
	case errors.Is(err, consensus.ErrUnknownGroup):
		// A database placed a moment ago whose group is not started
		// yet, or one without a replica here.
	case errors.Is(err, consensus.ErrUnavailable):
		if ctx.Err() != nil {
			return false, err
		}
	default:
		return false, err
	}
	t := time.NewTimer(10 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true, nil
	case <-ctx.Done():
		if errors.Is(err, consensus.ErrUnknownGroup) {
			return false, ErrNotHosted
		}
		return false, err
	}
}

// bound bounds ctx by the wait for a group without a leader
// (consensus.Config.MaxWait): a request waits no longer than that, however
// long its own deadline.
func (n *Node) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	d := n.cfg.Consensus.MaxWait
	if d == 0 {
		d = 5 * time.Second
	}
	return context.WithTimeout(ctx, d)
}

// Barrier waits until this node's replica of database db's group (0: the
// meta group) has applied every entry committed before the call: a local
// read after it is linearizable. Without a leader it waits up to ctx's
// deadline, then fails with a *consensus.UnavailableError.
func (n *Node) Barrier(ctx context.Context, db uint32) error {
	ctx, cancel := n.bound(ctx)
	defer cancel()
	for {
		err := n.host.ReadIndex(ctx, groupOf(db))
		if err == nil {
			return nil
		}
		if again, err := n.retry(ctx, err); !again {
			return err
		}
	}
}

// Hosts reports whether database db's group runs on this node.
func (n *Node) Hosts(db uint32) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.groups[db]
	return ok
}

// Placed reports whether the catalog places a replica of database db on
// this node (its group runs here, or is about to).
func (n *Node) Placed(db uint32) bool {
	p, ok := n.cat.PlacementOf(db)
	return ok && hasNode(p.Replicas, n.cfg.NodeID)
}

// register records this node's addresses in the catalog, once the meta
// group takes proposals, and again whenever the catalog has others (an
// AddNode that raced with it, a restart on another API address); it looks
// every few seconds until the node closes.
func (n *Node) register() {
	defer n.wg.Done()
	self := catalog.Node{ID: n.cfg.NodeID, RaftAddr: n.cfg.RaftAddr, APIAddr: n.cfg.APIAddr}
	for {
		known := false
		for _, nd := range n.cat.Nodes() {
			known = known || nd == self
		}
		wait := 5 * time.Second
		if !known {
			wait = 250 * time.Millisecond // till the meta group has it
		}
		if !known && n.isMember() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			go func() {
				select {
				case <-n.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			if _, err := n.Propose(ctx, apply.OnCatalog(&catalog.SetNode{Node: self})); err != nil {
				wait = time.Second
			}
			cancel()
		}
		select {
		case <-n.stop:
			return
		case <-time.After(wait):
		}
	}
}

// isMember reports whether this node is a member of the meta group, as far
// as it knows: only a member's proposals go anywhere.
func (n *Node) isMember() bool {
	gi, err := n.host.GroupInfo(MetaGroup)
	if err != nil {
		return false
	}
	_, ok := gi.Members[n.cfg.NodeID]
	return ok
}
