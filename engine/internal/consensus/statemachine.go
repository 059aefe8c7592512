package consensus

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	sm "github.com/lni/dragonboat/v4/statemachine"
)

// Entry is one committed command handed to StateMachine.Update.
type Entry struct {
	// Index is the entry's log index. It increases from entry to entry,
	// within and across Update calls, with gaps where the log holds entries
	// of Raft's own (membership changes, a new leader's empty entry).
	Index uint64
	// Cmd is the command as proposed. It is valid only during Update.
	Cmd []byte
	// Result is set by Update: the bytes Propose returns to the proposer.
	// Update may leave it nil.
	Result []byte
}

// StateMachine is a group's replicated state, kept on disk by the state
// machine itself. One instance serves one replica of one group. The calls
// Update, Sync, PrepareSnapshot, RecoverFromSnapshot and Close never overlap;
// SaveSnapshot may run while Update applies later entries, so it must read
// only the state PrepareSnapshot captured.
type StateMachine interface {
	// Open opens or creates the state and returns the index of the last
	// entry it has applied durably, 0 for a new state. Entries after that
	// index are applied again from the log, so the applied index must be
	// persisted atomically with the effects of the entries it covers. Open
	// may return ErrStopped once stop is closed.
	Open(stop <-chan struct{}) (applied uint64, err error)
	// Update applies committed entries in order and sets each Result. The
	// library passes every entry committed since the last call, so under
	// concurrent proposals one call applies many. It must be deterministic:
	// the same entries on the same state give the same state and results on
	// every node, so it reads no clock, no randomness and no local
	// configuration. The effects of one call and the index of its last entry
	// become visible together; they need not be durable until Sync. An error
	// is a fault of this node (its disk): the process stops rather than
	// diverge.
	Update(entries []Entry) error
	// Sync makes every applied entry durable. The host calls it before it
	// lets the log be compacted past the applied index.
	Sync() error
	// PrepareSnapshot captures a consistent view of the current state, for
	// example a storage snapshot, to be written by SaveSnapshot.
	PrepareSnapshot() (view any, err error)
	// SaveSnapshot writes the captured view to w, including the applied
	// index it reflects, and releases the view. The same view always gives
	// the same bytes. A write error means the receiver went away: return it.
	// It may return ErrStopped once stop is closed.
	SaveSnapshot(view any, w io.Writer, stop <-chan struct{}) error
	// RecoverFromSnapshot replaces the whole state with the one r holds,
	// written by SaveSnapshot on another replica, makes it durable, and
	// returns the applied index it carries. It may return ErrStopped once
	// stop is closed.
	RecoverFromSnapshot(r io.Reader, stop <-chan struct{}) (applied uint64, err error)
	// Close releases the state. It is not called when the process dies, so
	// the state on disk must be safe without it.
	Close() error
}

// NewStateMachine makes the state machine of one replica of a group.
type NewStateMachine func(group, replica uint64) StateMachine

// adapter presents a StateMachine as dragonboat's IOnDiskStateMachine. It
// unframes commands, tracks the applied index for GroupInfo and counts
// snapshot recoveries for proposals waiting on a follower.
type adapter struct {
	sm        StateMachine
	applied   atomic.Uint64
	recovered atomic.Uint64
	// ents is reused across Update calls, which never overlap.
	ents []Entry
}

var _ sm.IOnDiskStateMachine = (*adapter)(nil)

// Open opens the state machine and records its applied index.
func (a *adapter) Open(stop <-chan struct{}) (uint64, error) {
	idx, err := a.sm.Open(stop)
	if errors.Is(err, ErrStopped) {
		return 0, sm.ErrOpenStopped
	}
	a.applied.Store(idx)
	return idx, err
}

// Update decodes the entries' commands, applies them in one call and hands
// each result back.
func (a *adapter) Update(in []sm.Entry) ([]sm.Entry, error) {
	ents := a.ents[:0]
	for _, e := range in {
		cmd, err := decodePayload(e.Cmd)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", e.Index, err)
		}
		ents = append(ents, Entry{Index: e.Index, Cmd: cmd})
	}
	if err := a.sm.Update(ents); err != nil {
		return nil, err
	}
	for i := range in {
		in[i].Result = sm.Result{Data: ents[i].Result}
	}
	if len(in) > 0 {
		a.applied.Store(in[len(in)-1].Index)
	}
	clear(ents)
	a.ents = ents[:0]
	return in, nil
}

// Lookup is unused: reads go to the state machine directly after ReadIndex.
func (a *adapter) Lookup(any) (any, error) { return nil, sm.ErrNotImplemented }

// Sync makes the applied entries durable.
func (a *adapter) Sync() error { return a.sm.Sync() }

// PrepareSnapshot captures the view SaveSnapshot will stream.
func (a *adapter) PrepareSnapshot() (any, error) { return a.sm.PrepareSnapshot() }

// SaveSnapshot streams the captured view, translating the stop error.
func (a *adapter) SaveSnapshot(view any, w io.Writer, stop <-chan struct{}) error {
	err := a.sm.SaveSnapshot(view, w, stop)
	switch {
	case errors.Is(err, ErrStopped):
		return sm.ErrSnapshotStopped
	case errors.Is(err, sm.ErrSnapshotStreaming):
		return sm.ErrSnapshotStreaming
	}
	return err
}

// RecoverFromSnapshot replaces the state and records the new applied index.
func (a *adapter) RecoverFromSnapshot(r io.Reader, stop <-chan struct{}) error {
	idx, err := a.sm.RecoverFromSnapshot(r, stop)
	if errors.Is(err, ErrStopped) {
		return sm.ErrSnapshotStopped
	}
	if err == nil {
		a.applied.Store(idx)
		a.recovered.Add(1)
	}
	return err
}

// Close closes the state machine.
func (a *adapter) Close() error { return a.sm.Close() }
