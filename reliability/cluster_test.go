//go:build unix

package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/coppice-db/coppice/internal/harness"
	"github.com/coppice-db/coppice/internal/lincheck"
	"github.com/coppice-db/coppice/internal/testnet"
)

// testCluster is three `coppice serve` processes forming a cluster on
// loopback, each with its own data directory and API and Raft ports.
type testCluster struct {
	t     *testing.T
	key   string
	nodes []*harness.Server // node i+1
}

// placement says where node i+1 of a cluster runs: its API and Raft
// addresses, and the command it runs under (none: this network namespace).
type placement struct {
	api, raft string
	wrap      []string
}

// startCluster starts n nodes at once on loopback; node 1 bootstraps the
// accounts.
func startCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	var at []placement
	for range n {
		at = append(at, placement{api: testnet.FreeAddr(t), raft: testnet.FreeAddr(t)})
	}
	return startClusterAt(t, at)
}

// startClusterAt starts a node at each placement at once; node 1
// bootstraps the accounts.
func startClusterAt(t *testing.T, at []placement) *testCluster {
	t.Helper()
	key := "cpk_rel_" + strings.NewReplacer("/", "_").Replace(t.Name()) + "_cluster_9d2e"
	secrets.Add(key)
	var raft []string
	for _, p := range at {
		raft = append(raft, p.raft)
	}
	c := &testCluster{t: t, key: key}
	for i, p := range at {
		s := harness.New(t, harness.Config{Binary: binary, Key: key, Addr: p.api, Wrap: p.wrap,
			Args: []string{"--node-id", fmt.Sprint(i + 1), "--raft-addr", raft[i], "--join", strings.Join(raft, ","), "--cluster-wait", "3s"},
			Env:  []string{"COPPICE_LOG_LEVEL=info"}})
		c.nodes = append(c.nodes, s)
		t.Cleanup(func() {
			logs := strings.Replace(s.Logs(), "  API key    "+key+"\n", "", 1)
			secrets.Check(fmt.Sprintf("%s node %d log", t.Name(), i+1), []byte(logs))
		})
	}
	harness.StartAll(t, c.nodes...)
	return c
}

// clients returns a client of every running node.
func (c *testCluster) clients() []*harness.Client {
	var out []*harness.Client
	for _, s := range c.nodes {
		if s.Running() {
			out = append(out, client(s))
		}
	}
	return out
}

// status is GET /admin/cluster as a node answers it.
type status struct {
	Nodes []struct {
		ID        int  `json:"id"`
		Reachable bool `json:"reachable"`
	} `json:"nodes"`
	Groups []struct {
		Database string `json:"database"`
		Leader   int    `json:"leaderNode"`
		Replicas []struct {
			Node int    `json:"node"`
			Lag  uint64 `json:"lag"`
		} `json:"replicas"`
	} `json:"groups"`
}

// status asks a running node for the cluster's status.
func (c *testCluster) status() (status, error) {
	var st status
	for _, cl := range c.clients() {
		r, err := cl.Must(200, "GET", "/admin/cluster", nil)
		if err != nil {
			continue
		}
		return st, json.Unmarshal(r.Body, &st)
	}
	return st, fmt.Errorf("no node answers")
}

