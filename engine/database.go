package engine

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// dbState is the immutable in-memory view of a database's metadata that
// readers load without locks; changes publish a new one.
type dbState struct {
	branches map[string]*model.Branch
	byID     map[uint32]*model.Branch
	git      map[string]string // git branch → service branch
	// forks holds, for every layer some live branch reads as a frozen view,
	// the newest seq it is read at: versions written at or before it must be
	// kept when replaced.
	forks map[uint32]uint64
	// refs counts the live branches whose lineage contains each layer.
	refs map[uint32]int
}

// Lock order. These are all the engine's locks; one may be taken while
// holding only locks above it in this list:
//
//  1. Engine.catMu serializes catalog commands. A command that drops a
//     database takes that database's mu under it.
//  2. database.mu is a database's writer lock: it serializes its commands,
//     and is also held to make a bitmap cache, build a store or lend one.
//     The write path's observers run under it (observe.go).
//  3. database.gcMu is held for reading by readers from loading a lineage
//     to their last read, and for writing while layers are dropped, which
//     happens after the command that unreferenced them, without mu.
//  4. database.storeMu guards the stores: written by the memory observer
//     around a commit and by store builds, read by queries for as long as
//     they read their snapshot.
//  5. catalog.mu guards the catalog's in-memory maps: readers, and catalog
//     commands publishing their changes.
//  6. Engine.dbMu guards the map of open databases.
//  7. Leaves, under which nothing is taken: bitmapCache.mu, colIndex.mu,
//     recordShard.mu, keyHashes.mu.
//
// Readers therefore never take catMu: the server's secrets, which a read
// may need to sign a URL, are made when the engine opens (Engine.load).

// database is one open database: its published state and, under mu, the
// counters only writers touch.
type database struct {
	id    uint32
	state atomic.Pointer[dbState]

	mu      sync.Mutex // serializes commands on this database
	dropped bool       // the database was deleted; guarded by mu
	// gcMu is held for reading by readers from loading a lineage to their
	// last read, and for writing while layers are dropped.
	gcMu       sync.RWMutex
	seq        uint64 // last commit sequence number
	nextLayer  uint32
	nextTable  uint32
	nextBranch uint32
	rows       map[uint32]uint32 // table id → last row id allocated
	// openSeq is seq when the database was opened: written knows nothing
	// older.
	openSeq uint64
	// written holds, for every table of a branch written since the open,
	// the seq of the last command that wrote its rows.
	written map[storeKey]uint64

	storeState
	hasStores atomic.Bool    // some column store exists: writers must update them
	caches    sync.Map       // storeKey → *bitmapCache
	filled    layers.FillSet // key ranges known to be empty, for point reads

	// vectors are the vector stores of vector.go, guarded by storeMu.
	vectors map[vectorKey]*vectorStore

	obs *observer // where background work reports
}

// counter names in the metadata layer.
const (
	ctrSeq    = "seq"
	ctrLayer  = "layer"
	ctrTable  = "table"
	ctrBranch = "branch"
	ctrRows   = "rows/" // + table id u32
)

func counterKey(db uint32, name string) []byte {
	return codec.MetaKey(db, codec.MetaCounter, []byte(name))
}

func rowsCounterKey(db, tableID uint32) []byte {
	return counterKey(db, ctrRows+string(codec.AppendU32(nil, tableID)))
}

func u64(v uint64) []byte { return codec.AppendU64(nil, v) }

// newDBState builds the derived maps of a state from its branches.
func newDBState(branches map[string]*model.Branch, git map[string]string) *dbState {
	st := &dbState{branches: branches, byID: map[uint32]*model.Branch{}, git: git, forks: map[uint32]uint64{}, refs: map[uint32]int{}}
	for _, b := range branches {
		st.byID[b.ID] = b
		for i, lr := range b.Lineage {
			st.refs[lr.Layer]++
			if i > 0 && lr.Seq > st.forks[lr.Layer] {
				st.forks[lr.Layer] = lr.Seq
			}
		}
	}
	return st
}

