package catalog

import (
	"strings"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// A catalog command is one change of the global catalog as a value: it
// holds everything it needs, resolved before it is applied (ids, times,
// the hashes of generated secrets), so that applying it reads only the
// catalog and gives the same writes on every copy of the same catalog.
// Applying checks the command against the catalog (access, conflicts,
// last owners) as of that moment, stages its writes into the command's
// batch and its in-memory changes into t, and returns its result. The set
// of commands is closed: Kind lists them, and codec.go encodes each.

// Command is one catalog command.
type Command interface {
	// kind names the command in its encoding.
	kind() Kind
	// apply checks the command against c and stages it in t; h drops the
	// databases the command deletes. It returns the command's result,
	// whose type each command documents.
	apply(c *Catalog, t *Tx, h Host) (any, error)
}

// Stage checks cmd against c and stages it in t, as applying it does;
// h does what the command starts in the databases it places or deletes.
// It returns the command's result, whose type each command documents.
func Stage(c *Catalog, t *Tx, h Host, cmd Command) (any, error) { return cmd.apply(c, t, h) }

// Host is what catalog commands need of the databases they place and
// delete, whose contents live outside the catalog. Each call stages its
// writes into t's batch, so that they apply with the command or not at
// all, and what it changes in memory into t.
type Host interface {
	// InitDatabase stages the first command of the database p places:
	// its first branch.
	InitDatabase(t *Tx, p *Database, first *FirstBranch) error
	// RestoreDatabase stages the key range of a backup as the contents of
	// the database p places.
	RestoreDatabase(t *Tx, p *Database, backup []byte) error
	// DropDatabase stages the deletion of a database and everything in its
	// range into t, keeping its commands out until t ends.
	DropDatabase(t *Tx, p *Database) error
}

// FirstBranch is the first branch of a new database, resolved: its name,
// public id, creation time and metadata.
type FirstBranch struct {
	Name     string               `json:"name"`
	PublicID string               `json:"publicID"`
	Now      time.Time            `json:"now"`
	Metadata model.BranchMetadata `json:"metadata"`
}

// Kind numbers the catalog commands in their encoding; numbers are
// never reused.
type Kind uint8

// The catalog commands.
const (
	kindCreateUser Kind = iota + 1
	kindUpdateUser
	kindDeleteUser
	kindCreateAPIKey
	kindDeleteAPIKey
	kindCreateWorkspace
	kindUpdateWorkspace
	kindDeleteWorkspace
	kindSetMemberRole
	kindRemoveMember
	kindCreateInvite
	kindAcceptInvite
	kindUpdateInvite
	kindDeleteInvite
	kindPlaceDatabase
	kindUpdateDatabase
	kindDropDatabase
	kindSetServerState
	kindBootstrap
	kindRestoreDatabase
)

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

// CreateWorkspace creates a workspace whose one member, its owner, is
// Owner; the member joins at the workspace's CreatedAt. The result is the
// Workspace.
type CreateWorkspace struct {
	Workspace Workspace `json:"workspace"`
	Owner     string    `json:"owner"`
}

func (*CreateWorkspace) kind() Kind { return kindCreateWorkspace }

func (cmd *CreateWorkspace) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	if c.users[cmd.Owner] == nil {
		return nil, model.NotFoundf("user [%s] not found", cmd.Owner)
	}
	if err := c.checkNewWorkspace(&cmd.Workspace); err != nil {
		return nil, err
	}
	if err := writeWorkspace(t, &cmd.Workspace, cmd.Owner); err != nil {
		return nil, err
	}
	return cmd.Workspace, nil
}

// checkNewWorkspace fails when the workspace's core id is taken.
func (c *Catalog) checkNewWorkspace(w *Workspace) error {
	if c.workspaces[w.Core] != nil {
		return model.Errorf(model.CodeConflict, "workspace id collision, retry")
	}
	return nil
}

// writeWorkspace stages the creation of a workspace with its owner.
func writeWorkspace(t *Tx, w *Workspace, owner string) error {
	ws := *w
	core := ws.Core
	m := &Member{Workspace: core, UserID: owner, Role: RoleOwner, CreatedAt: ws.CreatedAt}
	if err := t.putJSON(workspaceKey(core), &ws); err != nil {
		return err
	}
	if err := t.putJSON(memberKey(core, owner), m); err != nil {
		return err
	}
	t.after = append(t.after, func(c *Catalog) {
		c.workspaces[core] = &ws
		c.member(core)[owner] = m
	})
	return nil
}

