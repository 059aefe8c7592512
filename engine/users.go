package engine

import (
	"strings"
	"sync"
	"time"
)

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

// CreateUser creates a user.
func (e *Engine) CreateUser(u NewUser) (*User, error) {
	if !validEmail(u.Email) {
		return nil, invalidf("invalid email address [%s]", u.Email)
	}
	now := e.now()
	user := &User{ID: e.ids.next("usr_", now), Email: u.Email, Fullname: u.Fullname, Image: u.Image, Admin: u.Admin, CreatedAt: now}
	err := e.runCatalog(func(c *catalog, t *catTx) error {
		if _, ok := c.emails[strings.ToLower(u.Email)]; ok {
			return Errorf(CodeConflict, "a user with email [%s] already exists", u.Email)
		}
		if err := t.putJSON(userKey(user.ID), user); err != nil {
			return err
		}
		if err := t.batch.Set(emailKey(user.Email), []byte(user.ID), nil); err != nil {
			return err
		}
		t.after = append(t.after, func(c *catalog) {
			c.users[user.ID] = user
			c.emails[strings.ToLower(user.Email)] = user.ID
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return user, nil
}

// CreateAPIKey creates a key for a user, optionally scoped to one workspace
// (core id). secret, when not empty, is the key to store (bootstrap); else one
// is generated. The secret is returned once and stored only as a hash.
func (e *Engine) CreateAPIKey(userID, name, workspace, secret string) (Credential, error) {
	if err := checkName("API key", name); err != nil {
		return Credential{}, err
	}
	if secret == "" {
		secret = "cpk_" + randomString(40, keyAlphabet)
	}
	key := &APIKey{Name: name, UserID: userID, Workspace: workspace, CreatedAt: e.now(), Hash: HashKey(secret)}
	err := e.runCatalog(func(c *catalog, t *catTx) error {
		if c.users[userID] == nil {
			return notFoundf("user [%s] not found", userID)
		}
		if workspace != "" && c.members[workspace][userID] == nil {
			return Errorf(CodeForbidden, "no access to workspace [%s]", workspace)
		}
		if _, dup := c.keys[key.Hash]; dup {
			return Errorf(CodeConflict, "this key already exists")
		}
		if c.keyByName(userID, name) != nil {
			return Errorf(CodeConflict, "API key [%s] already exists", name)
		}
		if err := t.putJSON(apiKeyKey(key.Hash), key); err != nil {
			return err
		}
		if err := t.batch.Set(userAPIKeyKey(userID, name), key.Hash[:], nil); err != nil {
			return err
		}
		t.after = append(t.after, func(c *catalog) { c.addKey(key) })
		return nil
	})
	if err != nil {
		return Credential{}, err
	}
	return Credential{Name: name, Secret: secret}, nil
}

// Authenticate returns the user and key an API key secret belongs to, or
// CodeUnauthenticated.
func (e *Engine) Authenticate(secret string) (*User, *APIKey, error) {
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
func (e *Engine) GetUser(id string) (User, error) {
	e.cat.mu.RLock()
	defer e.cat.mu.RUnlock()
	u := e.cat.users[id]
	if u == nil {
		return User{}, notFoundf("user [%s] not found", id)
	}
	return *u, nil
}

// UpdateUser replaces a user's email, full name and image. The email must be
// a valid address not used by another user; fullname and image are free
// text. Whether each field was sent at all is the caller's check.
func (e *Engine) UpdateUser(id, email, fullname, image string) (User, error) {
	if !validEmail(email) {
		return User{}, invalidf("invalid email address [%s]", email)
	}
	var out User
	err := e.runCatalog(func(c *catalog, t *catTx) error {
		old := c.users[id]
		if old == nil {
			return notFoundf("user [%s] not found", id)
		}
		oldLower, newLower := strings.ToLower(old.Email), strings.ToLower(email)
		if other, ok := c.emails[newLower]; ok && other != id {
			// Spec §4.6 lists no 409 for user operations: a taken address
			// is bad input.
			return invalidf("a user with email [%s] already exists", email)
		}
		u := *old
		u.Email, u.Fullname, u.Image = email, fullname, image
		if err := t.putJSON(userKey(id), &u); err != nil {
			return err
		}
		if oldLower != newLower {
			if err := t.delete(emailKey(old.Email)); err != nil {
				return err
			}
		}
		if err := t.batch.Set(emailKey(email), []byte(id), nil); err != nil {
			return err
		}
		out = u
		t.after = append(t.after, func(c *catalog) {
			delete(c.emails, oldLower)
			c.emails[newLower] = id
			c.users[id] = &u
		})
		return nil
	})
	return out, err
}

// DeleteUser deletes a user with all their API keys and memberships. It fails
// with CodeInvalid (spec §4.6 lists no 409 for user operations, and
// demoting the last owner answers the same) while the user is the last owner of a workspace, even one
// they are alone in: a workspace always keeps an owner, and deleting an
// account never deletes data implicitly. Promote another owner or delete the
// workspace first. Invites addressed to the user's email stay: they belong to
// the address, not the account.
func (e *Engine) DeleteUser(id string) error {
	return e.runCatalog(func(c *catalog, t *catTx) error {
		u := c.users[id]
		if u == nil {
			return notFoundf("user [%s] not found", id)
		}
		var cores, sole []string
		for _, core := range sortedKeys(c.members) {
			m := c.members[core][id]
			if m == nil {
				continue
			}
			cores = append(cores, core)
			if m.Role == RoleOwner && c.owners(core) == 1 {
				sole = append(sole, c.workspaces[core].ID())
			}
		}
		if len(sole) > 0 {
			return Errorf(CodeInvalid, "user is the last owner of workspace [%s]: make another member an owner or delete the workspace first",
				strings.Join(sole, "], ["))
		}
		keys := c.userKeysSorted(id)
		for _, k := range keys {
			if err := t.delete(apiKeyKey(k.Hash), userAPIKeyKey(id, k.Name)); err != nil {
				return err
			}
		}
		for _, core := range cores {
			if err := t.delete(memberKey(core, id)); err != nil {
				return err
			}
		}
		if err := t.delete(userKey(id), emailKey(u.Email)); err != nil {
			return err
		}
		t.after = append(t.after, func(c *catalog) {
			for _, k := range keys {
				c.removeKey(k)
			}
			for _, core := range cores {
				delete(c.members[core], id)
			}
			delete(c.emails, strings.ToLower(u.Email))
			delete(c.users, id)
		})
		return nil
	})
}

// ListAPIKeys returns a user's API keys by name.
func (e *Engine) ListAPIKeys(userID string) []APIKeyInfo {
	e.cat.mu.RLock()
	defer e.cat.mu.RUnlock()
	keys := e.cat.userKeysSorted(userID)
	out := make([]APIKeyInfo, len(keys))
	for i, k := range keys {
		out[i] = APIKeyInfo{Name: k.Name, CreatedAt: k.CreatedAt, Workspace: k.Workspace}
	}
	return out
}

// DeleteAPIKey revokes a user's API key by name, or fails with CodeNotFound.
// Authenticate rejects the key as soon as this returns.
func (e *Engine) DeleteAPIKey(userID, name string) error {
	return e.runCatalog(func(c *catalog, t *catTx) error {
		k := c.keyByName(userID, name)
		if k == nil {
			return notFoundf("API key [%s] not found", name)
		}
		if err := t.delete(apiKeyKey(k.Hash), userAPIKeyKey(userID, name)); err != nil {
			return err
		}
		t.after = append(t.after, func(c *catalog) { c.removeKey(k) })
		return nil
	})
}

// userKeysSorted returns a user's API keys by name. The caller holds cat.mu
// or catMu.
func (c *catalog) userKeysSorted(userID string) []*APIKey {
	names := sortedKeys(c.userKeys[userID])
	out := make([]*APIKey, 0, len(names))
	for _, n := range names {
		if k := c.keys[c.userKeys[userID][n]]; k != nil {
			out = append(out, k)
		}
	}
	return out
}

// CreateWorkspace creates a workspace whose single owner is userID. An empty
// slug derives from the name.
func (e *Engine) CreateWorkspace(userID, name, slug string) (*Workspace, error) {
	if strings.TrimSpace(name) == "" {
		return nil, invalidf("workspace name is required")
	}
	if slug == "" {
		slug = slugify(name)
	} else if err := checkName("workspace slug", slug); err != nil {
		return nil, err
	}
	now := e.now()
	core := randomString(6, "0123456789abcdefghijklmnopqrstuvwxyz")
	ws := &Workspace{Core: core, Name: name, Slug: slug, Plan: "free", CreatedAt: now}
	m := &Member{Workspace: core, UserID: userID, Role: RoleOwner, CreatedAt: now}
	err := e.runCatalog(func(c *catalog, t *catTx) error {
		if c.users[userID] == nil {
			return notFoundf("user [%s] not found", userID)
		}
		if c.workspaces[core] != nil {
			return Errorf(CodeConflict, "workspace id collision, retry")
		}
		if err := t.putJSON(workspaceKey(core), ws); err != nil {
			return err
		}
		if err := t.putJSON(memberKey(core, userID), m); err != nil {
			return err
		}
		t.after = append(t.after, func(c *catalog) {
			c.workspaces[core] = ws
			c.member(core)[userID] = m
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ws, nil
}

// WorkspaceCore extracts the 6-character core from a public workspace id or
// host label ("slug-abc123" or "abc123").
func WorkspaceCore(id string) (string, bool) {
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		id = id[i+1:]
	}
	if len(id) != 6 {
		return id, false
	}
	var core [6]byte
	for i := range 6 {
		c := id[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return id, false
		}
		core[i] = c
	}
	if string(core[:]) == id { // already lower case: no copy
		return id, true
	}
	return string(core[:]), true
}

// slugify replaces each run of characters outside [a-zA-Z0-9_~-] by one '-'.
func slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range name {
		ok := r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '~' || r == '-')
		if ok {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	s := b.String()
	if s == "" || s == "-" {
		return "ws"
	}
	return s
}
