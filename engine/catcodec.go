package engine

import (
	"encoding/json"
	"fmt"
)

// The encoding of catalog commands, for whatever carries them between
// copies of a catalog (a replicated log): a version byte, the command's
// kind, then the command as JSON. JSON of these structs is deterministic:
// fields in declaration order, no maps. A new field is added with a zero
// value that means what its absence meant; a change of meaning takes a new
// kind, and a change of layout a new version.

// catCodecVersion is the version of the encoding.
const catCodecVersion = 1

// catCommands makes an empty command of each kind, for decoding.
var catCommands = map[catKind]func() catCommand{
	catCreateUser:      func() catCommand { return new(createUser) },
	catUpdateUser:      func() catCommand { return new(updateUser) },
	catDeleteUser:      func() catCommand { return new(deleteUser) },
	catCreateAPIKey:    func() catCommand { return new(createAPIKey) },
	catDeleteAPIKey:    func() catCommand { return new(deleteAPIKey) },
	catCreateWorkspace: func() catCommand { return new(createWorkspace) },
	catUpdateWorkspace: func() catCommand { return new(updateWorkspace) },
	catDeleteWorkspace: func() catCommand { return new(deleteWorkspace) },
	catSetMemberRole:   func() catCommand { return new(setMemberRole) },
	catRemoveMember:    func() catCommand { return new(removeMember) },
	catCreateInvite:    func() catCommand { return new(createInvite) },
	catAcceptInvite:    func() catCommand { return new(acceptInvite) },
	catUpdateInvite:    func() catCommand { return new(updateInvite) },
	catDeleteInvite:    func() catCommand { return new(deleteInvite) },
	catPlaceDatabase:   func() catCommand { return new(placeDatabase) },
	catUpdateDatabase:  func() catCommand { return new(updateDatabase) },
	catDropDatabase:    func() catCommand { return new(dropDatabase) },
	catSetServerState:  func() catCommand { return new(setServerState) },
	catBootstrap:       func() catCommand { return new(bootstrap) },
}

// encodeCatCommand encodes a catalog command.
func encodeCatCommand(cmd catCommand) ([]byte, error) {
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	return append([]byte{catCodecVersion, byte(cmd.kind())}, body...), nil
}

// decodeCatCommand decodes what encodeCatCommand wrote.
func decodeCatCommand(b []byte) (catCommand, error) {
	if len(b) < 2 || b[0] != catCodecVersion {
		return nil, fmt.Errorf("engine: catalog command of unknown encoding")
	}
	mk := catCommands[catKind(b[1])]
	if mk == nil {
		return nil, fmt.Errorf("engine: catalog command of unknown kind %d", b[1])
	}
	cmd := mk()
	if err := json.Unmarshal(b[2:], cmd); err != nil {
		return nil, fmt.Errorf("engine: catalog command of kind %d: %w", b[1], err)
	}
	return cmd, nil
}

// encodeCatResult encodes the result of a catalog command, for the copy
// of the catalog that proposed it: JSON, decoded by the command's kind.
func encodeCatResult(res any) ([]byte, error) { return json.Marshal(res) }

// decodeCatResult decodes the result of a command of kind k.
func decodeCatResult(k catKind, b []byte) (any, error) {
	switch k {
	case catCreateUser, catUpdateUser:
		return decodeAs[User](b)
	case catCreateWorkspace:
		return decodeAs[Workspace](b)
	case catUpdateWorkspace:
		return decodeAs[WorkspaceInfo](b)
	case catCreateInvite, catUpdateInvite:
		return decodeAs[Invite](b)
	case catPlaceDatabase:
		return decodeAs[*Database](b)
	case catUpdateDatabase:
		return decodeAs[DatabaseInfo](b)
	case catSetServerState:
		return decodeAs[[]byte](b)
	}
	if string(b) != "null" {
		return nil, fmt.Errorf("engine: catalog command of kind %d has no result", k)
	}
	return nil, nil
}

// decodeAs decodes JSON into a T.
func decodeAs[T any](b []byte) (any, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}
