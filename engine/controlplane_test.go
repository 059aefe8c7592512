package engine

import (
	"bytes"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coppice-db/coppice/codec"
)

// cpEnv is an engine on a clock tests move, with a workspace owned by alice
// and two more users: bob and carol.
type cpEnv struct {
	t     *testing.T
	dir   string
	ns    *atomic.Int64
	e     *Engine
	alice User
	bob   User
	carol User
	ws    *Workspace
}

func newCPEnv(t *testing.T) *cpEnv {
	t.Helper()
	env := &cpEnv{t: t, dir: t.TempDir(), ns: &atomic.Int64{}}
	env.ns.Store(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC).UnixNano())
	env.open()
	for _, u := range []struct {
		dst   *User
		email string
	}{{&env.alice, "alice@example.com"}, {&env.bob, "bob@example.com"}, {&env.carol, "carol@example.com"}} {
		nu, err := env.e.Accounts().CreateUser(NewUser{Email: u.email, Fullname: strings.TrimSuffix(u.email, "@example.com")})
		if err != nil {
			t.Fatal(err)
		}
		*u.dst = *nu
	}
	ws, err := env.e.Accounts().CreateWorkspace(env.alice.ID, "Team", "")
	if err != nil {
		t.Fatal(err)
	}
	env.ws = ws
	return env
}

func (env *cpEnv) open() {
	e, err := Open(env.dir, Options{Clock: func() time.Time { return time.Unix(0, env.ns.Load()) }})
	if err != nil {
		env.t.Fatal(err)
	}
	env.e = e
	env.t.Cleanup(func() { e.Close() })
}

func (env *cpEnv) reopen() {
	env.t.Helper()
	if err := env.e.Close(); err != nil {
		env.t.Fatal(err)
	}
	env.open()
}

func (env *cpEnv) now() time.Time          { return time.Unix(0, env.ns.Load()).UTC() }
func (env *cpEnv) advance(d time.Duration) { env.ns.Add(int64(d)) }

