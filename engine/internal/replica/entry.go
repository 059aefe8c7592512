package replica

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// An entry of a group's log is one command with the id of the request that
// proposed it:
//
//	entryVersion · request id (16 bytes) · apply.Encode(command)
//
// The request id makes a command proposed again (after an outcome the
// proposer could not learn) apply once: a replica that applies a command
// records its id and result in the same batch, in the group's own range,
// and answers a second entry with the same id with the first result.
const entryVersion byte = 1

// reqIDLen is the length of a request id.
const reqIDLen = 16

// reqID identifies one request: 8 random bytes drawn when the node starts,
// then a counter.
type reqID [reqIDLen]byte

// reqIDs makes the request ids of one node.
type reqIDs struct {
	prefix [8]byte
	seq    atomic.Uint64
}

// newReqIDs draws a node's prefix.
func newReqIDs() (*reqIDs, error) {
	g := &reqIDs{}
	if _, err := rand.Read(g.prefix[:]); err != nil {
		return nil, err
	}
	return g, nil
}

// next returns a new request id.
func (g *reqIDs) next() reqID {
	var id reqID
	copy(id[:8], g.prefix[:])
	binary.BigEndian.PutUint64(id[8:], g.seq.Add(1))
	return id
}

// encodeEntry frames an encoded command with its request id.
func encodeEntry(id reqID, cmd []byte) []byte {
	b := make([]byte, 0, 1+reqIDLen+len(cmd))
	b = append(b, entryVersion)
	b = append(b, id[:]...)
	return append(b, cmd...)
}

// decodeEntry splits an entry; cmd aliases b.
func decodeEntry(b []byte) (id reqID, cmd []byte, err error) {
	if len(b) < 1+reqIDLen || b[0] != entryVersion {
		return id, nil, errors.New("replica: entry of unknown format")
	}
	copy(id[:], b[1:1+reqIDLen])
	return id, b[1+reqIDLen:], nil
}

// A result, as an entry's result bytes carry it to the proposer and a
// request record keeps it: a status byte, then
//
//	resultOK     apply.EncodeResult of the command's result
//	resultError  JSON {"code", "message"} of the command's error
//	resultOps    JSON [{"index", "code", "message"}] of the failed operations
//
// A command's failure is part of the replicated state, the same on every
// replica: it is a result, never an error of the state machine.
const (
	resultOK byte = iota
	resultError
	resultOps
)

// wireError is an error as a result carries it.
type wireError struct {
	Index   int        `json:"index,omitempty"`
	Code    model.Code `json:"code"`
	Message string     `json:"message"`
}

// encodeResult encodes the outcome of cmd.
func encodeResult(cmd apply.Command, res any, err error) []byte {
	if err == nil {
		b, eerr := apply.EncodeResult(cmd, res)
		if eerr == nil {
			return append([]byte{resultOK}, b...)
		}
		err = fmt.Errorf("replica: result of %T%T: %w", cmd.DB, cmd.Catalog, eerr)
	}
	var oe *model.OpErrors
	if errors.As(err, &oe) {
		wire := make([]wireError, len(oe.Errors))
		for i, e := range oe.Errors {
			wire[i] = wireError{Index: e.Index, Code: e.Err.Code, Message: e.Err.Message}
		}
		b, _ := json.Marshal(wire)
		return append([]byte{resultOps}, b...)
	}
	w := wireError{Code: model.CodeInternal, Message: err.Error()}
	var me *model.Error
	if errors.As(err, &me) {
		w.Code, w.Message = me.Code, me.Message
	}
	b, _ := json.Marshal(w)
	return append([]byte{resultError}, b...)
}

// decodeResult decodes the outcome of cmd that encodeResult wrote. A
// result the proposer's own replica computed is handed over as is
// (outcome); this decodes those it did not, such as one applied before a
// snapshot this replica caught up from.
func decodeResult(cmd apply.Command, b []byte) (any, error) {
	if len(b) == 0 {
		return nil, errors.New("replica: empty result")
	}
	switch b[0] {
	case resultOK:
		return apply.DecodeResult(cmd, b[1:])
	case resultError:
		var w wireError
		if err := json.Unmarshal(b[1:], &w); err != nil {
			return nil, fmt.Errorf("replica: result: %w", err)
		}
		if w.Code == model.CodeInternal {
			return nil, errors.New(w.Message)
		}
		return nil, &model.Error{Code: w.Code, Message: w.Message}
	case resultOps:
		var wire []wireError
		if err := json.Unmarshal(b[1:], &wire); err != nil {
			return nil, fmt.Errorf("replica: result: %w", err)
		}
		oe := &model.OpErrors{Errors: make([]model.OpError, len(wire))}
		for i, w := range wire {
			oe.Errors[i] = model.OpError{Index: w.Index, Err: &model.Error{Code: w.Code, Message: w.Message}}
		}
		return nil, oe
	}
	return nil, fmt.Errorf("replica: result of unknown status %d", b[0])
}
