package engine

import (
	"time"

	"github.com/coppice-db/coppice/engine/internal/model"
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
		return nil, model.NotFoundf("invite [%s] not found", id)
	}
	return in, nil
}

// CreateInvite invites an email address into a workspace with a role (owner
// only). It returns the invite and its secret key ("ik_" + alphanumerics):
// the key is shown only here and stored only as a hash, and whoever holds it
// accepts the invite as the user with that email. An email that is already a
// member's, or has a pending invite, fails with CodeConflict; an expired,
// never accepted invite for the email is replaced.
func (a *Accounts) CreateInvite(callerID, ws, email string, role Role) (Invite, string, error) {
	now := a.e.now()
	secret := "ik_" + model.RandomString(40, keyAlphabet)
	in := Invite{
		ID: a.e.ids.Next("", now), Email: email, Role: role,
		Expires: now.Add(InviteTTL), KeyHash: HashKey(secret), CreatedAt: now,
	}
	res, err := a.apply(&createInvite{Caller: callerID, WS: ws, Invite: in})
	if err != nil {
		return Invite{}, "", err
	}
	return res.(Invite), secret, nil
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
func (a *Accounts) AcceptInvite(callerID, ws, key string) error {
	_, err := a.apply(&acceptInvite{Caller: callerID, WS: ws, KeyHash: HashKey(key), Now: a.e.now()})
	return err
}

// ResendInvite would send an invite's email again (owner only). There is no
// mailer, so it only checks: an unknown invite fails with CodeNotFound, an
// accepted one with CodeInvalid (compat-api.md §7: 400).
func (a *Accounts) ResendInvite(callerID, ws, inviteID string) error {
	e := a.e
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
		return model.Invalidf("invite [%s] is already accepted", inviteID)
	}
	return nil
}

// UpdateInvite changes the role of an invite in place (owner only): the id,
// key and expiry stay, and nobody is notified. An accepted invite fails with
// CodePrecondition, the 422 spec §4.6 lists for this operation: the request
// is well formed, the invite is just past the state where it can change.
func (a *Accounts) UpdateInvite(callerID, ws, inviteID string, role Role) (Invite, error) {
	res, err := a.apply(&updateInvite{Caller: callerID, WS: ws, InviteID: inviteID, Role: role})
	if err != nil {
		return Invite{}, err
	}
	return res.(Invite), nil
}

// DeleteInvite deletes an invite that is not accepted, expired or not (owner
// only). An accepted invite fails with CodeInvalid: spec §3 forbids it, and
// 400 is the status spec §4.6 lists for delete invite that fits.
func (a *Accounts) DeleteInvite(callerID, ws, inviteID string) error {
	_, err := a.apply(&deleteInvite{Caller: callerID, WS: ws, InviteID: inviteID})
	return err
}
