package api

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The role matrix of README.md "Roles" is tested row by row; each test names
// the rows it covers.

// cpUser is a user of the control-plane tests and the key it calls with.
type cpUser struct {
	id, email, key string
}

// admin returns the bootstrap administrator.
func (ts *testServer) admin() cpUser {
	return cpUser{id: ts.info.UserID, email: ts.info.Email, key: testKey}
}

// newUser has the administrator create a user with a first API key.
func (ts *testServer) newUser(email string) cpUser {
	ts.t.Helper()
	r := ts.call(ts.admin(), 201, "POST", "/admin/users", map[string]any{"email": email, "fullname": strings.Split(email, "@")[0]})
	u, _ := r.obj()["user"].(map[string]any)
	return cpUser{id: str(u["id"]), email: email, key: str(r.obj()["key"])}
}

// call sends a control-plane request (path below the server root) as u and
// fails the test unless the status is want.
func (ts *testServer) call(u cpUser, want int, method, path string, body any) *response {
	ts.t.Helper()
	return ts.expect(want, method, ts.url+path, body, withKey(u.key))
}

// newWorkspace creates a workspace owned by u and returns its public id.
func (ts *testServer) newWorkspace(u cpUser, name string) string {
	ts.t.Helper()
	return str(ts.call(u, 201, "POST", "/workspaces", map[string]any{"name": name}).obj()["id"])
}

// join has owner invite u into ws with role, and u accept.
func (ts *testServer) join(owner, u cpUser, ws, role string) {
	ts.t.Helper()
	r := ts.call(owner, 201, "POST", "/workspaces/"+ws+"/invites", map[string]any{"email": u.email, "role": role})
	ts.call(u, 204, "POST", "/workspaces/"+ws+"/invites/"+str(r.obj()["inviteKey"])+"/accept", nil)
}

// str returns a JSON string value, or its printed form.
func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// errMessage returns the message of an error response.
func errMessage(r *response) string { return str(r.obj()["message"]) }

// coreOf returns the 6-character core of a public workspace id.
func coreOf(id string) string { return id[strings.LastIndexByte(id, '-')+1:] }

// Rows: "Own user and API keys".
func TestUserEndpoints(t *testing.T) {
	ts := startServer(t, Options{})
	admin := ts.admin()

	r := ts.call(admin, 200, "GET", "/user", nil)
	jsonEq(t, "get user", r.body, fmt.Sprintf(`{"id":%q,"email":"admin@localhost","fullname":"Administrator","image":""}`, admin.id))

	// PUT needs all three fields.
	f := func(body any) {
		t.Helper()
		ts.call(admin, 400, "PUT", "/user", body)
	}
	f(map[string]any{})
	f("")
	f(map[string]any{"email": "a@example.com", "fullname": "A"})
	f(map[string]any{"email": "a@example.com", "image": "i"})
	f(map[string]any{"fullname": "A", "image": "i"})
	f(map[string]any{"email": "not an email", "fullname": "A", "image": "i"})
	f(map[string]any{"email": "a@example.com", "fullname": "A", "image": "i", "extra": 1})
	f(map[string]any{"email": 5, "fullname": "A", "image": "i"})

	r = ts.call(admin, 200, "PUT", "/user", map[string]any{"email": "root@example.com", "fullname": "Root", "image": "https://img/r.png"})
	jsonEq(t, "updated user", r.body, fmt.Sprintf(`{"id":%q,"email":"root@example.com","fullname":"Root","image":"https://img/r.png"}`, admin.id))
	r = ts.call(admin, 200, "GET", "/user", nil)
	if r.obj()["email"] != "root@example.com" || r.obj()["fullname"] != "Root" {
		t.Errorf("after update: %s", r.raw)
	}
	// Empty fullname and image are values, not absences.
	ts.call(admin, 200, "PUT", "/user", map[string]any{"email": "root@example.com", "fullname": "", "image": ""})

	// Another user's email is taken.
	b := ts.newUser("b@example.com")
	ts.call(b, 400, "PUT", "/user", map[string]any{"email": "ROOT@example.com", "fullname": "", "image": ""})

	// Deleting the user revokes every key at once, the calling one included.
	second := str(ts.call(b, 201, "POST", "/user/keys/second", nil).obj()["key"])
	ts.call(b, 204, "DELETE", "/user", nil)
	for _, k := range []string{b.key, second} {
		r := ts.call(cpUser{key: k}, 401, "GET", "/user", nil)
		if errMessage(r) != "invalid API key" {
			t.Errorf("deleted user's key: %s", r.raw)
		}
	}
	// The email is free again.
	ts.newUser("b@example.com")
}