// UpdateWorkspace renames a workspace (owner only); an empty slug derives
// from the name. The result is the WorkspaceInfo.
type UpdateWorkspace struct {
	Caller string `json:"caller"`
	WS     string `json:"ws"`
	Name   string `json:"name"`
	Slug   string `json:"slug"`
}

func (*UpdateWorkspace) kind() Kind { return kindUpdateWorkspace }

func (cmd *UpdateWorkspace) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	w, m, err := c.access(cmd.Caller, cmd.WS, true)
	if err != nil {
		return nil, err
	}
	name, slug := cmd.Name, cmd.Slug
	if strings.TrimSpace(name) == "" {
		return nil, model.Invalidf("workspace name is required")
	}
	if slug == "" {
		slug = Slugify(name)
	} else if err := model.CheckName("workspace slug", slug); err != nil {
		return nil, err
	}
	nw := *w
	nw.Name, nw.Slug = name, slug
	if err := t.putJSON(workspaceKey(w.Core), &nw); err != nil {
		return nil, err
	}
	out := c.workspaceInfo(&nw, m.Role)
	t.after = append(t.after, func(c *Catalog) { c.workspaces[nw.Core] = &nw })
	return out, nil
}

// DeleteWorkspace deletes a workspace (owner only) with its databases,
// members, invites and the API keys scoped to it.
type DeleteWorkspace struct {
	Caller string `json:"caller"`
	WS     string `json:"ws"`
}

func (*DeleteWorkspace) kind() Kind { return kindDeleteWorkspace }

func (cmd *DeleteWorkspace) apply(c *Catalog, t *Tx, h Host) (any, error) {
	w, _, err := c.access(cmd.Caller, cmd.WS, true)
	if err != nil {
		return nil, err
	}
	core := w.Core
	for _, p := range c.databasesOf(core) {
		if err := c.drop(t, h, p); err != nil {
			return nil, err
		}
	}
	members := model.SortedKeys(c.members[core])
	for _, uid := range members {
		if err := t.delete(memberKey(core, uid)); err != nil {
			return nil, err
		}
	}
	invites := c.invites[core]
	for _, id := range model.SortedKeys(invites) {
		if err := t.delete(inviteKey(core, id), inviteSecretKey(invites[id].KeyHash)); err != nil {
			return nil, err
		}
	}
	scoped := c.scopedKeys(core, "")
	for _, k := range scoped {
		if err := t.delete(apiKeyKey(k.Hash), userAPIKeyKey(k.UserID, k.Name)); err != nil {
			return nil, err
		}
	}
	if err := t.delete(workspaceKey(core)); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) {
		for _, in := range invites {
			delete(c.inviteKeys, in.KeyHash)
		}
		for _, k := range scoped {
			c.removeKey(k)
		}
		delete(c.invites, core)
		delete(c.members, core)
		delete(c.workspaces, core)
	})
	return nil, nil
}

// SetMemberRole changes a member's role (owner only), keeping an owner.
type SetMemberRole struct {
	Caller string `json:"caller"`
	WS     string `json:"ws"`
	UserID string `json:"userID"`
	Role   Role   `json:"role"`
}

func (*SetMemberRole) kind() Kind { return kindSetMemberRole }

func (cmd *SetMemberRole) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	w, _, err := c.access(cmd.Caller, cmd.WS, true)
	if err != nil {
		return nil, err
	}
	if err := checkRole(cmd.Role); err != nil {
		return nil, err
	}
	userID := cmd.UserID
	m := c.members[w.Core][userID]
	if m == nil {
		return nil, model.NotFoundf("user [%s] is not a member of workspace [%s]", userID, cmd.WS)
	}
	if m.Role == cmd.Role {
		return nil, nil
	}
	if m.Role == RoleOwner && c.owners(w.Core) == 1 {
		return nil, model.Invalidf("cannot demote the last owner of workspace [%s]: make another member an owner first", cmd.WS)
	}
	nm := *m
	nm.Role = cmd.Role
	if err := t.putJSON(memberKey(w.Core, userID), &nm); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) { c.member(nm.Workspace)[userID] = &nm })
	return nil, nil
}

// RemoveMember removes a member with their API keys scoped to the
// workspace; owners remove anyone, members themselves.
type RemoveMember struct {
	Caller string `json:"caller"`
	WS     string `json:"ws"`
	UserID string `json:"userID"`
}

func (*RemoveMember) kind() Kind { return kindRemoveMember }

