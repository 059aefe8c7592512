package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/internal/proccpu"
	"github.com/coppice-db/coppice/internal/testnet"
)

// benchNode is a server for the cluster benchmark: a real engine, synced,
// on a loopback port, with the HTTP client the load uses.
type benchNode struct {
	url, base string
	eng       *engine.Engine
}

// startBenchNode opens an engine with opts (synced writes) and serves it.
func startBenchNode(b *testing.B, dir string, opts engine.Options, ln net.Listener) *benchNode {
	b.Helper()
	opts.Logger = clusterLogger()
	eng, err := engine.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := New(eng, Options{Logger: clusterLogger()})
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-served
		eng.Close()
	})
	return &benchNode{url: "http://" + ln.Addr().String(), eng: eng}
}

// benchClient sends the load: one connection per client goroutine kept
// alive.
var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}

// send sends one request and fails the benchmark unless it gets want.
func send(b *testing.B, method, url string, body []byte, want int) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := benchClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Fatalf("%s %s: %d, want %d", method, url, resp.StatusCode, want)
	}
}

// BenchmarkCluster measures, in one run, the throughput of single record
// inserts and of point reads at 16 and 64 concurrent clients: on a single
// server with synced writes, and on a 3-node cluster on this machine
// (replication over loopback TCP), its clients spread over the nodes.
// Point reads are read by id: GET of a record, linearizable in a cluster
// or, with ?consistency=eventual, answered by any replica alone, and a
// query by id, linearizable or eventual as well. Each sub-benchmark
// reports req/s, and the CPU time the process spent per request (the
// servers, the nodes' replication and the load generator together), which
// says what a machine of its own per node would gain. Run it with make
// bench-cluster on a quiet machine.
func BenchmarkCluster(b *testing.B) {
	base := b.TempDir()
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		return ln
	}
	single := startBenchNode(b, filepath.Join(base, "single"), engine.Options{}, listen())
	info, err := Bootstrap(single.eng, testKey)
	if err != nil {
		b.Fatal(err)
	}
	single.base = single.url + "/ws/" + info.WorkspaceID
	var raft []string
	for range 3 {
		raft = append(raft, testnet.FreeAddr(b))
	}
	var nodes []*benchNode
	for i := range 3 {
		ln := listen()
		nodes = append(nodes, startBenchNode(b, filepath.Join(base, fmt.Sprintf("n%d", i+1)), engine.Options{Cluster: &engine.ClusterOptions{
			NodeID: uint64(i + 1), RaftAddr: raft[i], APIAddr: ln.Addr().String(), Join: raft,
		}}, ln))
	}
	info, err = Bootstrap(nodes[0].eng, testKey)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range nodes {
		n.base = n.url + "/ws/" + info.WorkspaceID
	}
	// The same database on both: 1000 records to read.
	setup := func(n *benchNode) {
		ws := n.base[len(n.url)+len("/ws/"):]
		send(b, "PUT", n.url+"/workspaces/"+ws+"/dbs/bench", []byte(`{"region":"local"}`), 201)
		send(b, "PUT", n.base+"/db/bench:main/tables/t", nil, 201)
		send(b, "POST", n.base+"/db/bench:main/tables/t/columns", []byte(`{"name":"name","type":"string"}`), 200)
		send(b, "POST", n.base+"/db/bench:main/tables/t/columns", []byte(`{"name":"n","type":"int"}`), 200)
		for i := range 1000 {
			send(b, "PUT", fmt.Sprintf("%s/db/bench:main/tables/t/data/r%d", n.base, i), []byte(fmt.Sprintf(`{"name":"r%d","n":%d}`, i, i)), 201)
		}
	}
	setup(single)
	setup(nodes[0])
	// A linearizable read on each node waits until its replicas have the
	// key and every record, which the eventual reads then find there.
	for _, n := range nodes {
		send(b, "GET", n.base+"/db/bench:main/tables/t/data/r999", nil, 200)
	}
	var seq atomic.Int64
	type load struct {
		name    string
		targets []*benchNode
		op      func(b *testing.B, n *benchNode, i int64)
	}
	insert := func(b *testing.B, n *benchNode, i int64) {
		send(b, "POST", n.base+"/db/bench:main/tables/t/data", []byte(fmt.Sprintf(`{"name":"x%d","n":%d}`, i, i)), 201)
	}
	get := func(query string) func(b *testing.B, n *benchNode, i int64) {
		return func(b *testing.B, n *benchNode, i int64) {
			send(b, "GET", fmt.Sprintf("%s/db/bench:main/tables/t/data/r%d%s", n.base, i%1000, query), nil, 200)
		}
	}
	queryByID := func(consistency string) func(b *testing.B, n *benchNode, i int64) {
		return func(b *testing.B, n *benchNode, i int64) {
			send(b, "POST", n.base+"/db/bench:main/tables/t/query",
				[]byte(fmt.Sprintf(`{"filter":{"id":"r%d"},"consistency":"%s"}`, i%1000, consistency)), 200)
		}
	}
	loads := []load{
		{"insert/single", []*benchNode{single}, insert},
		{"insert/cluster", nodes, insert},
		{"get/single", []*benchNode{single}, get("")},
		{"get/cluster", nodes, get("")},
		{"get/cluster-eventual", nodes, get("?consistency=eventual")},
		{"query-by-id/single", []*benchNode{single}, queryByID("strong")},
		{"query-by-id/cluster-strong", nodes, queryByID("strong")},
		{"query-by-id/cluster-eventual", nodes, queryByID("eventual")},
	}
	for _, clients := range []int{16, 64} {
		for _, l := range loads {
			b.Run(fmt.Sprintf("%s/c%d", l.name, clients), func(b *testing.B) {
				b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				var worker atomic.Int64
				start, cpu := time.Now(), proccpu.Process()
				b.RunParallel(func(pb *testing.PB) {
					n := l.targets[int(worker.Add(1))%len(l.targets)]
					for pb.Next() {
						l.op(b, n, seq.Add(1))
					}
				})
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
				b.ReportMetric(float64((proccpu.Process()-cpu).Microseconds())/float64(b.N), "cpu-µs/req")
			})
		}
	}
}