// Rows: "Own user and API keys".
func TestAPIKeys(t *testing.T) {
	ts := startServer(t, Options{})
	b := ts.newUser("b@example.com")

	r := ts.call(b, 200, "GET", "/user/keys", nil)
	list := r.obj()["keys"].([]any)
	if len(list) != 1 || keys(list[0]) != "createdAt,name" || list[0].(map[string]any)["name"] != "default" {
		t.Fatalf("keys of a new user: %s", r.raw)
	}

	before := time.Now().Add(-time.Second)
	r = ts.call(b, 201, "POST", "/user/keys/ci-key_1~", nil)
	if keys(r.body) != "createdAt,key,name" || r.obj()["name"] != "ci-key_1~" {
		t.Fatalf("create key: %s", r.raw)
	}
	created, err := time.Parse(time.RFC3339, str(r.obj()["createdAt"]))
	if err != nil || created.Before(before) || created.After(time.Now().Add(time.Second)) {
		t.Errorf("createdAt %v (%v)", r.obj()["createdAt"], err)
	}
	ci := cpUser{id: b.id, key: str(r.obj()["key"])}
	if ts.call(ci, 200, "GET", "/user", nil).obj()["id"] != b.id {
		t.Error("the new key is not b's")
	}
	r = ts.call(b, 200, "GET", "/user/keys", nil)
	if strings.Contains(string(r.raw), ci.key) || len(r.obj()["keys"].([]any)) != 2 {
		t.Errorf("list after create: %s", r.raw)
	}
	// An empty body and {} are the same; null scopes nothing.
	ts.call(b, 201, "POST", "/user/keys/k2", map[string]any{})
	ts.call(b, 201, "POST", "/user/keys/k3", map[string]any{"workspaceID": nil})

	// Bad names, duplicates, unknown keys.
	ts.call(b, 400, "POST", "/user/keys/", nil)
	ts.call(b, 400, "POST", "/user/keys/bad%20name", nil)
	ts.call(b, 400, "POST", "/user/keys/"+strings.Repeat("k", 256), nil)
	ts.call(b, 400, "POST", "/user/keys/k4", map[string]any{"other": 1})
	ts.call(b, 409, "POST", "/user/keys/ci-key_1~", nil)
	ts.call(b, 404, "DELETE", "/user/keys/nope", nil)

	// A deleted key stops working at once; the other keys do not.
	ts.call(b, 204, "DELETE", "/user/keys/ci-key_1~", nil)
	if errMessage(ts.call(ci, 401, "GET", "/user/keys", nil)) != "invalid API key" {
		t.Error("deleted key message")
	}
	ts.call(b, 200, "GET", "/user", nil)
	// A key may delete itself.
	k2 := str(ts.call(b, 201, "POST", "/user/keys/self", nil).obj()["key"])
	ts.call(cpUser{key: k2}, 204, "DELETE", "/user/keys/self", nil)
	ts.call(cpUser{key: k2}, 401, "GET", "/user", nil)
	// Names are per user.
	ts.call(ts.admin(), 201, "POST", "/user/keys/default", nil)
}

// Rows: "Own user and API keys" (scoped keys), "Data plane", "Get workspace".
func TestScopedAPIKeys(t *testing.T) {
	ts := startServer(t, Options{})
	admin := ts.admin()
	home := ts.info.WorkspaceID
	two := ts.newWorkspace(admin, "two")
	ts.call(admin, 201, "PUT", "/workspaces/"+two+"/dbs/db", map[string]any{"region": "local"})

	// The scope may be given as the public id or the bare core.
	r := ts.call(admin, 201, "POST", "/user/keys/scoped", map[string]any{"workspaceID": coreOf(two)})
	scoped := cpUser{id: admin.id, key: str(r.obj()["key"])}
	ts.call(admin, 201, "POST", "/user/keys/scoped2", map[string]any{"workspaceID": two})

	// It lists and reaches only its workspace.
	r = ts.call(scoped, 200, "GET", "/workspaces", nil)
	if ws := r.obj()["workspaces"].([]any); len(ws) != 1 || ws[0].(map[string]any)["id"] != two {
		t.Errorf("scoped list: %s", r.raw)
	}
	ts.call(scoped, 200, "GET", "/workspaces/"+two, nil)
	ts.call(scoped, 403, "GET", "/workspaces/"+home, nil)
	ts.call(scoped, 403, "GET", "/workspaces/"+home+"/members", nil)
	ts.call(scoped, 401, "GET", "/workspaces/"+home+"/dbs", nil)
	// The plain data-plane form resolves to the scope.
	ts.call(scoped, 200, "GET", "/dbs/db", nil)

	// Keys it creates keep its scope; it cannot widen or move it.
	child := cpUser{key: str(ts.call(scoped, 201, "POST", "/user/keys/child", nil).obj()["key"])}
	ts.call(child, 403, "GET", "/workspaces/"+home, nil)
	ts.call(child, 200, "GET", "/dbs/db", nil)
	ts.call(scoped, 403, "POST", "/user/keys/widen", map[string]any{"workspaceID": home})

	// Only a workspace the user belongs to can be a scope.
	b := ts.newUser("b@example.com")
	ts.call(b, 403, "POST", "/user/keys/x", map[string]any{"workspaceID": two})
	ts.call(b, 403, "POST", "/user/keys/x", map[string]any{"workspaceID": "zzzzzz"})
	ts.call(b, 403, "POST", "/user/keys/x", map[string]any{"workspaceID": "not a workspace"})
	ts.call(b, 404, "DELETE", "/user/keys/x", nil)
}

