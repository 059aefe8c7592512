package engine

import (
	"strings"
	"time"
)

// InviteTTL is how long an invite can be accepted after it is created.
const InviteTTL = 7 * 24 * time.Hour

// pending reports whether an invite can still be accepted at now.
func (in *Invite) pending(now time.Time) bool {
	return !in.Accepted && now.Before(in.Expires)
}

// public returns a copy of the invite to hand out: without the key hash,
// which no caller needs.
func (in Invite) public() Invite {
	in.KeyHash = [32]byte{}
	return in
}

// findInvite returns an invite of workspace core by id, or CodeNotFound. The
// caller holds cat.mu or catMu.
func (c *catalog) findInvite(core, id string) (*Invite, error) {
	in := c.invites[core][id]
	if in == nil {
		return nil, notFoundf("invite [%s] not found", id)
	}
	return in, nil
}

// CreateInvite invites an email address into a workspace with a role (owner
// only). It returns the invite and its secret key ("ik_" + alphanumerics):
// the key is shown only here and stored only as a hash, and whoever holds it
// accepts the invite as the user with that email. An email that is already a
// member's, or has a pending invite, fails with CodeConflict; an expired,
// never accepted invite for the email is replaced.
func (e *Engine) CreateInvite(callerID, ws, email string, role Role) (Invite, string, error) {
	now := e.now()
	secret := "ik_" + randomString(40, keyAlphabet)
	in := &Invite{
		ID: e.ids.next("", now), Email: email, Role: role,
		Expires: now.Add(InviteTTL), KeyHash: HashKey(secret), CreatedAt: now,
	}
	err := e.runCatalog(func(c *catalog, t *catTx) error {
		w, _, err := c.access(callerID, ws, true)
		if err != nil {
			return err
		}
		if !validEmail(email) {
			return invalidf("invalid email address [%s]", email)
		}
		if err := checkRole(role); err != nil {
			return err
		}
		core := w.Core
		in.Workspace = core
		lower := strings.ToLower(email)
		if uid, ok := c.emails[lower]; ok && c.members[core][uid] != nil {
			return Errorf(CodeConflict, "[%s] is already a member of workspace [%s]", email, ws)
		}
		var stale []*Invite
		for _, id := range sortedKeys(c.invites[core]) {
			old := c.invites[core][id]
			if strings.ToLower(old.Email) != lower || old.Accepted {
				continue
			}
			if old.pending(now) {
				return Errorf(CodeConflict, "an invite for [%s] is already pending", email)
			}
			stale = append(stale, old)
		}
		if c.invites[core][in.ID] != nil || c.inviteKeys[in.KeyHash] != "" {
			return Errorf(CodeConflict, "invite id collision, retry")
		}
		for _, old := range stale {
			if err := t.delete(inviteKey(core, old.ID), inviteSecretKey(old.KeyHash)); err != nil {
				return err
			}
		}
		if err := t.putJSON(inviteKey(core, in.ID), in); err != nil {
			return err
		}
		if err := t.batch.Set(inviteSecretKey(in.KeyHash), inviteRef(core, in.ID), nil); err != nil {
			return err
		}
		t.after = append(t.after, func(c *catalog) {
			for _, old := range stale {
				delete(c.invite(core), old.ID)
				delete(c.inviteKeys, old.KeyHash)
			}
			c.invite(core)[in.ID] = in
			c.inviteKeys[in.KeyHash] = core + "/" + in.ID
		})
		return nil
	})
	if err != nil {
		return Invite{}, "", err
	}
	return in.public(), secret, nil
}

// inviteRef is the value of an invite-key entry: core 0x00 invite id.
func inviteRef(core, id string) []byte {
	return append(append([]byte(core), 0), id...)
}

