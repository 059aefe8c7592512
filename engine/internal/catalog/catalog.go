package catalog

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
)

// Role is a workspace member's role.
type Role string

// Roles (spec §2.12).
const (
	RoleOwner      Role = "owner"
	RoleMaintainer Role = "maintainer"
)

// User is an account.
type User struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Fullname  string    `json:"fullname"`
	Image     string    `json:"image"`
	Admin     bool      `json:"admin,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// APIKey is a stored API key; the secret itself is never stored, only its
// SHA-256.
type APIKey struct {
	Name      string    `json:"name"`
	UserID    string    `json:"userID"`
	Workspace string    `json:"workspace,omitempty"` // core id the key is scoped to
	CreatedAt time.Time `json:"createdAt"`
	Hash      [32]byte  `json:"hash"`
}

// Workspace is a stored workspace; its public id is Slug + "-" + Core.
type Workspace struct {
	Core      string    `json:"core"`
	Name      string    `json:"name"`
	Slug      string    `json:"slug"`
	Plan      string    `json:"plan"`
	CreatedAt time.Time `json:"createdAt"`
}

// ID returns the public workspace id.
func (w *Workspace) ID() string { return w.Slug + "-" + w.Core }

// Member is a user's membership of a workspace.
type Member struct {
	Workspace string    `json:"workspace"`
	UserID    string    `json:"userID"`
	Role      Role      `json:"role"`
	CreatedAt time.Time `json:"createdAt"`
}

// Invite is an invitation of an email address into a workspace.
type Invite struct {
	ID        string    `json:"id"`
	Workspace string    `json:"workspace"`
	Email     string    `json:"email"`
	Role      Role      `json:"role"`
	Expires   time.Time `json:"expires"`
	KeyHash   [32]byte  `json:"keyHash"`
	Accepted  bool      `json:"accepted,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Database is the placement of a database: where it lives and what it is
// called. Its contents live in its own key range.
type Database struct {
	ID        uint32    `json:"id"`
	Workspace string    `json:"workspace"`
	Name      string    `json:"name"`
	Region    string    `json:"region"`
	CreatedAt time.Time `json:"createdAt"`
	UIColor   string    `json:"uiColor,omitempty"`
	// Replicas are the database's copies in a cluster (cluster.go), and
	// NextReplica the least replica id its group has never used; a single
	// server has none.
	Replicas    []Replica `json:"replicas,omitempty"`
	NextReplica uint64    `json:"nextReplica,omitempty"`
}

// Catalog is the in-memory copy of the global catalog, written through:
// commands stage their writes in a Tx and publish their in-memory changes
// once the batch is applied. Its read methods are safe for concurrent use.
type Catalog struct {
	// mu guards the maps below: readers take it for reading, a command's
	// publication for writing. Nothing is taken under it (see the lock
	// order in package apply).
	mu         sync.RWMutex
	users      map[string]*User
	emails     map[string]string // lower(email) → user id
	keys       map[[32]byte]*APIKey
	userKeys   map[string]map[string][32]byte // user id → key name → hash
	workspaces map[string]*Workspace          // by core
	members    map[string]map[string]*Member  // core → user id → member
	invites    map[string]map[string]*Invite  // core → invite id → invite
	inviteKeys map[[32]byte]string            // hash of invite key → core/id
	databases  map[uint32]*Database
	dbNames    map[string]uint32 // workspace 0x00 name → database id
	dbCounter  uint32
	state      map[string][]byte // server-wide settings
	nodes      map[uint64]*Node  // a cluster's nodes (cluster.go)

	hashes keyHashes // of secrets that authenticated lately
}

// newCatalog returns an empty catalog.
func newCatalog() *Catalog {
	return &Catalog{
		users: map[string]*User{}, emails: map[string]string{}, keys: map[[32]byte]*APIKey{},
		userKeys:   map[string]map[string][32]byte{},
		workspaces: map[string]*Workspace{}, members: map[string]map[string]*Member{},
		invites: map[string]map[string]*Invite{}, inviteKeys: map[[32]byte]string{},
		databases: map[uint32]*Database{}, dbNames: map[string]uint32{}, state: map[string][]byte{},
		nodes: map[uint64]*Node{},
	}
}