// Rows: "Create users (administration)".
func TestAdminCreateUser(t *testing.T) {
	ts := startServer(t, Options{})
	admin := ts.admin()

	r := ts.call(admin, 201, "POST", "/admin/users", map[string]any{"email": "b@example.com", "fullname": "Bea", "image": "i"})
	if keys(r.body) != "key,user" || keys(r.obj()["user"]) != "email,fullname,id,image" {
		t.Fatalf("create user: %s", r.raw)
	}
	b := cpUser{id: str(r.obj()["user"].(map[string]any)["id"]), email: "b@example.com", key: str(r.obj()["key"])}
	jsonEq(t, "b", ts.call(b, 200, "GET", "/user", nil).body, fmt.Sprintf(`{"id":%q,"email":"b@example.com","fullname":"Bea","image":"i"}`, b.id))
	jsonEq(t, "b's workspaces", ts.call(b, 200, "GET", "/workspaces", nil).body, `{"workspaces":[]}`)
	jsonEq(t, "b's keys", len(ts.call(b, 200, "GET", "/user/keys", nil).obj()["keys"].([]any)), `1`)
	// Only the email is required.
	ts.call(admin, 201, "POST", "/admin/users", map[string]any{"email": "c@example.com"})

	ts.call(admin, 409, "POST", "/admin/users", map[string]any{"email": "B@example.com"})
	ts.call(admin, 400, "POST", "/admin/users", map[string]any{"email": "nope"})
	ts.call(admin, 400, "POST", "/admin/users", map[string]any{})
	ts.call(admin, 400, "POST", "/admin/users", nil)
	ts.call(admin, 400, "POST", "/admin/users", map[string]any{"email": "d@example.com", "workspaceID": ts.info.WorkspaceID})
	ts.call(admin, 400, "POST", "/admin/users", map[string]any{"email": "d@example.com", "admin": true})

	// Owners and maintainers who are not the administrator may not.
	ts.join(admin, b, ts.info.WorkspaceID, "owner")
	ts.call(b, 403, "POST", "/admin/users", map[string]any{"email": "e@example.com"})
	c := ts.newUser("m@example.com")
	ts.join(admin, c, ts.info.WorkspaceID, "maintainer")
	ts.call(c, 403, "POST", "/admin/users", map[string]any{"email": "e@example.com"})
	ts.call(cpUser{key: "bad"}, 401, "POST", "/admin/users", map[string]any{"email": "e@example.com"})
	// The administrator role is not inherited by created users.
	ts.call(b, 403, "POST", "/admin/users", map[string]any{"email": "f@example.com"})
}

// Rows: "List and create workspaces", "Get workspace, list members",
// "Update or delete workspace" (owner).
func TestWorkspaceEndpoints(t *testing.T) {
	ts := startServer(t, Options{})
	admin := ts.admin()

	r := ts.call(admin, 201, "POST", "/workspaces", map[string]any{"name": "Acme Corp!"})
	id := str(r.obj()["id"])
	core := coreOf(id)
	jsonEq(t, "created", r.body, fmt.Sprintf(`{"id":"Acme-Corp--%s","name":"Acme Corp!","slug":"Acme-Corp-","memberCount":1,"plan":"free"}`, core))
	// A slug-safe name is its own slug; an explicit slug wins.
	if r := ts.call(admin, 201, "POST", "/workspaces", map[string]any{"name": "my_ws-1~"}); r.obj()["slug"] != "my_ws-1~" {
		t.Errorf("slug-safe name: %s", r.raw)
	}
	if r := ts.call(admin, 201, "POST", "/workspaces", map[string]any{"name": "Named", "slug": "short"}); r.obj()["slug"] != "short" || !strings.HasPrefix(str(r.obj()["id"]), "short-") {
		t.Errorf("explicit slug: %s", r.raw)
	}
	for _, body := range []any{map[string]any{}, map[string]any{"slug": "s"}, map[string]any{"name": ""}, map[string]any{"name": "  "},
		map[string]any{"name": "x", "slug": "bad slug"}, map[string]any{"name": 3}, nil} {
		ts.call(admin, 400, "POST", "/workspaces", body)
	}

	// The list carries the caller's role.
	r = ts.call(admin, 200, "GET", "/workspaces", nil)
	list := r.obj()["workspaces"].([]any)
	if len(list) != 4 {
		t.Fatalf("list: %s", r.raw)
	}
	for _, w := range list {
		if keys(w) != "id,name,plan,role,slug" || w.(map[string]any)["role"] != "owner" {
			t.Errorf("list entry %v", w)
		}
	}

	// Get by public id, bare core, or any prefix.
	for _, label := range []string{id, core, strings.ToUpper(core), "whatever-" + core} {
		jsonEq(t, "get "+label, ts.call(admin, 200, "GET", "/workspaces/"+url.PathEscape(label), nil).body,
			fmt.Sprintf(`{"id":%q,"name":"Acme Corp!","slug":"Acme-Corp-","memberCount":1,"plan":"free"}`, id))
	}

	// Update: name required, the core stays, the id follows the slug.
	for _, body := range []any{map[string]any{}, map[string]any{"slug": "only-slug"}, map[string]any{"name": "x", "slug": "a/b"}, nil} {
		ts.call(admin, 400, "PUT", "/workspaces/"+id, body)
	}
	r = ts.call(admin, 200, "PUT", "/workspaces/"+core, map[string]any{"name": "Renamed"})
	jsonEq(t, "renamed", r.body, fmt.Sprintf(`{"id":"Renamed-%s","name":"Renamed","slug":"Renamed","memberCount":1,"plan":"free"}`, core))
	r = ts.call(admin, 200, "PUT", "/workspaces/"+id, map[string]any{"name": "Renamed", "slug": "rn"})
	if r.obj()["id"] != "rn-"+core {
		t.Errorf("update with slug: %s", r.raw)
	}
	// The old public id still names the workspace: only the core counts.
	ts.call(admin, 200, "GET", "/workspaces/"+id, nil)

	// Delete cascades to the databases.
	ts.call(admin, 201, "PUT", "/workspaces/"+core+"/dbs/db", map[string]any{"region": "local"})
	ts.call(admin, 204, "DELETE", "/workspaces/"+core, nil)
	ts.call(admin, 403, "GET", "/workspaces/"+core, nil)
	ts.call(admin, 403, "DELETE", "/workspaces/"+core, nil)
	ts.call(admin, 401, "GET", "/workspaces/"+core+"/dbs", nil)
	ts.call(admin, 401, "GET", "/ws/"+core+"/dbs/db", nil)
	if n := len(ts.call(admin, 200, "GET", "/workspaces", nil).obj()["workspaces"].([]any)); n != 3 {
		t.Errorf("%d workspaces after delete", n)
	}
}

