package catalog

import (
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// A catalog command is one change of the global catalog as a value: it
// holds everything it needs, resolved before it is applied (ids, times,
// the hashes of generated secrets), so that applying it reads only the
// catalog and gives the same writes on every copy of the same catalog.
// Applying checks the command against the catalog (access, conflicts,
// last owners) as of that moment, stages its writes into the command's
// batch and its in-memory changes into t, and returns its result. The set
// of commands is closed: Kind lists them, and codec.go encodes each.

// Command is one catalog command.
type Command interface {
	// kind names the command in its encoding.
	kind() Kind
	// apply checks the command against c and stages it in t; h drops the
	// databases the command deletes. It returns the command's result,
	// whose type each command documents.
	apply(c *Catalog, t *Tx, h Host) (any, error)
}

// Stage checks cmd against c and stages it in t, as applying it does;
// h does what the command starts in the databases it places or deletes.
// It returns the command's result, whose type each command documents.
func Stage(c *Catalog, t *Tx, h Host, cmd Command) (any, error) { return cmd.apply(c, t, h) }

// Host is what catalog commands need of the databases they place and
// delete, whose contents live outside the catalog. Each call stages its
// writes into t's batch, so that they apply with the command or not at
// all, and what it changes in memory into t.
type Host interface {
	// InitDatabase stages the first command of the database p places:
	// its first branch.
	InitDatabase(t *Tx, p *Database, first *FirstBranch) error
	// RestoreDatabase stages the key range of a backup as the contents of
	// the database p places.
	RestoreDatabase(t *Tx, p *Database, backup []byte) error
	// DropDatabase stages the deletion of a database and everything in its
	// range into t, keeping its commands out until t ends.
	DropDatabase(t *Tx, p *Database) error
}

// FirstBranch is the first branch of a new database, resolved: its name,
// public id, creation time and metadata.
type FirstBranch struct {
	Name     string               `json:"name"`
	PublicID string               `json:"publicID"`
	Now      time.Time            `json:"now"`
	Metadata model.BranchMetadata `json:"metadata"`
}

// Kind numbers the catalog commands in their encoding; numbers are
// never reused.
type Kind uint8

// The catalog commands.
const (
	kindCreateUser Kind = iota + 1
	kindUpdateUser
	kindDeleteUser
	kindCreateAPIKey
	kindDeleteAPIKey
	kindCreateWorkspace
	kindUpdateWorkspace
	kindDeleteWorkspace
	kindSetMemberRole
	kindRemoveMember
	kindCreateInvite
	kindAcceptInvite
	kindUpdateInvite
	kindDeleteInvite
	kindPlaceDatabase
	kindUpdateDatabase
	kindDropDatabase
	kindSetServerState
	kindBootstrap
	kindRestoreDatabase
)

// SetServerState sets a server-wide setting unless it is set already; the
// result is the setting's value, the one it had or Value.
type SetServerState struct {
	Name  string `json:"name"`
	Value []byte `json:"value"`
}

func (*SetServerState) kind() Kind { return kindSetServerState }

func (cmd *SetServerState) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	if v := c.state[cmd.Name]; v != nil {
		return v, nil
	}
	v := cmd.Value
	if err := t.batch.Set(codec.CatalogKey(codec.CatServerState, []byte(cmd.Name)), v, nil); err != nil {
		return nil, err
	}
	t.after = append(t.after, func(c *Catalog) { c.state[cmd.Name] = v })
	return v, nil
}

// Bootstrap creates the first accounts of a server in one command: a user,
// a workspace they own and an API key of theirs.
type Bootstrap struct {
	User      User      `json:"user"`
	Workspace Workspace `json:"workspace"`
	Key       APIKey    `json:"key"`
}

func (*Bootstrap) kind() Kind { return kindBootstrap }

func (cmd *Bootstrap) apply(c *Catalog, t *Tx, _ Host) (any, error) {
	if err := c.checkNewUser(&cmd.User); err != nil {
		return nil, err
	}
	if err := c.checkNewWorkspace(&cmd.Workspace); err != nil {
		return nil, err
	}
	// The user is new: only the secret can be taken.
	if err := c.checkNewKey(&cmd.Key); err != nil {
		return nil, err
	}
	if err := writeUser(t, &cmd.User); err != nil {
		return nil, err
	}
	if err := writeWorkspace(t, &cmd.Workspace, cmd.User.ID); err != nil {
		return nil, err
	}
	return nil, writeKey(t, &cmd.Key)
}
