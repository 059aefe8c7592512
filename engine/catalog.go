package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"sort"
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
}

// catalog is the in-memory copy of the global catalog. Readers take mu for
// reading; catalog commands change it under Engine.catMu and mu.
type catalog struct {
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
}

func newCatalog() *catalog {
	return &catalog{
		users: map[string]*User{}, emails: map[string]string{}, keys: map[[32]byte]*APIKey{},
		userKeys:   map[string]map[string][32]byte{},
		workspaces: map[string]*Workspace{}, members: map[string]map[string]*Member{},
		invites: map[string]map[string]*Invite{}, inviteKeys: map[[32]byte]string{},
		databases: map[uint32]*Database{}, dbNames: map[string]uint32{}, state: map[string][]byte{},
	}
}

// loadCatalog reads the whole global catalog.
func loadCatalog(r pebble.Reader) (*catalog, error) {
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
		}
		if err != nil {
			return nil, err
		}
	}
	return c, it.Error()
}

func (c *catalog) member(core string) map[string]*Member {
	m := c.members[core]
	if m == nil {
		m = map[string]*Member{}
		c.members[core] = m
	}
	return m
}

// addKey records an API key in the key map and the per-user name index.
func (c *catalog) addKey(k *APIKey) {
	c.keys[k.Hash] = k
	m := c.userKeys[k.UserID]
	if m == nil {
		m = map[string][32]byte{}
		c.userKeys[k.UserID] = m
	}
	m[k.Name] = k.Hash
}

// removeKey forgets an API key: Authenticate rejects it from now on.
func (c *catalog) removeKey(k *APIKey) {
	delete(c.keys, k.Hash)
	if m := c.userKeys[k.UserID]; m != nil {
		delete(m, k.Name)
		if len(m) == 0 {
			delete(c.userKeys, k.UserID)
		}
	}
}

// keyByName returns a user's API key by name, or nil.
func (c *catalog) keyByName(userID, name string) *APIKey {
	h, ok := c.userKeys[userID][name]
	if !ok {
		return nil
	}
	return c.keys[h]
}

func (c *catalog) invite(core string) map[string]*Invite {
	m := c.invites[core]
	if m == nil {
		m = map[string]*Invite{}
		c.invites[core] = m
	}
	return m
}

// catTx is one catalog command: a batch plus the in-memory changes to make
// once it is durable.
type catTx struct {
	batch *pebble.Batch
	after []func(c *catalog)
	// release runs when the command ends, whether or not it was applied,
	// after the in-memory changes: it drops locks the command took on
	// databases it changes.
	release []func()
}

// delete stages the deletion of keys.
func (t *catTx) delete(keys ...[]byte) error {
	for _, k := range keys {
		if err := t.batch.Delete(k, nil); err != nil {
			return err
		}
	}
	return nil
}

func (t *catTx) putJSON(key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return t.batch.Set(key, b, nil)
}

// runCatalog applies fn as one catalog command. fn reads the catalog under
// the catalog command lock (no other command runs) and stages changes.
func (e *Engine) runCatalog(fn func(c *catalog, t *catTx) error) error {
	e.catMu.Lock()
	defer e.catMu.Unlock()
	t := &catTx{batch: e.pdb.NewBatch()}
	defer func() {
		for _, f := range t.release {
			f()
		}
	}()
	if err := fn(e.cat, t); err != nil {
		t.batch.Close()
		return err
	}
	return e.commit(t.batch, func() {
		e.cat.mu.Lock()
		for _, f := range t.after {
			f(e.cat)
		}
		e.cat.mu.Unlock()
	}, nil)
}

// applyCatalog applies a catalog command (see catalogcmd.go) and returns
// its result. stage, when set, adds to the command's batch the writes of
// what the command starts outside the catalog (a new database's first
// command), after the command staged its own, so that both apply or
// neither does.
func (e *Engine) applyCatalog(cmd catCommand, stage func(t *catTx, res any) error) (any, error) {
	var res any
	err := e.runCatalog(func(c *catalog, t *catTx) error {
		var err error
		if res, err = cmd.apply(c, t, e); err != nil {
			return err
		}
		if stage != nil {
			return stage(t, res)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// HashKey returns the stored form of an API key or invite key.
func HashKey(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

func userKey(id string) []byte { return codec.CatalogKey(codec.CatUser, []byte(id)) }
func emailKey(email string) []byte {
	return codec.CatalogKey(codec.CatUserEmail, []byte(strings.ToLower(email)))
}
func apiKeyKey(h [32]byte) []byte { return codec.CatalogKey(codec.CatKey, h[:]) }
func userAPIKeyKey(user, name string) []byte {
	return codec.CatalogKey(codec.CatUserKey, []byte(user), []byte{0}, []byte(name))
}
func workspaceKey(core string) []byte { return codec.CatalogKey(codec.CatWorkspace, []byte(core)) }
func memberKey(core, user string) []byte {
	return codec.CatalogKey(codec.CatMember, []byte(core), []byte(user))
}
func inviteKey(core, id string) []byte {
	return codec.CatalogKey(codec.CatInvite, []byte(core), []byte(id))
}
func inviteSecretKey(h [32]byte) []byte { return codec.CatalogKey(codec.CatInviteKey, h[:]) }
func databaseKey(id uint32) []byte {
	return codec.CatalogKey(codec.CatDatabase, codec.AppendU32(nil, id))
}

// databasesOf returns the databases of workspace core by id.
func (c *catalog) databasesOf(core string) []*Database {
	var out []*Database
	for _, d := range c.databases {
		if d.Workspace == core {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// dropDatabase stages the deletion of database p with all its branches and
// data into a catalog command. It waits for the database's in-flight command
// and keeps new ones out until the catalog command ends; once the deletion is
// durable, commands on the database fail with CodeNotFound.
func (e *Engine) dropDatabase(t *catTx, p *Database) error {
	e.dbMu.RLock()
	d := e.dbs[p.ID]
	e.dbMu.RUnlock()
	if d != nil {
		d.mu.Lock()
		t.release = append(t.release, d.mu.Unlock)
	}
	if err := t.delete(databaseKey(p.ID)); err != nil {
		return err
	}
	pre := codec.DatabasePrefix(p.ID)
	if err := t.batch.DeleteRange(pre, codec.PrefixEnd(pre), nil); err != nil {
		return err
	}
	t.after = append(t.after, func(c *catalog) {
		if d != nil {
			d.dropped = true
		}
		c.removeDatabase(p.ID)
		e.dbMu.Lock()
		delete(e.dbs, p.ID)
		e.dbMu.Unlock()
	})
	return nil
}
