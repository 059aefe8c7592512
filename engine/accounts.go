package engine

import (
	"strings"

	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// The account system's vocabulary is the catalog's (internal/catalog);
// these are its public names.
type (
	// Role is a workspace member's role.
	Role = catalog.Role
	// User is an account.
	User = catalog.User
	// APIKey is a stored API key; the secret itself is never stored, only
	// its SHA-256.
	APIKey = catalog.APIKey
	// APIKeyInfo describes an API key without its secret.
	APIKeyInfo = catalog.APIKeyInfo
	// Workspace is a stored workspace; its public id is Slug + "-" + Core.
	Workspace = catalog.Workspace
	// WorkspaceInfo is a workspace as one of its members sees it.
	WorkspaceInfo = catalog.WorkspaceInfo
	// MemberInfo is a member of a workspace with their account details.
	MemberInfo = catalog.MemberInfo
	// Invite is an invitation of an email address into a workspace.
	Invite = catalog.Invite
)

// Roles (spec §2.12).
const (
	RoleOwner      = catalog.RoleOwner
	RoleMaintainer = catalog.RoleMaintainer
)

// InviteTTL is how long an invite can be accepted after it is created.
const InviteTTL = catalog.InviteTTL

// HashKey returns the stored form of an API key or invite key.
func HashKey(secret string) [32]byte { return catalog.HashKey(secret) }

// WorkspaceCore extracts the 6-character core from a public workspace id or
// host label ("slug-abc123" or "abc123").
func WorkspaceCore(id string) (string, bool) { return catalog.WorkspaceCore(id) }

// Accounts is the account system of an engine: users, their API keys,
// workspaces with their members, and invites. The HTTP service requires
// it; a program that embeds the engine may ignore it, since databases
// outside any workspace need no account (CreateDatabaseRequest.Workspace
// ""). Every change is one catalog command, applied as one synced batch.
//
// Workspace, member and invite operations take the workspace as a public id
// ("slug-core") or its bare core, and the id of the user making the request.
// A caller who is not a member of the workspace, or names one that does not
// exist, gets CodeForbidden "no access to workspace [<ws>]" in both cases, so
// the answer never tells whether a workspace exists. Owner-only operations
// refuse a maintainer with CodeForbidden as well.
type Accounts struct {
	e *Engine
}

// Accounts returns the engine's account system.
func (e *Engine) Accounts() *Accounts { return &e.accounts }

// apply applies a catalog command.
func (a *Accounts) apply(cmd catalog.Command) (any, error) { return a.e.applyCatalog(cmd) }

// NewUser describes a user to create.
type NewUser struct {
	Email    string
	Fullname string
	Image    string
	Admin    bool
}

// Credential is a freshly created API key: the secret is shown only once.
type Credential struct {
	Name   string
	Secret string
}

// BootstrapRequest describes the first accounts of a server: a user, a
// workspace they own and an API key of theirs, not scoped to it.
type BootstrapRequest struct {
	User NewUser
	// Workspace is the workspace's name; its slug derives from it.
	Workspace string
	// KeyName names the key; Key, when not empty, is its secret, else one
	// is generated.
	KeyName, Key string
}

// BootstrapResult is what Bootstrap created; Key holds the secret, shown
// only this once.
type BootstrapResult struct {
	User      User
	Workspace Workspace
	Key       Credential
}

// Bootstrap creates the first accounts of a server in one command: all of
// them, or none when any of them cannot be created.
func (a *Accounts) Bootstrap(req BootstrapRequest) (BootstrapResult, error) {
	e := a.e
	if !model.ValidEmail(req.User.Email) {
		return BootstrapResult{}, model.Invalidf("invalid email address [%s]", req.User.Email)
	}
	if strings.TrimSpace(req.Workspace) == "" {
		return BootstrapResult{}, model.Invalidf("workspace name is required")
	}
	if err := model.CheckName("API key", req.KeyName); err != nil {
		return BootstrapResult{}, err
	}
	secret := req.Key
	if secret == "" {
		secret = catalog.NewKeySecret()
	}
	now := e.now()
	u := e.newUser(req.User)
	cmd := &catalog.Bootstrap{
		User:      u,
		Workspace: catalog.NewWorkspace(req.Workspace, catalog.Slugify(req.Workspace), now),
		Key:       APIKey{Name: req.KeyName, UserID: u.ID, CreatedAt: now, Hash: HashKey(secret)},
	}
	if _, err := a.apply(cmd); err != nil {
		return BootstrapResult{}, err
	}
	return BootstrapResult{User: cmd.User, Workspace: cmd.Workspace, Key: Credential{Name: req.KeyName, Secret: secret}}, nil
}

// newUser resolves a user to create: its id and creation time.
func (e *Engine) newUser(u NewUser) User {
	return catalog.NewUser(e.ids, u.Email, u.Fullname, u.Image, u.Admin, e.now())
}

// CreateUser creates a user.
func (a *Accounts) CreateUser(u NewUser) (*User, error) {
	if !model.ValidEmail(u.Email) {
		return nil, model.Invalidf("invalid email address [%s]", u.Email)
	}
	res, err := a.apply(&catalog.CreateUser{User: a.e.newUser(u)})
	if err != nil {
		return nil, err
	}
	user := res.(User)
	return &user, nil
}

// CreateAPIKey creates a key for a user, optionally scoped to one workspace
// (core id). secret, when not empty, is the key to store; else one is
// generated. The secret is returned once and stored only as a hash.
func (a *Accounts) CreateAPIKey(userID, name, workspace, secret string) (Credential, error) {
	if err := model.CheckName("API key", name); err != nil {
		return Credential{}, err
	}
	if secret == "" {
		secret = catalog.NewKeySecret()
	}
	key := APIKey{Name: name, UserID: userID, Workspace: workspace, CreatedAt: a.e.now(), Hash: HashKey(secret)}
	if _, err := a.apply(&catalog.CreateAPIKey{Key: key}); err != nil {
		return Credential{}, err
	}
	return Credential{Name: name, Secret: secret}, nil
}

// NewKeySecret returns a fresh API key secret, of the form CreateAPIKey
// and Bootstrap generate when given none.
func NewKeySecret() string { return catalog.NewKeySecret() }

// Authenticate returns the user and key an API key secret belongs to, or
// CodeUnauthenticated.
func (a *Accounts) Authenticate(secret string) (*User, *APIKey, error) {
	return a.e.cat.Authenticate(secret)
}

// HasUsers reports whether any user exists. Bootstrap creates the first;
// before it, or once the last user is deleted, no API key exists and
// nobody can sign in, so a server bootstraps when this is false. It reads
// this node's catalog: in a cluster, pass Cluster.CatalogBarrier first to
// count the users created on the other nodes.
func (a *Accounts) HasUsers() bool { return a.e.cat.HasUsers() }

// GetUser returns a user by id, or CodeNotFound.
func (a *Accounts) GetUser(id string) (User, error) { return a.e.cat.User(id) }

// UpdateUser replaces a user's email, full name and image. The email must be
// a valid address not used by another user; fullname and image are free
// text. Whether each field was sent at all is the caller's check.
func (a *Accounts) UpdateUser(id, email, fullname, image string) (User, error) {
	if !model.ValidEmail(email) {
		return User{}, model.Invalidf("invalid email address [%s]", email)
	}
	res, err := a.apply(&catalog.UpdateUser{ID: id, Email: email, Fullname: fullname, Image: image})
	if err != nil {
		return User{}, err
	}
	return res.(User), nil
}

// DeleteUser deletes a user with all their API keys and memberships. It fails
// with CodeInvalid (spec §4.6 lists no 409 for user operations, and
// demoting the last owner answers the same) while the user is the last owner of a workspace, even one
// they are alone in: a workspace always keeps an owner, and deleting an
// account never deletes data implicitly. Promote another owner or delete the
// workspace first. Invites addressed to the user's email stay: they belong to
// the address, not the account.
func (a *Accounts) DeleteUser(id string) error {
	_, err := a.apply(&catalog.DeleteUser{ID: id})
	return err
}

// ListAPIKeys returns a user's API keys by name.
func (a *Accounts) ListAPIKeys(userID string) []APIKeyInfo { return a.e.cat.APIKeys(userID) }

// DeleteAPIKey revokes a user's API key by name, or fails with CodeNotFound.
// Authenticate rejects the key as soon as this returns.
func (a *Accounts) DeleteAPIKey(userID, name string) error {
	_, err := a.apply(&catalog.DeleteAPIKey{UserID: userID, Name: name})
	return err
}

// MemberRole returns a user's role in a workspace (public id or core); ok is
// false for a non-member or an unknown workspace. The HTTP layer uses it for
// data-plane and database access checks.
func (a *Accounts) MemberRole(ws, userID string) (role Role, ok bool) {
	return a.e.cat.MemberRole(ws, userID)
}

// UserWorkspaces returns the core ids of the workspaces a user belongs to, in
// order.
func (a *Accounts) UserWorkspaces(userID string) []string { return a.e.cat.UserWorkspaces(userID) }

// ListWorkspaces returns the workspaces a user is a member of, with the
// user's role, by public id.
func (a *Accounts) ListWorkspaces(userID string) []WorkspaceInfo { return a.e.cat.Workspaces(userID) }

// GetWorkspace returns a workspace to any of its members.
func (a *Accounts) GetWorkspace(userID, ws string) (WorkspaceInfo, error) {
	return a.e.cat.Workspace(userID, ws)
}

// UpdateWorkspace renames a workspace (owner only). name is required; an
// empty slug derives from the name, as at creation. The core, and so the
// workspace's identity, never changes; its public id follows the slug.
func (a *Accounts) UpdateWorkspace(userID, ws, name, slug string) (WorkspaceInfo, error) {
	res, err := a.apply(&catalog.UpdateWorkspace{Caller: userID, WS: ws, Name: name, Slug: slug})
	if err != nil {
		return WorkspaceInfo{}, err
	}
	return res.(WorkspaceInfo), nil
}

// CreateWorkspace creates a workspace whose single owner is userID. An empty
// slug derives from the name.
func (a *Accounts) CreateWorkspace(userID, name, slug string) (*Workspace, error) {
	if strings.TrimSpace(name) == "" {
		return nil, model.Invalidf("workspace name is required")
	}
	if slug == "" {
		slug = catalog.Slugify(name)
	} else if err := model.CheckName("workspace slug", slug); err != nil {
		return nil, err
	}
	res, err := a.apply(&catalog.CreateWorkspace{Workspace: catalog.NewWorkspace(name, slug, a.e.now()), Owner: userID})
	if err != nil {
		return nil, err
	}
	ws := res.(Workspace)
	return &ws, nil
}

// DeleteWorkspace deletes a workspace (owner only) in one command: every
// database of it with all their data, its members, its invites and the API
// keys scoped to it.
func (a *Accounts) DeleteWorkspace(userID, ws string) error {
	_, err := a.apply(&catalog.DeleteWorkspace{Caller: userID, WS: ws})
	return err
}

// ListMembers returns the members of a workspace by email, and its pending
// invites (neither accepted nor expired) by email. Any member may list them.
func (a *Accounts) ListMembers(userID, ws string) ([]MemberInfo, []Invite, error) {
	return a.e.cat.Members(userID, ws, a.e.now())
}

// SetMemberRole changes a member's role (owner only). Demoting the last owner
// fails with CodeInvalid: compat-api.md §7 recommends 400 for it, and the
// statuses spec §4.6 lists for member operations include no 409.
func (a *Accounts) SetMemberRole(callerID, ws, userID string, role Role) error {
	_, err := a.apply(&catalog.SetMemberRole{Caller: callerID, WS: ws, UserID: userID, Role: role})
	return err
}

// RemoveMember removes a member from a workspace, with their API keys scoped
// to it. Owners may remove anyone; any member may remove themself. Removing
// the last owner fails with CodeInvalid (as demoting them does): delete the
// workspace instead, or make another member an owner first.
func (a *Accounts) RemoveMember(callerID, ws, userID string) error {
	_, err := a.apply(&catalog.RemoveMember{Caller: callerID, WS: ws, UserID: userID})
	return err
}

// CreateInvite invites an email address into a workspace with a role (owner
// only). It returns the invite and its secret key ("ik_" + alphanumerics):
// the key is shown only here and stored only as a hash, and whoever holds it
// accepts the invite as the user with that email. An email that is already a
// member's, or has a pending invite, fails with CodeConflict; an expired,
// never accepted invite for the email is replaced.
func (a *Accounts) CreateInvite(callerID, ws, email string, role Role) (Invite, string, error) {
	now := a.e.now()
	secret := "ik_" + model.RandomString(40, catalog.KeyAlphabet)
	in := Invite{
		ID: a.e.ids.Next("", now), Email: email, Role: role,
		Expires: now.Add(InviteTTL), KeyHash: HashKey(secret), CreatedAt: now,
	}
	res, err := a.apply(&catalog.CreateInvite{Caller: callerID, WS: ws, Invite: in})
	if err != nil {
		return Invite{}, "", err
	}
	return res.(Invite), secret, nil
}

// AcceptInvite makes the caller a member of a workspace with the role of the
// invite whose secret key is key, and marks the invite accepted: it
// leaves the pending list and its key stops working. A key that is unknown,
// expired, already used or of another workspace fails with CodeNotFound; a
// caller whose email is not the invite's with CodeForbidden; a caller who is
// already a member with CodeConflict.
func (a *Accounts) AcceptInvite(callerID, ws, key string) error {
	_, err := a.apply(&catalog.AcceptInvite{Caller: callerID, WS: ws, KeyHash: HashKey(key), Now: a.e.now()})
	return err
}

// ResendInvite would send an invite's email again (owner only). There is no
// mailer, so it only checks: an unknown invite fails with CodeNotFound, an
// accepted one with CodeInvalid (compat-api.md §7: 400).
func (a *Accounts) ResendInvite(callerID, ws, inviteID string) error {
	return a.e.cat.CheckResend(callerID, ws, inviteID)
}

// UpdateInvite changes the role of an invite in place (owner only): the id,
// key and expiry stay, and nobody is notified. An accepted invite fails with
// CodePrecondition, the 422 spec §4.6 lists for this operation: the request
// is well formed, the invite is just past the state where it can change.
func (a *Accounts) UpdateInvite(callerID, ws, inviteID string, role Role) (Invite, error) {
	res, err := a.apply(&catalog.UpdateInvite{Caller: callerID, WS: ws, InviteID: inviteID, Role: role})
	if err != nil {
		return Invite{}, err
	}
	return res.(Invite), nil
}

// DeleteInvite deletes an invite that is not accepted, expired or not (owner
// only). An accepted invite fails with CodeInvalid: spec §3 forbids it, and
// 400 is the status spec §4.6 lists for delete invite that fits.
func (a *Accounts) DeleteInvite(callerID, ws, inviteID string) error {
	_, err := a.apply(&catalog.DeleteInvite{Caller: callerID, WS: ws, InviteID: inviteID})
	return err
}
