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
