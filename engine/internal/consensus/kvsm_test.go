package consensus

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// kvSM is the toy state machine of the tests: a map of registers on its own
// Pebble store. A command is put(key, value); its result is the log index
// that applied it, 8 bytes big-endian, followed by the key, so that a
// proposer can tell its result from another's. The applied index lives under
// appliedKey, written in the same batch as the entries it covers.
type kvSM struct {
	dir string
	// syncEach commits every Update with an fsync (the single-node
	// baseline); otherwise Sync makes applied entries durable.
	syncEach bool

	mu sync.RWMutex // guards db against Close
	db *pebble.DB

	// Counters the tests read.
	updates   atomic.Int64 // Update calls
	commands  atomic.Int64 // commands applied
	recovered atomic.Int64 // snapshots recovered
	saved     atomic.Int64 // snapshots streamed
}

// appliedKey holds the applied index, sorted before every data key.
var appliedKey = []byte("\x00applied")

// dataKey is where a register lives.
func dataKey(k string) []byte { return append([]byte("d"), k...) }

// putCmd encodes put(key, value).
func putCmd(key, value string) []byte {
	b := binary.AppendUvarint(nil, uint64(len(key)))
	return append(append(b, key...), value...)
}

// decodePut decodes a put command.
func decodePut(c []byte) (key, value []byte, err error) {
	n, k := binary.Uvarint(c)
	if k <= 0 || n > uint64(len(c)-k) {
		return nil, nil, errors.New("kvsm: bad command")
	}
	return c[k : k+int(n)], c[k+int(n):], nil
}

// quietPebble keeps Pebble's routine messages out of test output.
type quietPebble struct{}

// Infof drops routine messages.
func (quietPebble) Infof(string, ...any) {}

// Errorf prints errors.
func (quietPebble) Errorf(f string, args ...any) { fmt.Printf(f+"\n", args...) }

// Fatalf panics.
func (quietPebble) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }

// Open opens the store and returns its applied index.
func (s *kvSM) Open(stop <-chan struct{}) (uint64, error) {
	db, err := pebble.Open(s.dir, &pebble.Options{Logger: quietPebble{}, MemTableSize: 4 << 20})
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.db = db
	s.mu.Unlock()
	return s.appliedIndex()
}

// appliedIndex reads the applied index, 0 for a new store.
func (s *kvSM) appliedIndex() (uint64, error) {
	v, c, err := s.db.Get(appliedKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return binary.BigEndian.Uint64(v), nil
}

// Update applies puts and the last index in one batch, synced only for the
// single-node baseline.
func (s *kvSM) Update(ents []Entry) error {
	b := s.db.NewBatch()
	defer b.Close()
	var last uint64
	for i := range ents {
		e := &ents[i]
		k, v, err := decodePut(e.Cmd)
		if err != nil {
			return err
		}
		if err := b.Set(dataKey(string(k)), v, nil); err != nil {
			return err
		}
		e.Result = append(binary.BigEndian.AppendUint64(nil, e.Index), k...)
		last = e.Index
	}
	if err := b.Set(appliedKey, binary.BigEndian.AppendUint64(nil, last), nil); err != nil {
		return err
	}
	s.updates.Add(1)
	s.commands.Add(int64(len(ents)))
	return b.Commit(&pebble.WriteOptions{Sync: s.syncEach})
}

// Sync syncs Pebble's WAL, and with it every applied batch.
func (s *kvSM) Sync() error { return s.db.LogData(nil, pebble.Sync) }

// PrepareSnapshot takes a Pebble snapshot.
func (s *kvSM) PrepareSnapshot() (any, error) { return s.db.NewSnapshot(), nil }

// SaveSnapshot writes every key as uvarint(len) key uvarint(len) value,
// then a zero length as end mark.
func (s *kvSM) SaveSnapshot(view any, w io.Writer, stop <-chan struct{}) error {
	snap := view.(*pebble.Snapshot)
	defer snap.Close()
	it, err := snap.NewIter(nil)
	if err != nil {
		return err
	}
	defer it.Close()
	bw := bufio.NewWriter(w)
	for it.First(); it.Valid(); it.Next() {
		select {
		case <-stop:
			return ErrStopped
		default:
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		bw.Write(binary.AppendUvarint(nil, uint64(len(it.Key()))))
		bw.Write(it.Key())
		bw.Write(binary.AppendUvarint(nil, uint64(len(v))))
		if _, err := bw.Write(v); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	bw.Write([]byte{0})
	if err := bw.Flush(); err != nil {
		return err
	}
	s.saved.Add(1)
	return nil
}

// RecoverFromSnapshot deletes every key and loads the snapshot's, synced.
func (s *kvSM) RecoverFromSnapshot(r io.Reader, stop <-chan struct{}) (uint64, error) {
	br := bufio.NewReader(r)
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange([]byte{0}, []byte{0xff, 0xff}, nil); err != nil {
		return 0, err
	}
	read := func() ([]byte, error) {
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, err
		}
		p := make([]byte, n)
		_, err = io.ReadFull(br, p)
		return p, err
	}
	for {
		k, err := read()
		if err != nil {
			return 0, fmt.Errorf("kvsm: snapshot: %w", err)
		}
		if len(k) == 0 {
			break
		}
		v, err := read()
		if err != nil {
			return 0, fmt.Errorf("kvsm: snapshot: %w", err)
		}
		b.Set(k, v, nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, err
	}
	s.recovered.Add(1)
	return s.appliedIndex()
}

// Close closes the store; get fails afterwards.
func (s *kvSM) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

// get reads a register from this replica; ok is false when never written.
func (s *kvSM) get(key string) (string, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return "", false, ErrClosed
	}
	v, c, err := s.db.Get(dataKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer c.Close()
	return string(v), true, nil
}
