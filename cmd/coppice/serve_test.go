package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/api"
	"github.com/coppice-db/coppice/engine"
)

// TestServe runs serve in process: a first start bootstraps with the key
// COPPICE_BOOTSTRAP_KEY holds, which then works, and prints the account
// but not the key, which the operator has; a second start on the same
// directory bootstraps nothing.
func TestServe(t *testing.T) {
	const key = "cpk_serve_test_0123456789abcdef"
	cfg := serveConfig{Addr: "127.0.0.1:0", DataDir: t.TempDir(), BootstrapKey: key,
		API: api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, &out, func(a net.Addr) { addrc <- a }) }()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	req, _ := http.NewRequest("GET", "http://"+addr.String()+"/workspaces/x/regions", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 { // the key works; the workspace does not exist
		t.Errorf("status %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if strings.Contains(out.String(), key) || !strings.Contains(out.String(), api.BootstrapEmail) ||
		!strings.Contains(out.String(), "COPPICE_BOOTSTRAP_KEY") {
		t.Errorf("bootstrap output: %s", out.String())
	}

	out.Reset()
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- serve(ctx, cfg, &out, func(net.Addr) { cancel() }) }()
	if err := <-done; err != nil {
		t.Fatalf("second serve: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("second start printed %q", out.String())
	}
}

// TestServeGeneratedKey: without COPPICE_BOOTSTRAP_KEY, a first start
// generates the key and prints it, once; it works.
func TestServeGeneratedKey(t *testing.T) {
	cfg := serveConfig{Addr: "127.0.0.1:0", DataDir: t.TempDir(),
		API: api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, &out, func(a net.Addr) { addrc <- a }) }()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	key := ""
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "  API key    "); ok {
			key = rest
		}
	}
	if len(key) < api.MinBootstrapKeyLen {
		t.Fatalf("no generated key in the output: %s", out.String())
	}
	req, _ := http.NewRequest("GET", "http://"+addr.String()+"/workspaces/x/regions", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 { // the key works; the workspace does not exist
		t.Errorf("status %d with the printed key", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// TestServeShortBootstrapKey: a first start refuses a bootstrap key
// shorter than 16 characters and creates nothing, so that the next start
// is still a first start.
func TestServeShortBootstrapKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := serveConfig{Addr: "127.0.0.1:0", DataDir: dir, BootstrapKey: "short",
		API: api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	err := serve(context.Background(), cfg, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "COPPICE_BOOTSTRAP_KEY must have at least 16 characters, it has 5") {
		t.Fatalf("short key: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the data directory was created: %v", err)
	}
}

// TestServeDataDirMode: the data directory is created readable by its
// owner only, and the server works with it.
func TestServeDataDirMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := serveConfig{Addr: "127.0.0.1:0", DataDir: dir, BootstrapKey: "cpk_mode_test_0123456789",
		API: api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, io.Discard, func(a net.Addr) { ready <- a }) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("data directory mode %v, want 0700", perm)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// serveInProcess runs serve on cfg until stop, which fails the
// test if serve did, or the end of the test. It returns the listen
// address and what serve printed before it listened.
func serveInProcess(t *testing.T, cfg serveConfig) (addr string, out *bytes.Buffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &bytes.Buffer{}
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, out, func(a net.Addr) { ready <- a }) }()
	select {
	case a := <-ready:
		addr = a.String()
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
	t.Cleanup(stop)
	return addr, out, stop
}

// userOf answers GET /user on addr with key: the status and the user's
// email. A node of a cluster answers 503 until its groups have a leader,
// which on a loaded machine can take longer than the cluster's MaxWait:
// the request is sent again then, for up to 30 s.
func userOf(t *testing.T, addr, key string) (int, string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest("GET", "http://"+addr+"/user", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var u struct{ Email string }
		json.NewDecoder(resp.Body).Decode(&u)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return resp.StatusCode, u.Email
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeBootstrapAfterCrash: a data directory left by a crash between
// opening the engine and bootstrapping (storage files, no account) is
// still a first start. A short bootstrap key is refused there, creating
// nothing; with a good key serve bootstraps, prints the banner, and the
// key works. The next start bootstraps nothing and ignores the key.
func TestServeBootstrapAfterCrash(t *testing.T) {
	const key = "cpk_crash_test_0123456789abcdef"
	dir := t.TempDir()
	eng, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	if fresh, err := isNewDataDir(dir); err != nil || fresh {
		t.Fatalf("the engine left no file in the data directory: %v", err)
	}
	quiet := api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}

	cfg := serveConfig{Addr: "127.0.0.1:0", DataDir: dir, BootstrapKey: "short", API: quiet}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = serve(ctx, cfg, io.Discard, func(net.Addr) { cancel() }) // a start that serves stops at once
	if err == nil || !strings.Contains(err.Error(), "COPPICE_BOOTSTRAP_KEY must have at least 16 characters, it has 5") {
		t.Fatalf("short key: %v", err)
	}

	cfg.BootstrapKey = key
	addr, out, stop := serveInProcess(t, cfg)
	if !strings.Contains(out.String(), "first start") || !strings.Contains(out.String(), api.BootstrapEmail) {
		t.Errorf("bootstrap output: %q", out.String())
	}
	if status, email := userOf(t, addr, key); status != 200 || email != api.BootstrapEmail {
		t.Errorf("GET /user with the bootstrap key: %d %q", status, email)
	}
	stop()

	// A bootstrapped directory: no bootstrap, and a key it would refuse
	// does not matter.
	cfg.BootstrapKey = "short"
	restartsQuietly(t, cfg, key, "a restart")
}

// restartsQuietly serves cfg again and checks that it prints nothing (no
// second bootstrap) and that key still signs in.
func restartsQuietly(t *testing.T, cfg serveConfig, key, what string) {
	t.Helper()
	addr, out, stop := serveInProcess(t, cfg)
	defer stop()
	if out.Len() != 0 {
		t.Errorf("%s printed %q", what, out.String())
	}
	if status, email := userOf(t, addr, key); status != 200 || email != api.BootstrapEmail {
		t.Errorf("GET /user with the bootstrap key after %s: %d %q", what, status, email)
	}
}

// TestServeClusterBootstrapAfterCrash: node 1 of a new cluster restarted
// after a crash before its bootstrap bootstraps then; a node the cluster
// has not added yet, with an empty catalog too, never does; node 1
// restarted after its bootstrap does not again.
func TestServeClusterBootstrapAfterCrash(t *testing.T) {
	const key = "cpk_cluster_crash_0123456789abcdef"
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	network := engine.NewClusterNetwork()
	node := func(id uint64) serveConfig {
		return serveConfig{Addr: "127.0.0.1:0", DataDir: t.TempDir(), BootstrapKey: key, API: api.Options{Logger: quiet},
			Cluster: &engine.ClusterOptions{NodeID: id, RaftAddr: fmt.Sprintf("node%d", id), Join: []string{"node1"},
				Network: network, Tick: 10 * time.Millisecond, HeartbeatTicks: 2, ElectionTicks: 20, MaxWait: time.Second}}
	}
	n1 := node(1)
	eng, err := engine.Open(n1.DataDir, engine.Options{Logger: quiet, Cluster: n1.Cluster})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}

	addr, out, stop := serveInProcess(t, n1)
	if !strings.Contains(out.String(), "first start") || !strings.Contains(out.String(), api.BootstrapEmail) {
		t.Errorf("node 1's bootstrap output: %q", out.String())
	}
	if status, email := userOf(t, addr, key); status != 200 || email != api.BootstrapEmail {
		t.Errorf("GET /user with the bootstrap key: %d %q", status, email)
	}

	_, out2, stop2 := serveInProcess(t, node(2))
	if out2.Len() != 0 {
		t.Errorf("a node waiting to be added printed %q", out2.String())
	}
	stop2()
	stop()
	restartsQuietly(t, n1, key, "node 1's restart")
}