func (cmd *RemoveMember) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	callerID, ws, userID := cmd.Caller, cmd.WS, cmd.UserID
	w, _, err := c.access(callerID, ws, callerID != userID)
	if err != nil {
		return nil, err
	}
	core := w.Core
	m := c.members[core][userID]
	if m == nil {
		return nil, model.NotFoundf("user [%s] is not a member of workspace [%s]", userID, ws)
	}
	if m.Role == RoleOwner && c.owners(core) == 1 {
		return nil, model.Invalidf("cannot remove the last owner of workspace [%s]: make another member an owner or delete the workspace", ws)
	}
	scoped := c.scopedKeys(core, userID)
	for _, k := range scoped {
		if err := t.delete(apiKeyKey(k.Hash), userAPIKeyKey(k.UserID, k.Name)); err != nil {
			return nil, err
		}
	}
	if err := t.delete(memberKey(core, userID)); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) {
		for _, k := range scoped {
			c.removeKey(k)
		}
		delete(c.members[core], userID)
	})
	return nil, nil
}

// CreateInvite invites an email address into a workspace (owner only).
// Invite carries its id, key hash, expiry and creation time, which is also
// when pending invites are judged; the command sets its workspace. The
// result is the Invite.
type CreateInvite struct {
	Caller string `json:"caller"`
	WS     string `json:"ws"`
	Invite Invite `json:"invite"`
}

func (*CreateInvite) kind() Kind { return kindCreateInvite }

func (cmd *CreateInvite) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	w, _, err := c.access(cmd.Caller, cmd.WS, true)
	if err != nil {
		return nil, err
	}
	in := cmd.Invite
	email, now := in.Email, in.CreatedAt
	if !model.ValidEmail(email) {
		return nil, model.Invalidf("invalid email address [%s]", email)
	}
	if err := checkRole(in.Role); err != nil {
		return nil, err
	}
	core := w.Core
	in.Workspace = core
	lower := strings.ToLower(email)
	if uid, ok := c.emails[lower]; ok && c.members[core][uid] != nil {
		return nil, model.Errorf(model.CodeConflict, "[%s] is already a member of workspace [%s]", email, cmd.WS)
	}
	var stale []*Invite
	for _, id := range model.SortedKeys(c.invites[core]) {
		old := c.invites[core][id]
		if strings.ToLower(old.Email) != lower || old.Accepted {
			continue
		}
		if old.pending(now) {
			return nil, model.Errorf(model.CodeConflict, "an invite for [%s] is already pending", email)
		}
		stale = append(stale, old)
	}
	if c.invites[core][in.ID] != nil || c.inviteKeys[in.KeyHash] != "" {
		return nil, model.Errorf(model.CodeConflict, "invite id collision, retry")
	}
	for _, old := range stale {
		if err := t.delete(inviteKey(core, old.ID), inviteSecretKey(old.KeyHash)); err != nil {
			return nil, err
		}
	}
	if err := t.putJSON(inviteKey(core, in.ID), &in); err != nil {
		return nil, err
	}
	if err := t.batch.Set(inviteSecretKey(in.KeyHash), inviteRef(core, in.ID), nil); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) {
		for _, old := range stale {
			delete(c.invite(core), old.ID)
			delete(c.inviteKeys, old.KeyHash)
		}
		c.invite(core)[in.ID] = &in
		c.inviteKeys[in.KeyHash] = core + "/" + in.ID
	})
	return in.public(), nil
}

// AcceptInvite makes the caller a member by the invite whose key hashes to
// KeyHash, at Now.
type AcceptInvite struct {
	Caller  string    `json:"caller"`
	WS      string    `json:"ws"`
	KeyHash [32]byte  `json:"keyHash"`
	Now     time.Time `json:"now"`
}

func (*AcceptInvite) kind() Kind { return kindAcceptInvite }

func (cmd *AcceptInvite) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	callerID, h := cmd.Caller, cmd.KeyHash
	u := c.users[callerID]
	if u == nil {
		return nil, model.NotFoundf("user [%s] not found", callerID)
	}
	core, _ := WorkspaceCore(cmd.WS)
	var in *Invite
	if refCore, id, ok := strings.Cut(c.inviteKeys[h], "/"); ok && refCore == core {
		in = c.invites[core][id]
	}
	if in == nil || c.workspaces[core] == nil || !in.pending(cmd.Now) {
		return nil, model.NotFoundf("invite not found or expired")
	}
	if !strings.EqualFold(u.Email, in.Email) {
		return nil, model.Errorf(model.CodeForbidden, "this invite is for another email address")
	}
	if c.members[core][callerID] != nil {
		return nil, model.Errorf(model.CodeConflict, "user is already a member of workspace [%s]", cmd.WS)
	}
	m := &Member{Workspace: core, UserID: callerID, Role: in.Role, CreatedAt: cmd.Now}
	done := *in
	done.Accepted = true
	if err := t.putJSON(memberKey(core, callerID), m); err != nil {
		return nil, err
	}
	if err := t.putJSON(inviteKey(core, in.ID), &done); err != nil {
		return nil, err
	}
	if err := t.delete(inviteSecretKey(h)); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) {
		c.member(core)[callerID] = m
		c.invite(core)[done.ID] = &done
		delete(c.inviteKeys, h)
	})
	return nil, nil
}