// Rows: "Invites" and "Members" (owner), "Accept an invite", "Remove
// yourself" (maintainer).
func TestInviteLifecycle(t *testing.T) {
	ts := startServer(t, Options{})
	a := ts.admin()
	ws := ts.info.WorkspaceID
	b := ts.newUser("b@example.com")
	c := ts.newUser("c@example.com")
	inv := "/workspaces/" + ws + "/invites"

	// A invites B as maintainer; the key is shown once.
	before := time.Now()
	r := ts.call(a, 201, "POST", inv, map[string]any{"email": "b@example.com", "role": "maintainer"})
	if keys(r.body) != "email,expires,inviteId,inviteKey,role" || r.obj()["role"] != "maintainer" || r.obj()["email"] != "b@example.com" {
		t.Fatalf("create invite: %s", r.raw)
	}
	inviteID, inviteKey, expires := str(r.obj()["inviteId"]), str(r.obj()["inviteKey"]), str(r.obj()["expires"])
	if !strings.HasPrefix(inviteKey, "ik_") || inviteKey == inviteID || strings.Trim(inviteID, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
		t.Errorf("invite id %q key %q", inviteID, inviteKey)
	}
	exp, err := time.Parse(time.RFC3339, expires)
	if err != nil || exp.Sub(before) < 7*24*time.Hour-time.Minute || exp.Sub(before) > 7*24*time.Hour+time.Minute {
		t.Errorf("expires %q (%v)", expires, err)
	}

	// Pending invites are listed, without their key.
	r = ts.call(a, 200, "GET", "/workspaces/"+ws+"/members", nil)
	jsonEq(t, "members", r.body, fmt.Sprintf(`{"members":[{"userId":%q,"fullname":"Administrator","email":"admin@localhost","role":"owner"}],
		"invites":[{"inviteId":%q,"email":"b@example.com","expires":%q,"role":"maintainer"}]}`, a.id, inviteID, expires))

	// Bad invites.
	ts.call(a, 409, "POST", inv, map[string]any{"email": "B@example.com", "role": "owner"})
	ts.call(a, 409, "POST", inv, map[string]any{"email": "admin@localhost", "role": "owner"})
	ts.call(a, 400, "POST", inv, map[string]any{"email": "nope", "role": "owner"})
	ts.call(a, 400, "POST", inv, map[string]any{"email": "d@example.com", "role": "admin"})
	ts.call(a, 400, "POST", inv, map[string]any{"email": "d@example.com"})
	ts.call(a, 400, "POST", inv, map[string]any{})

	// The update is in place: same id, same expiry, same key.
	r = ts.call(a, 200, "PATCH", inv+"/"+inviteID, map[string]any{"role": "owner"})
	jsonEq(t, "updated invite", r.body, fmt.Sprintf(`{"inviteId":%q,"email":"b@example.com","expires":%q,"role":"owner"}`, inviteID, expires))
	ts.call(a, 200, "PATCH", inv+"/"+inviteID, map[string]any{"role": "maintainer"})
	ts.call(a, 400, "PATCH", inv+"/"+inviteID, map[string]any{"role": "boss"})
	ts.call(a, 400, "PATCH", inv+"/"+inviteID, map[string]any{})
	ts.call(a, 404, "PATCH", inv+"/nope", map[string]any{"role": "owner"})
	ts.call(a, 204, "POST", inv+"/"+inviteID+"/resend", nil)
	ts.call(a, 404, "POST", inv+"/nope/resend", nil)

	// Only B, with the right key, on the right workspace, accepts.
	ts.call(c, 403, "POST", inv+"/"+inviteKey+"/accept", nil)
	ts.call(b, 404, "POST", inv+"/ik_wrong/accept", nil)
	ts.call(b, 404, "POST", inv+"/"+inviteID+"/accept", nil)
	other := ts.newWorkspace(c, "other")
	ts.call(b, 404, "POST", "/workspaces/"+other+"/invites/"+inviteKey+"/accept", nil)
	ts.call(b, 403, "GET", "/workspaces/"+ws, nil)
	ts.call(b, 204, "POST", inv+"/"+inviteKey+"/accept", nil)
	ts.call(b, 404, "POST", inv+"/"+inviteKey+"/accept", nil)

	// B is a maintainer of the workspace and sees it.
	r = ts.call(b, 200, "GET", "/workspaces", nil)
	jsonEq(t, "b's workspaces", r.body, fmt.Sprintf(`{"workspaces":[{"id":%q,"name":"coppice","slug":"coppice","role":"maintainer","plan":"free"}]}`, ws))
	if r := ts.call(b, 200, "GET", "/workspaces/"+ws, nil); str(r.obj()["memberCount"]) != "2" {
		t.Errorf("memberCount: %s", r.raw)
	}
	r = ts.call(b, 200, "GET", "/workspaces/"+ws+"/members", nil)
	if len(r.obj()["members"].([]any)) != 2 || len(r.obj()["invites"].([]any)) != 0 {
		t.Errorf("members after accept: %s", r.raw)
	}
	// B works with the workspace's data through every form.
	ts.call(b, 201, "PUT", "/workspaces/"+ws+"/dbs/bdb", map[string]any{"region": "local"})
	ts.call(b, 200, "GET", "/dbs/bdb", nil)
	ts.call(b, 200, "GET", "/ws/"+ws+"/dbs/bdb", nil)

	// An accepted invite is past changing.
	ts.call(a, 422, "PATCH", inv+"/"+inviteID, map[string]any{"role": "owner"})
	ts.call(a, 400, "DELETE", inv+"/"+inviteID, nil)
	ts.call(a, 400, "POST", inv+"/"+inviteID+"/resend", nil)
	ts.call(a, 409, "POST", inv, map[string]any{"email": "b@example.com", "role": "owner"})

	// A pending invite can be deleted; its key then fails.
	r = ts.call(a, 201, "POST", inv, map[string]any{"email": "c@example.com", "role": "owner"})
	cID, cKey := str(r.obj()["inviteId"]), str(r.obj()["inviteKey"])
	ts.call(a, 204, "DELETE", inv+"/"+cID, nil)
	ts.call(a, 404, "DELETE", inv+"/"+cID, nil)
	ts.call(c, 404, "POST", inv+"/"+cKey+"/accept", nil)
	// A new invite for the address works, and an invite for an email that
	// has no account yet can be created.
	ts.join(a, c, ws, "maintainer")
	ts.call(a, 201, "POST", inv, map[string]any{"email": "later@example.com", "role": "maintainer"})

	// Roles change; the owner may promote and demote.
	ts.call(a, 204, "PUT", "/workspaces/"+ws+"/members/"+b.id, map[string]any{"role": "owner"})
	if r := ts.call(b, 200, "GET", "/workspaces", nil); r.obj()["workspaces"].([]any)[0].(map[string]any)["role"] != "owner" {
		t.Errorf("after promotion: %s", r.raw)
	}
	ts.call(a, 204, "PUT", "/workspaces/"+ws+"/members/"+b.id, map[string]any{"role": "maintainer"})
	ts.call(a, 204, "PUT", "/workspaces/"+ws+"/members/"+b.id, map[string]any{"role": "maintainer"})
	ts.call(a, 400, "PUT", "/workspaces/"+ws+"/members/"+b.id, map[string]any{"role": "root"})
	ts.call(a, 400, "PUT", "/workspaces/"+ws+"/members/"+b.id, map[string]any{})
	ts.call(a, 404, "PUT", "/workspaces/"+ws+"/members/usr_nobody", map[string]any{"role": "owner"})
	ts.call(a, 404, "DELETE", "/workspaces/"+ws+"/members/usr_nobody", nil)

	// The owner removes C; B leaves by themself. Both lose access at once.
	ts.call(a, 204, "DELETE", "/workspaces/"+ws+"/members/"+c.id, nil)
	ts.call(c, 403, "GET", "/workspaces/"+ws, nil)
	ts.call(b, 204, "DELETE", "/workspaces/"+ws+"/members/"+b.id, nil)
	ts.call(b, 403, "GET", "/workspaces/"+ws, nil)
	ts.call(b, 401, "GET", "/ws/"+ws+"/dbs/bdb", nil)
	jsonEq(t, "b's workspaces after leaving", ts.call(b, 200, "GET", "/workspaces", nil).body, `{"workspaces":[]}`)
	if r := ts.call(a, 200, "GET", "/workspaces/"+ws, nil); str(r.obj()["memberCount"]) != "1" {
		t.Errorf("memberCount: %s", r.raw)
	}
	// A former member can be invited again.
	ts.join(a, b, ws, "owner")
	if r := ts.call(b, 200, "GET", "/workspaces", nil); r.obj()["workspaces"].([]any)[0].(map[string]any)["role"] != "owner" {
		t.Errorf("after rejoining: %s", r.raw)
	}
}

