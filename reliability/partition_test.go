//go:build unix

package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/internal/harness"
)

// netns is a network of namespaces, one per node, each joined by a veth
// pair to a bridge in the test's own namespace, from which the test
// reaches every node. Cutting a node off drops, inside its namespace,
// what the other nodes send it and what it sends them: the test's client
// still reaches it, as a client on its side of a partition would.
type netns struct {
	t      *testing.T
	bridge string
	spaces []string // node i+1's namespace
	addrs  []string // node i+1's address
}

// newNetns makes the namespaces of n nodes, or skips the test where it
// cannot: not root, no ip(8) or iptables(8), no network namespaces.
func newNetns(t *testing.T, n int) *netns {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("partitions of real processes run the nodes in network namespaces, which need root (CI runs as root): skipped")
	}
	for _, tool := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("partitions of real processes need %s, not found: skipped", tool)
		}
	}
	id := os.Getpid() % 100000
	subnet := fmt.Sprintf("10.213.%d.", id%250+1)
	nw := &netns{t: t, bridge: fmt.Sprintf("cpb%d", id)}
	t.Cleanup(nw.remove)
	if err := nw.ip("link", "add", nw.bridge, "type", "bridge"); err != nil {
		t.Skipf("network namespaces are not available here (%v): skipped", err)
	}
	nw.must("addr", "add", subnet+"1/24", "dev", nw.bridge)
	nw.must("link", "set", nw.bridge, "up")
	for i := range n {
		ns, host, peer := fmt.Sprintf("cpn%d-%d", id, i+1), fmt.Sprintf("cpv%d-%d", id, i+1), fmt.Sprintf("cpw%d-%d", id, i+1)
		addr := fmt.Sprintf("%s%d", subnet, 11+i)
		nw.must("netns", "add", ns)
		nw.spaces = append(nw.spaces, ns)
		nw.must("link", "add", host, "type", "veth", "peer", "name", peer)
		nw.must("link", "set", peer, "netns", ns)
		nw.must("link", "set", host, "master", nw.bridge)
		nw.must("link", "set", host, "up")
		nw.must("-n", ns, "addr", "add", addr+"/24", "dev", peer)
		nw.must("-n", ns, "link", "set", peer, "up")
		nw.must("-n", ns, "link", "set", "lo", "up")
		nw.addrs = append(nw.addrs, addr)
	}
	return nw
}

// ip runs ip(8).
func (nw *netns) ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// must runs ip(8) and fails the test when it fails.
func (nw *netns) must(args ...string) {
	nw.t.Helper()
	if err := nw.ip(args...); err != nil {
		nw.t.Fatal(err)
	}
}

// placements returns where each node runs: in its namespace, the API on
// port 8080 and Raft on 7080 of its address.
func (nw *netns) placements() []placement {
	var at []placement
	for i, ns := range nw.spaces {
		at = append(at, placement{api: nw.addrs[i] + ":8080", raft: nw.addrs[i] + ":7080", wrap: []string{"ip", "netns", "exec", ns}})
	}
	return at
}

// cut cuts node off from the other nodes.
func (nw *netns) cut(node int) {
	nw.t.Helper()
	for i, addr := range nw.addrs {
		if i+1 == node {
			continue
		}
		for _, rule := range [][]string{{"INPUT", "-s", addr}, {"OUTPUT", "-d", addr}} {
			args := append([]string{"netns", "exec", nw.spaces[node-1], "iptables", "-I"}, append(rule, "-j", "DROP")...)
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				nw.t.Fatalf("iptables: %v: %s", err, out)
			}
		}
	}
}

// heal removes the cut of node.
func (nw *netns) heal(node int) {
	nw.t.Helper()
	if out, err := exec.Command("ip", "netns", "exec", nw.spaces[node-1], "iptables", "-F").CombinedOutput(); err != nil {
		nw.t.Fatalf("iptables: %v: %s", err, out)
	}
}

// remove deletes the namespaces (and with them the veth pairs) and the
// bridge.
func (nw *netns) remove() {
	for _, ns := range nw.spaces {
		nw.ip("netns", "delete", ns)
	}
	nw.ip("link", "delete", nw.bridge)
}

// leaderSeenBy returns the leader of database db's group in node's own
// view, 0 when it knows none.
func (c *testCluster) leaderSeenBy(node int, db string) int {
	r, err := client(c.nodes[node-1]).Must(200, "GET", "/admin/cluster/node", nil)
	if err != nil {
		return 0
	}
	var v struct {
		Groups []struct {
			Database string `json:"database"`
			Leader   int    `json:"leaderNode"`
		} `json:"groups"`
	}
	if json.Unmarshal(r.Body, &v) != nil {
		return 0
	}
	for _, g := range v.Groups {
		if g.Database == db {
			return g.Leader
		}
	}
	return 0
}