// join invites user u into the workspace with role and accepts for them.
func (env *cpEnv) join(u User, role Role) {
	env.t.Helper()
	_, key, err := env.e.Accounts().CreateInvite(env.alice.ID, env.ws.ID(), u.Email, role)
	if err != nil {
		env.t.Fatal(err)
	}
	if err := env.e.Accounts().AcceptInvite(u.ID, env.ws.ID(), key); err != nil {
		env.t.Fatal(err)
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var invitePattern = regexp.MustCompile(`^[a-zA-Z0-9]+$`)

func TestInviteLifecycle(t *testing.T) {
	env := newCPEnv(t)
	e, ws := env.e, env.ws.ID()

	in, key, err := e.Accounts().CreateInvite(env.alice.ID, ws, env.bob.Email, RoleMaintainer)
	mustOK(t, err)
	if !invitePattern.MatchString(in.ID) {
		t.Fatalf("invite id %q", in.ID)
	}
	if !strings.HasPrefix(key, "ik_") || !invitePattern.MatchString(key[3:]) {
		t.Fatalf("invite key %q", key)
	}
	if want := env.now().Add(7 * 24 * time.Hour); !in.Expires.Equal(want) {
		t.Fatalf("expires %v, want %v", in.Expires, want)
	}

	members, invites, err := e.Accounts().ListMembers(env.alice.ID, ws)
	mustOK(t, err)
	if len(members) != 1 || members[0].UserID != env.alice.ID || members[0].Role != RoleOwner || members[0].Email != env.alice.Email {
		t.Fatalf("members %+v", members)
	}
	if len(invites) != 1 || invites[0].ID != in.ID || invites[0].Role != RoleMaintainer {
		t.Fatalf("pending %+v", invites)
	}

	f := func(email string, role Role, code Code, want string) {
		t.Helper()
		_, _, err := e.Accounts().CreateInvite(env.alice.ID, ws, email, role)
		mustCode(t, err, code, want)
	}
	f("BOB@example.com", RoleOwner, CodeConflict, "already pending")
	f(env.alice.Email, RoleOwner, CodeConflict, "already a member")
	f("not an email", RoleOwner, CodeInvalid, "invalid email")
	f("dan@example.com", "admin", CodeInvalid, "role [admin] is invalid")
	f("dan@example.com", "", CodeInvalid, "role is required")

	// Update in place: same id, same expiry, the same key still works.
	env.advance(time.Hour)
	up, err := e.Accounts().UpdateInvite(env.alice.ID, ws, in.ID, RoleOwner)
	mustOK(t, err)
	if up.ID != in.ID || !up.Expires.Equal(in.Expires) || up.Role != RoleOwner || up.Email != in.Email {
		t.Fatalf("updated %+v, was %+v", up, in)
	}
	_, err = e.Accounts().UpdateInvite(env.alice.ID, ws, in.ID, "boss")
	mustCode(t, err, CodeInvalid, "invalid")
	_, err = e.Accounts().UpdateInvite(env.alice.ID, ws, "nope", RoleOwner)
	mustCode(t, err, CodeNotFound, "not found")
	mustOK(t, e.Accounts().ResendInvite(env.alice.ID, ws, in.ID))
	mustCode(t, e.Accounts().ResendInvite(env.alice.ID, ws, "nope"), CodeNotFound, "not found")

	// Only bob may accept, only with the right key, only here.
	mustCode(t, e.Accounts().AcceptInvite(env.carol.ID, ws, key), CodeForbidden, "another email")
	mustCode(t, e.Accounts().AcceptInvite(env.bob.ID, ws, key+"x"), CodeNotFound, "not found")
	other, err := e.Accounts().CreateWorkspace(env.carol.ID, "Other", "")
	mustOK(t, err)
	mustCode(t, e.Accounts().AcceptInvite(env.bob.ID, other.ID(), key), CodeNotFound, "not found")
	mustOK(t, e.Accounts().AcceptInvite(env.bob.ID, ws, key))
	if role, ok := e.Accounts().MemberRole(ws, env.bob.ID); !ok || role != RoleOwner {
		t.Fatalf("bob's role %q %v", role, ok)
	}
	mustCode(t, e.Accounts().AcceptInvite(env.bob.ID, ws, key), CodeNotFound, "not found")

	members, invites, err = e.Accounts().ListMembers(env.bob.ID, ws)
	mustOK(t, err)
	if len(members) != 2 || members[0].Email != env.alice.Email || members[1].Email != env.bob.Email || members[1].Fullname != "bob" {
		t.Fatalf("members %+v", members)
	}
	if len(invites) != 0 {
		t.Fatalf("accepted invite still pending: %+v", invites)
	}

	// An accepted invite is a final state.
	mustCode(t, e.Accounts().DeleteInvite(env.alice.ID, ws, in.ID), CodeInvalid, "already accepted")
	_, err = e.Accounts().UpdateInvite(env.alice.ID, ws, in.ID, RoleMaintainer)
	mustCode(t, err, CodePrecondition, "already accepted")
	mustCode(t, e.Accounts().ResendInvite(env.alice.ID, ws, in.ID), CodeInvalid, "already accepted")
	f(env.bob.Email, RoleOwner, CodeConflict, "already a member")

	// A deleted invite's key stops working.
	in2, key2, err := e.Accounts().CreateInvite(env.alice.ID, ws, env.carol.Email, RoleMaintainer)
	mustOK(t, err)
	mustOK(t, e.Accounts().DeleteInvite(env.alice.ID, ws, in2.ID))
	mustCode(t, e.Accounts().DeleteInvite(env.alice.ID, ws, in2.ID), CodeNotFound, "not found")
	mustCode(t, e.Accounts().AcceptInvite(env.carol.ID, ws, key2), CodeNotFound, "not found")
}

func TestInviteExpiry(t *testing.T) {
	env := newCPEnv(t)
	e, ws := env.e, env.ws.ID()
	in, key, err := e.Accounts().CreateInvite(env.alice.ID, ws, env.carol.Email, RoleMaintainer)
	mustOK(t, err)

	env.advance(7*24*time.Hour - time.Second)
	_, pending, err := e.Accounts().ListMembers(env.alice.ID, ws)
	mustOK(t, err)
	if len(pending) != 1 {
		t.Fatalf("pending just before expiry: %+v", pending)
	}

	env.advance(time.Second)
	mustCode(t, e.Accounts().AcceptInvite(env.carol.ID, ws, key), CodeNotFound, "expired")
	_, pending, err = e.Accounts().ListMembers(env.alice.ID, ws)
	mustOK(t, err)
	if len(pending) != 0 {
		t.Fatalf("expired invite pending: %+v", pending)
	}
	if _, ok := e.Accounts().MemberRole(ws, env.carol.ID); ok {
		t.Fatal("carol joined with an expired invite")
	}

	// A new invite for the same email replaces the expired one.
	in2, key2, err := e.Accounts().CreateInvite(env.alice.ID, ws, env.carol.Email, RoleOwner)
	mustOK(t, err)
	mustCode(t, e.Accounts().DeleteInvite(env.alice.ID, ws, in.ID), CodeNotFound, "not found")
	mustCode(t, e.Accounts().AcceptInvite(env.carol.ID, ws, key), CodeNotFound, "not found")
	mustOK(t, e.Accounts().AcceptInvite(env.carol.ID, ws, key2))
	if role, _ := e.Accounts().MemberRole(ws, env.carol.ID); role != RoleOwner {
		t.Fatalf("carol's role %q via invite %s", role, in2.ID)
	}
}

func TestMemberLastOwner(t *testing.T) {
	env := newCPEnv(t)
	e, ws := env.e, env.ws.ID()
	a, b := env.alice.ID, env.bob.ID

	mustCode(t, e.Accounts().SetMemberRole(a, ws, a, RoleMaintainer), CodeInvalid, "last owner")
	mustCode(t, e.Accounts().RemoveMember(a, ws, a), CodeInvalid, "last owner")
	mustCode(t, e.Accounts().DeleteUser(a), CodeInvalid, "last owner of workspace ["+ws+"]")
	mustOK(t, e.Accounts().SetMemberRole(a, ws, a, RoleOwner)) // no change is fine

	env.join(env.bob, RoleMaintainer)
	mustCode(t, e.Accounts().SetMemberRole(a, ws, a, RoleMaintainer), CodeInvalid, "last owner")
	mustCode(t, e.Accounts().SetMemberRole(a, ws, "usr_nobody", RoleOwner), CodeNotFound, "not a member")
	mustCode(t, e.Accounts().SetMemberRole(a, ws, b, "root"), CodeInvalid, "invalid")
	mustCode(t, e.Accounts().SetMemberRole(a, ws, b, ""), CodeInvalid, "required")
	mustCode(t, e.Accounts().RemoveMember(a, ws, "usr_nobody"), CodeNotFound, "not a member")

	// With two owners, either may step down, but not both.
	mustOK(t, e.Accounts().SetMemberRole(a, ws, b, RoleOwner))
	mustOK(t, e.Accounts().SetMemberRole(a, ws, a, RoleMaintainer))
	mustCode(t, e.Accounts().SetMemberRole(b, ws, b, RoleMaintainer), CodeInvalid, "last owner")
	mustCode(t, e.Accounts().DeleteUser(b), CodeInvalid, "last owner")

	// A maintainer may leave; their keys scoped to the workspace go with them.
	scoped, err := e.Accounts().CreateAPIKey(a, "scoped", env.ws.Core, "")
	mustOK(t, err)
	global, err := e.Accounts().CreateAPIKey(a, "global", "", "")
	mustOK(t, err)
	mustOK(t, e.Accounts().RemoveMember(a, ws, a))
	if _, _, err := e.Accounts().Authenticate(scoped.Secret); CodeOf(err) != CodeUnauthenticated {
		t.Fatalf("scoped key after leaving: %v", err)
	}
	if _, _, err := e.Accounts().Authenticate(global.Secret); err != nil {
		t.Fatal(err)
	}
	if got := e.Accounts().ListAPIKeys(a); len(got) != 1 || got[0].Name != "global" {
		t.Fatalf("keys %+v", got)
	}
	// Not an owner of anything any more: alice can delete her account.
	mustOK(t, e.Accounts().DeleteUser(a))
	if _, _, err := e.Accounts().Authenticate(global.Secret); CodeOf(err) != CodeUnauthenticated {
		t.Fatalf("key of a deleted user: %v", err)
	}
	_, err = e.Accounts().GetUser(a)
	mustCode(t, err, CodeNotFound, "not found")

	// Once bob's workspace is gone, so is his obligation.
	mustOK(t, e.Accounts().DeleteWorkspace(b, ws))
	mustOK(t, e.Accounts().DeleteUser(b))
	mustCode(t, e.Accounts().DeleteUser(b), CodeNotFound, "not found")
}

func TestMemberRoleMatrix(t *testing.T) {
	env := newCPEnv(t)
	e, ws := env.e, env.ws.ID()
	env.join(env.bob, RoleMaintainer)
	env.join(env.carol, RoleMaintainer)
	in, _, err := e.Accounts().CreateInvite(env.alice.ID, ws, "dan@example.com", RoleMaintainer)
	mustOK(t, err)

	m := env.bob.ID
	f := func(op string, err error) {
		t.Helper()
		if CodeOf(err) != CodeForbidden || !strings.Contains(err.Error(), "role [maintainer] is insufficient") {
			t.Fatalf("%s by a maintainer: %v", op, err)
		}
	}
	_, err = e.Accounts().UpdateWorkspace(m, ws, "Mine", "")
	f("update workspace", err)
	f("delete workspace", e.Accounts().DeleteWorkspace(m, ws))
	_, _, err = e.Accounts().CreateInvite(m, ws, "eve@example.com", RoleMaintainer)
	f("create invite", err)
	_, err = e.Accounts().UpdateInvite(m, ws, in.ID, RoleOwner)
	f("update invite", err)
	f("resend invite", e.Accounts().ResendInvite(m, ws, in.ID))
	f("delete invite", e.Accounts().DeleteInvite(m, ws, in.ID))
	f("set role", e.Accounts().SetMemberRole(m, ws, m, RoleOwner))
	f("set role of another", e.Accounts().SetMemberRole(m, ws, env.carol.ID, RoleMaintainer))
	f("remove another", e.Accounts().RemoveMember(m, ws, env.carol.ID))

	// What a maintainer may do.
	w, err := e.Accounts().GetWorkspace(m, ws)
	mustOK(t, err)
	if w.Role != RoleMaintainer || w.MemberCount != 3 {
		t.Fatalf("workspace as bob %+v", w)
	}
	_, pending, err := e.Accounts().ListMembers(m, ws)
	mustOK(t, err)
	if len(pending) != 1 {
		t.Fatalf("pending %+v", pending)
	}
	mustOK(t, e.Accounts().RemoveMember(m, ws, m))
	if _, ok := e.Accounts().MemberRole(ws, m); ok {
		t.Fatal("bob still a member")
	}
}

func TestWorkspaceNonMember(t *testing.T) {
	env := newCPEnv(t)
	e := env.e
	in, key, err := e.Accounts().CreateInvite(env.alice.ID, env.ws.ID(), "dan@example.com", RoleMaintainer)
	mustOK(t, err)
	env.join(env.bob, RoleMaintainer)
	out := env.carol.ID

	// The same answer for a workspace that exists, one that does not and a
	// malformed id: the caller cannot tell them apart.
	for _, ws := range []string{env.ws.ID(), env.ws.Core, "ghost-zzzzzz", "zzzzzz", "not a workspace"} {
		want := "no access to workspace [" + ws + "]"
		f := func(op string, err error) {
			t.Helper()
			if CodeOf(err) != CodeForbidden || err.Error() != want {
				t.Fatalf("%s on %q: %v (code %d), want %q", op, ws, err, CodeOf(err), want)
			}
		}
		_, err := e.Accounts().GetWorkspace(out, ws)
		f("get workspace", err)
		_, err = e.Accounts().UpdateWorkspace(out, ws, "Mine", "")
		f("update workspace", err)
		f("delete workspace", e.Accounts().DeleteWorkspace(out, ws))
		_, _, err = e.Accounts().ListMembers(out, ws)
		f("list members", err)
		f("set role", e.Accounts().SetMemberRole(out, ws, env.bob.ID, RoleOwner))
		f("remove member", e.Accounts().RemoveMember(out, ws, env.bob.ID))
		f("remove self", e.Accounts().RemoveMember(out, ws, out))
		_, _, err = e.Accounts().CreateInvite(out, ws, "eve@example.com", RoleOwner)
		f("create invite", err)
		_, err = e.Accounts().UpdateInvite(out, ws, in.ID, RoleOwner)
		f("update invite", err)
		f("resend invite", e.Accounts().ResendInvite(out, ws, in.ID))
		f("delete invite", e.Accounts().DeleteInvite(out, ws, in.ID))
		if _, ok := e.Accounts().MemberRole(ws, out); ok {
			t.Fatalf("MemberRole(%q) for an outsider", ws)
		}
		// An unknown key is not found, whether or not the workspace exists.
		mustCode(t, e.Accounts().AcceptInvite(out, ws, "ik_unknown"), CodeNotFound, "not found")
		if ws != env.ws.ID() && ws != env.ws.Core {
			mustCode(t, e.Accounts().AcceptInvite(out, ws, key), CodeNotFound, "not found")
		}
	}
	if got := e.Accounts().ListWorkspaces(out); len(got) != 0 {
		t.Fatalf("outsider's workspaces %+v", got)
	}
	if got := e.Accounts().UserWorkspaces(out); len(got) != 0 {
		t.Fatalf("outsider's workspace cores %v", got)
	}
	// Nothing changed.
	if got := e.Accounts().UserWorkspaces(env.bob.ID); len(got) != 1 || got[0] != env.ws.Core {
		t.Fatalf("bob's workspaces %v", got)
	}
}

func TestWorkspaceGetUpdate(t *testing.T) {
	env := newCPEnv(t)
	e, a := env.e, env.alice.ID
	w, err := e.Accounts().GetWorkspace(a, env.ws.ID())
	mustOK(t, err)
	if w.ID != env.ws.ID() || w.Name != "Team" || w.Slug != "Team" || w.Plan != "free" || w.MemberCount != 1 || w.Role != RoleOwner {
		t.Fatalf("workspace %+v", w)
	}
	_, _, err = e.Accounts().CreateInvite(a, env.ws.ID(), "dan@example.com", RoleMaintainer)
	mustOK(t, err)
	if w, _ = e.Accounts().GetWorkspace(a, env.ws.Core); w.MemberCount != 1 {
		t.Fatalf("pending invite counted: %+v", w)
	}

	f := func(name, slug, wantSlug string) {
		t.Helper()
		w, err := e.Accounts().UpdateWorkspace(a, env.ws.Core, name, slug)
		mustOK(t, err)
		if w.Name != name || w.Slug != wantSlug || w.Core != env.ws.Core || w.ID != wantSlug+"-"+env.ws.Core {
			t.Fatalf("update %q %q: %+v", name, slug, w)
		}
	}
	f("New Name!", "", "New-Name-")
	f("Other", "my_slug~1", "my_slug~1")
	f("plain-name", "", "plain-name")
	_, err = e.Accounts().UpdateWorkspace(a, env.ws.Core, "", "slug-only")
	mustCode(t, err, CodeInvalid, "name is required")
	_, err = e.Accounts().UpdateWorkspace(a, env.ws.Core, "x", "bad slug")
	mustCode(t, err, CodeInvalid, "slug")
	// Any prefix of the core still finds it.
	if _, err := e.Accounts().GetWorkspace(a, "Team-"+env.ws.Core); err != nil {
		t.Fatal(err)
	}

	second, err := e.Accounts().CreateWorkspace(env.bob.ID, "Bees", "")
	mustOK(t, err)
	third, err := e.Accounts().CreateWorkspace(a, "Ants", "")
	mustOK(t, err)
	env.join(env.bob, RoleMaintainer)
	list := e.Accounts().ListWorkspaces(env.bob.ID)
	if len(list) != 2 || list[0].ID != second.ID() || list[0].Role != RoleOwner ||
		list[1].Core != env.ws.Core || list[1].Role != RoleMaintainer || list[1].MemberCount != 2 {
		t.Fatalf("bob's workspaces %+v", list)
	}
	list = e.Accounts().ListWorkspaces(a)
	if len(list) != 2 || list[0].ID != third.ID() || list[1].Core != env.ws.Core {
		t.Fatalf("alice's workspaces %+v", list)
	}
}

func TestUserGetUpdateDelete(t *testing.T) {
	env := newCPEnv(t)
	e, b := env.e, env.bob.ID
	u, err := e.Accounts().GetUser(b)
	mustOK(t, err)
	if u.ID != b || u.Email != env.bob.Email {
		t.Fatalf("user %+v", u)
	}
	_, err = e.Accounts().GetUser("usr_nobody")
	mustCode(t, err, CodeNotFound, "not found")

	u, err = e.Accounts().UpdateUser(b, "robert@example.com", "Robert", "https://img/r.png")
	mustOK(t, err)
	if u.ID != b || u.Email != "robert@example.com" || u.Fullname != "Robert" || u.Image != "https://img/r.png" {
		t.Fatalf("updated %+v", u)
	}
	if got, _ := e.Accounts().GetUser(b); got != u {
		t.Fatalf("get after update %+v", got)
	}
	f := func(email string, code Code, want string) {
		t.Helper()
		_, err := e.Accounts().UpdateUser(b, email, "Robert", "")
		mustCode(t, err, code, want)
	}
	f("", CodeInvalid, "invalid email")
	f("Robert <robert@example.com>", CodeInvalid, "invalid email")
	f("ALICE@example.com", CodeInvalid, "already exists")
	_, err = e.Accounts().UpdateUser("usr_nobody", "x@example.com", "", "")
	mustCode(t, err, CodeNotFound, "not found")
	// A change of case keeps the address; the old address is free again.
	_, err = e.Accounts().UpdateUser(b, "Robert@Example.com", "Robert", "")
	mustOK(t, err)
	if _, err := e.Accounts().CreateUser(NewUser{Email: "robert@example.com"}); CodeOf(err) != CodeConflict {
		t.Fatalf("email taken twice: %v", err)
	}
	if _, err := e.Accounts().CreateUser(NewUser{Email: env.bob.Email}); err != nil {
		t.Fatalf("old email not freed: %v", err)
	}

	// Deleting a member removes their memberships and keys.
	env.join(env.carol, RoleMaintainer)
	k, err := e.Accounts().CreateAPIKey(env.carol.ID, "k", "", "")
	mustOK(t, err)
	mustOK(t, e.Accounts().DeleteUser(env.carol.ID))
	if _, _, err := e.Accounts().Authenticate(k.Secret); CodeOf(err) != CodeUnauthenticated {
		t.Fatalf("deleted user's key: %v", err)
	}
	members, _, err := e.Accounts().ListMembers(env.alice.ID, env.ws.ID())
	mustOK(t, err)
	if len(members) != 1 {
		t.Fatalf("members after delete %+v", members)
	}
	if _, err := e.Accounts().CreateUser(NewUser{Email: env.carol.Email}); err != nil {
		t.Fatalf("deleted user's email not freed: %v", err)
	}
}

func TestKeyListDelete(t *testing.T) {
	env := newCPEnv(t)
	e, a := env.e, env.alice.ID
	env.advance(time.Minute)
	kb, err := e.Accounts().CreateAPIKey(a, "b", "", "")
	mustOK(t, err)
	ka, err := e.Accounts().CreateAPIKey(a, "a", "", "")
	mustOK(t, err)
	_, err = e.Accounts().CreateAPIKey(a, "c~scoped", env.ws.Core, "")
	mustOK(t, err)
	_, err = e.Accounts().CreateAPIKey(env.bob.ID, "a", "", "") // names are per user
	mustOK(t, err)

	f := func(name, ws string, code Code, want string) {
		t.Helper()
		_, err := e.Accounts().CreateAPIKey(a, name, ws, "")
		mustCode(t, err, code, want)
	}
	f("a", "", CodeConflict, "already exists")
	f("", "", CodeInvalid, "must not be empty")
	f("a b", "", CodeInvalid, "invalid")
	f("x/y", "", CodeInvalid, "invalid")
	f(strings.Repeat("k", 256), "", CodeInvalid, "longer than 255")
	f("other", "zzzzzz", CodeForbidden, "no access")

	got := e.Accounts().ListAPIKeys(a)
	if len(got) != 3 || got[0].Name != "a" || got[1].Name != "b" || got[2].Name != "c~scoped" ||
		got[2].Workspace != env.ws.Core || got[0].Workspace != "" || !got[0].CreatedAt.Equal(env.now()) {
		t.Fatalf("keys %+v", got)
	}

	// A key that authenticated (and so had its hash remembered) fails as
	// soon as it is deleted.
	if _, _, err := e.Accounts().Authenticate(kb.Secret); err != nil {
		t.Fatal(err)
	}
	mustOK(t, e.Accounts().DeleteAPIKey(a, "b"))
	if _, _, err := e.Accounts().Authenticate(kb.Secret); CodeOf(err) != CodeUnauthenticated {
		t.Fatalf("deleted key authenticates: %v", err)
	}
	if u, _, err := e.Accounts().Authenticate(ka.Secret); err != nil || u.ID != a {
		t.Fatalf("other key: %v", err)
	}
	mustCode(t, e.Accounts().DeleteAPIKey(a, "b"), CodeNotFound, "not found")
	mustCode(t, e.Accounts().DeleteAPIKey(a, "nope"), CodeNotFound, "not found")
	mustCode(t, e.Accounts().DeleteAPIKey(env.carol.ID, "a"), CodeNotFound, "not found")
	// The name is free again.
	_, err = e.Accounts().CreateAPIKey(a, "b", "", "")
	mustOK(t, err)
	if got := e.Accounts().ListAPIKeys(env.carol.ID); len(got) != 0 {
		t.Fatalf("carol's keys %+v", got)
	}
}

func TestWorkspaceDeleteCascade(t *testing.T) {
	env := newCPEnv(t)
	e, a, ws := env.e, env.alice.ID, env.ws
	for _, name := range []string{"one", "two"} {
		_, err := e.CreateDatabase(CreateDatabaseRequest{Workspace: ws.Core, Name: name, Region: "local"})
		mustOK(t, err)
	}
	ref := Ref{Workspace: ws.Core, Database: "one", Branch: "main"}
	_, err := e.Schema().CreateTable(ref, "t")
	mustOK(t, err)
	_, err = e.WriteOne(ref, Op{Kind: OpInsert, Table: "t", Values: map[string]any{}})
	mustOK(t, err)
	other, err := e.Accounts().CreateWorkspace(a, "Other", "")
	mustOK(t, err)
	_, err = e.CreateDatabase(CreateDatabaseRequest{Workspace: other.Core, Name: "one", Region: "local"})
	mustOK(t, err)
	env.join(env.bob, RoleMaintainer)
	scoped, err := e.Accounts().CreateAPIKey(env.bob.ID, "scoped", ws.Core, "")
	mustOK(t, err)
	global, err := e.Accounts().CreateAPIKey(env.bob.ID, "global", "", "")
	mustOK(t, err)
	_, key, err := e.Accounts().CreateInvite(a, ws.ID(), env.carol.Email, RoleMaintainer)
	mustOK(t, err)

	mustOK(t, e.Accounts().DeleteWorkspace(a, ws.ID()))

	check := func() {
		t.Helper()
		for _, name := range []string{"one", "two"} {
			_, err := e.GetDatabase(ws.Core, name)
			mustCode(t, err, CodeNotFound, "not found")
		}
		if got := e.ListDatabases(ws.Core); len(got) != 0 {
			t.Fatalf("databases left %+v", got)
		}
		_, err = e.WriteOne(ref, Op{Kind: OpInsert, Table: "t", Values: map[string]any{}})
		mustCode(t, err, CodeNotFound, "not found")
		if _, err := e.GetDatabase(other.Core, "one"); err != nil {
			t.Fatalf("other workspace's database: %v", err)
		}
		if _, _, err := e.Accounts().Authenticate(scoped.Secret); CodeOf(err) != CodeUnauthenticated {
			t.Fatalf("scoped key of a deleted workspace: %v", err)
		}
		if _, _, err := e.Accounts().Authenticate(global.Secret); err != nil {
			t.Fatal(err)
		}
		if got := e.Accounts().ListAPIKeys(env.bob.ID); len(got) != 1 || got[0].Name != "global" {
			t.Fatalf("bob's keys %+v", got)
		}
		mustCode(t, e.Accounts().AcceptInvite(env.carol.ID, ws.ID(), key), CodeNotFound, "not found")
		_, err := e.Accounts().GetWorkspace(a, ws.ID())
		mustCode(t, err, CodeForbidden, "no access")
		if got := e.Accounts().ListWorkspaces(env.bob.ID); len(got) != 0 {
			t.Fatalf("bob's workspaces %+v", got)
		}
		if got := e.Accounts().ListWorkspaces(a); len(got) != 1 || got[0].Core != other.Core {
			t.Fatalf("alice's workspaces %+v", got)
		}
	}
	check()
	env.reopen()
	e = env.e
	check()
	// The data range is gone too: nothing is left under the database prefixes.
	it, err := e.pdb.NewIter(nil)
	mustOK(t, err)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) > 0 && k[0] == codec.NSData && !ownsDataKey(e, k) {
			t.Fatalf("data key of a deleted database left: %x", k)
		}
	}
}

