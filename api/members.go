package api

import (
	"net/http"

	"github.com/coppice-db/coppice/engine"
)

// roleRequest is the body of member role and invite updates.
type roleRequest struct {
	Role engine.Role `json:"role"`
}

// listMembers: GET /workspaces/{ws}/members; any member. invites holds the
// pending invites only.
func (s *Server) listMembers(r *request) error {
	ws, err := r.memberWorkspace()
	if err != nil {
		return err
	}
	members, invites, err := s.eng.Accounts().ListMembers(r.user.ID, ws)
	if err != nil {
		return err
	}
	ms := make([]map[string]any, 0, len(members))
	for _, m := range members {
		ms = append(ms, map[string]any{"userId": m.UserID, "fullname": m.Fullname, "email": m.Email, "role": m.Role})
	}
	is := make([]map[string]any, 0, len(invites))
	for _, in := range invites {
		is = append(is, inviteJSON(in))
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"members": ms, "invites": is})
	return nil
}

// setMemberRole: PUT /workspaces/{ws}/members/{user}; owners only.
// Demoting the last owner is a 400 (engine.SetMemberRole).
func (s *Server) setMemberRole(r *request) error {
	ws, userID, err := r.memberWorkspaceParam("user")
	if err != nil {
		return err
	}
	var body roleRequest
	if err := r.decode(&body, false); err != nil {
		return err
	}
	if err := s.eng.Accounts().SetMemberRole(r.user.ID, ws, userID, body.Role); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusNoContent, nil)
	return nil
}

// removeMember: DELETE /workspaces/{ws}/members/{user}; owners remove
// anyone, any member removes themself. Removing the last owner is a 400
// (engine.RemoveMember).
func (s *Server) removeMember(r *request) error {
	ws, userID, err := r.memberWorkspaceParam("user")
	if err != nil {
		return err
	}
	if err := s.eng.Accounts().RemoveMember(r.user.ID, ws, userID); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusNoContent, nil)
	return nil
}

// memberWorkspaceParam returns the workspace of a /workspaces/{ws}/... path
// and one more path parameter.
func (r *request) memberWorkspaceParam(name string) (ws, value string, err error) {
	if ws, err = r.memberWorkspace(); err != nil {
		return "", "", err
	}
	value, err = r.param(name)
	return ws, value, err
}
