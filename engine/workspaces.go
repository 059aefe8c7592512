package engine

import (
	"sort"
	"strings"
	"time"
)

// Workspace, member and invite operations take the workspace as a public id
// ("slug-core") or its bare core, and the id of the user making the request.
// A caller who is not a member of the workspace, or names one that does not
// exist, gets CodeForbidden "no access to workspace [<ws>]" in both cases, so
// the answer never tells whether a workspace exists. Owner-only operations
// refuse a maintainer with CodeForbidden as well.

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
		return invalidf("role is required: use owner or maintainer")
	}
	if !validRole(r) {
		return invalidf("role [%s] is invalid: use owner or maintainer", r)
	}
	return nil
}

// access resolves ws for userID: the workspace and the caller's membership.
// ownerOnly refuses a maintainer. The caller holds cat.mu or catMu.
func (c *catalog) access(userID, ws string, ownerOnly bool) (*Workspace, *Member, error) {
	core, ok := WorkspaceCore(ws)
	w := c.workspaces[core]
	m := c.members[core][userID]
	if !ok || w == nil || m == nil {
		return nil, nil, Errorf(CodeForbidden, "no access to workspace [%s]", ws)
	}
	if ownerOnly && m.Role != RoleOwner {
		return nil, nil, Errorf(CodeForbidden, "role [%s] is insufficient: only an owner of workspace [%s] may do this", m.Role, ws)
	}
	return w, m, nil
}

// owners counts the owners of a workspace.
func (c *catalog) owners(core string) int {
	n := 0
	for _, m := range c.members[core] {
		if m.Role == RoleOwner {
			n++
		}
	}
	return n
}

// workspaceInfo describes w to a member whose role is role. The caller holds
// cat.mu or catMu.
func (c *catalog) workspaceInfo(w *Workspace, role Role) WorkspaceInfo {
	return WorkspaceInfo{
		ID: w.ID(), Core: w.Core, Name: w.Name, Slug: w.Slug, Plan: w.Plan,
		Role: role, MemberCount: len(c.members[w.Core]), CreatedAt: w.CreatedAt,
	}
}

// MemberRole returns a user's role in a workspace (public id or core); ok is
// false for a non-member or an unknown workspace. The HTTP layer uses it for
// data-plane and database access checks.
func (e *Engine) MemberRole(ws, userID string) (role Role, ok bool) {
	core, valid := WorkspaceCore(ws)
	if !valid {
		return "", false
	}
	e.cat.mu.RLock()
	defer e.cat.mu.RUnlock()
	if e.cat.workspaces[core] == nil {
		return "", false
	}
	m := e.cat.members[core][userID]
	if m == nil {
		return "", false
	}
	return m.Role, true
}

// UserWorkspaces returns the core ids of the workspaces a user belongs to, in
// order.
func (e *Engine) UserWorkspaces(userID string) []string {
	e.cat.mu.RLock()
	defer e.cat.mu.RUnlock()
	var out []string
	for _, core := range sortedKeys(e.cat.members) {
		if e.cat.members[core][userID] != nil && e.cat.workspaces[core] != nil {
			out = append(out, core)
		}
	}
	return out
}