// branch returns the named branch or a not-found error.
func (st *dbState) branch(name string) (*model.Branch, error) {
	b := st.branches[name]
	if b == nil {
		return nil, model.NotFoundf("branch [%s] not found", name)
	}
	return b, nil
}

// newDatabase returns an empty database: no branch, no counter.
func newDatabase(id uint32) *database {
	d := &database{id: id, rows: map[uint32]uint32{}}
	d.state.Store(newDBState(map[string]*model.Branch{}, map[string]string{}))
	return d
}

// loadDatabase reads a database's counters, branches and git mapping.
func loadDatabase(r pebble.Reader, id uint32) (*database, error) {
	d := &database{id: id, rows: map[uint32]uint32{}}
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
	d.state.Store(newDBState(branches, git))
	d.openSeq = d.seq
	return d, it.Error()
}

// dbTx is one command being applied to a database: a Pebble batch plus the
// in-memory changes to publish if it commits. It is used under database.mu.
type dbTx struct {
	e     *Engine
	d     *database
	batch *pebble.Batch
	st    *dbState // state the command started from
	seq   uint64   // this command's commit sequence number

	// staged changes
	branches   map[string]*model.Branch // nil until a branch changes
	git        map[string]string
	nextLayer  uint32
	nextTable  uint32
	nextBranch uint32
	rows       map[uint32]uint32
	pending    *layers.Pending // bitmap deltas of this command
	dropLayers []uint32
	changes    []rowChange                      // rows written, for the column stores
	terms      map[storeKey]map[string]struct{} // words new to a table's layer
	backfills  []columnRef                      // notNull columns added to tables with records
}

// rowChange is one row written by a command: its new version, or nil when
// deleted.
type rowChange struct {
	branch, table, row uint32
	rec                *codec.Record
	lens               []layers.FieldLength // text field lengths of rec
}

// beginTx starts a command on d that stages its writes into b; the
// caller holds d.mu, or d is not reachable yet.
func (e *Engine) beginTx(d *database, b *pebble.Batch) *dbTx {
	return &dbTx{
		e: e, d: d, batch: b, st: d.state.Load(), seq: d.seq + 1,
		nextLayer: d.nextLayer, nextTable: d.nextTable, nextBranch: d.nextBranch,
		rows: map[uint32]uint32{},
	}
}

// dbCommand is one change of a database as a value (see dbcodec.go for
// the set of them). It holds everything it needs, resolved before it is
// applied (record ids, times, generated ids), so that applying it reads
// only the database's state and writes the same bytes on every copy of
// the same state.
type dbCommand interface {
	// kind names the command in its encoding.
	kind() dbKind
	// apply stages the command in tx and returns its result, whose type
	// each command documents.
	apply(tx *dbTx) (any, error)
}

// initDatabase is a new database's first command: it creates the first
// branch, with an empty schema.
type initDatabase struct {
	Branch   string         `json:"branch"`
	PublicID string         `json:"publicID"`
	Now      time.Time      `json:"now"`
	Metadata BranchMetadata `json:"metadata"`
}

func (c *initDatabase) apply(tx *dbTx) (any, error) {
	b := &model.Branch{
		ID: tx.allocBranch(), PublicID: c.PublicID, Name: c.Branch, CreatedAt: c.Now,
		Metadata: c.Metadata, Lineage: model.Lineage{{Layer: tx.allocLayer(), Seq: model.MaxSeq}}, Schema: &model.Schema{},
	}
	b.Schema.Index()
	return nil, tx.putBranch(b)
}

// stage applies cmd to d into batch b, which the caller commits, and
// returns what publishes the command's in-memory changes once b is
// applied. A new database's first command goes in the catalog command
// that places the database this way; it reads nothing, so b need not be
// indexed.
func (e *Engine) stage(d *database, b *pebble.Batch, cmd dbCommand) (publish func(), err error) {
	tx := e.beginTx(d, b)
	if _, err := cmd.apply(tx); err != nil {
		return nil, err
	}
	if err := tx.finish(); err != nil {
		return nil, err
	}
	return func() { d.publish(tx) }, nil
}

