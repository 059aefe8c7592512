package apply

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// State is the immutable in-memory view of a database's metadata that
// readers load without locks (DB.State); every command that changes it
// publishes a new one. Nobody may change a State or what it refers to.
type State struct {
	Branches map[string]*model.Branch
	ByID     map[uint32]*model.Branch
	Git      map[string]string // git branch → service branch
	// Forks holds, for every layer some live branch reads as a frozen
	// view, the newest seq it is read at: versions written at or before it
	// must be kept when replaced.
	Forks map[uint32]uint64
	// Refs counts the live branches whose lineage contains each layer.
	Refs map[uint32]int
}

// newState builds the derived maps of a state from its branches.
func newState(branches map[string]*model.Branch, git map[string]string) *State {
	st := &State{Branches: branches, ByID: map[uint32]*model.Branch{}, Git: git, Forks: map[uint32]uint64{}, Refs: map[uint32]int{}}
	for _, b := range branches {
		st.ByID[b.ID] = b
		for i, lr := range b.Lineage {
			st.Refs[lr.Layer]++
			if i > 0 && lr.Seq > st.Forks[lr.Layer] {
				st.Forks[lr.Layer] = lr.Seq
			}
		}
	}
	return st
}

// Branch returns the named branch or a not-found error.
func (st *State) Branch(name string) (*model.Branch, error) {
	b := st.Branches[name]
	if b == nil {
		return nil, model.NotFoundf("branch [%s] not found", name)
	}
	return b, nil
}

// DB is one open database: its published state, the counters only its
// commands touch, and the locks of its readers and writers (see the lock
// order in doc.go).
type DB struct {
	// ID is the database's id, the prefix of its key range.
	ID    uint32
	state atomic.Pointer[State]

	mu      sync.Mutex // the writer lock: serializes commands on this database
	dropped bool       // the database was deleted; guarded by mu
	// gcMu is held for reading by readers from loading a lineage to their
	// last read (Pin), and for writing while layers are dropped.
	gcMu       sync.RWMutex
	seq        uint64 // last commit sequence number
	nextLayer  uint32
	nextTable  uint32
	nextBranch uint32
	rows       map[uint32]uint32 // table id → last row id allocated
	// openSeq is seq when the database was opened.
	openSeq uint64

	// Filled knows the key ranges that are empty, for point reads;
	// writers mark what they fill.
	Filled layers.FillSet

	observers []Observer // told of every command; set when the database opens
}

// State returns the database's current state.
func (d *DB) State() *State { return d.state.Load() }

// Pin keeps every layer of the current state's lineages from being
// dropped until Unpin: a reader pins, then loads the state, and reads
// the layers its lineage names until it unpins.
func (d *DB) Pin() { d.gcMu.RLock() }

// Unpin ends a Pin.
func (d *DB) Unpin() { d.gcMu.RUnlock() }

// LockWriter takes the database's writer lock: no command is applied to
// it, and its state stays, until UnlockWriter. Derived structures take it
// to build from a snapshot no write slips past.
func (d *DB) LockWriter() { d.mu.Lock() }

// UnlockWriter releases the writer lock.
func (d *DB) UnlockWriter() { d.mu.Unlock() }

// OpenSeq is the commit sequence number the database was opened at: the
// commands since are the ones observers were told of.
func (d *DB) OpenSeq() uint64 { return d.openSeq }

// counter names in the metadata layer.
const (
	ctrSeq    = "seq"
	ctrLayer  = "layer"
	ctrTable  = "table"
	ctrBranch = "branch"
	ctrRows   = "rows/" // + table id u32
)

// counterKey is the key of a counter of database db.
func counterKey(db uint32, name string) []byte {
	return codec.MetaKey(db, codec.MetaCounter, []byte(name))
}

// rowsCounterKey is the key of the row counter of a table.
func rowsCounterKey(db, tableID uint32) []byte {
	return counterKey(db, ctrRows+string(codec.AppendU32(nil, tableID)))
}

// u64 encodes a counter value.
func u64(v uint64) []byte { return codec.AppendU64(nil, v) }

// newDB returns an empty database: no branch, no counter.
func newDB(id uint32) *DB {
	d := &DB{ID: id, rows: map[uint32]uint32{}}
	d.state.Store(newState(map[string]*model.Branch{}, map[string]string{}))
	return d
}

// loadDB reads a database's counters, branches and git mapping.
func loadDB(r pebble.Reader, id uint32) (*DB, error) {
	d := &DB{ID: id, rows: map[uint32]uint32{}}
	prefix := codec.LayerPrefix(id, codec.MetaLayer)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	branches := map[string]*model.Branch{}
	git := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()[len(prefix):]
		v := it.Value()
		switch k[0] {
		case codec.MetaCounter:
			name := string(k[1:])
			if len(v) != 8 {
				return nil, errors.New("engine: malformed counter")
			}
			n := binary.BigEndian.Uint64(v)
			switch {
			case name == ctrSeq:
				d.seq = n
			case name == ctrLayer:
				d.nextLayer = uint32(n)
			case name == ctrTable:
				d.nextTable = uint32(n)
			case name == ctrBranch:
				d.nextBranch = uint32(n)
			case len(name) == len(ctrRows)+4 && name[:len(ctrRows)] == ctrRows:
				d.rows[binary.BigEndian.Uint32([]byte(name[len(ctrRows):]))] = uint32(n)
			}
		case codec.MetaBranch:
			b := &model.Branch{}
			if err := json.Unmarshal(v, b); err != nil {
				return nil, err
			}
			if b.Schema == nil {
				b.Schema = &model.Schema{}
			}
			b.Schema.Index()
			branches[b.Name] = b
		case codec.MetaGitBranch:
			git[string(k[1:])] = string(v)
		}
	}
	d.state.Store(newState(branches, git))
	d.openSeq = d.seq
	return d, it.Error()
}

// publish makes the in-memory changes of a command visible once its batch
// is applied: counters and, when it changed any, the branches. The caller
// holds d.mu, or d is not reachable yet.
func (d *DB) publish(tx *Tx) {
	d.seq = tx.seq
	d.nextLayer, d.nextTable, d.nextBranch = tx.nextLayer, tx.nextTable, tx.nextBranch
	for t, n := range tx.rows {
		d.rows[t] = n
	}
	if tx.branches != nil || tx.git != nil {
		d.state.Store(tx.state())
	}
}

// dropLayers deletes layers no branch references any more. It runs after
// the command that unreferenced them is published, and waits for readers
// that may still walk an older lineage holding them (readers hold
// gcMu for reading from loading a lineage to their last read).
func (a *Applier) dropLayers(d *DB, layers []uint32) error {
	d.gcMu.Lock()
	defer d.gcMu.Unlock()
	b := a.pdb.NewBatch()
	for _, l := range layers {
		p := codec.LayerPrefix(d.ID, l)
		if err := b.DeleteRange(p, codec.PrefixEnd(p), nil); err != nil {
			b.Close()
			return err
		}
	}
	// An unreferenced layer left behind by a crash is only garbage.
	return a.commit(b, nil, nil)
}
