package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/coppice-db/coppice/engine"
)

// TestClusterFlags reads the cluster's flags of serve: none is a single
// server, a node needs all three, and an API address on every interface
// is advertised with the raft address's host.
func TestClusterFlags(t *testing.T) {
	none := map[string]string{}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cfg, err := serveOptions(nil, env(none), nil)
	if err != nil || cfg.Cluster != nil {
		t.Fatalf("no cluster flags: %+v %v", cfg.Cluster, err)
	}
	args := []string{"--addr", "0.0.0.0:8081", "--node-id", "2", "--raft-addr", "10.0.0.2:7001", "--join", "10.0.0.1:7001,10.0.0.2:7001"}
	cfg, err = serveOptions(args, env(none), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := engine.ClusterOptions{NodeID: 2, RaftAddr: "10.0.0.2:7001", APIAddr: "10.0.0.2:8081",
		Join: []string{"10.0.0.1:7001", "10.0.0.2:7001"}, Replicas: 3, MaxWait: cfg.Cluster.MaxWait}
	if c := cfg.Cluster; c.NodeID != want.NodeID || c.RaftAddr != want.RaftAddr || c.APIAddr != want.APIAddr ||
		len(c.Join) != 2 || c.Replicas != 3 || c.MaxWait.Seconds() != 5 {
		t.Errorf("cluster options %+v, want %+v", *c, want)
	}
	if !isFounder(cfg.Cluster) {
		t.Error("node 2 at the list's second address is a founder")
	}
	cfg, err = serveOptions(nil, env(map[string]string{"COPPICE_NODE_ID": "4", "COPPICE_RAFT_ADDR": "127.0.0.1:7004",
		"COPPICE_JOIN": "127.0.0.1:7001", "COPPICE_CLUSTER_WAIT": "2s"}), nil)
	if err != nil || cfg.Cluster.APIAddr != "127.0.0.1:8080" || cfg.Cluster.MaxWait.Seconds() != 2 || isFounder(cfg.Cluster) {
		t.Errorf("from the environment: %+v %v", cfg.Cluster, err)
	}
	for _, bad := range [][]string{
		{"--raft-addr", "127.0.0.1:7001"},
		{"--node-id", "0", "--raft-addr", "127.0.0.1:7001", "--join", "127.0.0.1:7001"},
		{"--node-id", "1", "--raft-addr", "nope", "--join", "127.0.0.1:7001"},
		{"--node-id", "1", "--raft-addr", "127.0.0.1:7001"},
		{"--node-id", "1", "--raft-addr", "127.0.0.1:7001", "--join", "127.0.0.1:7001", "--replicas", "0"},
	} {
		if _, err := serveOptions(bad, env(none), nil); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}

// TestClusterCommand checks coppice cluster's arguments, and digest on a
// data directory no server holds.
func TestClusterCommand(t *testing.T) {
	run := func(args ...string) (int, string) {
		var out, errs strings.Builder
		code := runCluster(args, func(string) string { return "" }, &out, &errs)
		return code, out.String() + errs.String()
	}
	if code, _ := run(); code != 2 {
		t.Errorf("no command: %d", code)
	}
	if code, msg := run("frobnicate"); code != 2 || !strings.Contains(msg, "unknown command") {
		t.Errorf("unknown command: %d %s", code, msg)
	}
	if code, msg := run("add-node", "--id", "4"); code != 1 || !strings.Contains(msg, "--raft-addr") {
		t.Errorf("add-node without --raft-addr: %d %s", code, msg)
	}
	if code, msg := run("status"); code != 1 || !strings.Contains(msg, "COPPICE_API_KEY") {
		t.Errorf("status without a key: %d %s", code, msg)
	}
	if code, msg := run("status", "extra"); code != 2 || !strings.Contains(msg, "takes no argument") {
		t.Errorf("status with an argument: %d %s", code, msg)
	}
	dir := t.TempDir()
	eng, err := engine.Open(dir, engine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.CreateDatabase(engine.CreateDatabaseRequest{Name: "shop", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	eng.Close()
	code, out := run("digest", "--data", dir)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "(catalog) ") || !strings.HasPrefix(lines[1], "/shop ") {
		t.Errorf("digest: %d %q", code, out)
	}
	if again, out2 := run("digest", "--data", dir); again != 0 || out2 != out {
		t.Errorf("a second digest of the same directory: %q, then %q", out, out2)
	}
}

// TestClusterCommandArgs checks that coppice cluster reads its flags before
// and after a command's argument, against a node's API on loopback that
// records what it is asked.
func TestClusterCommandArgs(t *testing.T) {
	var (
		mu    sync.Mutex
		asked []string
	)
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Method == "GET" {
			w.Write([]byte(`{"node":1,"nodes":[],"groups":[]}`))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer node.Close()
	getenv := func(k string) string {
		if k == "COPPICE_API_KEY" {
			return "cpk_test"
		}
		return ""
	}
	f := func(args []string, wantCode int, want string) {
		t.Helper()
		mu.Lock()
		asked = nil
		mu.Unlock()
		var out, errs strings.Builder
		code := runCluster(args, getenv, &out, &errs)
		mu.Lock()
		got := strings.Join(asked, "; ")
		mu.Unlock()
		if code != wantCode || got != want {
			t.Errorf("%q: exit %d, asked %q (%s%s); want exit %d, asked %q", args, code, got, out.String(), errs.String(), wantCode, want)
		}
	}
	remove3 := "DELETE /admin/cluster/nodes/3 Bearer cpk_test"
	f([]string{"remove-node", "3", "--url", node.URL}, 0, remove3)
	f([]string{"remove-node", "--url", node.URL, "3"}, 0, remove3)
	f([]string{"remove-node", "--url=" + node.URL, "--", "3"}, 0, remove3)
	f([]string{"remove-node", "--url", node.URL}, 1, "")
	f([]string{"remove-node", "3", "4", "--url", node.URL}, 1, "")
	f([]string{"remove-node", "three", "--url", node.URL}, 1, "")
	f([]string{"remove-node", "3", "--url"}, 2, "")
	f([]string{"add-node", "--id", "4", "--url", node.URL, "--raft-addr", "127.0.0.1:7084"}, 0, "POST /admin/cluster/nodes Bearer cpk_test")
	f([]string{"status", "--url", node.URL, "--json"}, 0, "GET /admin/cluster Bearer cpk_test")
	f([]string{"status", "now", "--url", node.URL}, 2, "")
}