// publish makes the in-memory changes of a command visible once its batch
// is applied: counters and, when it changed any, the branches. The caller
// holds d.mu, or d is not reachable yet.
func (d *database) publish(tx *dbTx) {
	d.seq = tx.seq
	d.nextLayer, d.nextTable, d.nextBranch = tx.nextLayer, tx.nextTable, tx.nextBranch
	for t, n := range tx.rows {
		d.rows[t] = n
	}
	if tx.branches != nil || tx.git != nil {
		d.state.Store(tx.state())
	}
}

// state returns the state as this command sees it: staged branches included.
func (tx *dbTx) state() *dbState {
	if tx.branches == nil && tx.git == nil {
		return tx.st
	}
	b, g := tx.branches, tx.git
	if b == nil {
		b = tx.st.branches
	}
	if g == nil {
		g = tx.st.git
	}
	return newDBState(b, g)
}

// putBranch stages a new or changed branch (and persists it).
func (tx *dbTx) putBranch(b *model.Branch) error {
	if tx.branches == nil {
		tx.branches = make(map[string]*model.Branch, len(tx.st.branches)+1)
		for k, v := range tx.st.branches {
			tx.branches[k] = v
		}
	}
	for name, old := range tx.branches {
		if old.ID == b.ID && name != b.Name {
			delete(tx.branches, name)
		}
	}
	tx.branches[b.Name] = b
	v, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return tx.batch.Set(codec.MetaKey(tx.d.id, codec.MetaBranch, codec.AppendU32(nil, b.ID)), v, nil)
}

// removeBranch stages the removal of a branch.
func (tx *dbTx) removeBranch(b *model.Branch) error {
	if tx.branches == nil {
		tx.branches = make(map[string]*model.Branch, len(tx.st.branches))
		for k, v := range tx.st.branches {
			tx.branches[k] = v
		}
	}
	delete(tx.branches, b.Name)
	return tx.batch.Delete(codec.MetaKey(tx.d.id, codec.MetaBranch, codec.AppendU32(nil, b.ID)), nil)
}

// setGit stages a git mapping change; to == "" removes the entry.
func (tx *dbTx) setGit(gitBranch, to string) error {
	if tx.git == nil {
		tx.git = make(map[string]string, len(tx.st.git)+1)
		for k, v := range tx.st.git {
			tx.git[k] = v
		}
	}
	k := codec.MetaKey(tx.d.id, codec.MetaGitBranch, []byte(gitBranch))
	if to == "" {
		delete(tx.git, gitBranch)
		return tx.batch.Delete(k, nil)
	}
	tx.git[gitBranch] = to
	return tx.batch.Set(k, []byte(to), nil)
}

// allocRow returns a new row id of a table; row ids are never reused in a
// database, so no two branches of a lineage ever mean different rows by one id.
func (tx *dbTx) allocRow(tableID uint32) (uint32, error) {
	n, ok := tx.rows[tableID]
	if !ok {
		n = tx.d.rows[tableID]
	}
	if n == ^uint32(0) {
		return 0, model.Invalidf("table has exhausted its row ids")
	}
	n++
	tx.rows[tableID] = n
	return n, nil
}

// allocLayer returns a new layer id.
func (tx *dbTx) allocLayer() uint32 {
	tx.nextLayer++
	return tx.nextLayer
}

// allocTable returns a new table id.
func (tx *dbTx) allocTable() uint32 {
	tx.nextTable++
	return tx.nextTable
}

// allocBranch returns a new branch id.
func (tx *dbTx) allocBranch() uint32 {
	tx.nextBranch++
	return tx.nextBranch
}

