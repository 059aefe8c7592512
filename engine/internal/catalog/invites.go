package catalog

import (
	"strings"
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
// caller holds mu, or runs a command.
func (c *Catalog) findInvite(core, id string) (*Invite, error) {
	in := c.invites[core][id]
	if in == nil {
		return nil, model.NotFoundf("invite [%s] not found", id)
	}
	return in, nil
}

// inviteRef is the value of an invite-key entry: core 0x00 invite id.
func inviteRef(core, id string) []byte {
	return append(append([]byte(core), 0), id...)
}

// CheckResend checks that the invite of a workspace could be sent again
// by callerID (owner only): an unknown invite fails with CodeNotFound, an
// accepted one with CodeInvalid.
func (c *Catalog) CheckResend(callerID, ws, inviteID string) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	w, _, err := c.access(callerID, ws, true)
	if err != nil {
		return err
	}
	in, err := c.findInvite(w.Core, inviteID)
	if err != nil {
		return err
	}
	if in.Accepted {
		return model.Invalidf("invite [%s] is already accepted", inviteID)
	}
	return nil
}

// CreateInvite invites an email address into a workspace (owner only).
// Invite carries its id, key hash, expiry and creation time, which is also
// when pending invites are judged; the command sets its workspace. The
// result is the Invite.
type CreateInvite struct {
	Caller string `json:"caller"`
	WS     string `json:"ws"`
	Invite Invite `json:"invite"`
}

func (*CreateInvite) kind() Kind { return kindCreateInvite }

func (cmd *CreateInvite) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	w, _, err := c.access(cmd.Caller, cmd.WS, true)
	if err != nil {
		return nil, err
	}
	in := cmd.Invite
	email, now := in.Email, in.CreatedAt
	if !model.ValidEmail(email) {
		return nil, model.Invalidf("invalid email address [%s]", email)
	}
	if err := checkRole(in.Role); err != nil {
		return nil, err
	}
	core := w.Core
	in.Workspace = core
	lower := strings.ToLower(email)
	if uid, ok := c.emails[lower]; ok && c.members[core][uid] != nil {
		return nil, model.Errorf(model.CodeConflict, "[%s] is already a member of workspace [%s]", email, cmd.WS)
	}
	var stale []*Invite
	for _, id := range model.SortedKeys(c.invites[core]) {
		old := c.invites[core][id]
		if strings.ToLower(old.Email) != lower || old.Accepted {
			continue
		}
		if old.pending(now) {
			return nil, model.Errorf(model.CodeConflict, "an invite for [%s] is already pending", email)
		}
		stale = append(stale, old)
	}
	if c.invites[core][in.ID] != nil || c.inviteKeys[in.KeyHash] != "" {
		return nil, model.Errorf(model.CodeConflict, "invite id collision, retry")
	}
	for _, old := range stale {
		if err := t.delete(inviteKey(core, old.ID), inviteSecretKey(old.KeyHash)); err != nil {
			return nil, err
		}
	}
	if err := t.putJSON(inviteKey(core, in.ID), &in); err != nil {
		return nil, err
	}
	if err := t.batch.Set(inviteSecretKey(in.KeyHash), inviteRef(core, in.ID), nil); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) {
		for _, old := range stale {
			delete(c.invite(core), old.ID)
			delete(c.inviteKeys, old.KeyHash)
		}
		c.invite(core)[in.ID] = &in
		c.inviteKeys[in.KeyHash] = core + "/" + in.ID
	})
	return in.public(), nil
}

// AcceptInvite makes the caller a member by the invite whose key hashes to
// KeyHash, at Now.
type AcceptInvite struct {
	Caller  string    `json:"caller"`
	WS      string    `json:"ws"`
	KeyHash [32]byte  `json:"keyHash"`
	Now     time.Time `json:"now"`
}

func (*AcceptInvite) kind() Kind { return kindAcceptInvite }

func (cmd *AcceptInvite) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	callerID, h := cmd.Caller, cmd.KeyHash
	u := c.users[callerID]
	if u == nil {
		return nil, model.NotFoundf("user [%s] not found", callerID)
	}
	core, _ := WorkspaceCore(cmd.WS)
	var in *Invite
	if refCore, id, ok := strings.Cut(c.inviteKeys[h], "/"); ok && refCore == core {
		in = c.invites[core][id]
	}
	if in == nil || c.workspaces[core] == nil || !in.pending(cmd.Now) {
		return nil, model.NotFoundf("invite not found or expired")
	}
	if !strings.EqualFold(u.Email, in.Email) {
		return nil, model.Errorf(model.CodeForbidden, "this invite is for another email address")
	}
	if c.members[core][callerID] != nil {
		return nil, model.Errorf(model.CodeConflict, "user is already a member of workspace [%s]", cmd.WS)
	}
	m := &Member{Workspace: core, UserID: callerID, Role: in.Role, CreatedAt: cmd.Now}
	done := *in
	done.Accepted = true
	if err := t.putJSON(memberKey(core, callerID), m); err != nil {
		return nil, err
	}
	if err := t.putJSON(inviteKey(core, in.ID), &done); err != nil {
		return nil, err
	}
	if err := t.delete(inviteSecretKey(h)); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) {
		c.member(core)[callerID] = m
		c.invite(core)[done.ID] = &done
		delete(c.inviteKeys, h)
	})
	return nil, nil
}

// UpdateInvite changes the role of a pending invite (owner only); the
// result is the Invite.
type UpdateInvite struct {
	Caller   string `json:"caller"`
	WS       string `json:"ws"`
	InviteID string `json:"inviteID"`
	Role     Role   `json:"role"`
}

func (*UpdateInvite) kind() Kind { return kindUpdateInvite }

func (cmd *UpdateInvite) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	w, _, err := c.access(cmd.Caller, cmd.WS, true)
	if err != nil {
		return nil, err
	}
	if err := checkRole(cmd.Role); err != nil {
		return nil, err
	}
	in, err := c.findInvite(w.Core, cmd.InviteID)
	if err != nil {
		return nil, err
	}
	if in.Accepted {
		return nil, model.Errorf(model.CodePrecondition, "invite [%s] is already accepted and cannot be changed", cmd.InviteID)
	}
	ni := *in
	ni.Role = cmd.Role
	if err := t.putJSON(inviteKey(ni.Workspace, ni.ID), &ni); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) { c.invite(ni.Workspace)[ni.ID] = &ni })
	return ni.public(), nil
}

// DeleteInvite deletes an invite that is not accepted (owner only).
type DeleteInvite struct {
	Caller   string `json:"caller"`
	WS       string `json:"ws"`
	InviteID string `json:"inviteID"`
}

func (*DeleteInvite) kind() Kind { return kindDeleteInvite }

func (cmd *DeleteInvite) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	w, _, err := c.access(cmd.Caller, cmd.WS, true)
	if err != nil {
		return nil, err
	}
	in, err := c.findInvite(w.Core, cmd.InviteID)
	if err != nil {
		return nil, err
	}
	if in.Accepted {
		return nil, model.Invalidf("invite [%s] is already accepted and cannot be deleted", cmd.InviteID)
	}
	if err := t.delete(inviteKey(in.Workspace, in.ID), inviteSecretKey(in.KeyHash)); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) {
		delete(c.invite(in.Workspace), in.ID)
		delete(c.inviteKeys, in.KeyHash)
	})
	return nil, nil
}
