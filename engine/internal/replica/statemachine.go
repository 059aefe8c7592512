package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/consensus"
	"github.com/coppice-db/coppice/engine/internal/layers"
)

// stateMachine is a replica of one group: the meta group, whose state is
// the catalog, or a database's group, whose state is the database's key
// range. Both keep their bookkeeping inside their state, written in the
// batch of each command: the index of the last entry applied (the counter
// "applied") and the recent requests. It applies what the log carries
// through apply, the one write path, so that the observers of a database
// (its column, search and vector stores) stay current on every replica.
type stateMachine struct {
	n  *Node
	db uint32 // the database; 0 for the meta group
}

// stateMachine is what the consensus package runs.
var _ consensus.StateMachine = (*stateMachine)(nil)

// requestWindow is how many log entries a request record outlives: a
// command proposed again later than that may apply twice. Proposers give
// up within seconds, far fewer entries.
const requestWindow = 1 << 16

// CatalogAppliedKey is the key of the index of the last meta-group entry
// applied: a data directory that has it is a node's.
func CatalogAppliedKey() []byte { return codec.CatalogKey(codec.CatCounter, []byte("applied")) }

// appliedKey is the key of the index of the last entry applied.
func (s *stateMachine) appliedKey() []byte {
	if s.db == 0 {
		return CatalogAppliedKey()
	}
	return apply.AppliedKey(s.db)
}

// requestKey is the key of request id's record.
func (s *stateMachine) requestKey(id reqID) []byte {
	if s.db == 0 {
		return codec.CatalogKey(codec.CatRequest, id[:])
	}
	return codec.MetaKey(s.db, codec.MetaRequest, id[:])
}

// requestAtPrefix is the prefix of the requests by index.
func (s *stateMachine) requestAtPrefix() []byte {
	if s.db == 0 {
		return codec.CatalogKey(codec.CatRequestAt)
	}
	return codec.MetaKey(s.db, codec.MetaRequestAt, nil)
}

// Open opens the database (empty when new) and returns the index of the
// last entry applied to it.
func (s *stateMachine) Open(<-chan struct{}) (uint64, error) {
	if s.db != 0 {
		if _, err := s.n.ap.OpenDatabase(s.db); err != nil {
			return 0, err
		}
	}
	return s.applied()
}

// applied reads the index of the last entry applied.
func (s *stateMachine) applied() (uint64, error) {
	v, c, err := s.n.pdb.Get(s.appliedKey())
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if len(v) != 8 {
		return 0, errors.New("replica: malformed applied index")
	}
	return binary.BigEndian.Uint64(v), nil
}

// Update applies the entries one by one, each a command with its own
// batch, and answers each with its result. An entry that changes nothing
// (a request proposed again, a command that failed) still moves the
// applied index on: when the last entry is one, the index is recorded on
// its own, so that a replica that catches up from a snapshot holds the
// same applied index as one that applied the log, and a restart does not
// apply those entries again.
func (s *stateMachine) Update(ents []consensus.Entry) error {
	recorded := false
	for i := range ents {
		ents[i].Result, recorded = s.applyEntry(ents[i].Index, ents[i].Cmd)
	}
	if s.db == 0 {
		s.n.catalogChanged()
	}
	if n := len(ents); n > 0 && !recorded {
		// A failure here is the applier's fault (every later write
		// refused) and costs only a replay of these entries after a
		// restart, which answers them alike: the entries stay applied.
		_ = s.n.ap.Record(func(b *pebble.Batch) error {
			return b.Set(s.appliedKey(), codec.AppendU64(nil, ents[n-1].Index), nil)
		})
	}
	return nil
}