// TestClusterPartition runs three `coppice serve` processes, each in its
// own network namespace, and cuts off the leader of the database's group
// (3 times; once in -short), while 8 writers go on through the two other
// nodes. The node cut off must acknowledge no write and answer
// linearizable reads and writes 503 with Retry-After, eventual reads 200;
// the other two elect a leader and acknowledge writes. After each heal,
// every node must serve linearizable reads again within a minute, and
// every acknowledged write must be on every node; at the end the nodes'
// data directories must be byte-identical.
func TestClusterPartition(t *testing.T) {
	rounds, cutFor := 3, 8*time.Second
	if testing.Short() {
		rounds, cutFor = 1, 5*time.Second
	}
	nw := newNetns(t, 3)
	c := startClusterAt(t, nw.placements())
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	l := harness.NewLedger("pt", "items", 8)
	admin := client(c.nodes[0])
	must(t, l.Setup(admin, c.nodes[0].WS))
	_, err := admin.Must(201, "PUT", "/db/pt:main/tables/m", nil)
	must(t, err)
	_, err = admin.Must(200, "POST", "/db/pt:main/tables/m/columns", `{"name":"v","type":"string"}`)
	must(t, err)
	c.converge()
	var tries, acked, unavailable, eventual int
	var elected, rejoin time.Duration
	for round := range rounds {
		cut := c.leader("pt")
		var majority []*harness.Client
		others := []int{}
		for i, s := range c.nodes {
			if i+1 != cut {
				majority = append(majority, client(s))
				others = append(others, i+1)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), cutFor)
		done := make(chan struct{})
		nw.cut(cut)
		start := time.Now()
		go func() {
			defer close(done)
			l.RunOn(ctx, majority, seed+uint64(round))
		}()
		// The majority elects a leader of its own.
		for {
			if lead := c.leaderSeenBy(others[0], "pt"); lead != 0 && lead != cut {
				elected += time.Since(start)
				break
			}
			if time.Since(start) > 20*time.Second {
				t.Fatalf("round %d: the majority elected no leader without node %d", round+1, cut)
			}
			time.Sleep(50 * time.Millisecond)
		}
		minority := client(c.nodes[cut-1])
		for i := 0; ctx.Err() == nil && i < 3; i++ {
			for _, req := range []struct{ method, path, body string }{
				{"PUT", fmt.Sprintf("/db/pt:main/tables/m/data/r%d-%d", round, i), `{"v":"minority"}`},
				{"GET", "/db/pt:main/tables/items/data/none", ""},
			} {
				tries++
				begin := time.Now()
				r, err := minority.Do(req.method, req.path, req.body)
				switch {
				case err != nil:
					t.Errorf("round %d: %s %s on the node cut off: %v", round+1, req.method, req.path, err)
				case r.Status/100 == 2:
					acked++
					t.Errorf("round %d: the node cut off acknowledged %s %s: %s", round+1, req.method, req.path, r)
				case r.Status == 503 && r.Header.Get("Retry-After") != "":
					unavailable++
					if took := time.Since(begin); took > 10*time.Second {
						t.Errorf("round %d: the node cut off answered after %v", round+1, took)
					}
				default:
					t.Errorf("round %d: %s %s on the node cut off: %s, Retry-After %q", round+1, req.method, req.path, r, r.Header.Get("Retry-After"))
				}
			}
		}
		if r, err := minority.Do("POST", "/db/pt:main/tables/items/query", `{"consistency":"eventual","page":{"size":1}}`); err == nil && r.Status == 200 {
			eventual++
		} else {
			t.Errorf("round %d: an eventual read on the node cut off: %v %v", round+1, r, err)
		}
		<-done
		cancel()
		nw.heal(cut)
		healed := time.Now()
		c.converge()
		// The node cut off catches up, which may take seconds, and serves
		// linearizable reads again; so does every node.
		for _, cl := range c.clients() {
			for {
				r, err := cl.Do("GET", "/db/pt:main/tables/items/data/none", nil)
				if err == nil && r.Status == 404 {
					break
				}
				if time.Since(healed) > 60*time.Second {
					t.Fatalf("round %d: a minute after the heal, a node answers a linearizable read %v %v", round+1, r, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		rejoin = max(rejoin, time.Since(healed))
		for n, cl := range c.clients() {
			bad, err := l.Verify(cl)
			must(t, err)
			if len(bad) > 0 {
				t.Errorf("after round %d (node %d cut off), read through node %d:\n%s", round+1, cut, n+1, strings.Join(bad[:min(len(bad), 20)], "\n"))
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
	report(t, "partitions cutting the leader off", fmt.Sprint(rounds), "")
	report(t, "mean time to a majority leader", (elected / time.Duration(rounds)).Round(time.Millisecond).String(), "")
	report(t, "longest wait, heal to reads on all", rejoin.Round(time.Millisecond).String(), "")
	report(t, "requests to the node cut off", fmt.Sprint(tries), "")
	report(t, "of them acknowledged", fmt.Sprint(acked), "0")
	report(t, "of them 503 with Retry-After", fmt.Sprint(unavailable), fmt.Sprint(tries))
	report(t, "eventual reads it answered", fmt.Sprint(eventual), fmt.Sprint(rounds))
	report(t, "writes acked by the majority", fmt.Sprint(st.AckedRecords), "")
	report(t, "lost writes", fmt.Sprint(st.Lost), "0")
	report(t, "nodes with other data than node 1", fmt.Sprint(countDiff(digests)), "0")
	if st.Acked == 0 {
		t.Error("the majority acknowledged no write")
	}
	if st.Lost+st.Torn+st.Unexpected > 0 {
		t.Errorf("lost %d, torn %d, unexpected %d", st.Lost, st.Torn, st.Unexpected)
	}
}