// leader returns the node leading the group of database db ("(catalog)"
// for the catalog's), waiting up to 10 s for one that runs.
func (c *testCluster) leader(db string) int {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := c.status(); err == nil {
			for _, g := range st.Groups {
				if g.Database == db && g.Leader > 0 && c.nodes[g.Leader-1].Running() {
					return g.Leader
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("group %s has no leader", db)
	return 0
}

// converge waits until every node is reachable and no replica lags.
func (c *testCluster) converge() {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := c.status()
		why := fmt.Sprint(err)
		if err == nil {
			why = ""
			for _, n := range st.Nodes {
				if !n.Reachable {
					why = fmt.Sprintf("node %d unreachable", n.ID)
				}
			}
			for _, g := range st.Groups {
				if len(g.Replicas) != len(c.nodes) {
					why = fmt.Sprintf("group %s: %d replicas answered", g.Database, len(g.Replicas))
				}
				for _, r := range g.Replicas {
					if r.Lag > 0 {
						why = fmt.Sprintf("group %s: node %d lags %d", g.Database, r.Node, r.Lag)
					}
				}
			}
		}
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the cluster did not converge: %s\n%s", why, c.views())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// views returns each running node's own view of its groups (applied,
// first and last log index, leader, term), to say why a cluster did not
// converge.
func (c *testCluster) views() string {
	var b strings.Builder
	for i, s := range c.nodes {
		if !s.Running() {
			fmt.Fprintf(&b, "node %d: not running\n", i+1)
			continue
		}
		r, err := client(s).Do("GET", "/admin/cluster/node", nil)
		if err != nil {
			fmt.Fprintf(&b, "node %d: %v\n", i+1, err)
			continue
		}
		fmt.Fprintf(&b, "node %d: %d %s\n", i+1, r.Status, r.Body)
	}
	return b.String()
}

// digests stops every node with SIGTERM and returns the digests of each
// node's data directory (coppice cluster digest).
func (c *testCluster) digests() []string {
	c.t.Helper()
	var out []string
	for _, s := range c.nodes {
		if ex := s.Terminate(30 * time.Second); ex.Code != 0 {
			c.t.Errorf("a node exited with status %d", ex.Code)
		}
	}
	for i, s := range c.nodes {
		b, err := exec.Command(binary, "cluster", "digest", "--data", s.DataDir()).CombinedOutput()
		if err != nil {
			c.t.Fatalf("digest of node %d: %v\n%s", i+1, err, b)
		}
		out = append(out, string(b))
	}
	return out
}

// TestClusterLeaderKills runs 16 writers spread over a 3-node cluster and
// kills with SIGKILL the leader of the database's group and the leader of
// the catalog's group, in turn (10 times each; once in -short), restarting
// the killed node each time. After each restart every acknowledged write
// must be present, with its content, on every node, and every write whose
// answer was lost applied entirely or not at all; at the end the nodes'
// data directories must be byte-identical, catalog and database alike.
func TestClusterLeaderKills(t *testing.T) {
	kills, seed := 10, uint64(time.Now().UnixNano())
	minRun, maxRun := 500*time.Millisecond, 1500*time.Millisecond
	if testing.Short() {
		kills = 1
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	c := startCluster(t, 3)
	l := harness.NewLedger("cl", "items", 16)
	must(t, l.Setup(client(c.nodes[0]), c.nodes[0].WS))
	var failover time.Duration
	killed := map[string]int{}
	for i := range 2 * kills {
		group := "cl"
		if i%2 == 1 {
			group = "(catalog)"
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		clients := c.clients()
		go func() {
			defer close(done)
			l.RunOn(ctx, clients, seed+uint64(i))
		}()
		time.Sleep(minRun + time.Duration(rng.Int64N(int64(maxRun-minRun))))
		leader := c.leader(group)
		c.nodes[leader-1].Kill()
		killed[group]++
		start := time.Now()
		// The writers on the other nodes go on through the election.
		next := c.leader(group)
		failover += time.Since(start)
		if next == leader {
			t.Fatalf("node %d was killed but still leads %s", leader, group)
		}
		time.Sleep(time.Second)
		cancel()
		<-done
		c.nodes[leader-1].Start()
		c.converge()
		for n, cl := range c.clients() {
			bad, err := l.Verify(cl)
			must(t, err)
			if len(bad) > 0 {
				t.Errorf("after kill %d (leader of %s), read through node %d:\n%s", i+1, group, n+1, strings.Join(bad[:min(len(bad), 20)], "\n"))
			}
		}
	}
	st := l.Stats()
	if rej := l.Rejections(); len(rej) > 0 {
		t.Errorf("%d writes rejected with 4xx:\n%s", len(rej), strings.Join(rej[:min(len(rej), 10)], "\n"))
	}
	digests := c.digests()
	for i := 1; i < len(digests); i++ {
		if digests[i] != digests[0] {
			t.Errorf("node %d's data differs from node 1's:\n%s\nnode 1:\n%s", i+1, digests[i], digests[0])
		}
	}
	report(t, "SIGKILLs of the database's leader", fmt.Sprint(killed["cl"]), "")
	report(t, "SIGKILLs of the catalog's leader", fmt.Sprint(killed["(catalog)"]), "")
	report(t, "mean time to a new leader", (failover / time.Duration(2*kills)).Round(time.Millisecond).String(), "")
	report(t, "acknowledged requests", fmt.Sprint(st.Acked), "")
	report(t, "acknowledged record writes", fmt.Sprint(st.AckedRecords), "")
	report(t, "answers lost (applied / not)", fmt.Sprintf("%d (%d / %d)", st.Uncertain, st.Applied, st.NotApplied), "")
	report(t, "record reads checked (3 nodes)", fmt.Sprint(st.Checked), "")
	report(t, "lost writes", fmt.Sprint(st.Lost), "0")
	report(t, "torn bulks/transactions", fmt.Sprint(st.Torn), "0")
	report(t, "writes present, never made", fmt.Sprint(st.Unexpected), "0")
	report(t, "nodes with other data than node 1", fmt.Sprint(countDiff(digests)), "0")
	if st.Acked == 0 {
		t.Error("no write was acknowledged")
	}
	if st.Lost+st.Torn+st.Unexpected > 0 {
		t.Errorf("lost %d, torn %d, unexpected %d", st.Lost, st.Torn, st.Unexpected)
	}
}

// countDiff counts the digests that differ from the first.
func countDiff(ds []string) int {
	n := 0
	for _, d := range ds[1:] {
		if d != ds[0] {
			n++
		}
	}
	return n
}

// TestClusterLinearizable runs a register workload over HTTP on a 3-node
// cluster — 8 clients writing and reading 5 records through random nodes
// — while the leader of the database's group is killed and restarted, and
// checks the history with porcupine: every read must return a value some
// order of the operations explains. A write answered 503 or cut off may
// have applied; it stays in the history as pending.
func TestClusterLinearizable(t *testing.T) {
	duration, kills := 30*time.Second, 6
	if testing.Short() {
		duration, kills = 6*time.Second, 1
	}
	c := startCluster(t, 3)
	admin := client(c.nodes[0])
	ws := c.nodes[0].WS
	_, err := admin.Must(201, "PUT", "/workspaces/"+ws+"/dbs/reg", `{"region":"local"}`)
	must(t, err)
	_, err = admin.Must(201, "PUT", "/db/reg:main/tables/r", nil)
	must(t, err)
	_, err = admin.Must(200, "POST", "/db/reg:main/tables/r/columns", `{"name":"v","type":"string"}`)
	must(t, err)
	rec := lincheck.NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var nodes atomic.Pointer[[]*harness.Client]
	all := c.clients()
	nodes.Store(&all)
	var wg sync.WaitGroup
	for cl := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(cl), 7))
			for n := 0; ctx.Err() == nil; n++ {
				cs := *nodes.Load()
				node := cs[rng.IntN(len(cs))]
				key := fmt.Sprintf("k%d", rng.IntN(5))
				path := "/db/reg:main/tables/r/data/" + key
				if rng.IntN(2) == 0 {
					v := fmt.Sprintf("c%d-%d", cl, n)
					op := rec.Write(cl, key, v)
					r, err := node.Do("PUT", path, map[string]string{"v": v})
					switch {
					case err == nil && (r.Status == 200 || r.Status == 201):
						op.Ok("")
					case err == nil && r.Status >= 400 && r.Status < 500:
						op.Failed()
						t.Errorf("write %s: %s", key, r)
					default:
						op.Unknown()
					}
					continue
				}
				op := rec.Read(cl, key)
				r, err := node.Do("GET", path+"?columns=v", nil)
				switch {
				case err == nil && r.Status == 200:
					var body struct{ V string }
					if json.Unmarshal(r.Body, &body) != nil {
						op.Failed()
						continue
					}
					op.Ok(body.V)
				case err == nil && r.Status == 404:
					op.Ok("")
				default:
					op.Failed()
				}
			}
		}()
	}
	for k := 0; k < kills && ctx.Err() == nil; k++ {
		time.Sleep(duration / time.Duration(kills+1))
		leader := c.leader("reg")
		c.nodes[leader-1].Kill()
		var rest []*harness.Client
		for _, s := range c.nodes {
			if s.Running() {
				rest = append(rest, client(s))
			}
		}
		nodes.Store(&rest)
		time.Sleep(time.Second)
		c.nodes[leader-1].Start()
		all := c.clients()
		nodes.Store(&all)
	}
	wg.Wait()
	counts := rec.Counts()
	res := rec.Check(2*time.Minute, filepath.Join(t.TempDir(), "history.html"))
	report(t, "leader kills (SIGKILL)", fmt.Sprint(kills), "")
	report(t, "register operations", counts.String(), "")
	report(t, "linearizable (porcupine)", string(res), string(porcupine.Ok))
	if res != porcupine.Ok {
		t.Errorf("the history is %s: %s", res, counts)
	}
	if counts.WritesOk == 0 || counts.ReadsOk == 0 {
		t.Errorf("too few operations completed: %s", counts)
	}
}