// Rows: "Remove yourself" (owner), last-owner statuses.
func TestLastOwnerRule(t *testing.T) {
	ts := startServer(t, Options{})
	a := ts.admin()
	ws := ts.info.WorkspaceID
	members := "/workspaces/" + ws + "/members/"

	// Alone: A can neither step down, nor leave, nor delete the account.
	r := ts.call(a, 400, "PUT", members+a.id, map[string]any{"role": "maintainer"})
	if !strings.Contains(errMessage(r), "last owner") {
		t.Errorf("demote: %s", r.raw)
	}
	ts.call(a, 400, "DELETE", members+a.id, nil)
	ts.call(a, 400, "DELETE", "/user", nil)
	ts.call(a, 200, "GET", "/user", nil)
	// Setting the role it already has is not a demotion.
	ts.call(a, 204, "PUT", members+a.id, map[string]any{"role": "owner"})

	// With a second owner, A steps down; then B is the last owner.
	b := ts.newUser("b@example.com")
	ts.join(a, b, ws, "owner")
	ts.call(a, 204, "PUT", members+a.id, map[string]any{"role": "maintainer"})
	ts.call(b, 400, "PUT", members+b.id, map[string]any{"role": "maintainer"})
	ts.call(b, 400, "DELETE", members+b.id, nil)
	ts.call(b, 400, "DELETE", "/user", nil)
	// A maintainer may not change roles, even back to owner.
	ts.call(a, 403, "PUT", members+a.id, map[string]any{"role": "owner"})

	// An owner who is not the last one may leave, and may delete the account.
	ts.call(b, 204, "PUT", members+a.id, map[string]any{"role": "owner"})
	ts.call(b, 204, "DELETE", members+b.id, nil)
	ts.call(b, 403, "GET", "/workspaces/"+ws, nil)
	ts.join(a, b, ws, "owner")
	ts.call(b, 204, "DELETE", "/user", nil)
	ts.call(b, 401, "GET", "/user", nil)
	r = ts.call(a, 200, "GET", "/workspaces/"+ws+"/members", nil)
	if len(r.obj()["members"].([]any)) != 1 {
		t.Errorf("members after b deleted the account: %s", r.raw)
	}

	// A user whose workspaces are all gone may delete the account.
	c := ts.newUser("c@example.com")
	cws := ts.newWorkspace(c, "mine")
	ts.call(c, 400, "DELETE", "/user", nil)
	ts.call(c, 204, "DELETE", "/workspaces/"+cws, nil)
	ts.call(c, 204, "DELETE", "/user", nil)
}