// ListWorkspaces returns the workspaces a user is a member of, with the
// user's role, by public id.
func (e *Engine) ListWorkspaces(userID string) []WorkspaceInfo {
	e.cat.mu.RLock()
	defer e.cat.mu.RUnlock()
	out := []WorkspaceInfo{}
	for core, ms := range e.cat.members {
		m, w := ms[userID], e.cat.workspaces[core]
		if m != nil && w != nil {
			out = append(out, e.cat.workspaceInfo(w, m.Role))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// GetWorkspace returns a workspace to any of its members.
func (e *Engine) GetWorkspace(userID, ws string) (WorkspaceInfo, error) {
	e.cat.mu.RLock()
	defer e.cat.mu.RUnlock()
	w, m, err := e.cat.access(userID, ws, false)
	if err != nil {
		return WorkspaceInfo{}, err
	}
	return e.cat.workspaceInfo(w, m.Role), nil
}

// UpdateWorkspace renames a workspace (owner only). name is required; an
// empty slug derives from the name, as at creation. The core, and so the
// workspace's identity, never changes; its public id follows the slug.
func (e *Engine) UpdateWorkspace(userID, ws, name, slug string) (WorkspaceInfo, error) {
	var out WorkspaceInfo
	err := e.runCatalog(func(c *catalog, t *catTx) error {
		w, m, err := c.access(userID, ws, true)
		if err != nil {
			return err
		}
		if strings.TrimSpace(name) == "" {
			return invalidf("workspace name is required")
		}
		if slug == "" {
			slug = slugify(name)
		} else if err := checkName("workspace slug", slug); err != nil {
			return err
		}
		nw := *w
		nw.Name, nw.Slug = name, slug
		if err := t.putJSON(workspaceKey(w.Core), &nw); err != nil {
			return err
		}
		out = c.workspaceInfo(&nw, m.Role)
		t.after = append(t.after, func(c *catalog) { c.workspaces[nw.Core] = &nw })
		return nil
	})
	return out, err
}

// DeleteWorkspace deletes a workspace (owner only) in one command: every
// database of it with all their data, its members, its invites and the API
// keys scoped to it.
func (e *Engine) DeleteWorkspace(userID, ws string) error {
	return e.runCatalog(func(c *catalog, t *catTx) error {
		w, _, err := c.access(userID, ws, true)
		if err != nil {
			return err
		}
		core := w.Core
		var dbs []*Database
		for _, d := range c.databases {
			if d.Workspace == core {
				dbs = append(dbs, d)
			}
		}
		sort.Slice(dbs, func(i, j int) bool { return dbs[i].ID < dbs[j].ID })
		for _, d := range dbs {
			if err := e.dropDatabase(t, d); err != nil {
				return err
			}
		}
		members := sortedKeys(c.members[core])
		for _, uid := range members {
			if err := t.delete(memberKey(core, uid)); err != nil {
				return err
			}
		}
		invites := c.invites[core]
		for _, id := range sortedKeys(invites) {
			if err := t.delete(inviteKey(core, id), inviteSecretKey(invites[id].KeyHash)); err != nil {
				return err
			}
		}
		scoped := c.scopedKeys(core, "")
		for _, k := range scoped {
			if err := t.delete(apiKeyKey(k.Hash), userAPIKeyKey(k.UserID, k.Name)); err != nil {
				return err
			}
		}
		if err := t.delete(workspaceKey(core)); err != nil {
			return err
		}
		t.after = append(t.after, func(c *catalog) {
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
		return nil
	})
}

// scopedKeys returns the API keys scoped to workspace core, of one user or,
// when userID is "", of everyone, ordered by user and name. The caller holds cat.mu or
// catMu.
func (c *catalog) scopedKeys(core, userID string) []*APIKey {
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

// ListMembers returns the members of a workspace by email, and its pending
// invites (neither accepted nor expired) by email. Any member may list them.
func (e *Engine) ListMembers(userID, ws string) ([]MemberInfo, []Invite, error) {
	now := e.now()
	e.cat.mu.RLock()
	defer e.cat.mu.RUnlock()
	w, _, err := e.cat.access(userID, ws, false)
	if err != nil {
		return nil, nil, err
	}
	members := []MemberInfo{}
	for uid, m := range e.cat.members[w.Core] {
		mi := MemberInfo{UserID: uid, Role: m.Role}
		if u := e.cat.users[uid]; u != nil {
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
	for _, in := range e.cat.invites[w.Core] {
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

// SetMemberRole changes a member's role (owner only). Demoting the last owner
// fails with CodeInvalid: compat-api.md §7 recommends 400 for it, and the
// statuses spec §4.6 lists for member operations include no 409.
func (e *Engine) SetMemberRole(callerID, ws, userID string, role Role) error {
	return e.runCatalog(func(c *catalog, t *catTx) error {
		w, _, err := c.access(callerID, ws, true)
		if err != nil {
			return err
		}
		if err := checkRole(role); err != nil {
			return err
		}
		m := c.members[w.Core][userID]
		if m == nil {
			return notFoundf("user [%s] is not a member of workspace [%s]", userID, ws)
		}
		if m.Role == role {
			return nil
		}
		if m.Role == RoleOwner && c.owners(w.Core) == 1 {
			return invalidf("cannot demote the last owner of workspace [%s]: make another member an owner first", ws)
		}
		nm := *m
		nm.Role = role
		if err := t.putJSON(memberKey(w.Core, userID), &nm); err != nil {
			return err
		}
		t.after = append(t.after, func(c *catalog) { c.member(nm.Workspace)[userID] = &nm })
		return nil
	})
}

// RemoveMember removes a member from a workspace, with their API keys scoped
// to it. Owners may remove anyone; any member may remove themself. Removing
// the last owner fails with CodeInvalid (as demoting them does): delete the
// workspace instead, or make another member an owner first.
func (e *Engine) RemoveMember(callerID, ws, userID string) error {
	return e.runCatalog(func(c *catalog, t *catTx) error {
		w, _, err := c.access(callerID, ws, callerID != userID)
		if err != nil {
			return err
		}
		core := w.Core
		m := c.members[core][userID]
		if m == nil {
			return notFoundf("user [%s] is not a member of workspace [%s]", userID, ws)
		}
		if m.Role == RoleOwner && c.owners(core) == 1 {
			return invalidf("cannot remove the last owner of workspace [%s]: make another member an owner or delete the workspace", ws)
		}
		scoped := c.scopedKeys(core, userID)
		for _, k := range scoped {
			if err := t.delete(apiKeyKey(k.Hash), userAPIKeyKey(k.UserID, k.Name)); err != nil {
				return err
			}
		}
		if err := t.delete(memberKey(core, userID)); err != nil {
			return err
		}
		t.after = append(t.after, func(c *catalog) {
			for _, k := range scoped {
				c.removeKey(k)
			}
			delete(c.members[core], userID)
		})
		return nil
	})
}
