package api

import (
	"net/http"

	"github.com/coppice-db/coppice/engine"
)

// Workspace, member and invite endpoints (spec §4.6, compat-api.md §7). The
// engine checks membership and roles itself and answers a non-member, or a
// workspace that does not exist, with CodeForbidden "no access to workspace
// [<ws>]": these endpoints are the ones where the spec lists 403, unlike the
// database endpoints, which answer 401 through request.controlWorkspace.

// controlPlaneRoutes registers the user, API key, admin, workspace, member
// and invite endpoints.
func (s *Server) controlPlaneRoutes() {
	r := s.router
	const ws = "/workspaces/{ws}"

	// The caller's own account and keys.
	r.GET("/user", s.handle(s.getUser))
	r.PUT("/user", s.handle(s.updateUser))
	r.DELETE("/user", s.handle(s.deleteUser))
	r.GET("/user/keys", s.handle(s.listAPIKeys))
	r.POST("/user/keys/", s.handle(s.emptyKeyName))
	r.DELETE("/user/keys/", s.handle(s.emptyKeyName))
	r.POST("/user/keys/{name}", s.handle(s.createAPIKey))
	r.DELETE("/user/keys/{name}", s.handle(s.deleteAPIKey))

	// Server administration.
	r.POST("/admin/users", s.handle(s.adminCreateUser))

	// Workspaces.
	r.GET("/workspaces", s.handle(s.listWorkspaces))
	r.POST("/workspaces", s.handle(s.createWorkspace))
	r.GET(ws, s.handle(s.getWorkspace))
	r.PUT(ws, s.handle(s.updateWorkspace))
	r.DELETE(ws, s.handle(s.deleteWorkspace))

	// Members. The router wants one parameter name per position, hence
	// {invite} for both invite ids and invite keys below.
	r.GET(ws+"/members", s.handle(s.listMembers))
	r.PUT(ws+"/members/{user}", s.handle(s.setMemberRole))
	r.DELETE(ws+"/members/{user}", s.handle(s.removeMember))

	// Invites.
	r.POST(ws+"/invites", s.handle(s.createInvite))
	r.POST(ws+"/invites/{invite}/accept", s.handle(s.acceptInvite))
	r.POST(ws+"/invites/{invite}/resend", s.handle(s.resendInvite))
	r.PATCH(ws+"/invites/{invite}", s.handle(s.updateInvite))
	r.DELETE(ws+"/invites/{invite}", s.handle(s.deleteInvite))
}

// memberWorkspace returns the {ws} parameter of a workspace, member or
// invite endpoint, decoded, for the engine to resolve and check. A key
// scoped to another workspace gets the engine's answer for a workspace the
// caller does not belong to, so a scoped key reaches nothing else.
func (r *request) memberWorkspace() (string, error) {
	label, err := r.param("ws")
	if err != nil {
		return "", err
	}
	if r.key.Workspace != "" {
		if core, _ := engine.WorkspaceCore(label); core != r.key.Workspace {
			return "", forbidden(label)
		}
	}
	return label, nil
}

// forbidden is the 403 for a workspace that does not exist or that the
// caller may not use, in the engine's words.
func forbidden(label string) error {
	return engine.Errorf(engine.CodeForbidden, "no access to workspace [%s]", label)
}

// workspaceJSON is a Workspace (spec §2.10).
func workspaceJSON(w engine.WorkspaceInfo) map[string]any {
	return map[string]any{"id": w.ID, "name": w.Name, "slug": w.Slug, "memberCount": w.MemberCount, "plan": w.Plan}
}

// workspaceRequest is the body of workspace create and update.
type workspaceRequest struct {
	Name string `json:"name"`
	Slug string `json:"slug"`
}

// listWorkspaces: GET /workspaces. A key scoped to a workspace lists only
// that one.
func (s *Server) listWorkspaces(r *request) error {
	list := s.eng.Accounts().ListWorkspaces(r.user.ID)
	out := make([]map[string]any, 0, len(list))
	for _, w := range list {
		if r.key.Workspace != "" && w.Core != r.key.Workspace {
			continue
		}
		out = append(out, map[string]any{"id": w.ID, "name": w.Name, "slug": w.Slug, "role": w.Role, "plan": w.Plan})
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"workspaces": out})
	return nil
}

// createWorkspace: POST /workspaces. The caller becomes its single owner.
// A key scoped to a workspace cannot create another: 403.
func (s *Server) createWorkspace(r *request) error {
	if err := r.accountKey("create workspaces"); err != nil {
		return err
	}
	var body workspaceRequest
	if err := r.decode(&body, false); err != nil {
		return err
	}
	w, err := s.eng.Accounts().CreateWorkspace(r.user.ID, body.Name, body.Slug)
	if err != nil {
		return err
	}
	info, err := s.eng.Accounts().GetWorkspace(r.user.ID, w.Core)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusCreated, workspaceJSON(info))
	return nil
}

// getWorkspace: GET /workspaces/{ws}; any member.
func (s *Server) getWorkspace(r *request) error {
	ws, err := r.memberWorkspace()
	if err != nil {
		return err
	}
	info, err := s.eng.Accounts().GetWorkspace(r.user.ID, ws)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, workspaceJSON(info))
	return nil
}

// updateWorkspace: PUT /workspaces/{ws}; owners only. The engine checks
// access before the name, so a non-member learns nothing from a bad body
// either.
func (s *Server) updateWorkspace(r *request) error {
	ws, err := r.memberWorkspace()
	if err != nil {
		return err
	}
	var body workspaceRequest
	if err := r.decode(&body, false); err != nil {
		return err
	}
	info, err := s.eng.Accounts().UpdateWorkspace(r.user.ID, ws, body.Name, body.Slug)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, workspaceJSON(info))
	return nil
}

// deleteWorkspace: DELETE /workspaces/{ws}; owners only. Every database of
// the workspace goes with it.
func (s *Server) deleteWorkspace(r *request) error {
	ws, err := r.memberWorkspace()
	if err != nil {
		return err
	}
	if err := s.eng.Accounts().DeleteWorkspace(r.user.ID, ws); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusNoContent, nil)
	return nil
}
