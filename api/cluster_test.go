package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// clusterNode is one node of an in-process test cluster: a data directory
// that outlives the engine and server running on it.
type clusterNode struct {
	id   uint64
	dir  string
	raft string // its Raft address on the cluster's network
	ts   *testServer
	stop func()
}

// testCluster is a cluster of nodes in this process, joined by an
// in-process network, each serving the API on a loopback port.
type testCluster struct {
	t     *testing.T
	net   *engine.ClusterNetwork
	join  []string
	nodes map[uint64]*clusterNode
	info  *BootstrapInfo
	clock func() time.Time
}

// clusterClock is the fixed clock of the nodes, and of the single server
// they are compared with.
func clusterClock() time.Time { return time.Date(2026, 4, 5, 6, 7, 8, 0, time.UTC) }

// startCluster starts n founding nodes, bootstraps the accounts through
// node 1 and serves the API on each.
func startCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	c := &testCluster{t: t, net: engine.NewClusterNetwork(), nodes: map[uint64]*clusterNode{}, clock: clusterClock}
	for i := 1; i <= n; i++ {
		c.join = append(c.join, fmt.Sprintf("node%d", i))
	}
	base := t.TempDir()
	for i := 1; i <= n; i++ {
		c.nodes[uint64(i)] = &clusterNode{id: uint64(i), dir: filepath.Join(base, fmt.Sprintf("n%d", i)), raft: fmt.Sprintf("node%d", i)}
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			c.stopNode(nd.id)
		}
	})
	for i := 1; i <= n; i++ {
		c.startNode(uint64(i))
	}
	// The accounts, once a majority runs.
	info, err := Bootstrap(c.node(1).eng, testKey)
	if err != nil {
		t.Fatal(err)
	}
	c.info = info
	for _, nd := range c.nodes {
		nd.ts.info, nd.ts.base = info, nd.ts.url+"/ws/"+info.WorkspaceID
	}
	return c
}

