package api

import (
	"strings"
	"testing"

	"github.com/coppice-db/coppice/engine"
)

// TestScopedKeyCannotActOnAccount: a key scoped to a workspace may not
// delete or change the user, revoke the user's other keys, create
// workspaces or use the administration endpoints, even when the user is
// the administrator; it may revoke itself. Its errors name no workspace
// outside its scope.
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
	r := ts.call(scoped, 403, "PUT", "/user", map[string]any{"email": "x@example.com", "fullname": "X", "image": ""})
	if msg := errMessage(r); !strings.Contains(msg, "change the account") {
		t.Errorf("PUT /user: %s", msg)
	}
	// Nothing happened: the user, its keys and its workspaces are there,
	// and the user is as it was.
	if r := ts.call(admin, 200, "GET", "/user", nil); r.obj()["email"] == "x@example.com" {
		t.Errorf("a scoped key changed the account: %s", r.raw)
	}
	r = ts.call(admin, 200, "GET", "/user/keys", nil)
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

// TestBootstrapKeyLength: Bootstrap refuses a key shorter than 16
// characters. (cmd/coppice checks that a first start with one creates
// nothing.)
func TestBootstrapKeyLength(t *testing.T) {
	if _, err := Bootstrap(nil, "fifteen-chars!!"); err == nil {
		t.Error("Bootstrap took a 15-character key")
	}
}

// TestBootstrappedWith: the key of a bootstrap finds the accounts it
// created; any other key, or a key that is not the bootstrap key, does not.
func TestBootstrappedWith(t *testing.T) {
	eng, err := engine.Open(t.TempDir(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	key := engine.NewKeySecret()
	if _, ok := BootstrappedWith(eng, key); ok {
		t.Fatal("found accounts before any bootstrap")
	}
	want, err := Bootstrap(eng, key)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := BootstrappedWith(eng, key)
	if !ok {
		t.Fatal("the bootstrap key does not find its accounts")
	}
	want.KeyGiven = false
	if *got != *want {
		t.Errorf("found %+v, created %+v", *got, *want)
	}
	if _, ok := BootstrappedWith(eng, engine.NewKeySecret()); ok {
		t.Error("another key found the bootstrap accounts")
	}
	other, err := eng.Accounts().CreateAPIKey(want.UserID, "other", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := BootstrappedWith(eng, other.Secret); ok {
		t.Error("a key that is not the bootstrap key found the bootstrap accounts")
	}
}
