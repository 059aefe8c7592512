package consensus

import (
	"errors"
	"fmt"
)

// A log entry's payload is one kind byte, so that the format can grow, then
// the command:
//
//	kindOne cmd    one command, the rest of the payload
//
// Every node decodes the same bytes the same way; a kind it does not know
// stops it rather than let it skip a command the others apply.
const kindOne byte = 1

// errCorrupt reports a payload that does not decode: a bug, corruption or a
// newer format, never bad user input, since only this package writes them.
var errCorrupt = errors.New("consensus: corrupt entry")

// encodeOne frames a single command.
func encodeOne(cmd []byte) []byte {
	p := make([]byte, 1+len(cmd))
	p[0] = kindOne
	copy(p[1:], cmd)
	return p
}

// decodePayload returns the command of an entry; it aliases p.
func decodePayload(p []byte) ([]byte, error) {
	if len(p) == 0 {
		return nil, fmt.Errorf("%w: empty payload", errCorrupt)
	}
	if p[0] != kindOne {
		return nil, fmt.Errorf("%w: kind %d", errCorrupt, p[0])
	}
	return p[1:len(p):len(p)], nil
}
