package engine

import (
	"regexp"
	"strings"
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

var workspaceCorePattern = regexp.MustCompile(`^[a-z0-9]{6}$`)

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
		for _, k := range c.keys {
			if k.UserID == userID && k.Name == name {
				return Errorf(CodeConflict, "API key [%s] already exists", name)
			}
		}
		if err := t.putJSON(apiKeyKey(key.Hash), key); err != nil {
			return err
		}
		if err := t.batch.Set(userAPIKeyKey(userID, name), key.Hash[:], nil); err != nil {
			return err
		}
		t.after = append(t.after, func(c *catalog) { c.keys[key.Hash] = key })
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
	h := HashKey(secret)
	e.cat.mu.RLock()
	defer e.cat.mu.RUnlock()
	k := e.cat.keys[h]
	if k == nil {
		return nil, nil, Errorf(CodeUnauthenticated, "invalid API key")
	}
	u := e.cat.users[k.UserID]
	if u == nil {
		return nil, nil, Errorf(CodeUnauthenticated, "invalid API key")
	}
	return u, k, nil
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
	id = strings.ToLower(id)
	return id, workspaceCorePattern.MatchString(id)
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
