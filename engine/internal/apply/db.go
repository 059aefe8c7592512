package apply

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Branch returns the named branch or a not-found error.
func (st *State) Branch(name string) (*model.Branch, error) {
	b := st.Branches.At(name)
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
	// IDs filters the ids each table's id-map of a layer may hold, for
	// writers' lookups; writers add what they write.
	IDs layers.IDFilters

	// marks holds, for each layer and table, the seq of the last command
	// that wrote rows of the table in the layer (MetaWriteMark), as
	// Written reads them; marksMu guards it (a leaf of the lock order).
	// Layers up to untracked were made before the marks were kept.
	marksMu   sync.RWMutex
	marks     map[layerTable]uint64
	untracked uint32

	observers []Observer // told of every command; set when the database opens

	// gatherHint sizes what writes preparing many records gather.
	gatherHint gatherHint

	// store reads the database's committed keys, for writers; nil while
	// the database's first command is staged (nothing is stored yet).
	store pebble.Reader
	// knownTerms holds, by table of a layer, words whose KindTerm key is
	// committed, so that a command writes the key of a word only when the
	// word is new to the layer (knownTerm) without reading it; knownCount
	// counts them, up to maxKnownTerms. Guarded by mu.
	knownTerms map[layerTable]*knownWords
	knownCount int
	// knownFull is set once knownCount reached maxKnownTerms and no
	// table's remembered words were whole any more, until some are
	// forgotten.
	knownFull bool
	// knownMu guards the maps of knownTerms for writers preparing a
	// write before mu (prepare.go): they are changed under mu and
	// knownMu, and read under either.
	knownMu sync.RWMutex

	// gmu guards queue, the single-record writes waiting to be applied
	// in a group (group.go), groups, the groups taken from it and not yet
	// synced, and groupEnd, closed when one of them ends (nil until a
	// writer waits for that); it is a leaf, taken alone or under mu.
	gmu      sync.Mutex
	queue    []*groupReq
	groups   int
	groupEnd chan struct{}
}

// State returns the database's current state.
func (d *DB) State() *State { return d.state.Load() }

// Pin keeps every layer of the current state's lineages from being
// dropped until Unpin: a reader pins, then loads the state, and reads
// the layers its lineage names until it unpins.
func (d *DB) Pin() { d.gcMu.RLock() }

// Unpin ends a Pin.
func (d *DB) Unpin() { d.gcMu.RUnlock() }

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
	// ctrMarks is 1 in a database whose every write left its mark
	// (MetaWriteMark): one made since the marks were kept.
	ctrMarks = "marks"
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
	d := &DB{ID: id, rows: map[uint32]uint32{}, marks: map[layerTable]uint64{}}
	d.state.Store(newState(nil, map[string]string{}))
	return d
}

// loadDB reads a database's counters, branches and git mapping.
func loadDB(r pebble.Reader, id uint32) (*DB, error) {
	d := &DB{ID: id, rows: map[uint32]uint32{}, marks: map[layerTable]uint64{}}
	tracked := false
	prefix := codec.LayerPrefix(id, codec.MetaLayer)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var branches []*model.Branch
	git := map[string]string{}
	var schemas schemaLoader
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
			case name == ctrMarks:
				tracked = n == 1
			case len(name) == len(ctrRows)+4 && name[:len(ctrRows)] == ctrRows:
				d.rows[binary.BigEndian.Uint32([]byte(name[len(ctrRows):]))] = uint32(n)
			}
		case codec.MetaBranch:
			b := &model.Branch{}
			if err := json.Unmarshal(v, b); err != nil {
				return nil, err
			}
			schemas.add(b)
			branches = append(branches, b)
		case codec.MetaGitBranch:
			git[string(k[1:])] = string(v)
		case codec.MetaSchema:
			if err := schemas.schema(k[1:], v); err != nil {
				return nil, err
			}
		case codec.MetaSchemaTable:
			if err := schemas.table(k[1:], v); err != nil {
				return nil, err
			}
		case codec.MetaWriteMark:
			if len(k) != 9 || len(v) != 8 {
				return nil, errors.New("engine: malformed write mark")
			}
			d.marks[layerTable{binary.BigEndian.Uint32(k[1:]), binary.BigEndian.Uint32(k[5:])}] = binary.BigEndian.Uint64(v)
		}
	}
	schemas.finish()
	if !tracked {
		d.untracked = d.nextLayer
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
	if len(tx.marks) > 0 {
		d.marksMu.Lock()
		for _, m := range tx.marks {
			d.marks[m] = tx.seq
		}
		d.marksMu.Unlock()
	}
	if tx.next != nil {
		d.state.Store(tx.next)
	}
	d.forgetTerms(tx.dropLayers)
	d.IDs.ForgetLayers(tx.dropLayers)
	d.learnTerms(tx.newTerms)
}