// ownsDataKey reports whether a data-plane key belongs to a database that
// exists.
func ownsDataKey(e *Engine, k []byte) bool {
	for _, id := range e.cat.DatabaseIDs() {
		if bytes.HasPrefix(k, codec.DatabasePrefix(id)) {
			return true
		}
	}
	return false
}

func TestControlPlanePersistence(t *testing.T) {
	env := newCPEnv(t)
	e, a, ws := env.e, env.alice.ID, env.ws.ID()
	env.join(env.bob, RoleMaintainer)
	in, key, err := e.Accounts().CreateInvite(a, ws, env.carol.Email, RoleOwner)
	mustOK(t, err)
	_, err = e.Accounts().UpdateInvite(a, ws, in.ID, RoleMaintainer)
	mustOK(t, err)
	ka, err := e.Accounts().CreateAPIKey(a, "main", "", "")
	mustOK(t, err)
	kgone, err := e.Accounts().CreateAPIKey(a, "gone", "", "")
	mustOK(t, err)
	mustOK(t, e.Accounts().DeleteAPIKey(a, "gone"))
	kb, err := e.Accounts().CreateAPIKey(env.bob.ID, "ci", env.ws.Core, "")
	mustOK(t, err)
	_, err = e.Accounts().UpdateUser(env.bob.ID, "bobby@example.com", "Bobby", "img")
	mustOK(t, err)
	_, err = e.Accounts().UpdateWorkspace(a, ws, "Renamed", "")
	mustOK(t, err)

	env.reopen()
	e = env.e

	if role, ok := e.Accounts().MemberRole(env.ws.Core, env.bob.ID); !ok || role != RoleMaintainer {
		t.Fatalf("bob's role after reopen %q %v", role, ok)
	}
	w, err := e.Accounts().GetWorkspace(a, env.ws.Core)
	mustOK(t, err)
	if w.Name != "Renamed" || w.Slug != "Renamed" || w.MemberCount != 2 {
		t.Fatalf("workspace after reopen %+v", w)
	}
	members, pending, err := e.Accounts().ListMembers(a, ws)
	mustOK(t, err)
	if len(members) != 2 || members[1].Email != "bobby@example.com" || members[1].Fullname != "Bobby" {
		t.Fatalf("members after reopen %+v", members)
	}
	if len(pending) != 1 || pending[0].ID != in.ID || pending[0].Role != RoleMaintainer || !pending[0].Expires.Equal(in.Expires) {
		t.Fatalf("pending after reopen %+v", pending)
	}
	for _, k := range []Credential{ka, kb} {
		if _, _, err := e.Accounts().Authenticate(k.Secret); err != nil {
			t.Fatalf("key %s after reopen: %v", k.Name, err)
		}
	}
	if _, _, err := e.Accounts().Authenticate(kgone.Secret); CodeOf(err) != CodeUnauthenticated {
		t.Fatalf("deleted key after reopen: %v", err)
	}
	if got := e.Accounts().ListAPIKeys(a); len(got) != 1 || got[0].Name != "main" {
		t.Fatalf("alice's keys after reopen %+v", got)
	}
	if got := e.Accounts().ListAPIKeys(env.bob.ID); len(got) != 1 || got[0].Workspace != env.ws.Core {
		t.Fatalf("bob's keys after reopen %+v", got)
	}
	_, err = e.Accounts().CreateAPIKey(a, "main", "", "")
	mustCode(t, err, CodeConflict, "already exists")
	if _, err := e.Accounts().CreateUser(NewUser{Email: "BOBBY@example.com"}); CodeOf(err) != CodeConflict {
		t.Fatalf("updated email not kept unique after reopen: %v", err)
	}

	// The invite key survives, and acceptance does too.
	mustOK(t, e.Accounts().AcceptInvite(env.carol.ID, ws, key))
	env.reopen()
	e = env.e
	if role, ok := e.Accounts().MemberRole(ws, env.carol.ID); !ok || role != RoleMaintainer {
		t.Fatalf("carol's role after reopen %q %v", role, ok)
	}
	mustCode(t, e.Accounts().AcceptInvite(env.carol.ID, ws, key), CodeNotFound, "not found")
	mustCode(t, e.Accounts().DeleteInvite(a, ws, in.ID), CodeInvalid, "already accepted")
}

// TestHasUsers: a new catalog has no user; Bootstrap makes the first,
// which a reopen keeps; deleting the last one leaves none again.
func TestHasUsers(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{})
	mustOK(t, err)
	if e.Accounts().HasUsers() {
		t.Fatal("a new catalog has users")
	}
	res, err := e.Accounts().Bootstrap(BootstrapRequest{User: NewUser{Email: "admin@example.com", Admin: true},
		Workspace: "Team", KeyName: "first"})
	mustOK(t, err)
	if !e.Accounts().HasUsers() {
		t.Fatal("no user after Bootstrap")
	}
	mustOK(t, e.Close())
	e, err = Open(dir, Options{})
	mustOK(t, err)
	defer e.Close()
	if !e.Accounts().HasUsers() {
		t.Fatal("no user after a reopen")
	}
	mustOK(t, e.Accounts().DeleteWorkspace(res.User.ID, res.Workspace.ID()))
	mustOK(t, e.Accounts().DeleteUser(res.User.ID))
	if e.Accounts().HasUsers() {
		t.Fatal("users after the last one was deleted")
	}
}