// Rows: every row, maintainer and non-member columns. The owner column is
// exercised by TestInviteLifecycle and TestWorkspaceEndpoints and at the end
// here.
func TestRoleMatrix(t *testing.T) {
	ts := startServer(t, Options{})
	owner := ts.admin()
	ws := ts.info.WorkspaceID
	maint := ts.newUser("m@example.com")
	ts.join(owner, maint, ws, "maintainer")
	stranger := ts.newUser("s@example.com")
	ts.newWorkspace(stranger, "own")
	ts.createDB("db")
	ts.createTable("db", "t", map[string]any{"name": "s", "type": "string"})
	ts.expect(201, "PUT", "/db/db:main/tables/t/data/r1", map[string]any{"s": "x"})
	inv := str(ts.call(owner, 201, "POST", "/workspaces/"+ws+"/invites", map[string]any{"email": "p@example.com", "role": "maintainer"}).obj()["inviteId"])
	other := ts.newUser("o@example.com")
	ts.join(owner, other, ws, "maintainer")

	// check sends the request as u, on the workspace and on an unknown one
	// for the non-member, and wants the same status (and message, up to the
	// workspace label) for both.
	check := func(u cpUser, want int, method, path string, body any) {
		t.Helper()
		p := strings.ReplaceAll(path, "{ws}", ws)
		r := ts.call(u, want, method, p, body)
		if u != stranger {
			return
		}
		q := strings.ReplaceAll(path, "{ws}", "zzzzzz")
		r2 := ts.call(u, want, method, q, body)
		if m1, m2 := strings.ReplaceAll(errMessage(r), ws, "X"), strings.ReplaceAll(errMessage(r2), "zzzzzz", "X"); m1 != m2 {
			t.Errorf("%s %s: %q for the workspace, %q for an unknown one", method, path, m1, m2)
		}
		if want == 401 || want == 403 {
			if m := errMessage(r); m != "no access to workspace ["+ws+"]" {
				t.Errorf("%s %s: message %q", method, path, m)
			}
		}
	}
	role := map[string]any{"role": "owner"}

	// Data plane: maintainer yes, non-member 401.
	dataOps := []struct {
		method, path string
		body         any
		ok           int
	}{
		{"GET", "/ws/{ws}/db/db:main", nil, 200},
		{"GET", "/ws/{ws}/dbs/db", nil, 200},
		{"GET", "/ws/{ws}/db/db:main/tables/t/data/r1", nil, 200},
		{"PUT", "/ws/{ws}/db/db:main/tables/t/data/r2", map[string]any{"s": "y"}, 201},
		{"POST", "/ws/{ws}/db/db:main/tables/t/query", map[string]any{}, 200},
		{"PUT", "/ws/{ws}/db/db:main/tables/t2", nil, 201},
		{"PUT", "/ws/{ws}/db/db:dev", map[string]any{}, 201},
		{"GET", "/ws/{ws}/dbs/db/gitBranches", nil, 200},
	}
	for _, op := range dataOps {
		check(maint, op.ok, op.method, op.path, op.body)
		check(stranger, 401, op.method, op.path, op.body)
	}

	// Databases: maintainer yes, non-member 401.
	check(stranger, 401, "GET", "/workspaces/{ws}/dbs", nil)
	check(stranger, 401, "GET", "/workspaces/{ws}/regions", nil)
	check(stranger, 401, "PUT", "/workspaces/{ws}/dbs/x", map[string]any{"region": "local"})
	check(stranger, 401, "GET", "/workspaces/{ws}/dbs/db", nil)
	check(stranger, 401, "PATCH", "/workspaces/{ws}/dbs/db", map[string]any{"ui": map[string]any{"color": "red"}})
	check(stranger, 401, "POST", "/workspaces/{ws}/dbs/db/rename", map[string]any{"newName": "y"})
	check(stranger, 401, "DELETE", "/workspaces/{ws}/dbs/db", nil)
	check(maint, 200, "GET", "/workspaces/{ws}/dbs", nil)
	check(maint, 200, "GET", "/workspaces/{ws}/regions", nil)
	check(maint, 201, "PUT", "/workspaces/{ws}/dbs/x", map[string]any{"region": "local"})
	check(maint, 200, "GET", "/workspaces/{ws}/dbs/x", nil)
	check(maint, 200, "PATCH", "/workspaces/{ws}/dbs/x", map[string]any{"ui": map[string]any{"color": "red"}})
	check(maint, 200, "POST", "/workspaces/{ws}/dbs/x/rename", map[string]any{"newName": "y"})
	check(maint, 200, "DELETE", "/workspaces/{ws}/dbs/y", nil)

	// List and create workspaces: everyone, each sees their own.
	for _, u := range []cpUser{maint, stranger} {
		r := ts.call(u, 200, "GET", "/workspaces", nil)
		if n := len(r.obj()["workspaces"].([]any)); n != 1 {
			t.Errorf("%s lists %d workspaces: %s", u.email, n, r.raw)
		}
		ts.call(u, 201, "POST", "/workspaces", map[string]any{"name": "new"})
	}

	// Get workspace, list members: maintainer yes, non-member 403.
	check(maint, 200, "GET", "/workspaces/{ws}", nil)
	check(maint, 200, "GET", "/workspaces/{ws}/members", nil)
	check(stranger, 403, "GET", "/workspaces/{ws}", nil)
	check(stranger, 403, "GET", "/workspaces/{ws}/members", nil)

	// Update or delete workspace: owner only.
	for _, u := range []cpUser{maint, stranger} {
		check(u, 403, "PUT", "/workspaces/{ws}", map[string]any{"name": "taken"})
		check(u, 403, "PUT", "/workspaces/{ws}", map[string]any{})
		check(u, 403, "DELETE", "/workspaces/{ws}", nil)
	}

	// Invites: owner only.
	for _, u := range []cpUser{maint, stranger} {
		check(u, 403, "POST", "/workspaces/{ws}/invites", map[string]any{"email": "q@example.com", "role": "maintainer"})
		check(u, 403, "PATCH", "/workspaces/{ws}/invites/"+inv, role)
		check(u, 403, "POST", "/workspaces/{ws}/invites/"+inv+"/resend", nil)
		check(u, 403, "DELETE", "/workspaces/{ws}/invites/"+inv, nil)
		// Unknown invite ids answer the same: no probing.
		check(u, 403, "DELETE", "/workspaces/{ws}/invites/nope", nil)
	}

	// Members: owner only for others.
	for _, u := range []cpUser{maint, stranger} {
		check(u, 403, "PUT", "/workspaces/{ws}/members/"+other.id, role)
		check(u, 403, "PUT", "/workspaces/{ws}/members/"+u.id, role)
		check(u, 403, "DELETE", "/workspaces/{ws}/members/"+other.id, nil)
		check(u, 403, "DELETE", "/workspaces/{ws}/members/"+owner.id, nil)
	}

	// Own user and keys: everyone.
	for _, u := range []cpUser{maint, stranger} {
		ts.call(u, 200, "GET", "/user", nil)
		ts.call(u, 200, "GET", "/user/keys", nil)
		ts.call(u, 201, "POST", "/user/keys/mine", nil)
		ts.call(u, 204, "DELETE", "/user/keys/mine", nil)
		ts.call(u, 200, "PUT", "/user", map[string]any{"email": u.email, "fullname": "F", "image": ""})
	}

	// Administration: the administrator only.
	for _, u := range []cpUser{maint, stranger} {
		ts.call(u, 403, "POST", "/admin/users", map[string]any{"email": "n@example.com"})
	}

	// Remove yourself: a maintainer may, a non-member gets 403.
	check(stranger, 403, "DELETE", "/workspaces/{ws}/members/"+stranger.id, nil)
	check(maint, 204, "DELETE", "/workspaces/{ws}/members/"+maint.id, nil)
	check(maint, 403, "GET", "/workspaces/{ws}", nil)

	// The owner column, for the operations above that were refused.
	check(owner, 200, "PATCH", "/workspaces/{ws}/invites/"+inv, role)
	check(owner, 204, "POST", "/workspaces/{ws}/invites/"+inv+"/resend", nil)
	check(owner, 204, "DELETE", "/workspaces/{ws}/invites/"+inv, nil)
	check(owner, 201, "POST", "/workspaces/{ws}/invites", map[string]any{"email": "q@example.com", "role": "maintainer"})
	check(owner, 204, "PUT", "/workspaces/{ws}/members/"+other.id, role)
	check(owner, 204, "DELETE", "/workspaces/{ws}/members/"+other.id, nil)
	check(owner, 200, "PUT", "/workspaces/{ws}", map[string]any{"name": "coppice"})
	check(owner, 200, "GET", "/workspaces/{ws}/members", nil)
	check(owner, 204, "DELETE", "/workspaces/{ws}", nil)
}

