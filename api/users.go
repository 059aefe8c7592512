package api

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// User, API key and administration endpoints (spec §4.6, compat-api.md §7).
// User endpoints act on the user the API key belongs to. A key scoped to a
// workspace reaches that workspace only and may not act on the account: it
// cannot delete the user, revoke the user's other keys, create workspaces
// or administer the server (403). The keys it creates are scoped to the
// same workspace, so a scoped key cannot mint a broader one.

// adminKeyName is the name of the first API key of a user created by the
// administrator.
const adminKeyName = "default"

// userJSON is a User with its id (spec §2.11).
func userJSON(u engine.User) map[string]any {
	return map[string]any{"id": u.ID, "email": u.Email, "fullname": u.Fullname, "image": u.Image}
}

// getUser: GET /user.
func (s *Server) getUser(r *request) error {
	u, err := s.eng.Accounts().GetUser(r.user.ID)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, userJSON(u))
	return nil
}

// updateUser: PUT /user. All three fields are required: the update replaces
// them, and a missing one would be erased by accident.
func (s *Server) updateUser(r *request) error {
	var body struct {
		Email    *string `json:"email"`
		Fullname *string `json:"fullname"`
		Image    *string `json:"image"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	var missing []string
	for _, f := range []struct {
		name string
		v    *string
	}{{"email", body.Email}, {"fullname", body.Fullname}, {"image", body.Image}} {
		if f.v == nil {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return invalid("email, fullname and image are all required; missing: %s", strings.Join(missing, ", "))
	}
	u, err := s.eng.Accounts().UpdateUser(r.user.ID, *body.Email, *body.Fullname, *body.Image)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, userJSON(u))
	return nil
}

// deleteUser: DELETE /user. Every key of the user stops working at once,
// the calling one included. The last owner of a workspace cannot delete
// their account: 400 (engine.DeleteUser).
func (s *Server) deleteUser(r *request) error {
	if err := r.accountKey("delete the account"); err != nil {
		return err
	}
	if err := s.eng.Accounts().DeleteUser(r.user.ID); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusNoContent, nil)
	return nil
}

// listAPIKeys: GET /user/keys. Secrets are never listed.
func (s *Server) listAPIKeys(r *request) error {
	list := s.eng.Accounts().ListAPIKeys(r.user.ID)
	out := make([]map[string]any, 0, len(list))
	for _, k := range list {
		out = append(out, map[string]any{"name": k.Name, "createdAt": formatTime(k.CreatedAt)})
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"keys": out})
	return nil
}

// emptyKeyName answers /user/keys/ with no key name.
func (s *Server) emptyKeyName(r *request) error {
	return invalid("API key name must not be empty: use /user/keys/{name}")
}

// createAPIKey: POST /user/keys/{name}, optional body {"workspaceID"}
// scoping the key to a workspace of the caller.
func (s *Server) createAPIKey(r *request) error {
	name, err := r.param("name")
	if err != nil {
		return err
	}
	var body struct {
		WorkspaceID string `json:"workspaceID"`
	}
	if err := r.decode(&body, true); err != nil {
		return err
	}
	scope := r.key.Workspace
	if body.WorkspaceID != "" {
		core, ok := engine.WorkspaceCore(body.WorkspaceID)
		if !ok || scope != "" && core != scope {
			return forbidden(body.WorkspaceID)
		}
		if _, member := s.eng.Accounts().MemberRole(core, r.user.ID); !member {
			return forbidden(body.WorkspaceID)
		}
		scope = core
	}
	cred, err := s.eng.Accounts().CreateAPIKey(r.user.ID, name, scope, "")
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusCreated, map[string]any{
		"name": cred.Name, "key": cred.Secret, "createdAt": formatTime(s.keyCreatedAt(r.user.ID, cred.Name)),
	})
	return nil
}

// keyCreatedAt returns when a user's key was created; now if it is gone
// already (deleted by a concurrent request).
func (s *Server) keyCreatedAt(userID, name string) time.Time {
	for _, k := range s.eng.Accounts().ListAPIKeys(userID) {
		if k.Name == name {
			return k.CreatedAt
		}
	}
	return time.Now()
}

// deleteAPIKey: DELETE /user/keys/{name}. The key stops working at once; it
// may be the calling key, the only one a scoped key may revoke.
func (s *Server) deleteAPIKey(r *request) error {
	name, err := r.param("name")
	if err != nil {
		return err
	}
	if name != r.key.Name {
		if err := r.accountKey("revoke other API keys"); err != nil {
			return err
		}
	}
	if err := s.eng.Accounts().DeleteAPIKey(r.user.ID, name); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusNoContent, nil)
	return nil
}

// adminCreateUser: POST /admin/users, for the server administrator only.
// It creates a user and a first, unscoped API key named "default", and
// returns the key's secret once. The new user belongs to no workspace: an
// owner invites them, and they scope further keys themselves.
func (s *Server) adminCreateUser(r *request) error {
	if err := r.accountKey("administer the server"); err != nil {
		return err
	}
	if !r.user.Admin {
		return engine.Errorf(engine.CodeForbidden, "only the server administrator may create users")
	}
	var body struct {
		Email       string `json:"email"`
		Fullname    string `json:"fullname"`
		Image       string `json:"image"`
		WorkspaceID string `json:"workspaceID"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	if body.Email == "" {
		return invalid("email is required")
	}
	if body.WorkspaceID != "" {
		return invalid("workspaceID is not supported: a new user belongs to no workspace and gets an unscoped key; invite them to the workspace instead")
	}
	u, err := s.eng.Accounts().CreateUser(engine.NewUser{Email: body.Email, Fullname: body.Fullname, Image: body.Image})
	if err != nil {
		return err
	}
	cred, err := s.eng.Accounts().CreateAPIKey(u.ID, adminKeyName, "", "")
	if err != nil {
		// Do not leave a user nobody can sign in as.
		if derr := s.eng.Accounts().DeleteUser(u.ID); derr != nil {
			s.log.Error("remove user after failed key creation", slog.String("user", u.ID), slog.Any("err", derr))
		}
		return err
	}
	writeJSON(r.ctx, http.StatusCreated, map[string]any{"user": userJSON(*u), "key": cred.Secret})
	return nil
}

// accountKey refuses, with 403, a key scoped to a workspace the account
// operations it may not do.
func (r *request) accountKey(what string) error {
	if r.key.Workspace == "" {
		return nil
	}
	return engine.Errorf(engine.CodeForbidden, "an API key scoped to a workspace cannot %s: use an unscoped key", what)
}
