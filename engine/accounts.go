package engine

import (
	"strings"
	"sync"
	"time"

	"github.com/coppice-db/coppice/engine/internal/model"
)

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
func (a *Accounts) apply(cmd catCommand) (any, error) { return a.e.applyCatalog(cmd, nil) }

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

const keyAlphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// newKeySecret returns a fresh API key secret.
func newKeySecret() string { return "cpk_" + model.RandomString(40, keyAlphabet) }

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
		secret = newKeySecret()
	}
	now := e.now()
	u := e.newUser(req.User, now)
	cmd := &bootstrap{
		User:      u,
		Workspace: newWorkspace(req.Workspace, slugify(req.Workspace), now),
		Key:       APIKey{Name: req.KeyName, UserID: u.ID, CreatedAt: now, Hash: HashKey(secret)},
	}
	if _, err := a.apply(cmd); err != nil {
		return BootstrapResult{}, err
	}
	return BootstrapResult{User: cmd.User, Workspace: cmd.Workspace, Key: Credential{Name: req.KeyName, Secret: secret}}, nil
}

// newUser resolves a user to create: its id and creation time.
func (e *Engine) newUser(u NewUser, now time.Time) User {
	return User{ID: e.ids.Next("usr_", now), Email: u.Email, Fullname: u.Fullname, Image: u.Image, Admin: u.Admin, CreatedAt: now}
}

// CreateUser creates a user.
func (a *Accounts) CreateUser(u NewUser) (*User, error) {
	if !model.ValidEmail(u.Email) {
		return nil, model.Invalidf("invalid email address [%s]", u.Email)
	}
	res, err := a.apply(&createUser{User: a.e.newUser(u, a.e.now())})
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
		secret = newKeySecret()
	}
	key := APIKey{Name: name, UserID: userID, Workspace: workspace, CreatedAt: a.e.now(), Hash: HashKey(secret)}
	if _, err := a.apply(&createAPIKey{Key: key}); err != nil {
		return Credential{}, err
	}
	return Credential{Name: name, Secret: secret}, nil
}

// Authenticate returns the user and key an API key secret belongs to, or
// CodeUnauthenticated.
func (a *Accounts) Authenticate(secret string) (*User, *APIKey, error) {
	e := a.e
	h, known := e.hashes.get(secret)
	if !known {
		h = HashKey(secret)
	}
	e.cat.mu.RLock()
	k := e.cat.keys[h]
	var u *User
	if k != nil {
		u = e.cat.users[k.UserID]
	}
	e.cat.mu.RUnlock()
	if u == nil {
		if known {
			e.hashes.forget(secret) // revoked
		}
		return nil, nil, Errorf(CodeUnauthenticated, "invalid API key")
	}
	if !known {
		e.hashes.put(secret, h)
	}
	return u, k, nil
}

// keyHashes remembers the hashes of the secrets of valid keys, so that a
// client sending the same key on every request pays for hashing it once.
// Only secrets that authenticated get in, and a bounded number of them; the
// key itself is still looked up by hash on every request, so a revoked key
// fails at once.
type keyHashes struct {
	mu sync.RWMutex
	m  map[string][32]byte
}

// maxKeyHashes bounds the secrets keyHashes holds.
const maxKeyHashes = 1024

func (kh *keyHashes) get(secret string) ([32]byte, bool) {
	kh.mu.RLock()
	h, ok := kh.m[secret]
	kh.mu.RUnlock()
	return h, ok
}

func (kh *keyHashes) put(secret string, h [32]byte) {
	kh.mu.Lock()
	defer kh.mu.Unlock()
	if kh.m == nil {
		kh.m = map[string][32]byte{}
	}
	if len(kh.m) < maxKeyHashes {
		kh.m[strings.Clone(secret)] = h
	}
}

func (kh *keyHashes) forget(secret string) {
	kh.mu.Lock()
	delete(kh.m, secret)
	kh.mu.Unlock()
}

// APIKeyInfo describes an API key without its secret.
type APIKeyInfo struct {
	Name      string
	CreatedAt time.Time
	// Workspace is the core id the key is scoped to; "" means every
	// workspace the user belongs to.
	Workspace string
}

// GetUser returns a user by id, or CodeNotFound.
func (a *Accounts) GetUser(id string) (User, error) {
	c := a.e.cat
	c.mu.RLock()
	defer c.mu.RUnlock()
	u := c.users[id]
	if u == nil {
		return User{}, model.NotFoundf("user [%s] not found", id)
	}
	return *u, nil
}

// UpdateUser replaces a user's email, full name and image. The email must be
// a valid address not used by another user; fullname and image are free
// text. Whether each field was sent at all is the caller's check.
func (a *Accounts) UpdateUser(id, email, fullname, image string) (User, error) {
	if !model.ValidEmail(email) {
		return User{}, model.Invalidf("invalid email address [%s]", email)
	}
	res, err := a.apply(&updateUser{ID: id, Email: email, Fullname: fullname, Image: image})
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
	_, err := a.apply(&deleteUser{ID: id})
	return err
}

// ListAPIKeys returns a user's API keys by name.
func (a *Accounts) ListAPIKeys(userID string) []APIKeyInfo {
	c := a.e.cat
	c.mu.RLock()
	defer c.mu.RUnlock()
	keys := c.userKeysSorted(userID)
	out := make([]APIKeyInfo, len(keys))
	for i, k := range keys {
		out[i] = APIKeyInfo{Name: k.Name, CreatedAt: k.CreatedAt, Workspace: k.Workspace}
	}
	return out
}

// DeleteAPIKey revokes a user's API key by name, or fails with CodeNotFound.
// Authenticate rejects the key as soon as this returns.
func (a *Accounts) DeleteAPIKey(userID, name string) error {
	_, err := a.apply(&deleteAPIKey{UserID: userID, Name: name})
	return err
}

// userKeysSorted returns a user's API keys by name. The caller holds cat.mu
// or catMu.
func (c *catalog) userKeysSorted(userID string) []*APIKey {
	names := model.SortedKeys(c.userKeys[userID])
	out := make([]*APIKey, 0, len(names))
	for _, n := range names {
		if k := c.keys[c.userKeys[userID][n]]; k != nil {
			out = append(out, k)
		}
	}
	return out
}

// CreateUser is Accounts().CreateUser.
func (e *Engine) CreateUser(u NewUser) (*User, error) { return e.accounts.CreateUser(u) }

// CreateWorkspace is Accounts().CreateWorkspace.
func (e *Engine) CreateWorkspace(userID, name, slug string) (*Workspace, error) {
	return e.accounts.CreateWorkspace(userID, name, slug)
}