// AcceptInvite makes the caller a member of a workspace with the role of the
// invite whose secret key is key, and marks the invite accepted: it
// leaves the pending list and its key stops working. A key that is unknown,
// expired, already used or of another workspace fails with CodeNotFound; a
// caller whose email is not the invite's with CodeForbidden; a caller who is
// already a member with CodeConflict.
func (e *Engine) AcceptInvite(callerID, ws, key string) error {
	now := e.now()
	h := HashKey(key)
	return e.runCatalog(func(c *catalog, t *catTx) error {
		u := c.users[callerID]
		if u == nil {
			return notFoundf("user [%s] not found", callerID)
		}
		core, _ := WorkspaceCore(ws)
		var in *Invite
		if refCore, id, ok := strings.Cut(c.inviteKeys[h], "/"); ok && refCore == core {
			in = c.invites[core][id]
		}
		if in == nil || c.workspaces[core] == nil || !in.pending(now) {
			return notFoundf("invite not found or expired")
		}
		if !strings.EqualFold(u.Email, in.Email) {
			return Errorf(CodeForbidden, "this invite is for another email address")
		}
		if c.members[core][callerID] != nil {
			return Errorf(CodeConflict, "user is already a member of workspace [%s]", ws)
		}
		m := &Member{Workspace: core, UserID: callerID, Role: in.Role, CreatedAt: now}
		done := *in
		done.Accepted = true
		if err := t.putJSON(memberKey(core, callerID), m); err != nil {
			return err
		}
		if err := t.putJSON(inviteKey(core, in.ID), &done); err != nil {
			return err
		}
		if err := t.delete(inviteSecretKey(h)); err != nil {
			return err
		}
		t.after = append(t.after, func(c *catalog) {
			c.member(core)[callerID] = m
			c.invite(core)[done.ID] = &done
			delete(c.inviteKeys, h)
		})
		return nil
	})
}

// ResendInvite would send an invite's email again (owner only). There is no
// mailer, so it only checks: an unknown invite fails with CodeNotFound, an
// accepted one with CodeInvalid (compat-api.md §7: 400).
func (e *Engine) ResendInvite(callerID, ws, inviteID string) error {
	e.cat.mu.RLock()
	defer e.cat.mu.RUnlock()
	w, _, err := e.cat.access(callerID, ws, true)
	if err != nil {
		return err
	}
	in, err := e.cat.findInvite(w.Core, inviteID)
	if err != nil {
		return err
	}
	if in.Accepted {
		return invalidf("invite [%s] is already accepted", inviteID)
	}
	return nil
}

// UpdateInvite changes the role of an invite in place (owner only): the id,
// key and expiry stay, and nobody is notified. An accepted invite fails with
// CodePrecondition, the 422 spec §4.6 lists for this operation: the request
// is well formed, the invite is just past the state where it can change.
func (e *Engine) UpdateInvite(callerID, ws, inviteID string, role Role) (Invite, error) {
	var out Invite
	err := e.runCatalog(func(c *catalog, t *catTx) error {
		w, _, err := c.access(callerID, ws, true)
		if err != nil {
			return err
		}
		if err := checkRole(role); err != nil {
			return err
		}
		in, err := c.findInvite(w.Core, inviteID)
		if err != nil {
			return err
		}
		if in.Accepted {
			return Errorf(CodePrecondition, "invite [%s] is already accepted and cannot be changed", inviteID)
		}
		ni := *in
		ni.Role = role
		if err := t.putJSON(inviteKey(ni.Workspace, ni.ID), &ni); err != nil {
			return err
		}
		out = ni.public()
		t.after = append(t.after, func(c *catalog) { c.invite(ni.Workspace)[ni.ID] = &ni })
		return nil
	})
	return out, err
}

// DeleteInvite deletes an invite that is not accepted, expired or not (owner
// only). An accepted invite fails with CodeInvalid: spec §3 forbids it, and
// 400 is the status spec §4.6 lists for delete invite that fits.
func (e *Engine) DeleteInvite(callerID, ws, inviteID string) error {
	return e.runCatalog(func(c *catalog, t *catTx) error {
		w, _, err := c.access(callerID, ws, true)
		if err != nil {
			return err
		}
		in, err := c.findInvite(w.Core, inviteID)
		if err != nil {
			return err
		}
		if in.Accepted {
			return invalidf("invite [%s] is already accepted and cannot be deleted", inviteID)
		}
		if err := t.delete(inviteKey(in.Workspace, in.ID), inviteSecretKey(in.KeyHash)); err != nil {
			return err
		}
		t.after = append(t.after, func(c *catalog) {
			delete(c.invite(in.Workspace), in.ID)
			delete(c.inviteKeys, in.KeyHash)
		})
		return nil
	})
}