// Rows: "Data plane", "Databases", "Get workspace, list members" (non-member
// column), between two workspaces of two ordinary users.
func TestWorkspaceIsolation(t *testing.T) {
	ts := startServer(t, Options{Domains: []string{"example.test"}})
	a := ts.newUser("a@example.com")
	b := ts.newUser("b@example.com")
	wa := ts.newWorkspace(a, "alpha")
	wb := ts.newWorkspace(b, "beta")
	for _, x := range []struct {
		u  cpUser
		ws string
	}{{a, wa}, {b, wb}} {
		ts.call(x.u, 201, "PUT", "/workspaces/"+x.ws+"/dbs/shared", map[string]any{"region": "local"})
		ts.call(x.u, 201, "PUT", "/ws/"+x.ws+"/db/shared:main/tables/t", nil)
		ts.call(x.u, 200, "POST", "/ws/"+x.ws+"/db/shared:main/tables/t/columns", map[string]any{"name": "s", "type": "string"})
	}
	ts.call(a, 201, "PUT", "/ws/"+wa+"/db/shared:main/tables/t/data/secret", map[string]any{"s": "a's"})

	// B can't read, write, list or discover A's databases; the answers are
	// the same as for a workspace that does not exist.
	same := func(want int, method, path string, body any, opts ...reqOpt) {
		t.Helper()
		for _, label := range []string{wa, coreOf(wa), "zzzzzz", "beta-" + coreOf(wa)} {
			p := strings.ReplaceAll(path, "{ws}", label)
			r := ts.expect(want, method, ts.url+p, body, append([]reqOpt{withKey(b.key)}, opts...)...)
			if m := errMessage(r); m != "no access to workspace ["+label+"]" {
				t.Errorf("%s %s: message %q", method, p, m)
			}
		}
	}
	same(401, "GET", "/ws/{ws}/db/shared:main/tables/t/data/secret", nil)
	same(401, "PATCH", "/ws/{ws}/db/shared:main/tables/t/data/secret", map[string]any{"s": "b's"})
	same(401, "DELETE", "/ws/{ws}/db/shared:main/tables/t/data/secret", nil)
	same(401, "POST", "/ws/{ws}/db/shared:main/tables/t/query", map[string]any{})
	same(401, "POST", "/ws/{ws}/db/shared:main/transaction", map[string]any{"operations": []any{}})
	same(401, "GET", "/ws/{ws}/dbs/shared", nil)
	same(401, "GET", "/workspaces/{ws}/dbs", nil)
	same(401, "GET", "/workspaces/{ws}/dbs/shared", nil)
	same(401, "DELETE", "/workspaces/{ws}/dbs/shared", nil)
	same(401, "PUT", "/workspaces/{ws}/dbs/mine", map[string]any{"region": "local"})
	same(403, "GET", "/workspaces/{ws}", nil)
	same(403, "GET", "/workspaces/{ws}/members", nil)
	same(403, "PUT", "/workspaces/{ws}", map[string]any{"name": "x"})
	same(403, "DELETE", "/workspaces/{ws}", nil)
	same(403, "POST", "/workspaces/{ws}/invites", map[string]any{"email": "b@example.com", "role": "owner"})
	same(403, "PUT", "/workspaces/{ws}/members/"+b.id, map[string]any{"role": "owner"})
	same(403, "DELETE", "/workspaces/{ws}/members/"+a.id, nil)
	// The host form too.
	ts.expect(401, "GET", ts.url+"/db/shared:main/tables/t/data/secret", nil, withKey(b.key), withHost(coreOf(wa)+".local.example.test"))

	// B's list names only B's workspace; the plain form resolves to it.
	r := ts.call(b, 200, "GET", "/workspaces", nil)
	if ws := r.obj()["workspaces"].([]any); len(ws) != 1 || ws[0].(map[string]any)["id"] != wb {
		t.Errorf("b's list: %s", r.raw)
	}
	ts.call(b, 404, "GET", "/db/shared:main/tables/t/data/secret", nil)
	ts.call(b, 201, "PUT", "/db/shared:main/tables/t/data/secret", map[string]any{"s": "b's"})

	// A's record is untouched.
	r = ts.call(a, 200, "GET", "/ws/"+wa+"/db/shared:main/tables/t/data/secret", nil)
	if r.obj()["s"] != "a's" {
		t.Errorf("a's record: %s", r.raw)
	}
}

