package api

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScopedKeyCannotActOnAccount: a key scoped to a workspace may not
// delete the user, revoke the user's other keys, create workspaces or use
// the administration endpoints, even when the user is the administrator;
// it may revoke itself. Its errors name no workspace outside its scope.
func TestScopedKeyCannotActOnAccount(t *testing.T) {
	ts := startServer(t, Options{})
	admin := ts.admin()
	home := ts.info.WorkspaceID
	two := ts.newWorkspace(admin, "two")
	scoped := cpUser{id: admin.id, key: str(ts.call(admin, 201, "POST", "/user/keys/scoped", map[string]any{"workspaceID": two}).obj()["key"])}
	ts.call(admin, 201, "POST", "/user/keys/other", nil)

	for _, c := range []struct{ method, path, what string }{
		{"DELETE", "/user", "delete the account"},
		{"DELETE", "/user/keys/other", "revoke other API keys"},
		{"DELETE", "/user/keys/bootstrap", "revoke other API keys"},
		{"POST", "/workspaces", "create workspaces"},
		{"POST", "/admin/users", "administer the server"},
	} {
		r := ts.call(scoped, 403, c.method, c.path, map[string]any{"name": "three", "email": "x@example.com"})
		if msg := errMessage(r); !strings.Contains(msg, c.what) || strings.Contains(msg, coreOf(home)) {
			t.Errorf("%s %s: %s", c.method, c.path, msg)
		}
	}
	// Nothing happened: the user, its keys and its workspaces are there.
	r := ts.call(admin, 200, "GET", "/user/keys", nil)
	if n := len(r.obj()["keys"].([]any)); n != 3 {
		t.Errorf("keys: %s", r.raw)
	}
	if r := ts.call(admin, 200, "GET", "/workspaces", nil); len(r.obj()["workspaces"].([]any)) != 2 {
		t.Errorf("workspaces: %s", r.raw)
	}
	// Reads of the account and new keys of its own scope stay allowed.
	ts.call(scoped, 200, "GET", "/user", nil)
	child := str(ts.call(scoped, 201, "POST", "/user/keys/child", nil).obj()["key"])
	// A scoped key revokes itself.
	ts.call(cpUser{key: child}, 204, "DELETE", "/user/keys/child", nil)
	ts.call(scoped, 204, "DELETE", "/user/keys/scoped", nil)
	ts.call(scoped, 401, "GET", "/user", nil)
	// The unscoped key keeps every right; the last-owner message lists
	// the workspaces of that key's reach.
	r = ts.call(admin, 400, "DELETE", "/user", nil)
	if msg := errMessage(r); !strings.Contains(msg, home) || !strings.Contains(msg, two) {
		t.Errorf("last owner: %s", msg)
	}
}

// TestBootstrapKeyLength: a first start refuses a bootstrap key shorter
// than 16 characters and creates nothing, so that the next start is still
// a first start.
func TestBootstrapKeyLength(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	err := Run(context.Background(), Options{Addr: "127.0.0.1:0", DataDir: dir, BootstrapKey: "short", Logger: log}, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "COPPICE_BOOTSTRAP_KEY must have at least 16 characters, it has 5") {
		t.Fatalf("short key: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the data directory was created: %v", err)
	}
	if _, err := Bootstrap(nil, "fifteen-chars!!"); err == nil {
		t.Error("Bootstrap took a 15-character key")
	}
}

// TestDataDirMode: the data directory is created readable by its owner
// only, and the server works with it.
func TestDataDirMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Addr: "127.0.0.1:0", DataDir: dir, BootstrapKey: testKey, Logger: log},
			io.Discard, func(a net.Addr) { ready <- a })
	}()
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
