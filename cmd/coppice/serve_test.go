package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coppice-db/coppice/api"
)

// TestServe runs serve in process: a first start bootstraps and prints the
// key, which then works; a second start on the same directory bootstraps
// nothing.
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
	if !strings.Contains(out.String(), key) || !strings.Contains(out.String(), api.BootstrapEmail) {
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