// maxKnownTerms bounds the words a database remembers as stored: about
// 20 MiB of a large vocabulary. Words beyond it are looked up in storage.
// Tests lower it.
var maxKnownTerms = 1 << 18

// knownWords are the remembered words of a table of a layer.
type knownWords struct {
	words map[string]struct{}
	// read is set once the layer's stored words were read into words;
	// whole, when every stored word is in words: a word missing from
	// them is new to the layer, with nothing to read. Every later word
	// of the layer is stored by a command, which remembers it once
	// committed (learnTerms), or whole is cleared.
	read, whole bool
}

// has reports whether a word is remembered as stored; kw may be nil.
func (kw *knownWords) has(term string) bool {
	if kw == nil {
		return false
	}
	_, ok := kw.words[term]
	return ok
}

// knownTerm reports whether the KindTerm key of a word in a table of a
// layer is committed: remembered, or else read from storage. The first
// word of a layer that is not remembered reads all the layer's words,
// when they fit among the remembered ones: from then on a word that is
// not remembered is new, without a read. The caller holds mu.
func (d *DB) knownTerm(lt layerTable, term string, kb []byte) (bool, error) {
	kw := d.knownTerms[lt]
	if kw != nil {
		if _, ok := kw.words[term]; ok {
			return true, nil
		}
		if kw.whole {
			return false, nil
		}
	}
	if d.store == nil {
		return false, nil
	}
	if kw == nil || !kw.read {
		var err error
		if kw, err = d.readTerms(lt); err != nil {
			return false, err
		}
		if kw.whole {
			_, ok := kw.words[term]
			return ok, nil
		}
	}
	_, closer, err := d.store.Get(codec.TermKey(kb[:0], d.ID, lt.layer, lt.table, term))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	closer.Close()
	d.knownMu.Lock()
	d.rememberTerm(lt, term)
	d.knownMu.Unlock()
	return true, nil
}

// readTerms remembers the stored words of a table of a layer, as many as
// fit, and returns them. The caller holds mu.
func (d *DB) readTerms(lt layerTable) (*knownWords, error) {
	d.knownMu.Lock()
	defer d.knownMu.Unlock()
	kw := d.known(lt)
	kw.read = true
	prefix := codec.TablePrefix(nil, d.ID, lt.layer, codec.KindTerm, lt.table)
	it, err := d.store.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	whole := true
	for ok := it.First(); ok; ok = it.Next() {
		if !d.rememberTerm(lt, string(it.Key()[len(prefix):])) {
			whole = false
			break
		}
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	kw.whole = whole && d.knownCount < maxKnownTerms
	return kw, nil
}

// known returns the remembered words of a table of a layer, made on
// first use. The caller holds mu and knownMu.
func (d *DB) known(lt layerTable) *knownWords {
	if d.knownTerms == nil {
		d.knownTerms = map[layerTable]*knownWords{}
	}
	kw := d.knownTerms[lt]
	if kw == nil {
		kw = &knownWords{words: map[string]struct{}{}}
		d.knownTerms[lt] = kw
	}
	return kw
}

// learnTerms remembers the words a committed command stored, by table of
// a layer. The caller holds mu.
func (d *DB) learnTerms(terms map[layerTable]map[string]struct{}) {
	if len(terms) == 0 {
		return
	}
	d.knownMu.Lock()
	defer d.knownMu.Unlock()
	for lt, set := range terms {
		for term := range set {
			if !d.rememberTerm(lt, term) {
				return
			}
		}
	}
}

// rememberTerm remembers one stored word, and reports false once no more
// fit: then no table's remembered words are whole any more. The caller
// holds mu and knownMu.
func (d *DB) rememberTerm(lt layerTable, term string) bool {
	kw := d.known(lt)
	if _, ok := kw.words[term]; ok {
		return true
	}
	if d.knownCount >= maxKnownTerms {
		if !d.knownFull {
			d.knownFull = true
			for _, kw := range d.knownTerms {
				kw.whole = false
			}
		}
		return false
	}
	kw.words[term] = struct{}{}
	d.knownCount++
	return true
}

// forgetTerms forgets the words remembered of dropped layers. The caller
// holds mu.
func (d *DB) forgetTerms(dropped []uint32) {
	if len(dropped) == 0 {
		return
	}
	d.knownMu.Lock()
	defer d.knownMu.Unlock()
	for lt, set := range d.knownTerms {
		if slices.Contains(dropped, lt.layer) {
			d.knownCount -= len(set.words)
			d.knownFull = false
			delete(d.knownTerms, lt)
		}
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
		p = markKey(d.ID, l, nil)
		if err := b.DeleteRange(p, codec.PrefixEnd(p), nil); err != nil {
			b.Close()
			return err
		}
	}
	d.forgetMarks(layers)
	// An unreferenced layer left behind by a crash is only garbage.
	return a.commit(b, nil, nil)
}
