package consensus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/client"
	"github.com/lni/dragonboat/v4/config"
	sm "github.com/lni/dragonboat/v4/statemachine"
)

// Config configures a Host. The zero value of each optional field picks the
// default documented on it.
type Config struct {
	// NodeID identifies this node in the cluster, ≥ 1. It is the replica id
	// a group uses on this node unless GroupConfig.Replica says otherwise.
	NodeID uint64
	// RaftAddr is the host:port the other nodes reach this node at. It must
	// not change across restarts. With Network, any unique name.
	RaftAddr string
	// ListenAddr is the address to listen on when it differs from RaftAddr
	// (for example 0.0.0.0:port); empty means RaftAddr.
	ListenAddr string
	// Dir holds the Raft logs and snapshot metadata of every group on this
	// node; the server uses <data>/raft.
	Dir string
	// Tick is the logical clock of Raft: heartbeats and elections count
	// ticks. Default 10ms.
	Tick time.Duration
	// HeartbeatTicks is the leader's heartbeat interval in ticks. Default 5.
	HeartbeatTicks uint64
	// ElectionTicks is the election timeout in ticks; a follower waits
	// between one and two of them without hearing a leader before it
	// stands. At least 3 × HeartbeatTicks. Default 50.
	ElectionTicks uint64
	// SnapshotEvery is the number of applied entries between two automatic
	// snapshots of a group. Default 2000.
	SnapshotEvery uint64
	// KeepEntries is the number of entries kept in the log behind a
	// snapshot, so that a follower slightly behind catches up from the log
	// rather than a full snapshot. Default 1000.
	KeepEntries uint64
	// MaxWait bounds Propose, ReadIndex and membership changes whose context
	// has no deadline. Default 5s.
	MaxWait time.Duration
	// MaxEntryBytes bounds one entry; a larger command fails with
	// ErrTooLarge. Default and most 60 MiB: the library sends at most
	// 64 MiB in one message.
	MaxEntryBytes int
	// Logger receives the Raft library's log: elections and votes at Info,
	// warnings and errors at Warn and Error, the rest at Debug. The
	// library's log is process-wide: the latest Host with a Logger receives
	// the log of every Host in the process.
	Logger *slog.Logger
	// Network, when set, replaces TCP with an in-process network: tests.
	Network *Network
}

// The fixed part of the configuration. LogShards is recorded in the data
// directory: a Host refuses to open a directory written with another value.
const (
	// deploymentID keeps nodes of unrelated Raft deployments from talking
	// to ours by mistake.
	deploymentID = 0xC0991CE
	// logShards is how many log stores (and step workers) a host runs;
	// groups are spread over them by id. Two on a 2-core machine.
	logShards = 2
	// maxInMemLog bounds a group's entries held in memory before they are
	// applied; beyond it proposals wait (the bound of their context).
	maxInMemLog = 64 << 20
	// maxQueue bounds each per-peer send and receive queue, in bytes.
	maxQueue = 64 << 20
	// maxEntry is the largest entry: the library's messages carry at most
	// 64 MiB, framing included.
	maxEntry = 60 << 20
)

// withDefaults fills the zero fields of c and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.NodeID == 0 {
		return c, errors.New("consensus: NodeID must be ≥ 1")
	}
	if c.RaftAddr == "" || c.Dir == "" {
		return c, errors.New("consensus: RaftAddr and Dir are required")
	}
	if c.Tick == 0 {
		c.Tick = 10 * time.Millisecond
	}
	if c.Tick < time.Millisecond {
		return c, errors.New("consensus: Tick must be ≥ 1ms")
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = 5
	}
	if c.ElectionTicks == 0 {
		c.ElectionTicks = 10 * c.HeartbeatTicks
	}
	if c.ElectionTicks < 3*c.HeartbeatTicks {
		return c, errors.New("consensus: ElectionTicks must be ≥ 3 × HeartbeatTicks")
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = 2000
	}
	if c.KeepEntries == 0 {
		c.KeepEntries = c.SnapshotEvery / 2
	}
	if c.MaxWait == 0 {
		c.MaxWait = 5 * time.Second
	}
	if c.MaxEntryBytes == 0 {
		c.MaxEntryBytes = maxEntry
	}
	if c.MaxEntryBytes > maxEntry {
		return c, fmt.Errorf("consensus: MaxEntryBytes must be ≤ %d", maxEntry)
	}
	return c, nil
}

