package catalog

import (
	"strings"
	"sync"
	"time"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// APIKeyInfo describes an API key without its secret.
type APIKeyInfo struct {
	Name      string
	CreatedAt time.Time
	// Workspace is the core id the key is scoped to; "" means every
	// workspace the user belongs to.
	Workspace string
}

// KeyAlphabet is the alphabet of generated secrets.
const KeyAlphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// NewKeySecret returns a fresh API key secret.
func NewKeySecret() string { return "cpk_" + model.RandomString(40, KeyAlphabet) }

// NewUser resolves a user to create: its id, from ids, and its creation
// time.
func NewUser(ids *model.IDGen, email, fullname, image string, admin bool, now time.Time) User {
	return User{ID: ids.Next("usr_", now), Email: email, Fullname: fullname, Image: image, Admin: admin, CreatedAt: now}
}

// User returns a user by id, or CodeNotFound.
func (c *Catalog) User(id string) (User, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	u := c.users[id]
	if u == nil {
		return User{}, model.NotFoundf("user [%s] not found", id)
	}
	return *u, nil
}

// HasUsers reports whether any user exists.
func (c *Catalog) HasUsers() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.users) > 0
}

// APIKeys returns a user's API keys by name.
func (c *Catalog) APIKeys(userID string) []APIKeyInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	keys := c.userKeysSorted(userID)
	out := make([]APIKeyInfo, len(keys))
	for i, k := range keys {
		out[i] = APIKeyInfo{Name: k.Name, CreatedAt: k.CreatedAt, Workspace: k.Workspace}
	}
	return out
}

// userKeysSorted returns a user's API keys by name. The caller holds mu,
// or runs a command.
func (c *Catalog) userKeysSorted(userID string) []*APIKey {
	names := model.SortedKeys(c.userKeys[userID])
	out := make([]*APIKey, 0, len(names))
	for _, n := range names {
		if k := c.keys[c.userKeys[userID][n]]; k != nil {
			out = append(out, k)
		}
	}
	return out
}

// Authenticate returns the user and key an API key secret belongs to, or
// CodeUnauthenticated.
func (c *Catalog) Authenticate(secret string) (*User, *APIKey, error) {
	h, known := c.hashes.get(secret)
	if !known {
		h = HashKey(secret)
	}
	c.mu.RLock()
	k := c.keys[h]
	var u *User
	if k != nil {
		u = c.users[k.UserID]
	}
	c.mu.RUnlock()
	if u == nil {
		if known {
			c.hashes.forget(secret) // revoked
		}
		return nil, nil, model.Errorf(model.CodeUnauthenticated, "invalid API key")
	}
	if !known {
		c.hashes.put(secret, h)
	}
	return u, k, nil
}

// keyHashes remembers the hashes of the secrets of valid keys, so that a
// client sending the same key on every request pays for hashing it once.
// Only secrets that authenticated get in, and a bounded number of them; the
// key itself is still looked up by hash on every request, so a revoked key
// fails at once.
type keyHashes struct {
	mu sync.RWMutex // a leaf: nothing is taken under it
	m  map[string][32]byte
}

// maxKeyHashes bounds the secrets keyHashes holds.
const maxKeyHashes = 1024

// get returns the remembered hash of secret.
func (kh *keyHashes) get(secret string) ([32]byte, bool) {
	kh.mu.RLock()
	h, ok := kh.m[secret]
	kh.mu.RUnlock()
	return h, ok
}

// put remembers the hash of a secret that authenticated, while there is
// room.
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

// forget drops the hash of a secret that no longer authenticates.
func (kh *keyHashes) forget(secret string) {
	kh.mu.Lock()
	delete(kh.m, secret)
	kh.mu.Unlock()
}

// CreateUser creates a user; the result is the User.
type CreateUser struct {
	User User `json:"user"`
}

func (*CreateUser) kind() Kind { return kindCreateUser }

func (cmd *CreateUser) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	if err := c.checkNewUser(&cmd.User); err != nil {
		return nil, err
	}
	if err := writeUser(t, &cmd.User); err != nil {
		return nil, err
	}
	return cmd.User, nil
}

// checkNewUser fails when another user has u's email.
func (c *Catalog) checkNewUser(u *User) error {
	if _, ok := c.emails[strings.ToLower(u.Email)]; ok {
		return model.Errorf(model.CodeConflict, "a user with email [%s] already exists", u.Email)
	}
	return nil
}

// writeUser stages the creation of a user.
func writeUser(t *Tx, u *User) error {
	user := *u
	if err := t.putJSON(userKey(user.ID), &user); err != nil {
		return err
	}
	if err := t.batch.Set(emailKey(user.Email), []byte(user.ID), nil); err != nil {
		return err
	}
	t.after = append(t.after, func(c *Catalog) {
		c.users[user.ID] = &user
		c.emails[strings.ToLower(user.Email)] = user.ID
	})
	return nil
}

