package api

import (
	"net/http"

	"github.com/coppice-db/coppice/engine"
)

// inviteJSON is an invite as the API shows it (spec §2.12). The invite key
// is not part of it: only the create response carries the key, once.
func inviteJSON(in engine.Invite) map[string]any {
	return map[string]any{"inviteId": in.ID, "email": in.Email, "expires": formatTime(in.Expires), "role": in.Role}
}

// createInvite: POST /workspaces/{ws}/invites; owners only. There is no
// mailer: the response carries the invite key for the owner to hand over.
// An email that is a member's or has a pending invite is a 409.
func (s *Server) createInvite(r *request) error {
	ws, err := r.memberWorkspace()
	if err != nil {
		return err
	}
	var body struct {
		Email string      `json:"email"`
		Role  engine.Role `json:"role"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	in, key, err := s.eng.Accounts().CreateInvite(r.user.ID, ws, body.Email, body.Role)
	if err != nil {
		return err
	}
	out := inviteJSON(in)
	out["inviteKey"] = key
	writeJSON(r.ctx, http.StatusCreated, out)
	return nil
}

// acceptInvite: POST /workspaces/{ws}/invites/{invite}/accept, where
// {invite} is the invite key. The caller need not be a member yet, so the
// engine answers an unknown workspace like an unknown key: 404.
func (s *Server) acceptInvite(r *request) error {
	ws, key, err := r.memberWorkspaceParam("invite")
	if err != nil {
		return err
	}
	if err := s.eng.Accounts().AcceptInvite(r.user.ID, ws, key); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusNoContent, nil)
	return nil
}

// resendInvite: POST /workspaces/{ws}/invites/{invite}/resend; owners only.
// Without a mailer it only checks the invite: 404 unknown, 400 accepted.
func (s *Server) resendInvite(r *request) error {
	ws, id, err := r.memberWorkspaceParam("invite")
	if err != nil {
		return err
	}
	if err := s.eng.Accounts().ResendInvite(r.user.ID, ws, id); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusNoContent, nil)
	return nil
}

// updateInvite: PATCH /workspaces/{ws}/invites/{invite}; owners only. The
// role changes in place; an accepted invite is a 422.
func (s *Server) updateInvite(r *request) error {
	ws, id, err := r.memberWorkspaceParam("invite")
	if err != nil {
		return err
	}
	var body roleRequest
	if err := r.decode(&body, false); err != nil {
		return err
	}
	in, err := s.eng.Accounts().UpdateInvite(r.user.ID, ws, id, body.Role)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, inviteJSON(in))
	return nil
}

// deleteInvite: DELETE /workspaces/{ws}/invites/{invite}; owners only. An
// accepted invite cannot be deleted: 400.
func (s *Server) deleteInvite(r *request) error {
	ws, id, err := r.memberWorkspaceParam("invite")
	if err != nil {
		return err
	}
	if err := s.eng.Accounts().DeleteInvite(r.user.ID, ws, id); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusNoContent, nil)
	return nil
}