// electionTimeout is the time a follower waits for a leader at least.
func (c Config) electionTimeout() time.Duration { return time.Duration(c.ElectionTicks) * c.Tick }

// Host runs this node's replicas of any number of groups over one set of log
// stores and one transport. Its methods are safe for concurrent use.
type Host struct {
	cfg Config
	nh  *dragonboat.NodeHost

	// epoch starts the host's monotonic clock.
	epoch time.Time

	mu sync.Mutex
	// groups holds the started groups by id; guarded by mu.
	groups map[uint64]*group
	closed bool
}

// clock reads the host's monotonic clock, in nanoseconds.
func (h *Host) clock() int64 { return int64(time.Since(h.epoch)) }

// group is this node's replica of one group.
type group struct {
	id, replica uint64
	session     *client.Session
	// sm is set when dragonboat creates the state machine, which happens
	// within StartGroup.
	sm *adapter
	// lastApplied marks the newest proposal made here that applied.
	lastApplied atomic.Pointer[applied]
}

// NewHost opens the log stores under cfg.Dir and starts the transport.
// Groups are started separately, with StartGroup.
func NewHost(cfg Config) (*Host, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	useLogger(cfg.Logger)
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("consensus: %w", err)
	}
	logdb := config.GetTinyMemLogDBConfig()
	logdb.Shards = logShards
	nhc := config.NodeHostConfig{
		DeploymentID:        deploymentID,
		NodeHostDir:         cfg.Dir,
		RTTMillisecond:      uint64(cfg.Tick / time.Millisecond),
		RaftAddress:         cfg.RaftAddr,
		ListenAddress:       cfg.ListenAddr,
		MaxSendQueueSize:    maxQueue,
		MaxReceiveQueueSize: maxQueue,
		Expert: config.ExpertConfig{
			LogDB: logdb,
			Engine: config.EngineConfig{
				ExecShards:     logShards,
				CommitShards:   logShards,
				ApplyShards:    logShards,
				SnapshotShards: logShards,
				CloseShards:    logShards,
			},
		},
	}
	if cfg.Network != nil {
		nhc.Expert.TransportFactory = cfg.Network.factory()
	}
	nh, err := dragonboat.NewNodeHost(nhc)
	if err != nil {
		return nil, fmt.Errorf("consensus: start node %d: %w", cfg.NodeID, err)
	}
	return &Host{cfg: cfg, nh: nh, epoch: time.Now(), groups: map[uint64]*group{}}, nil
}

// NodeID returns the node id the host was configured with.
func (h *Host) NodeID() uint64 { return h.cfg.NodeID }

// RaftAddr returns the address the other nodes reach this node at.
func (h *Host) RaftAddr() string { return h.cfg.RaftAddr }

// RetryAfter is the wait to suggest to a client after ErrUnavailable: about
// the time an election takes.
func (h *Host) RetryAfter() time.Duration {
	return max(time.Second, (2 * h.cfg.electionTimeout()).Round(time.Second))
}

// Close stops every group on this node, then the transport and the log
// stores. Calls in progress fail with ErrClosed or ErrUnavailable.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.groups = map[uint64]*group{}
	h.mu.Unlock()
	h.nh.Close()
	return nil
}

// GroupConfig says which group to start on this node and how.
type GroupConfig struct {
	// Group is the group's id, ≥ 1, the same on every node.
	Group uint64
	// Replica is this node's replica id in the group; 0 means the host's
	// NodeID. A replica id removed from a group never returns to it, so a
	// node that rejoins a group after its removal needs a new id.
	Replica uint64
	// Members maps replica ids to raft addresses. It is required on the
	// first start of a group's founding replicas, with the same value on
	// each. Once the replica has started on this node, later starts ignore
	// it (the membership lives in the log).
	Members map[uint64]string
	// Join starts a replica that AddReplica added to a running group, with
	// Members nil. Later starts ignore it.
	Join bool
	// NewStateMachine makes the replica's state machine.
	NewStateMachine NewStateMachine
}