// Every control-plane endpoint answers a missing, bad or revoked key with
// 401 "invalid API key", before looking at anything else. Failures are
// not rate-limited here: every one of them is answered.
func TestControlPlaneBadKeys(t *testing.T) {
	ts := startServer(t, Options{Limits: Limits{AuthFailLimit: -1}})
	ws := ts.info.WorkspaceID
	b := ts.newUser("b@example.com")
	revoked := str(ts.call(b, 201, "POST", "/user/keys/gone", nil).obj()["key"])
	ts.call(b, 204, "DELETE", "/user/keys/gone", nil)
	deleted := ts.newUser("d@example.com")
	ts.call(deleted, 204, "DELETE", "/user", nil)

	endpoints := []struct{ method, path string }{
		{"GET", "/user"}, {"PUT", "/user"}, {"DELETE", "/user"},
		{"GET", "/user/keys"}, {"POST", "/user/keys/k"}, {"POST", "/user/keys/"}, {"DELETE", "/user/keys/k"},
		{"POST", "/admin/users"},
		{"GET", "/workspaces"}, {"POST", "/workspaces"},
		{"GET", "/workspaces/" + ws}, {"PUT", "/workspaces/" + ws}, {"DELETE", "/workspaces/" + ws},
		{"GET", "/workspaces/" + ws + "/members"}, {"PUT", "/workspaces/" + ws + "/members/u"}, {"DELETE", "/workspaces/" + ws + "/members/u"},
		{"POST", "/workspaces/" + ws + "/invites"}, {"POST", "/workspaces/" + ws + "/invites/ik_x/accept"},
		{"POST", "/workspaces/" + ws + "/invites/i/resend"}, {"PATCH", "/workspaces/" + ws + "/invites/i"},
		{"DELETE", "/workspaces/" + ws + "/invites/i"},
	}
	for _, e := range endpoints {
		for _, opt := range []reqOpt{withKey(""), withKey("cpk_wrong"), withKey(revoked), withKey(deleted.key), withHeader("Authorization", "Basic "+testKey)} {
			r := ts.expect(401, e.method, ts.url+e.path, `{}`, opt)
			if errMessage(r) != "invalid API key" {
				t.Errorf("%s %s: %s", e.method, e.path, r.raw)
			}
		}
	}
	// Nothing changed.
	ts.call(ts.admin(), 200, "GET", "/workspaces/"+ws, nil)
}
