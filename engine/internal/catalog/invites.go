package catalog

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