// StartGroup starts this node's replica of a group: it opens the state
// machine and replays the log from the state machine's applied index. It
// returns before the replica has caught up; Propose and ReadIndex wait for
// that within their bound.
func (h *Host) StartGroup(gc GroupConfig) error {
	if gc.Group == 0 || gc.NewStateMachine == nil {
		return errors.New("consensus: Group and NewStateMachine are required")
	}
	if gc.Replica == 0 {
		gc.Replica = h.cfg.NodeID
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	if _, ok := h.groups[gc.Group]; ok {
		return ErrGroupExists
	}
	g := &group{id: gc.Group, replica: gc.Replica, session: h.nh.GetNoOPSession(gc.Group)}
	create := func(shard, replica uint64) sm.IOnDiskStateMachine {
		g.sm = &adapter{sm: gc.NewStateMachine(shard, replica)}
		return g.sm
	}
	rc := config.Config{
		ReplicaID:               gc.Replica,
		ShardID:                 gc.Group,
		CheckQuorum:             true,
		PreVote:                 true,
		ElectionRTT:             h.cfg.ElectionTicks,
		HeartbeatRTT:            h.cfg.HeartbeatTicks,
		SnapshotEntries:         h.cfg.SnapshotEvery,
		CompactionOverhead:      h.cfg.KeepEntries,
		MaxInMemLogSize:         max(maxInMemLog, 2*uint64(h.cfg.MaxEntryBytes)),
		SnapshotCompressionType: config.Snappy,
	}
	members, join := gc.Members, gc.Join
	switch {
	case h.nh.HasNodeInfo(gc.Group, gc.Replica):
		members, join = nil, false
	case join:
		members = nil
	case len(members) == 0:
		return fmt.Errorf("consensus: group %d never started here: Members or Join is required", gc.Group)
	}
	if err := h.nh.StartOnDiskReplica(members, join, create, rc); err != nil {
		switch {
		case errors.Is(err, dragonboat.ErrShardAlreadyExist):
			return ErrGroupExists
		case errors.Is(err, dragonboat.ErrReplicaRemoved):
			return fmt.Errorf("consensus: replica %d was removed from group %d: %w", gc.Replica, gc.Group, ErrRejected)
		}
		return fmt.Errorf("consensus: start group %d: %w", gc.Group, err)
	}
	h.groups[gc.Group] = g
	return nil
}

// StopGroup stops this node's replica of a group, leaving its log and state
// on disk for a later StartGroup. It is not a membership change.
func (h *Host) StopGroup(group uint64) error {
	h.mu.Lock()
	_, ok := h.groups[group]
	delete(h.groups, group)
	h.mu.Unlock()
	if !ok {
		return ErrUnknownGroup
	}
	if err := h.nh.StopShard(group); err != nil && !errors.Is(err, dragonboat.ErrShardNotFound) {
		return fmt.Errorf("consensus: stop group %d: %w", group, err)
	}
	return nil
}

// RemoveGroupData deletes the log and snapshot metadata of a replica that
// RemoveReplica took out of its group and StopGroup stopped; it waits, up to
// ctx, for the replica to finish closing. The state machine's own data is
// the caller's to delete. Never call it for a replica still a member.
func (h *Host) RemoveGroupData(ctx context.Context, group, replica uint64) error {
	ctx, cancel := h.bound(ctx)
	defer cancel()
	if err := h.nh.SyncRemoveData(ctx, group, replica); err != nil {
		return fmt.Errorf("consensus: remove data of group %d: %w", group, err)
	}
	return nil
}

// group returns a started group.
func (h *Host) group(id uint64) (*group, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	g, ok := h.groups[id]
	if !ok {
		return nil, ErrUnknownGroup
	}
	return g, nil
}

// bound gives ctx the host's MaxWait as deadline when it has none.
func (h *Host) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, h.cfg.MaxWait)
}
