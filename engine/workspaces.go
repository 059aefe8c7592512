package engine

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
func (a *Accounts) MemberRole(ws, userID string) (role Role, ok bool) {
	e := a.e
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
func (a *Accounts) UserWorkspaces(userID string) []string {
	e := a.e
	e.cat.mu.RLock()
	defer e.cat.mu.RUnlock()
	var out []string
	for _, core := range model.SortedKeys(e.cat.members) {
		if e.cat.members[core][userID] != nil && e.cat.workspaces[core] != nil {
			out = append(out, core)
		}
	}
	return out
}

// ListWorkspaces returns the workspaces a user is a member of, with the
// user's role, by public id.
func (a *Accounts) ListWorkspaces(userID string) []WorkspaceInfo {
	e := a.e
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
func (a *Accounts) GetWorkspace(userID, ws string) (WorkspaceInfo, error) {
	e := a.e
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
func (a *Accounts) UpdateWorkspace(userID, ws, name, slug string) (WorkspaceInfo, error) {
	res, err := a.apply(&updateWorkspace{Caller: userID, WS: ws, Name: name, Slug: slug})
	if err != nil {
		return WorkspaceInfo{}, err
	}
	return res.(WorkspaceInfo), nil
}

// CreateWorkspace creates a workspace whose single owner is userID. An empty
// slug derives from the name.
func (a *Accounts) CreateWorkspace(userID, name, slug string) (*Workspace, error) {
	if strings.TrimSpace(name) == "" {
		return nil, model.Invalidf("workspace name is required")
	}
	if slug == "" {
		slug = slugify(name)
	} else if err := model.CheckName("workspace slug", slug); err != nil {
		return nil, err
	}
	res, err := a.apply(&createWorkspace{Workspace: newWorkspace(name, slug, a.e.now()), Owner: userID})
	if err != nil {
		return nil, err
	}
	ws := res.(Workspace)
	return &ws, nil
}

// newWorkspace resolves a workspace to create: its random core id and its
// creation time.
func newWorkspace(name, slug string, now time.Time) Workspace {
	core := model.RandomString(6, "0123456789abcdefghijklmnopqrstuvwxyz")
	return Workspace{Core: core, Name: name, Slug: slug, Plan: "free", CreatedAt: now}
}

// DeleteWorkspace deletes a workspace (owner only) in one command: every
// database of it with all their data, its members, its invites and the API
// keys scoped to it.
func (a *Accounts) DeleteWorkspace(userID, ws string) error {
	_, err := a.apply(&deleteWorkspace{Caller: userID, WS: ws})
	return err
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
func (a *Accounts) ListMembers(userID, ws string) ([]MemberInfo, []Invite, error) {
	e := a.e
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
func (a *Accounts) SetMemberRole(callerID, ws, userID string, role Role) error {
	_, err := a.apply(&setMemberRole{Caller: callerID, WS: ws, UserID: userID, Role: role})
	return err
}

// RemoveMember removes a member from a workspace, with their API keys scoped
// to it. Owners may remove anyone; any member may remove themself. Removing
// the last owner fails with CodeInvalid (as demoting them does): delete the
// workspace instead, or make another member an owner first.
func (a *Accounts) RemoveMember(callerID, ws, userID string) error {
	_, err := a.apply(&removeMember{Caller: callerID, WS: ws, UserID: userID})
	return err
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