// applyEntry applies one entry and returns its result bytes, and whether
// its batch recorded its index as applied.
func (s *stateMachine) applyEntry(index uint64, entry []byte) ([]byte, bool) {
	id, raw, err := decodeEntry(entry)
	if err != nil {
		return encodeResult(apply.Command{}, nil, err), false
	}
	if prev, ok, err := s.request(id); err != nil {
		return encodeResult(apply.Command{}, nil, err), false
	} else if ok {
		// Proposed again: the first result stands.
		return prev, false
	}
	cmd, err := apply.Decode(raw)
	if err == nil && !s.owns(cmd) {
		err = fmt.Errorf("replica: a command of another group in group %d's log", groupOf(s.db))
	}
	if err != nil {
		return encodeResult(apply.Command{}, nil, err), false
	}
	var out []byte
	wrote := false
	res, err := s.n.ap.ApplyLogged(cmd, func(b *pebble.Batch, res any) error {
		out, wrote = encodeResult(cmd, res, nil), true
		return s.record(b, index, id, out)
	})
	if err != nil {
		out = encodeResult(cmd, nil, err)
	}
	s.n.deliver(id, res, err)
	return out, err == nil && wrote
}

// owns reports whether cmd belongs in this group's log.
func (s *stateMachine) owns(cmd apply.Command) bool {
	if s.db == 0 {
		return cmd.Catalog != nil
	}
	return cmd.DB != nil && cmd.Database == s.db
}

// request returns the result of an earlier entry of request id, if it is
// recorded.
func (s *stateMachine) request(id reqID) ([]byte, bool, error) {
	v, c, err := s.n.pdb.Get(s.requestKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer c.Close()
	if len(v) < 8 {
		return nil, false, errors.New("replica: malformed request record")
	}
	return append([]byte(nil), v[8:]...), true, nil
}

// record stages, in the batch of the command at index, the applied index
// and the request with its result, and forgets up to two requests older
// than requestWindow entries: one request is recorded per entry at most,
// so the records stay within the window.
func (s *stateMachine) record(b *pebble.Batch, index uint64, id reqID, result []byte) error {
	if err := b.Set(s.appliedKey(), codec.AppendU64(nil, index), nil); err != nil {
		return err
	}
	if err := b.Set(s.requestKey(id), append(codec.AppendU64(nil, index), result...), nil); err != nil {
		return err
	}
	at := s.requestAtPrefix()
	if err := b.Set(append(codec.AppendU64(at, index), id[:]...), nil, nil); err != nil {
		return err
	}
	if index <= requestWindow {
		return nil
	}
	it, err := s.n.pdb.NewIter(&pebble.IterOptions{LowerBound: at, UpperBound: codec.AppendU64(at, index-requestWindow)})
	if err != nil {
		return err
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok && n < 2; ok = it.Next() {
		k := it.Key()
		if len(k) != len(at)+8+reqIDLen {
			continue
		}
		var old reqID
		copy(old[:], k[len(at)+8:])
		if err := b.Delete(append([]byte(nil), k...), nil); err != nil {
			return err
		}
		if err := b.Delete(s.requestKey(old), nil); err != nil {
			return err
		}
		n++
	}
	return it.Error()
}

// Sync makes every applied entry durable: the commands were applied
// without a sync, so the storage's log is synced.
func (s *stateMachine) Sync() error { return s.n.pdb.LogData(nil, pebble.Sync) }

// PrepareSnapshot captures the state as it is between two Update calls.
func (s *stateMachine) PrepareSnapshot() (any, error) { return s.n.pdb.NewSnapshot(), nil }

// SaveSnapshot writes the captured state: the database's key range
// (layers.WriteRange, the format of backups) or the catalog.
func (s *stateMachine) SaveSnapshot(view any, w io.Writer, _ <-chan struct{}) error {
	snap := view.(*pebble.Snapshot)
	defer snap.Close()
	if s.db == 0 {
		return apply.WriteCatalog(snap, w)
	}
	return layers.WriteRange(snap, s.db, w)
}

// RecoverFromSnapshot replaces the state with another replica's, durably,
// and returns the index it holds.
func (s *stateMachine) RecoverFromSnapshot(r io.Reader, _ <-chan struct{}) (uint64, error) {
	var err error
	if s.db == 0 {
		err = s.n.ap.ReplaceCatalog(r)
		s.n.catalogChanged()
	} else {
		err = s.n.ap.ReplaceDatabase(s.db, r)
	}
	if err != nil {
		return 0, err
	}
	s.n.recovered.Add(1)
	return s.applied()
}

// Close leaves the state to the engine, which closes the storage.
func (s *stateMachine) Close() error { return nil }
