package consensus

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A log entry's payload starts with one kind byte so that the format can grow:
//
//	kindOne   cmd                                  one command, the rest of the payload
//	kindBatch uvarint(n) n × (uvarint(len) bytes)  n ≥ 1 commands, applied in order
//
// The result of a kindOne entry is the command's result as it is; the result
// of a kindBatch entry is uvarint(n) n × (uvarint(len) bytes), one result per
// command in order. Every node decodes the same bytes the same way.
const (
	kindOne   byte = 1
	kindBatch byte = 2
)

// errCorrupt reports a payload or batched result that does not decode: a bug
// or corruption, never bad user input, since only this package writes them.
var errCorrupt = errors.New("consensus: corrupt entry")

// encodeOne frames a single command.
func encodeOne(cmd []byte) []byte {
	p := make([]byte, 1+len(cmd))
	p[0] = kindOne
	copy(p[1:], cmd)
	return p
}

// encodeList writes uvarint(n) and each item length-prefixed after prefix.
func encodeList(prefix []byte, items [][]byte) []byte {
	n := len(prefix) + binary.MaxVarintLen64
	for _, it := range items {
		n += binary.MaxVarintLen64 + len(it)
	}
	p := make([]byte, 0, n)
	p = append(p, prefix...)
	p = binary.AppendUvarint(p, uint64(len(items)))
	for _, it := range items {
		p = binary.AppendUvarint(p, uint64(len(it)))
		p = append(p, it...)
	}
	return p
}

// encodeBatch frames several commands as one entry.
func encodeBatch(cmds [][]byte) []byte { return encodeList([]byte{kindBatch}, cmds) }

// decodeList reads what encodeList wrote (without its prefix). The items
// alias p.
func decodeList(p []byte) ([][]byte, error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n == 0 || n > uint64(len(p)) {
		return nil, fmt.Errorf("%w: bad count", errCorrupt)
	}
	p = p[k:]
	items := make([][]byte, 0, n)
	for range n {
		l, k := binary.Uvarint(p)
		if k <= 0 || l > uint64(len(p)-k) {
			return nil, fmt.Errorf("%w: bad length", errCorrupt)
		}
		items = append(items, p[k:k+int(l):k+int(l)])
		p = p[k+int(l):]
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(p))
	}
	return items, nil
}

// decodePayload returns the commands of an entry and whether it was a batch.
// The commands alias p.
func decodePayload(p []byte) (cmds [][]byte, batch bool, err error) {
	if len(p) == 0 {
		return nil, false, fmt.Errorf("%w: empty payload", errCorrupt)
	}
	switch p[0] {
	case kindOne:
		return [][]byte{p[1:len(p):len(p)]}, false, nil
	case kindBatch:
		cmds, err := decodeList(p[1:])
		return cmds, true, err
	}
	return nil, false, fmt.Errorf("%w: kind %d", errCorrupt, p[0])
}