// UpdateInvite changes the role of a pending invite (owner only); the
// result is the Invite.
type UpdateInvite struct {
	Caller   string `json:"caller"`
	WS       string `json:"ws"`
	InviteID string `json:"inviteID"`
	Role     Role   `json:"role"`
}

func (*UpdateInvite) kind() Kind { return kindUpdateInvite }

func (cmd *UpdateInvite) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	w, _, err := c.access(cmd.Caller, cmd.WS, true)
	if err != nil {
		return nil, err
	}
	if err := checkRole(cmd.Role); err != nil {
		return nil, err
	}
	in, err := c.findInvite(w.Core, cmd.InviteID)
	if err != nil {
		return nil, err
	}
	if in.Accepted {
		return nil, model.Errorf(model.CodePrecondition, "invite [%s] is already accepted and cannot be changed", cmd.InviteID)
	}
	ni := *in
	ni.Role = cmd.Role
	if err := t.putJSON(inviteKey(ni.Workspace, ni.ID), &ni); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) { c.invite(ni.Workspace)[ni.ID] = &ni })
	return ni.public(), nil
}

// DeleteInvite deletes an invite that is not accepted (owner only).
type DeleteInvite struct {
	Caller   string `json:"caller"`
	WS       string `json:"ws"`
	InviteID string `json:"inviteID"`
}

func (*DeleteInvite) kind() Kind { return kindDeleteInvite }

func (cmd *DeleteInvite) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	w, _, err := c.access(cmd.Caller, cmd.WS, true)
	if err != nil {
		return nil, err
	}
	in, err := c.findInvite(w.Core, cmd.InviteID)
	if err != nil {
		return nil, err
	}
	if in.Accepted {
		return nil, model.Invalidf("invite [%s] is already accepted and cannot be deleted", cmd.InviteID)
	}
	if err := t.delete(inviteKey(in.Workspace, in.ID), inviteSecretKey(in.KeyHash)); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) {
		delete(c.invite(in.Workspace), in.ID)
		delete(c.inviteKeys, in.KeyHash)
	})
	return nil, nil
}

// PlaceDatabase registers a new database: it takes the next database id
// and records where the database lives and what it is called. Workspace ""
// places it outside every workspace, where embedders keep databases
// without accounts. First, when set, is the database's first branch,
// created by the database's first command in the same batch; without it
// the range stays empty. The result is the *Database with its id.
type PlaceDatabase struct {
	Database Database     `json:"database"`
	First    *FirstBranch `json:"first,omitempty"`
}

func (*PlaceDatabase) kind() Kind { return kindPlaceDatabase }

func (cmd *PlaceDatabase) apply(c *Catalog, t *Tx, h Host) (any, error) {
	p, err := c.place(t, cmd.Database)
	if err != nil {
		return nil, err
	}
	if cmd.First != nil {
		if err := h.InitDatabase(t, p, cmd.First); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// place stages the placement of a new database, with the next id, and
// returns it.
func (c *Catalog) place(t *Tx, p Database) (*Database, error) {
	if p.Workspace != "" && c.workspaces[p.Workspace] == nil {
		return nil, model.NotFoundf("workspace [%s] not found", p.Workspace)
	}
	if c.findDatabase(p.Workspace, p.Name) != nil {
		return nil, model.Errorf(model.CodeAlreadyExists, "database [%s] already exists", p.Name)
	}
	p.ID = c.dbCounter + 1
	if err := t.putJSON(databaseKey(p.ID), &p); err != nil {
		return nil, err
	}
	if err := t.batch.Set(codec.CatalogKey(codec.CatCounter, []byte("db")), codec.AppendU64(nil, uint64(p.ID)), nil); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) {
		c.setDatabase(&p)
		c.dbCounter = p.ID
	})
	return &p, nil
}