// UpdateUser replaces a user's email, full name and image; the result is
// the User.
type UpdateUser struct {
	ID       string `json:"id"`
	Email    string `json:"email"`
	Fullname string `json:"fullname"`
	Image    string `json:"image"`
}

func (*UpdateUser) kind() Kind { return kindUpdateUser }

func (cmd *UpdateUser) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	id, email := cmd.ID, cmd.Email
	old := c.users[id]
	if old == nil {
		return nil, model.NotFoundf("user [%s] not found", id)
	}
	oldLower, newLower := strings.ToLower(old.Email), strings.ToLower(email)
	if other, ok := c.emails[newLower]; ok && other != id {
		// Spec §4.6 lists no 409 for user operations: a taken address is
		// bad input.
		return nil, model.Invalidf("a user with email [%s] already exists", email)
	}
	u := *old
	u.Email, u.Fullname, u.Image = email, cmd.Fullname, cmd.Image
	if err := t.putJSON(userKey(id), &u); err != nil {
		return nil, err
	}
	if oldLower != newLower {
		if err := t.delete(emailKey(old.Email)); err != nil {
			return nil, err
		}
	}
	if err := t.batch.Set(emailKey(email), []byte(id), nil); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) {
		delete(c.emails, oldLower)
		c.emails[newLower] = id
		c.users[id] = &u
	})
	return u, nil
}

// DeleteUser deletes a user with their API keys and memberships, unless
// they are the last owner of a workspace (see Accounts.DeleteUser).
type DeleteUser struct {
	ID string `json:"id"`
}

func (*DeleteUser) kind() Kind { return kindDeleteUser }

func (cmd *DeleteUser) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	id := cmd.ID
	u := c.users[id]
	if u == nil {
		return nil, model.NotFoundf("user [%s] not found", id)
	}
	var cores, sole []string
	for _, core := range model.SortedKeys(c.members) {
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
		return nil, model.Errorf(model.CodeInvalid, "user is the last owner of workspace [%s]: make another member an owner or delete the workspace first",
			strings.Join(sole, "], ["))
	}
	keys := c.userKeysSorted(id)
	for _, k := range keys {
		if err := t.delete(apiKeyKey(k.Hash), userAPIKeyKey(id, k.Name)); err != nil {
			return nil, err
		}
	}
	for _, core := range cores {
		if err := t.delete(memberKey(core, id)); err != nil {
			return nil, err
		}
	}
	if err := t.delete(userKey(id), emailKey(u.Email)); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) {
		for _, k := range keys {
			c.removeKey(k)
		}
		for _, core := range cores {
			delete(c.members[core], id)
		}
		delete(c.emails, strings.ToLower(u.Email))
		delete(c.users, id)
	})
	return nil, nil
}

// CreateAPIKey stores an API key, by the hash of its secret.
type CreateAPIKey struct {
	Key APIKey `json:"key"`
}

func (*CreateAPIKey) kind() Kind { return kindCreateAPIKey }

func (cmd *CreateAPIKey) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	key := &cmd.Key
	if c.users[key.UserID] == nil {
		return nil, model.NotFoundf("user [%s] not found", key.UserID)
	}
	if key.Workspace != "" && c.members[key.Workspace][key.UserID] == nil {
		return nil, model.Errorf(model.CodeForbidden, "no access to workspace [%s]", key.Workspace)
	}
	if err := c.checkNewKey(key); err != nil {
		return nil, err
	}
	return nil, writeKey(t, key)
}

// checkNewKey fails when the key's secret or its name is taken.
func (c *Catalog) checkNewKey(key *APIKey) error {
	if _, dup := c.keys[key.Hash]; dup {
		return model.Errorf(model.CodeConflict, "this key already exists")
	}
	if c.keyByName(key.UserID, key.Name) != nil {
		return model.Errorf(model.CodeConflict, "API key [%s] already exists", key.Name)
	}
	return nil
}

// writeKey stages the creation of an API key.
func writeKey(t *Tx, k *APIKey) error {
	key := *k
	if err := t.putJSON(apiKeyKey(key.Hash), &key); err != nil {
		return err
	}
	if err := t.batch.Set(userAPIKeyKey(key.UserID, key.Name), key.Hash[:], nil); err != nil {
		return err
	}
	t.after = append(t.after, func(c *Catalog) { c.addKey(&key) })
	return nil
}

// DeleteAPIKey revokes a user's API key by name.
type DeleteAPIKey struct {
	UserID string `json:"userID"`
	Name   string `json:"name"`
}

func (*DeleteAPIKey) kind() Kind { return kindDeleteAPIKey }

func (cmd *DeleteAPIKey) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	k := c.keyByName(cmd.UserID, cmd.Name)
	if k == nil {
		return nil, model.NotFoundf("API key [%s] not found", cmd.Name)
	}
	if err := t.delete(apiKeyKey(k.Hash), userAPIKeyKey(cmd.UserID, cmd.Name)); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) { c.removeKey(k) })
	return nil, nil
}