// clusterLogger shows the nodes' log only with COPPICE_RAFT_LOG set.
func clusterLogger() *slog.Logger {
	if os.Getenv("COPPICE_RAFT_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startNode opens node id's engine as a node of the cluster and serves
// the API.
func (c *testCluster) startNode(id uint64) {
	c.t.Helper()
	nd := c.nodes[id]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	eng, err := engine.Open(nd.dir, engine.Options{Clock: c.clock, Logger: clusterLogger(), Cluster: &engine.ClusterOptions{
		NodeID: id, RaftAddr: nd.raft, APIAddr: ln.Addr().String(), Join: c.join, Network: c.net,
		Tick: 10 * time.Millisecond, HeartbeatTicks: 2, ElectionTicks: 20, SnapshotEvery: 40, MaxWait: 3 * time.Second,
	}})
	if err != nil {
		ln.Close()
		c.t.Fatal(err)
	}
	srv, err := New(eng, Options{Logger: clusterLogger()})
	if err != nil {
		eng.Close()
		ln.Close()
		c.t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ts := &testServer{t: c.t, eng: eng, srv: srv, info: c.info, addr: ln.Addr().String(), key: testKey}
	ts.url = "http://" + ts.addr
	if c.info != nil {
		ts.base = ts.url + "/ws/" + c.info.WorkspaceID
	}
	nd.ts = ts
	nd.stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ln.Close()
		<-served
		if err := eng.Close(); err != nil {
			c.t.Errorf("node %d: close engine: %v", id, err)
		}
	}
}

// stopNode stops node id's server and engine, if running.
func (c *testCluster) stopNode(id uint64) {
	nd := c.nodes[id]
	if nd.stop != nil {
		nd.stop()
		nd.stop, nd.ts = nil, nil
	}
}

// node returns the test server of a running node.
func (c *testCluster) node(id uint64) *testServer { return c.nodes[id].ts }

// retry sends a request until it gets want, for requests that may meet a
// group between two leaders (503), and fails after a while.
func (c *testCluster) retry(id uint64, want int, method, url string, body any) *response {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := c.node(id).do(method, url, body)
		if r.status == want {
			return r
		}
		if r.status != 503 || time.Now().After(deadline) {
			c.t.Fatalf("node %d: %s %s: status %d, want %d; body %s", id, method, url, r.status, want, r.raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// status returns the cluster's status as node id sees it.
func (c *testCluster) status(id uint64) clusterStatusBody {
	c.t.Helper()
	r := c.node(id).expect(200, "GET", c.node(id).url+"/admin/cluster", nil)
	var st clusterStatusBody
	if err := json.Unmarshal(r.raw, &st); err != nil {
		c.t.Fatal(err)
	}
	return st
}

// leaderOf returns the node leading the group of database db, as node id
// reports it, waiting for one.
func (c *testCluster) leaderOf(id uint64, db string) uint64 {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, g := range c.status(id).Groups {
			if g.Database == db && g.Leader != 0 && c.nodes[g.Leader].ts != nil {
				return g.Leader
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("database %s has no leader", db)
	return 0
}

// nodeView returns node id's own view of the group of database db.
func (c *testCluster) nodeView(id uint64, db string) groupView {
	c.t.Helper()
	r := c.node(id).expect(200, "GET", c.node(id).url+"/admin/cluster/node", nil)
	var v nodeView
	if err := json.Unmarshal(r.raw, &v); err != nil {
		c.t.Fatal(err)
	}
	for _, g := range v.Groups {
		if g.Database == db {
			return g
		}
	}
	c.t.Fatalf("node %d has no replica of %s", id, db)
	return groupView{}
}

// converged waits until every running node has applied what the leader of
// every group has.
func (c *testCluster) converged(id uint64) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := c.status(id)
		lagging := ""
		for _, g := range st.Groups {
			for _, r := range g.Replicas {
				if r.Lag > 0 {
					lagging = fmt.Sprintf("node %d lags %d entries in group %d (%s)", r.Node, r.Lag, g.Group, g.Database)
				}
			}
		}
		if lagging == "" {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatal(lagging)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clusterScript is a sequence of data-plane requests whose answers a
// cluster must give exactly as a single server does: each is sent to the
// node send picks.
func clusterScript(t *testing.T, region string, send func(i int) *testServer, db string) []string {
	t.Helper()
	var out []string
	step := 0
	do := func(want int, method, path string, body any) {
		t.Helper()
		ts := send(step)
		step++
		url := path
		if strings.HasPrefix(path, "/workspaces/") {
			url = ts.url + path
		}
		r := ts.expect(want, method, url, body)
		out = append(out, fmt.Sprintf("%s %s → %d %s", method, path, r.status, r.raw))
	}
	ws := "/workspaces/" + send(0).info.WorkspaceID
	do(201, "PUT", ws+"/dbs/"+db, map[string]any{"region": region})
	dbb := "/db/" + db + ":main"
	do(201, "PUT", dbb+"/tables/people", nil)
	for _, col := range []map[string]any{{"name": "name", "type": "string"}, {"name": "age", "type": "int"}, {"name": "bio", "type": "text"}} {
		do(200, "POST", dbb+"/tables/people/columns", col)
	}
	bios := []string{"likes long walks", "the quick brown fox", "walks the dog", "reads", "fox hunting is cruel"}
	for i, bio := range bios {
		do(201, "PUT", fmt.Sprintf("%s/tables/people/data/p%d", dbb, i), map[string]any{"name": fmt.Sprintf("person %d", i), "age": 20 + i, "bio": bio})
	}
	do(200, "PATCH", dbb+"/tables/people/data/p1", map[string]any{"age": map[string]any{"$increment": 5}})
	do(204, "DELETE", dbb+"/tables/people/data/p4", nil)
	for i := range 4 {
		do(200, "GET", fmt.Sprintf("%s/tables/people/data/p%d", dbb, i), nil)
	}
	do(200, "POST", dbb+"/tables/people/query", map[string]any{"filter": map[string]any{"age": map[string]any{"$ge": 21}}, "sort": map[string]any{"age": "desc"}})
	do(200, "POST", dbb+"/tables/people/summarize", map[string]any{"columns": []string{}, "summaries": map[string]any{"n": map[string]any{"count": "*"}, "avg": map[string]any{"average": "age"}}})
	do(200, "POST", dbb+"/tables/people/aggregate", map[string]any{"aggs": map[string]any{"total": map[string]any{"sum": map[string]any{"column": "age"}}}})
	do(200, "POST", dbb+"/tables/people/search", map[string]any{"query": "walks"})
	do(200, "POST", dbb+"/tables/people/bulk", map[string]any{"records": []map[string]any{{"id": "b1", "name": "bulk"}, {"id": "b2", "name": "bulk"}}})
	do(200, "POST", dbb+"/transaction", map[string]any{"operations": []any{
		map[string]any{"update": map[string]any{"table": "people", "id": "b1", "fields": map[string]any{"age": 1}}},
		map[string]any{"get": map[string]any{"table": "people", "id": "b2"}},
	}})
	do(201, "PUT", "/db/"+db+":dev", map[string]any{"from": "main"})
	do(200, "POST", "/db/"+db+":dev/tables/people/query", map[string]any{"columns": []string{"name"}, "page": map[string]any{"size": 2}})
	return out
}

// randomParts are the parts of answers that differ between two servers
// by design: generated migration ids, cursors signed with each server's
// secret, workspace ids.
var randomParts = regexp.MustCompile(`mig_[0-9a-z]{20}|"cursor":"[^"]*"|/workspaces/[^/]+/`)

// unrandom masks the randomParts of an answer.
func unrandom(s string) string { return randomParts.ReplaceAllString(s, "…") }

// TestClusterHTTP drives a 3-node cluster through the HTTP API: answers
// equal a single server's, request by request, whichever node gets each;
// writes on every node are read linearizably on every other; eventual
// reads and gets answer from the local replica, or, on a node without one,
// from a node that has one; a node cut off answers 503 with Retry-After to
// linearizable reads and writes (a write's outcome unknown), and eventual
// queries, summaries, aggregations, searches and gets as the majority
// does; the leader of a database
// stops and the others go on; a node that missed more than its log keeps
// catches up from a snapshot; a node is added and another removed, its
// replicas moving to the new one.
func TestClusterHTTP(t *testing.T) {
	single := startServerEngine(t, Options{}, engine.Options{Clock: clusterClock})
	region := single.region()
	want := clusterScript(t, region, func(int) *testServer { return single }, "shop")

	c := startCluster(t, 3)
	// A backup of one node's data directory is no backup of the cluster.
	if r := c.node(2).do("POST", c.node(2).url+"/admin/backup", nil); r.status != 501 || !strings.Contains(string(r.raw), "coppice dump") {
		t.Errorf("a backup of a node: %d %s", r.status, r.raw)
	}
	got := clusterScript(t, region, func(i int) *testServer { return c.node(uint64(1 + i%3)) }, "shop")
	for i := range want {
		if g, w := unrandom(got[i]), unrandom(want[i]); g != w {
			t.Errorf("the cluster answers\n%s\nwhere a single server answers\n%s", g, w)
		}
	}
	// A cursor one node signed reads the next page on another.
	dev := "/db/shop:dev/tables/people/query"
	first := c.node(1).expect(200, "POST", dev, map[string]any{"page": map[string]any{"size": 1}}).obj()
	cursor := first["meta"].(map[string]any)["page"].(map[string]any)["cursor"]
	next := c.node(2).expect(200, "POST", dev, map[string]any{"page": map[string]any{"after": cursor}}).obj()
	if recs, _ := next["records"].([]any); len(recs) == 0 {
		t.Errorf("the page after node 1's cursor, on node 2: %v", next)
	}

	// A dump taken through one node loads through another, as a new
	// database every node holds, and dumps to the same bytes.
	dump := c.node(1).expectRaw(200, "GET", "/dbs/shop/dump", nil, "", true).body
	c.node(2).expectRaw(201, "POST", "/dbs/shopcopy/load", dump, "application/octet-stream", true)
	c.node(3).expect(200, "GET", "/db/shopcopy:dev/tables/people/data/b1", nil)
	if again := c.node(3).expectRaw(200, "GET", "/dbs/shopcopy/dump", nil, "", true).body; !bytes.Equal(dumpBody(t, again), dumpBody(t, dump)) {
		t.Error("the loaded copy dumps to other bytes")
	}
	single.expectRaw(201, "POST", "/dbs/shopcopy/load", dump, "application/octet-stream", true)
	if got := single.expect(200, "GET", "/db/shopcopy:main/tables/people/data/p1", nil).raw; !bytes.Equal(got, c.node(1).expect(200, "GET", "/db/shopcopy:main/tables/people/data/p1", nil).raw) {
		t.Error("a cluster's dump loads on a single server other than on the cluster")
	}

	// A database deleted through one node is gone on every other, and its
	// group stops everywhere.
	c.node(3).expect(200, "DELETE", c.node(3).url+"/workspaces/"+c.info.WorkspaceID+"/dbs/shopcopy", nil)
	for id := uint64(1); id <= 3; id++ {
		c.node(id).expect(404, "GET", "/db/shopcopy:main/tables/people/data/p1", nil)
	}
	waitGone := time.Now().Add(10 * time.Second)
	for groups := -1; groups != 0; {
		groups = 0
		for _, g := range c.status(1).Groups {
			if g.Database == "shopcopy" {
				groups += len(g.Replicas)
			}
		}
		if time.Now().After(waitGone) {
			t.Fatalf("%d replicas of a deleted database still run", groups)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Writes through each node, each read at once through another.
	dbb := "/db/shop:main/tables/people"
	// A write that needs what another node changed a moment ago: a
	// column, an API key. It must never fail for the replica lagging.
	for i := range 6 {
		col := fmt.Sprintf("c%d", i)
		c.node(1).expect(200, "POST", dbb+"/columns", map[string]any{"name": col, "type": "int"})
		c.node(uint64(2+i%2)).expect(201, "PUT", fmt.Sprintf("%s/data/col%d", dbb, i), map[string]any{col: i})
	}
	key := c.node(1).expect(201, "POST", c.node(1).url+"/user/keys/fresh", nil).obj()["key"].(string)
	c.node(3).expect(201, "PUT", dbb+"/data/fresh", map[string]any{"name": "fresh"}, withKey(key))
	for i := range 30 {
		w, r := uint64(1+i%3), uint64(1+(i+1)%3)
		c.retry(w, 201, "PUT", fmt.Sprintf("%s/data/w%d", dbb, i), map[string]any{"name": fmt.Sprintf("w%d", i), "age": i})
		rec := c.node(r).expect(200, "GET", fmt.Sprintf("%s/data/w%d", dbb, i), nil).obj()
		if rec["name"] != fmt.Sprintf("w%d", i) {
			t.Fatalf("node %d reads w%d as %v", r, i, rec)
		}
	}
	c.converged(1)

	// A file URL is a capability: any node serves it from its replica,
	// catching up first when the write that made it is not there yet.
	c.node(1).expect(200, "POST", dbb+"/columns", map[string]any{"name": "doc", "type": "file"})
	c.node(1).expect(201, "PUT", dbb+"/data/f1", map[string]any{"doc": map[string]any{"name": "a.txt", "mediaType": "text/plain", "base64Content": b64("alpha")}})
	doc := c.node(1).expect(200, "GET", dbb+"/data/f1?columns=doc.signedUrl,doc.uploadUrl", nil).obj()["doc"].(map[string]any)
	// URLs name the node that made them; any other serves them as well.
	fileURL := func(u any) string { return u.(string)[strings.Index(u.(string), "/file/"):] }
	signed, upload := fileURL(doc["signedUrl"]), fileURL(doc["uploadUrl"])
	c.node(2).expectRaw(201, "PUT", c.node(2).url+upload, []byte("beta"), "text/plain", false)
	fileOn := func(id uint64, want string) {
		t.Helper()
		url := fileURL(c.node(id).expect(200, "GET", dbb+"/data/f1?columns=doc.signedUrl", nil).obj()["doc"].(map[string]any)["signedUrl"])
		if r := c.node(id).expectRaw(200, "GET", c.node(id).url+url, nil, "", false); string(r.body) != want {
			t.Errorf("node %d serves the file as %q", id, r.body)
		}
	}
	for id := uint64(1); id <= 3; id++ {
		fileOn(id, "beta")
	}
	if r := c.node(3).raw("GET", c.node(3).url+signed, nil, "", false); r.status != 404 {
		t.Errorf("a signed URL of the file's first version: %d %s", r.status, r.body)
	}

	// A node cut off from the others: linearizable reads and writes wait
	// for the bound, then 503 with Retry-After; eventual reads answer from
	// its replica, which has every write made so far.
	c.converged(1)
	c.net.Partition("node3")
	cut := c.node(3)
	start := time.Now()
	r := cut.do("GET", dbb+"/data/w1", nil)
	if r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Errorf("a linearizable read on a cut-off node: %d %s, Retry-After %q", r.status, r.raw, r.header.Get("Retry-After"))
	}
	// A read changes nothing: its answer does not speak of a write.
	if strings.Contains(string(r.raw), "write may still apply") {
		t.Errorf("a linearizable read on a cut-off node says a write may apply: %s", r.raw)
	}
	if waited := time.Since(start); waited > 8*time.Second {
		t.Errorf("the cut-off node answered after %v", waited)
	}
	// The write may still apply once the link heals: the answer says so.
	if r := cut.do("PUT", dbb+"/data/cut", map[string]any{"name": "x"}); r.status != 503 || !strings.Contains(string(r.raw), "outcome is unknown") {
		t.Errorf("a write on a cut-off node: %d %s", r.status, r.raw)
	}
	if rec := cut.expect(200, "GET", dbb+"/data/w1?consistency=eventual", nil).obj(); rec["name"] != "w1" {
		t.Errorf("an eventual get on a cut-off node: %v", rec)
	}
	q := cut.expect(200, "POST", dbb+"/query", map[string]any{"filter": map[string]any{"id": "w1"}, "consistency": "eventual"})
	if recs, _ := q.obj()["records"].([]any); len(recs) != 1 {
		t.Errorf("an eventual read on a cut-off node: %s", q.raw)
	}
	// Summarize, aggregate and search as well: strong, they wait (side by
	// side) and get 503; eventual, they answer what the majority answers.
	reads := []struct {
		route string
		body  map[string]any
	}{
		{"/summarize", map[string]any{"columns": []string{}, "summaries": map[string]any{"n": map[string]any{"count": "*"}, "s": map[string]any{"sum": "age"}}}},
		{"/aggregate", map[string]any{"aggs": map[string]any{"total": map[string]any{"sum": map[string]any{"column": "age"}}}}},
		{"/search", map[string]any{"query": "walks"}},
	}
	strong := make([]*response, len(reads))
	var wg sync.WaitGroup
	for i, rd := range reads {
		wg.Go(func() { strong[i] = cut.do("POST", dbb+rd.route, rd.body) })
	}
	wg.Wait()
	cutAnswers := make([][]byte, len(reads))
	for i, rd := range reads {
		if r := strong[i]; r.status != 503 || r.header.Get("Retry-After") == "" {
			t.Errorf("a linearizable %s on a cut-off node: %d %s", rd.route, r.status, r.raw)
		}
		eventual := maps.Clone(rd.body)
		eventual["consistency"] = "eventual"
		cutAnswers[i] = cut.expect(200, "POST", dbb+rd.route, eventual).raw
	}
	for i, rd := range reads {
		if want := c.retry(1, 200, "POST", dbb+rd.route, rd.body).raw; !bytes.Equal(cutAnswers[i], want) {
			t.Errorf("an eventual %s on a cut-off node: %s; the majority: %s", rd.route, cutAnswers[i], want)
		}
	}
	// Its own view of the cluster it answers at once.
	start = time.Now()
	cut.expect(200, "GET", cut.url+"/admin/cluster/node", nil)
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("the cut-off node's status took %v", waited)
	}
	// The majority goes on.
	c.retry(1, 201, "PUT", dbb+"/data/majority", map[string]any{"name": "m"})
	c.net.Heal()
	c.retry(3, 200, "GET", dbb+"/data/majority", nil)

	// The leader of the database stops; the others elect another and go
	// on; it comes back and catches up from the log.
	leader := c.leaderOf(1, "shop")
	c.stopNode(leader)
	other := leader%3 + 1
	for i := range 10 {
		c.retry(other, 201, "PUT", fmt.Sprintf("%s/data/k%d", dbb, i), map[string]any{"name": "k"})
	}
	c.startNode(leader)
	c.retry(leader, 200, "GET", dbb+"/data/k9", nil)

	// A node misses more entries than its log keeps (SnapshotEvery 40):
	// it comes back through a snapshot of the database.
	gone := c.nodeView(3, "shop").Applied
	c.stopNode(3)
	last := 0
	for i := 0; ; i++ {
		c.retry(uint64(1+i%2), 201, "PUT", fmt.Sprintf("%s/data/s%d", dbb, i), map[string]any{"name": "s", "age": i})
		last = i
		// Until the others' logs no longer have what node 3 misses.
		if i >= 50 && c.nodeView(1, "shop").FirstIndex > gone+1 && c.nodeView(2, "shop").FirstIndex > gone+1 {
			break
		}
		if i > 2000 {
			t.Fatalf("the logs still hold entry %d", gone+1)
		}
	}
	c.startNode(3)
	c.retry(3, 200, "GET", fmt.Sprintf("%s/data/s%d", dbb, last), nil)
	if n := c.node(3).eng.Cluster().Recovered(); n == 0 {
		t.Error("node 3 caught up without a snapshot")
	}
	c.converged(1)
	sum := func(id uint64) string {
		r := c.node(id).expect(200, "POST", dbb+"/summarize", map[string]any{"columns": []string{}, "summaries": map[string]any{"n": map[string]any{"count": "*"}, "s": map[string]any{"sum": "age"}}})
		return string(r.raw)
	}
	for id := uint64(2); id <= 3; id++ {
		if a, b := sum(1), sum(id); a != b {
			t.Errorf("node 1 summarizes %s, node %d %s", a, id, b)
		}
	}

	// Node 4 joins. It holds no replica (every database has its three),
	// and passes requests on to a node that does.
	c.join4(t)
	var v4 nodeView
	json.Unmarshal(c.node(4).expect(200, "GET", c.node(4).url+"/admin/cluster/node", nil).raw, &v4)
	for _, g := range v4.Groups {
		if g.Database == "shop" {
			t.Fatal("node 4 holds a replica of shop from the start")
		}
	}
	c.node(4).expect(200, "GET", fmt.Sprintf("%s/data/s%d", dbb, last), nil)
	c.node(4).expect(200, "GET", fmt.Sprintf("%s/data/s%d?consistency=eventual", dbb, last), nil)
	c.node(4).expect(201, "PUT", dbb+"/data/via4", map[string]any{"name": "via 4"})
	fileOn(4, "beta")
	c.node(1).expect(200, "GET", dbb+"/data/via4", nil)
	// Node 3 leaves, its replicas moving to node 4.
	c.node(1).expect(204, "DELETE", c.node(1).url+"/admin/cluster/nodes/3", nil)
	c.stopNode(3)
	c.retry(4, 200, "GET", fmt.Sprintf("%s/data/s%d", dbb, last), nil)
	c.retry(2, 201, "PUT", dbb+"/data/after", map[string]any{"name": "after"})
	c.retry(4, 200, "GET", dbb+"/data/after", nil)
	st := c.status(4)
	for _, nd := range st.Nodes {
		if nd.ID == 3 {
			t.Errorf("node 3 is still listed: %+v", st.Nodes)
		}
	}
	for _, g := range st.Groups {
		for _, rep := range g.Replicas {
			if rep.Node == 3 {
				t.Errorf("group %d (%s) still has a replica on node 3", g.Group, g.Database)
			}
		}
		if len(g.Replicas) != 3 {
			t.Errorf("group %d (%s) has %d replicas: %+v", g.Group, g.Database, len(g.Replicas), g.Replicas)
		}
	}
}

// TestClusterEventualGet checks GET of a record with ?consistency=eventual:
// on a single server it answers what a GET without it does; in a 3-node
// cluster a write through node 1 becomes visible through it on every node,
// and it answers from the replica while the group has no majority, where a
// linearizable get answers 503. Any other value is a 400 on both.
func TestClusterEventualGet(t *testing.T) {
	rec := "/db/ev:main/tables/people/data/p1"
	badValues := func(ts *testServer) {
		t.Helper()
		for _, v := range []string{"bogus", "", "EVENTUAL", "linearizable"} {
			r := ts.expect(400, "GET", rec+"?consistency="+v, nil)
			if msg, _ := r.obj()["message"].(string); !strings.Contains(msg, "consistency must be strong or eventual") {
				t.Errorf("?consistency=%s: %s", v, r.raw)
			}
		}
	}

	single := startServer(t, Options{})
	single.createDB("ev")
	single.createTable("ev", "people", map[string]any{"name": "name", "type": "string"})
	single.expect(201, "PUT", rec, map[string]any{"name": "Ann"})
	for _, q := range []string{"", "?columns=name"} {
		want := single.expect(200, "GET", rec+q, nil).raw
		sep := "?"
		if q != "" {
			sep = "&"
		}
		for _, v := range []string{"strong", "eventual"} {
			if got := single.expect(200, "GET", rec+q+sep+"consistency="+v, nil).raw; !bytes.Equal(got, want) {
				t.Errorf("GET %s with consistency=%s: %s, without: %s", q, v, got, want)
			}
		}
	}
	single.expect(404, "GET", "/db/ev:main/tables/people/data/nope?consistency=eventual", nil)
	badValues(single)

	c := startCluster(t, 3)
	c.node(1).createDB("ev")
	c.node(1).createTable("ev", "people", map[string]any{"name": "name", "type": "string"})
	// Every replica has the accounts, the database and its table: an
	// eventual read authenticates with its own replica of the catalog.
	c.converged(1)
	// seen waits until node id's replica answers the record with name.
	seen := func(id uint64, name string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := c.node(id).do("GET", rec+"?consistency=eventual", nil)
			if r.status == 200 && r.obj()["name"] == name {
				return
			}
			// A replica that has not applied the record yet answers 404.
			if r.status != 200 && r.status != 404 || time.Now().After(deadline) {
				t.Fatalf("node %d: an eventual get: %d %s, want the name %s", id, r.status, r.raw, name)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for i, name := range []string{"Ann", "Bea", "Cy"} {
		c.retry(1, []int{201, 200, 200}[i], "PUT", rec, map[string]any{"name": name})
		for id := uint64(1); id <= 3; id++ {
			seen(id, name)
		}
	}
	badValues(c.node(2))

	// A key made while node 3 was cut off is not in node 3's catalog when
	// the link heals: its eventual reads ask the catalog's leader first.
	c.net.Partition("node3")
	fresh := c.node(1).expect(201, "POST", c.node(1).url+"/user/keys/fresh-ev", nil).obj()["key"].(string)
	c.net.Heal()
	if got := c.node(3).expect(200, "GET", rec+"?consistency=eventual", nil, withKey(fresh)).obj(); got["name"] != "Cy" {
		t.Errorf("an eventual get with a key node 3 had not seen: %v", got)
	}
	c.node(3).expect(200, "POST", "/db/ev:main/tables/people/query", map[string]any{"consistency": "eventual"}, withKey(fresh))

	// Nodes 2 and 3 stop: node 1's groups have no majority. A linearizable
	// get waits for the bound and answers 503; an eventual get answers from
	// node 1's replica.
	c.stopNode(2)
	c.stopNode(3)
	n1 := c.node(1)
	if r := n1.do("GET", rec, nil); r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Errorf("a linearizable get without a majority: %d %s, Retry-After %q", r.status, r.raw, r.header.Get("Retry-After"))
	}
	if r := n1.do("GET", rec+"?consistency=strong", nil); r.status != 503 {
		t.Errorf("a get with consistency=strong without a majority: %d %s", r.status, r.raw)
	}
	start := time.Now()
	if got := n1.expect(200, "GET", rec+"?consistency=eventual", nil).obj(); got["name"] != "Cy" {
		t.Errorf("an eventual get without a majority: %v", got)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("an eventual get without a majority took %v", waited)
	}
	n1.expect(404, "GET", "/db/ev:main/tables/people/data/nope?consistency=eventual", nil)
	// A consistency that is neither is refused at once, not after the wait.
	start = time.Now()
	n1.expect(400, "GET", rec+"?consistency=linearizable", nil)
	n1.expect(400, "POST", "/db/ev:main/tables/people/query", map[string]any{"consistency": "linearizable"})
	n1.expect(400, "POST", "/db/ev:main/tables/people/query", map[string]any{"consistency": 1})
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("bad consistency values without a majority took %v", waited)
	}
}

// dumpBody returns a dump without its header line, which names the
// database.
func dumpBody(t *testing.T, dump []byte) []byte {
	t.Helper()
	i := bytes.IndexByte(dump, '\n')
	if i < 0 {
		t.Fatalf("a dump without a header line: %.100q", dump)
	}
	return dump[i+1:]
}

// join4 starts node 4, which is not in the join list, and adds it through
// node 1.
func (c *testCluster) join4(t *testing.T) {
	t.Helper()
	c.nodes[4] = &clusterNode{id: 4, dir: filepath.Join(t.TempDir(), "n4"), raft: "node4"}
	c.startNode(4)
	c.node(1).expect(204, "POST", c.node(1).url+"/admin/cluster/nodes", map[string]any{"id": 4, "raftAddr": "node4"})
	c.retry(4, 200, "GET", c.node(4).url+"/user", nil)
}