// RestoreDatabase places a new database, as PlaceDatabase does, whose
// contents are a backup's key range (layers.WriteRange): all of it, or
// nothing when the backup is malformed. The result is the *Database.
type RestoreDatabase struct {
	Database Database `json:"database"`
	Backup   []byte   `json:"backup"`
}

func (*RestoreDatabase) kind() Kind { return kindRestoreDatabase }

func (cmd *RestoreDatabase) apply(c *Catalog, t *Tx, h Host) (any, error) {
	p, err := c.place(t, cmd.Database)
	if err != nil {
		return nil, err
	}
	if err := h.RestoreDatabase(t, p, cmd.Backup); err != nil {
		return nil, err
	}
	return p, nil
}

// UpdateDatabase renames a database (NewName "" keeps the name) and sets
// its UI color (nil keeps it); the result is the DatabaseInfo.
type UpdateDatabase struct {
	WS      string  `json:"ws"`
	Name    string  `json:"name"`
	NewName string  `json:"newName,omitempty"`
	UIColor *string `json:"uiColor,omitempty"`
}

func (*UpdateDatabase) kind() Kind { return kindUpdateDatabase }

func (cmd *UpdateDatabase) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	p := c.findDatabase(cmd.WS, cmd.Name)
	if p == nil {
		return nil, model.NotFoundf("database [%s] not found", cmd.Name)
	}
	np := *p
	if cmd.NewName != "" && cmd.NewName != cmd.Name {
		if err := model.CheckName("database", cmd.NewName); err != nil {
			return nil, err
		}
		if c.findDatabase(cmd.WS, cmd.NewName) != nil {
			return nil, model.Errorf(model.CodeAlreadyExists, "database [%s] already exists", cmd.NewName)
		}
		np.Name = cmd.NewName
	}
	if cmd.UIColor != nil {
		np.UIColor = *cmd.UIColor
	}
	if err := t.putJSON(databaseKey(p.ID), &np); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) { c.setDatabase(&np) })
	return np.Info(), nil
}

// DropDatabase deletes a database with all its branches and data.
type DropDatabase struct {
	WS   string `json:"ws"`
	Name string `json:"name"`
}

func (*DropDatabase) kind() Kind { return kindDropDatabase }

func (cmd *DropDatabase) apply(c *Catalog, t *Tx, h Host) (any, error) {
	p := c.findDatabase(cmd.WS, cmd.Name)
	if p == nil {
		return nil, model.NotFoundf("database [%s] not found", cmd.Name)
	}
	return nil, c.drop(t, h, p)
}

// drop stages the deletion of database p: its placement, and through h its
// range.
func (c *Catalog) drop(t *Tx, h Host, p *Database) error {
	if err := t.delete(databaseKey(p.ID)); err != nil {
		return err
	}
	id := p.ID
	t.after = append(t.after, func(c *Catalog) { c.removeDatabase(id) })
	return h.DropDatabase(t, p)
}

// SetServerState sets a server-wide setting unless it is set already; the
// result is the setting's value, the one it had or Value.
type SetServerState struct {
	Name  string `json:"name"`
	Value []byte `json:"value"`
}

func (*SetServerState) kind() Kind { return kindSetServerState }

func (cmd *SetServerState) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	if v := c.state[cmd.Name]; v != nil {
		return v, nil
	}
	v := cmd.Value
	if err := t.batch.Set(codec.CatalogKey(codec.CatServerState, []byte(cmd.Name)), v, nil); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) { c.state[cmd.Name] = v })
	return v, nil
}

// Bootstrap creates the first accounts of a server in one command: a user,
// a workspace they own and an API key of theirs.
type Bootstrap struct {
	User      User      `json:"user"`
	Workspace Workspace `json:"workspace"`
	Key       APIKey    `json:"key"`
}

func (*Bootstrap) kind() Kind { return kindBootstrap }

func (cmd *Bootstrap) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	if err := c.checkNewUser(&cmd.User); err != nil {
		return nil, err
	}
	if err := c.checkNewWorkspace(&cmd.Workspace); err != nil {
		return nil, err
	}
	// The user is new: only the secret can be taken.
	if err := c.checkNewKey(&cmd.Key); err != nil {
		return nil, err
	}
	if err := writeUser(t, &cmd.User); err != nil {
		return nil, err
	}
	if err := writeWorkspace(t, &cmd.Workspace, cmd.User.ID); err != nil {
		return nil, err
	}
	return nil, writeKey(t, &cmd.Key)
}