// finish writes staged counters and bitmap deltas into the batch, in sorted
// key order so the batch bytes are deterministic.
func (tx *dbTx) finish() error {
	b, id := tx.batch, tx.d.id
	if err := b.Set(counterKey(id, ctrSeq), u64(tx.seq), nil); err != nil {
		return err
	}
	if tx.nextLayer != tx.d.nextLayer {
		if err := b.Set(counterKey(id, ctrLayer), u64(uint64(tx.nextLayer)), nil); err != nil {
			return err
		}
	}
	if tx.nextTable != tx.d.nextTable {
		if err := b.Set(counterKey(id, ctrTable), u64(uint64(tx.nextTable)), nil); err != nil {
			return err
		}
	}
	if tx.nextBranch != tx.d.nextBranch {
		if err := b.Set(counterKey(id, ctrBranch), u64(uint64(tx.nextBranch)), nil); err != nil {
			return err
		}
	}
	tables := make([]uint32, 0, len(tx.rows))
	for t := range tx.rows {
		tables = append(tables, t)
	}
	sort.Slice(tables, func(i, j int) bool { return tables[i] < tables[j] })
	for _, t := range tables {
		if err := b.Set(rowsCounterKey(id, t), u64(uint64(tx.rows[t])), nil); err != nil {
			return err
		}
	}
	if err := tx.writeTerms(); err != nil {
		return err
	}
	if tx.pending == nil {
		return nil
	}
	return tx.pending.Write(tx.batch, tx.state().forks, tx.seq)
}

// dropLayers deletes layers no branch references any more. It runs after
// the command that unreferenced them is published, and waits for readers
// that may still walk an older lineage holding them (readers hold
// gcMu for reading from loading a lineage to their last read).
func (e *Engine) dropLayers(d *database, layers []uint32) error {
	d.gcMu.Lock()
	defer d.gcMu.Unlock()
	b := e.pdb.NewBatch()
	for _, l := range layers {
		p := codec.LayerPrefix(d.id, l)
		if err := b.DeleteRange(p, codec.PrefixEnd(p), nil); err != nil {
			b.Close()
			return err
		}
	}
	// An unreferenced layer left behind by a crash is only garbage.
	return e.commit(b, nil, nil)
}

// apply applies cmd as one command on database d: under d.mu, in one
// batch, published and synced before it returns. It returns the command's
// result.
func (e *Engine) apply(d *database, cmd dbCommand) (res any, err error) {
	d.mu.Lock()
	unlocked := false
	unlock := func() {
		if !unlocked {
			unlocked = true
			d.mu.Unlock()
		}
	}
	defer unlock()
	if d.dropped {
		return nil, model.NotFoundf("database not found")
	}
	tx := e.beginTx(d, e.pdb.NewIndexedBatch())
	if res, err = cmd.apply(tx); err != nil {
		tx.batch.Close()
		return nil, err
	}
	if err := tx.finish(); err != nil {
		tx.batch.Close()
		return nil, err
	}
	if len(tx.dropLayers) > 0 {
		defer func() {
			if err == nil {
				err = e.dropLayers(d, tx.dropLayers)
			}
		}()
	}
	done := e.notify(tx)
	applied := false
	err = e.commit(tx.batch, func() {
		d.publish(tx)
		applied = true
		done(true)
	}, func() {
		if !applied {
			done(false)
		}
		unlock()
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// inspect runs fn on database d as a command runs, under d.mu and seeing
// what fn stages, then discards everything: it previews a command without
// applying it.
func (e *Engine) inspect(d *database, fn func(tx *dbTx) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dropped {
		return model.NotFoundf("database not found")
	}
	tx := e.beginTx(d, e.pdb.NewIndexedBatch())
	defer tx.batch.Close()
	return fn(tx)
}

// updateStores applies a command's row changes to the column stores, and
// drops the stores of branches it removed or whose schema it changed.
// The caller holds storeMu.
func (d *database) updateStores(tx *dbTx) {
	st := d.state.Load()
	for k, s := range d.stores {
		if b := st.byID[k.branch]; b == nil || b.Version != s.version {
			delete(d.stores, k)
			if s.lent && s.owner == k.branch {
				d.endLoans(s) // a borrower never outlives its owner's entry
			}
		}
	}
	for _, c := range tx.changes {
		k := storeKey{c.branch, c.table}
		s := d.stores[k]
		switch {
		case s == nil:
		case s.owner != c.branch:
			// A borrowed store: the branch now has rows of its own.
			delete(d.stores, k)
		default:
			if s.lent {
				d.endLoans(s)
			}
			s.apply(c.row, c.rec)
		}
	}
	d.updateSearch(tx)
	d.updateVectorStores(tx)
}
