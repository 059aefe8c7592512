package consensus

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// testGroup is the group id the tests use.
const testGroup = 7

// testNode is one node of a test cluster: a directory that outlives its
// Host across restarts.
type testNode struct {
	id   uint64
	addr string
	dir  string

	mu   sync.Mutex
	host *Host
	sm   map[uint64]*kvSM // the current state machine of each group
}

// testCluster is an in-process cluster on one Network.
type testCluster struct {
	t     testing.TB
	net   *Network
	cfg   Config // template: NodeID, RaftAddr, Dir and Network are set per node
	nodes map[uint64]*testNode
	// members are the founding members of the test group.
	members map[uint64]string
}

// fastConfig is the template the tests use: elections after 200–400 ms.
func fastConfig() Config {
	return Config{
		Tick:           10 * time.Millisecond,
		HeartbeatTicks: 2,
		ElectionTicks:  20,
		MaxWait:        5 * time.Second,
		Logger:         testLogger(),
	}
}

// testLogger shows the Raft library's warnings only with -v and
// COPPICE_RAFT_LOG=1.
func testLogger() *slog.Logger {
	level := slog.LevelError + 1
	if os.Getenv("COPPICE_RAFT_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// newCluster starts n hosts and, on each, the test group with all n as
// founding members.
func newCluster(t testing.TB, n int, cfg Config) *testCluster {
	t.Helper()
	c := &testCluster{t: t, net: NewNetwork(), cfg: cfg, nodes: map[uint64]*testNode{}}
	base := t.TempDir()
	members := map[uint64]string{}
	for i := 1; i <= n; i++ {
		nd := &testNode{id: uint64(i), addr: fmt.Sprintf("node%d", i), dir: filepath.Join(base, fmt.Sprintf("n%d", i))}
		c.nodes[nd.id] = nd
		members[nd.id] = nd.addr
	}
	c.members = members
	t.Cleanup(c.closeAll)
	for i := 1; i <= n; i++ {
		c.startHost(uint64(i))
		c.startGroup(uint64(i), GroupConfig{Group: testGroup, Members: members})
	}
	return c
}

// addNode prepares a node that is not yet a member of anything.
func (c *testCluster) addNode(id uint64) *testNode {
	nd := &testNode{id: id, addr: fmt.Sprintf("node%d", id), dir: filepath.Join(c.t.TempDir(), fmt.Sprintf("n%d", id))}
	c.nodes[id] = nd
	c.startHost(id)
	return nd
}

// startHost opens node id's Host.
func (c *testCluster) startHost(id uint64) {
	c.t.Helper()
	nd := c.nodes[id]
	cfg := c.cfg
	cfg.NodeID, cfg.RaftAddr, cfg.Dir, cfg.Network = id, nd.addr, filepath.Join(nd.dir, "raft"), c.net
	h, err := NewHost(cfg)
	if err != nil {
		c.t.Fatalf("node %d: %v", id, err)
	}
	nd.mu.Lock()
	nd.host = h
	nd.sm = map[uint64]*kvSM{}
	nd.mu.Unlock()
}

// startGroup starts a group on node id with a kvSM under the node's dir.
func (c *testCluster) startGroup(id uint64, gc GroupConfig) {
	c.t.Helper()
	nd := c.nodes[id]
	gc.NewStateMachine = func(group, replica uint64) StateMachine {
		s := &kvSM{dir: filepath.Join(nd.dir, fmt.Sprintf("sm-%d", group))}
		nd.mu.Lock()
		nd.sm[group] = s
		nd.mu.Unlock()
		return s
	}
	if err := nd.h().StartGroup(gc); err != nil {
		c.t.Fatalf("node %d: start group %d: %v", id, gc.Group, err)
	}
}

// stop closes node id's Host, as a crash would stop it (the state on disk
// stays).
func (c *testCluster) stop(id uint64) {
	nd := c.nodes[id]
	nd.mu.Lock()
	h := nd.host
	nd.host = nil
	nd.mu.Unlock()
	if h != nil {
		h.Close()
	}
}

// restart reopens node id and restarts the test group on it.
func (c *testCluster) restart(id uint64) { c.restartWith(id, GroupConfig{Group: testGroup}) }

// restartWith reopens node id and restarts a group on it with gc, whose
// Members and Join a restart ignores.
func (c *testCluster) restartWith(id uint64, gc GroupConfig) {
	c.t.Helper()
	c.startHost(id)
	c.startGroup(id, gc)
}

// closeAll stops every node.
func (c *testCluster) closeAll() {
	for id := range c.nodes {
		c.stop(id)
	}
}

// h returns the node's running Host.
func (nd *testNode) h() *Host {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.host
}

// kv returns the node's current state machine of a group.
func (nd *testNode) kv(group uint64) *kvSM {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.sm[group]
}

// replica returns the node's Host and its state machine of a group
// together, both nil while the node is stopped.
func (nd *testNode) replica(group uint64) (*Host, *kvSM) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.host == nil {
		return nil, nil
	}
	return nd.host, nd.sm[group]
}

// running lists the ids of the nodes whose Host is open.
func (c *testCluster) running() []uint64 {
	var ids []uint64
	for id := uint64(1); id <= uint64(len(c.nodes))+10; id++ {
		if nd, ok := c.nodes[id]; ok && nd.h() != nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// leader waits until the running nodes agree on a leader of the group that
// is itself running, and returns its id.
func (c *testCluster) leader(group uint64, within time.Duration) uint64 {
	c.t.Helper()
	end := time.Now().Add(within)
	for time.Now().Before(end) {
		var seen uint64
		agree := true
		for _, id := range c.running() {
			l, ok := c.nodes[id].h().Leader(group)
			if !ok || (seen != 0 && l != seen) {
				agree = false
				break
			}
			seen = l
		}
		if agree && seen != 0 && c.nodes[seen] != nil && c.nodes[seen].h() != nil {
			return seen
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("no agreed leader of group %d within %v", group, within)
	return 0
}

// put proposes put(key, value) through node id.
func (c *testCluster) put(ctx context.Context, id uint64, key, value string) error {
	_, err := c.nodes[id].h().Propose(ctx, testGroup, putCmd(key, value))
	return err
}

// read is a linearizable read of a register through node id.
func (c *testCluster) read(ctx context.Context, id uint64, key string) (string, bool, error) {
	h, kv := c.nodes[id].replica(testGroup)
	if err := h.ReadIndex(ctx, testGroup); err != nil {
		return "", false, err
	}
	return kv.get(key)
}

// mustHave checks that every running node has every key in want, after a
// read barrier on that node.
func (c *testCluster) mustHave(want map[string]string) {
	c.t.Helper()
	for _, id := range c.running() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.nodes[id].h().ReadIndex(ctx, testGroup)
		cancel()
		if err != nil {
			c.t.Fatalf("node %d: read index: %v", id, err)
		}
		kv := c.nodes[id].kv(testGroup)
		missing := 0
		for k, v := range want {
			got, ok, err := kv.get(k)
			if err != nil {
				c.t.Fatalf("node %d: get %s: %v", id, k, err)
			}
			if !ok || got != v {
				if missing < 3 {
					c.t.Errorf("node %d: %s = %q (present %v), want %q", id, k, got, ok, v)
				}
				missing++
			}
		}
		if missing > 0 {
			c.t.Fatalf("node %d: %d of %d acknowledged writes missing", id, missing, len(want))
		}
	}
}

// leaderAmong waits until the given nodes agree on a leader that is one of
// them, and returns its id.
func (c *testCluster) leaderAmong(group uint64, ids []uint64, within time.Duration) uint64 {
	c.t.Helper()
	end := time.Now().Add(within)
	for time.Now().Before(end) {
		var seen uint64
		agree := true
		for _, id := range ids {
			l, ok := c.nodes[id].h().Leader(group)
			if !ok || (seen != 0 && l != seen) {
				agree = false
				break
			}
			seen = l
		}
		if agree && slices.Contains(ids, seen) {
			return seen
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("nodes %v agree on no leader among them within %v", ids, within)
	return 0
}

// caughtUp waits until node id has applied what the leader has.
func (c *testCluster) caughtUp(id uint64, within time.Duration) {
	c.t.Helper()
	end := time.Now().Add(within)
	for time.Now().Before(end) {
		lead := c.leader(testGroup, within)
		li, err1 := c.nodes[lead].h().GroupInfo(testGroup)
		ni, err2 := c.nodes[id].h().GroupInfo(testGroup)
		if err1 == nil && err2 == nil && ni.Applied >= li.Applied && ni.Applied > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("node %d did not catch up within %v", id, within)
}
