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
