package catalog

import (
	"sort"
	"strings"
	"time"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// WorkspaceInfo is a workspace as one of its members sees it.
type WorkspaceInfo struct {
	ID          string // public id: slug-core
	Core        string
	Name        string
	Slug        string
	Plan        string
	Role        Role // the caller's role
	MemberCount int  // members, not counting pending invites
	CreatedAt   time.Time
}

// MemberInfo is a member of a workspace with their account details.
type MemberInfo struct {
	UserID   string
	Fullname string
	Email    string
	Role     Role
}

// validRole reports whether r is one of the roles of spec §2.12.
func validRole(r Role) bool { return r == RoleOwner || r == RoleMaintainer }

// checkRole fails with CodeInvalid unless r is a role.
func checkRole(r Role) error {
	if r == "" {
		return model.Invalidf("role is required: use owner or maintainer")
	}
	if !validRole(r) {
		return model.Invalidf("role [%s] is invalid: use owner or maintainer", r)
	}
	return nil
}

// access resolves ws for userID: the workspace and the caller's membership.
// ownerOnly refuses a maintainer. The caller holds mu, or runs a command.
func (c *Catalog) access(userID, ws string, ownerOnly bool) (*Workspace, *Member, error) {
	core, ok := WorkspaceCore(ws)
	w := c.workspaces[core]
	m := c.members[core][userID]
	if !ok || w == nil || m == nil {
		return nil, nil, model.Errorf(model.CodeForbidden, "no access to workspace [%s]", ws)
	}
	if ownerOnly && m.Role != RoleOwner {
		return nil, nil, model.Errorf(model.CodeForbidden, "role [%s] is insufficient: only an owner of workspace [%s] may do this", m.Role, ws)
	}
	return w, m, nil
}

// owners counts the owners of a workspace.
func (c *Catalog) owners(core string) int {
	n := 0
	for _, m := range c.members[core] {
		if m.Role == RoleOwner {
			n++
		}
	}
	return n
}

// workspaceInfo describes w to a member whose role is role. The caller
// holds mu, or runs a command.
func (c *Catalog) workspaceInfo(w *Workspace, role Role) WorkspaceInfo {
	return WorkspaceInfo{
		ID: w.ID(), Core: w.Core, Name: w.Name, Slug: w.Slug, Plan: w.Plan,
		Role: role, MemberCount: len(c.members[w.Core]), CreatedAt: w.CreatedAt,
	}
}

// MemberRole returns a user's role in a workspace (public id or core); ok is
// false for a non-member or an unknown workspace.
func (c *Catalog) MemberRole(ws, userID string) (role Role, ok bool) {
	core, valid := WorkspaceCore(ws)
	if !valid {
		return "", false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.workspaces[core] == nil {
		return "", false
	}
	m := c.members[core][userID]
	if m == nil {
		return "", false
	}
	return m.Role, true
}

// UserWorkspaces returns the core ids of the workspaces a user belongs to, in
// order.
func (c *Catalog) UserWorkspaces(userID string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for _, core := range model.SortedKeys(c.members) {
		if c.members[core][userID] != nil && c.workspaces[core] != nil {
			out = append(out, core)
		}
	}
	return out
}

// Workspaces returns the workspaces a user is a member of, with the user's
// role, by public id.
func (c *Catalog) Workspaces(userID string) []WorkspaceInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := []WorkspaceInfo{}
	for core, ms := range c.members {
		m, w := ms[userID], c.workspaces[core]
		if m != nil && w != nil {
			out = append(out, c.workspaceInfo(w, m.Role))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Workspace returns a workspace to any of its members.
func (c *Catalog) Workspace(userID, ws string) (WorkspaceInfo, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	w, m, err := c.access(userID, ws, false)
	if err != nil {
		return WorkspaceInfo{}, err
	}
	return c.workspaceInfo(w, m.Role), nil
}

// NewWorkspace resolves a workspace to create: its random core id and its
// creation time.
func NewWorkspace(name, slug string, now time.Time) Workspace {
	core := model.RandomString(6, "0123456789abcdefghijklmnopqrstuvwxyz")
	return Workspace{Core: core, Name: name, Slug: slug, Plan: "free", CreatedAt: now}
}

// scopedKeys returns the API keys scoped to workspace core, of one user or,
// when userID is "", of everyone, ordered by user and name. The caller
// holds mu, or runs a command.
func (c *Catalog) scopedKeys(core, userID string) []*APIKey {
	var out []*APIKey
	for _, k := range c.keys {
		if k.Workspace == core && (userID == "" || k.UserID == userID) {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].UserID != out[j].UserID {
			return out[i].UserID < out[j].UserID
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Members returns the members of a workspace by email, and its pending
// invites (neither accepted nor expired at now) by email. Any member may
// list them.
func (c *Catalog) Members(userID, ws string, now time.Time) ([]MemberInfo, []Invite, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	w, _, err := c.access(userID, ws, false)
	if err != nil {
		return nil, nil, err
	}
	members := []MemberInfo{}
	for uid, m := range c.members[w.Core] {
		mi := MemberInfo{UserID: uid, Role: m.Role}
		if u := c.users[uid]; u != nil {
			mi.Fullname, mi.Email = u.Fullname, u.Email
		}
		members = append(members, mi)
	}
	sort.Slice(members, func(i, j int) bool {
		a, b := strings.ToLower(members[i].Email), strings.ToLower(members[j].Email)
		if a != b {
			return a < b
		}
		return members[i].UserID < members[j].UserID
	})
	invites := []Invite{}
	for _, in := range c.invites[w.Core] {
		if in.pending(now) {
			invites = append(invites, in.public())
		}
	}
	sort.Slice(invites, func(i, j int) bool {
		a, b := strings.ToLower(invites[i].Email), strings.ToLower(invites[j].Email)
		if a != b {
			return a < b
		}
		return invites[i].ID < invites[j].ID
	})
	return members, invites, nil
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

// Slugify replaces each run of characters outside [a-zA-Z0-9_~-] by one
// '-': the slug a workspace name gives.
func Slugify(name string) string {
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
