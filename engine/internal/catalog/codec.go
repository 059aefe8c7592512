package catalog

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

// commands makes an empty command of each kind, for decoding.
var commands = map[Kind]func() Command{
	kindCreateUser:      func() Command { return new(CreateUser) },
	kindUpdateUser:      func() Command { return new(UpdateUser) },
	kindDeleteUser:      func() Command { return new(DeleteUser) },
	kindCreateAPIKey:    func() Command { return new(CreateAPIKey) },
	kindDeleteAPIKey:    func() Command { return new(DeleteAPIKey) },
	kindCreateWorkspace: func() Command { return new(CreateWorkspace) },
	kindUpdateWorkspace: func() Command { return new(UpdateWorkspace) },
	kindDeleteWorkspace: func() Command { return new(DeleteWorkspace) },
	kindSetMemberRole:   func() Command { return new(SetMemberRole) },
	kindRemoveMember:    func() Command { return new(RemoveMember) },
	kindCreateInvite:    func() Command { return new(CreateInvite) },
	kindAcceptInvite:    func() Command { return new(AcceptInvite) },
	kindUpdateInvite:    func() Command { return new(UpdateInvite) },
	kindDeleteInvite:    func() Command { return new(DeleteInvite) },
	kindPlaceDatabase:   func() Command { return new(PlaceDatabase) },
	kindUpdateDatabase:  func() Command { return new(UpdateDatabase) },
	kindDropDatabase:    func() Command { return new(DropDatabase) },
	kindSetServerState:  func() Command { return new(SetServerState) },
	kindBootstrap:       func() Command { return new(Bootstrap) },
	kindRestoreDatabase: func() Command { return new(RestoreDatabase) },
}

// Encode encodes a catalog command.
func Encode(cmd Command) ([]byte, error) {
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	return append([]byte{catCodecVersion, byte(cmd.kind())}, body...), nil
}

// Decode decodes what Encode wrote.
func Decode(b []byte) (Command, error) {
	if len(b) < 2 || b[0] != catCodecVersion {
		return nil, fmt.Errorf("catalog: command of unknown encoding")
	}
	mk := commands[Kind(b[1])]
	if mk == nil {
		return nil, fmt.Errorf("catalog: command of unknown kind %d", b[1])
	}
	cmd := mk()
	if err := json.Unmarshal(b[2:], cmd); err != nil {
		return nil, fmt.Errorf("catalog: command of kind %d: %w", b[1], err)
	}
	return cmd, nil
}

// EncodeResult encodes the result of a catalog command, for the copy of
// the catalog that proposed it: JSON, decoded by the command's kind.
func EncodeResult(res any) ([]byte, error) { return json.Marshal(res) }

// DecodeResult decodes the result of cmd that EncodeResult wrote.
func DecodeResult(cmd Command, b []byte) (any, error) {
	k := cmd.kind()
	switch k {
	case kindCreateUser, kindUpdateUser:
		return decodeAs[User](b)
	case kindCreateWorkspace:
		return decodeAs[Workspace](b)
	case kindUpdateWorkspace:
		return decodeAs[WorkspaceInfo](b)
	case kindCreateInvite, kindUpdateInvite:
		return decodeAs[Invite](b)
	case kindPlaceDatabase, kindRestoreDatabase:
		return decodeAs[*Database](b)
	case kindUpdateDatabase:
		return decodeAs[DatabaseInfo](b)
	case kindSetServerState:
		return decodeAs[[]byte](b)
	}
	if string(b) != "null" {
		return nil, fmt.Errorf("catalog: command of kind %d has no result", k)
	}
	return nil, nil
}

// decodeAs decodes JSON into a T.
func decodeAs[T any](b []byte) (any, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}