// Load reads the whole global catalog.
func Load(r pebble.Reader) (*Catalog, error) {
	c := newCatalog()
	prefix := []byte{codec.NSCatalog}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) < 2 {
			continue
		}
		var err error
		switch k[1] {
		case codec.CatUser:
			u := &User{}
			if err = json.Unmarshal(v, u); err == nil {
				c.users[u.ID] = u
				c.emails[strings.ToLower(u.Email)] = u.ID
			}
		case codec.CatKey:
			a := &APIKey{}
			if err = json.Unmarshal(v, a); err == nil {
				c.addKey(a)
			}
		case codec.CatWorkspace:
			w := &Workspace{}
			if err = json.Unmarshal(v, w); err == nil {
				c.workspaces[w.Core] = w
			}
		case codec.CatMember:
			m := &Member{}
			if err = json.Unmarshal(v, m); err == nil {
				c.member(m.Workspace)[m.UserID] = m
			}
		case codec.CatInvite:
			in := &Invite{}
			if err = json.Unmarshal(v, in); err == nil {
				c.invite(in.Workspace)[in.ID] = in
				if !in.Accepted {
					c.inviteKeys[in.KeyHash] = in.Workspace + "/" + in.ID
				}
			}
		case codec.CatDatabase:
			d := &Database{}
			if err = json.Unmarshal(v, d); err == nil {
				c.setDatabase(d)
			}
		case codec.CatCounter:
			if string(k[2:]) == "db" && len(v) == 8 {
				c.dbCounter = uint32(binary.BigEndian.Uint64(v))
			}
		case codec.CatServerState:
			c.state[string(k[2:])] = append([]byte(nil), v...)
		case codec.CatNode:
			n := &Node{}
			if err = json.Unmarshal(v, n); err == nil {
				c.nodes[n.ID] = n
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return c, it.Error()
}

// member returns the members of workspace core, making the map.
func (c *Catalog) member(core string) map[string]*Member {
	m := c.members[core]
	if m == nil {
		m = map[string]*Member{}
		c.members[core] = m
	}
	return m
}

// addKey records an API key in the key map and the per-user name index.
func (c *Catalog) addKey(k *APIKey) {
	c.keys[k.Hash] = k
	m := c.userKeys[k.UserID]
	if m == nil {
		m = map[string][32]byte{}
		c.userKeys[k.UserID] = m
	}
	m[k.Name] = k.Hash
}

// removeKey forgets an API key: Authenticate rejects it from now on.
func (c *Catalog) removeKey(k *APIKey) {
	delete(c.keys, k.Hash)
	if m := c.userKeys[k.UserID]; m != nil {
		delete(m, k.Name)
		if len(m) == 0 {
			delete(c.userKeys, k.UserID)
		}
	}
}

// keyByName returns a user's API key by name, or nil.
func (c *Catalog) keyByName(userID, name string) *APIKey {
	h, ok := c.userKeys[userID][name]
	if !ok {
		return nil
	}
	return c.keys[h]
}

// invite returns the invites of workspace core, making the map.
func (c *Catalog) invite(core string) map[string]*Invite {
	m := c.invites[core]
	if m == nil {
		m = map[string]*Invite{}
		c.invites[core] = m
	}
	return m
}

// Tx is one catalog command being staged: a batch plus the in-memory
// changes to publish once the batch is applied.
type Tx struct {
	batch *pebble.Batch
	after []func(c *Catalog)
	// release runs when the command ends, whether or not it was applied,
	// after the in-memory changes: it drops locks the command took on
	// databases it changes.
	release []func()
}

// NewTx starts a command that stages its writes into b.
func NewTx(b *pebble.Batch) *Tx { return &Tx{batch: b} }

// Batch is the batch the command stages its writes into.
func (t *Tx) Batch() *pebble.Batch { return t.batch }

// Then adds f to what Publish runs.
func (t *Tx) Then(f func(c *Catalog)) { t.after = append(t.after, f) }

// Finally adds f to what Release runs.
func (t *Tx) Finally(f func()) { t.release = append(t.release, f) }

// Publish makes the command's changes visible in c once its batch is
// applied.
func (t *Tx) Publish(c *Catalog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range t.after {
		f(c)
	}
}

// Release ends the command, applied or not.
func (t *Tx) Release() {
	for _, f := range t.release {
		f()
	}
}

// delete stages the deletion of keys.
func (t *Tx) delete(keys ...[]byte) error {
	for _, k := range keys {
		if err := t.batch.Delete(k, nil); err != nil {
			return err
		}
	}
	return nil
}

// putJSON stages key set to the JSON of v.
func (t *Tx) putJSON(key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return t.batch.Set(key, b, nil)
}

// HashKey returns the stored form of an API key or invite key.
func HashKey(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// The catalog keys of each family (codec/KEYS.md).

// userKey is the key of a user by id.
func userKey(id string) []byte { return codec.CatalogKey(codec.CatUser, []byte(id)) }

// emailKey indexes users by lower-case email.
func emailKey(email string) []byte {
	return codec.CatalogKey(codec.CatUserEmail, []byte(strings.ToLower(email)))
}

// apiKeyKey is the key of an API key by the hash of its secret.
func apiKeyKey(h [32]byte) []byte { return codec.CatalogKey(codec.CatKey, h[:]) }

// userAPIKeyKey indexes a user's API keys by name.
func userAPIKeyKey(user, name string) []byte {
	return codec.CatalogKey(codec.CatUserKey, []byte(user), []byte{0}, []byte(name))
}

// workspaceKey is the key of a workspace by core id.
func workspaceKey(core string) []byte { return codec.CatalogKey(codec.CatWorkspace, []byte(core)) }

// memberKey is the key of a membership.
func memberKey(core, user string) []byte {
	return codec.CatalogKey(codec.CatMember, []byte(core), []byte(user))
}

// inviteKey is the key of an invite.
func inviteKey(core, id string) []byte {
	return codec.CatalogKey(codec.CatInvite, []byte(core), []byte(id))
}

// inviteSecretKey indexes pending invites by the hash of their key.
func inviteSecretKey(h [32]byte) []byte { return codec.CatalogKey(codec.CatInviteKey, h[:]) }

// databaseKey is the key of a database's placement.
func databaseKey(id uint32) []byte {
	return codec.CatalogKey(codec.CatDatabase, codec.AppendU32(nil, id))
}
