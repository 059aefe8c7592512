package apply

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Applier is the one writer of a data directory: it applies every
// command, of the catalog and of each database, and owns what commands
// change in memory (the catalog, each open database's state and
// counters). It is safe for concurrent use.
type Applier struct {
	pdb     *pebble.DB
	writeOp *pebble.WriteOptions
	opts    Options

	catMu sync.Mutex       // serializes catalog commands (lock order: doc.go)
	cat   *catalog.Catalog // guarded by its own lock for readers

	fault atomic.Pointer[error] // set once the storage failed (fault.go)

	// keys counts the keys of the batches committed: what a command costs
	// the memtable, which flushes and compactions then carry.
	keys atomic.Uint64
	// groupCommits and groupedWrites count the commits of the writes
	// applied in groups (group.go) and the writes they held: their ratio
	// is the mean size of the groups formed.
	groupCommits, groupedWrites atomic.Uint64
	// lockHeld sums the nanoseconds commands held their database's writer
	// lock: what bounds the commands one database applies per second.
	lockHeld atomic.Uint64

	dbMu sync.RWMutex // guards dbs (lock order: doc.go)
	dbs  map[uint32]*DB
}

// Options configure an Applier.
type Options struct {
	// NoSync acknowledges commands before they reach the disk.
	NoSync bool
	// Replicated says that the commands come from replicated logs
	// (replicated.go): they are applied without a sync, the logs being
	// the durable record, and the catalog's commands place and drop
	// databases without writing their ranges, each database's first
	// command coming through its own log.
	Replicated bool
	// Logger receives failures that have no caller to go to.
	Logger *slog.Logger
	// Observe, when set, returns the observers of a database as it opens
	// (at Open, when a command creates or restores it): the structures
	// derived from its keys register this way, and are told of every
	// command applied to it from then on.
	Observe func(d *DB) []Observer
}

// Open reads the catalog and every database's state from pdb, whose
// merge operator must be layers.Merger.
func Open(pdb *pebble.DB, opts Options) (*Applier, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Replicated {
		opts.NoSync = true
	}
	a := &Applier{pdb: pdb, writeOp: &pebble.WriteOptions{Sync: !opts.NoSync}, opts: opts, dbs: map[uint32]*DB{}}
	cat, err := catalog.Load(pdb)
	if err != nil {
		return nil, err
	}
	a.cat = cat
	for _, id := range cat.DatabaseIDs() {
		d, err := loadDB(pdb, id)
		if err != nil {
			return nil, fmt.Errorf("engine: load database %d: %w", id, err)
		}
		a.addDB(d)
	}
	return a, nil
}

// WriterLockHeld is how long commands held their database's writer lock
// since Open, from taking it to the batch being visible.
func (a *Applier) WriterLockHeld() time.Duration { return time.Duration(a.lockHeld.Load()) }

// KeysWritten is the number of keys in the batches committed since Open.
func (a *Applier) KeysWritten() uint64 { return a.keys.Load() }

// WriteGroups returns the number of group commits since Open and of the
// writes they held.
func (a *Applier) WriteGroups() (groups, writes uint64) {
	return a.groupCommits.Load(), a.groupedWrites.Load()
}

// Catalog is the in-memory catalog, for readers.
func (a *Applier) Catalog() *catalog.Catalog { return a.cat }

// DB returns the open database with id, or nil.
func (a *Applier) DB(id uint32) *DB {
	a.dbMu.RLock()
	d := a.dbs[id]
	a.dbMu.RUnlock()
	return d
}

// addDB makes an open database reachable, with its observers.
func (a *Applier) addDB(d *DB) {
	d.store = a.pdb
	if a.opts.Observe != nil {
		d.observers = a.opts.Observe(d)
	}
	a.dbMu.Lock()
	a.dbs[d.ID] = d
	a.dbMu.Unlock()
}

// Apply applies one command, decoded (Decode) or made by the caller, and
// returns its result, whose type each command documents. A database's
// command is applied under its writer lock and a catalog command under
// the catalog's, each as one Pebble batch that is synced before Apply
// returns; concurrent commands share fsyncs. Applying reads only the
// state the commands before it left: the same commands in the same order
// write the same bytes on every copy. Once a database command's batch is
// visible, the database's observers are told (Observer).
//
// This is the one way anything changes: the engine's operations, the
// background flattening of deep branches, and, in a replicated
// deployment, the state machine that applies the commands of its log.
func (a *Applier) Apply(cmd Command) (any, error) {
	return a.applyWith(cmd, nil)
}

// applyWith is Apply, with write, when not nil, staging more writes into
// the command's batch once the command is staged (ApplyLogged).
func (a *Applier) applyWith(cmd Command, write func(b *pebble.Batch, res any) error) (any, error) {
	if err := a.Fault(); err != nil {
		return nil, err
	}
	if cmd.Catalog != nil {
		return a.applyCatalog(cmd.Catalog, write)
	}
	if cmd.DB == nil {
		return nil, fmt.Errorf("engine: empty command")
	}
	d := a.DB(cmd.Database)
	if d == nil {
		return nil, model.NotFoundf("database not found")
	}
	return a.apply(d, cmd.DB, write)
}

// stage applies cmd to d into batch b, which the caller commits, and
// returns what publishes the command's in-memory changes once b is
// applied. A new database's first command goes in the catalog command
// that places the database this way; it reads nothing, so b need not be
// indexed.
func (a *Applier) stage(d *DB, b *pebble.Batch, cmd DBCommand) (publish func(), err error) {
	tx := beginTx(d, b)
	if _, err := cmd.apply(tx); err != nil {
		return nil, err
	}
	if err := tx.finish(); err != nil {
		return nil, err
	}
	return func() { d.publish(tx) }, nil
}

// apply applies cmd as one command on database d: under d.mu, in one
// batch, published and synced before it returns. It returns the command's
// result. write, when not nil, stages more writes into the batch.
func (a *Applier) apply(d *DB, cmd DBCommand, write func(b *pebble.Batch, res any) error) (res any, err error) {
	if w, ok := cmd.(*WriteRecords); ok && write == nil {
		// Before the lock: writers prepare side by side (prepare.go).
		grouped := a.groups(w)
		w.prepare(d, grouped && d.grouping())
		if grouped {
			return a.applyGrouped(d, w)
		}
	}
	d.mu.Lock()
	return a.applyLocked(d, cmd, write)
}

// applyLocked is apply with d.mu held; it releases it.
func (a *Applier) applyLocked(d *DB, cmd DBCommand, write func(b *pebble.Batch, res any) error) (res any, err error) {
	unlocked := false
	held := time.Now()
	unlock := func() {
		if !unlocked {
			unlocked = true
			a.lockHeld.Add(uint64(time.Since(held)))
			d.mu.Unlock()
		}
	}
	defer unlock()
	if d.dropped {
		return nil, model.NotFoundf("database not found")
	}
	tx := beginTx(d, a.pdb.NewIndexedBatch())
	if res, err = cmd.apply(tx); err != nil {
		tx.batch.Close()
		return nil, err
	}
	// Nothing reads the batch from here on: what remains to stage (the
	// bitmap deltas, which outnumber the command's other keys in a bulk
	// load) goes into a batch without an index, when there are enough of
	// them to pay for the copy.
	if n := tx.pending.Bitmaps(); n >= unindexAt {
		tx.batch = a.unindexed(tx.batch, n)
	}
	if err := tx.finish(); err != nil {
		tx.batch.Close()
		return nil, err
	}
	if write != nil {
		if err := write(tx.batch, res); err != nil {
			tx.batch.Close()
			return nil, err
		}
	}
	if len(tx.dropLayers) > 0 {
		defer func() {
			if err == nil {
				err = a.dropLayers(d, tx.dropLayers)
			}
		}()
	}
	if err = a.commitTx(d, tx, unlock); err != nil {
		return nil, err
	}
	return res, nil
}

// commitTx commits a finished command's batch: the observers are told of
// it before the batch is visible, it is published once committed, and
// unlock runs last, whether or not the commit succeeded.
func (a *Applier) commitTx(d *DB, tx *Tx, unlock func()) error {
	done := d.notify(tx)
	applied := false
	return a.commit(tx.batch, func() {
		d.publish(tx)
		applied = true
		done(true)
	}, func() {
		if !applied {
			done(false)
		}
		unlock()
	})
}

// unindexAt is the number of staged bitmaps from which a command's deltas
// are written into a copy of its batch without an index.
const unindexAt = 512

// unindexed returns a batch without an index holding b's writes, with
// room for the deltas of as many bitmaps as are staged, and closes b.
func (a *Applier) unindexed(b *pebble.Batch, bitmaps int) *pebble.Batch {
	nb := a.pdb.NewBatchWithSize(len(b.Repr()) + bitmaps*bitmapWriteSize)
	if err := nb.Apply(b, nil); err != nil {
		// Only a committed or closed batch refuses: b is neither.
		nb.Close()
		return b
	}
	b.Close()
	return nb
}

// bitmapWriteSize is the room a staged bitmap's delta takes in a batch, a
// little more than a bulk insert's take on average (70–85 bytes: the key,
// the rows added and the batch's header of the write), so that the batch
// does not grow, copying all it holds, once the deltas are written.
const bitmapWriteSize = 96

// inspect runs fn on database d as a command runs, under d.mu and seeing
// what fn stages, then discards everything: it previews a command without
// applying it.
func (a *Applier) inspect(d *DB, fn func(tx *Tx) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dropped {
		return model.NotFoundf("database not found")
	}
	tx := beginTx(d, a.pdb.NewIndexedBatch())
	defer tx.batch.Close()
	return fn(tx)
}

// commit applies a batch durably. The batch becomes visible when applied;
// then applied runs (publishing in-memory state) and unlock releases the
// writer's lock, so the next writer proceeds while this one waits for the WAL
// sync, which concurrent commits share. On failure applied does not run;
// unlock always does. A failure of the storage engine, error or panic, is
// the applier's fault from then on (fault.go).
func (a *Applier) commit(b *pebble.Batch, applied, unlock func()) (err error) {
	unlocked := false
	defer func() {
		if !unlocked && unlock != nil {
			unlock()
		}
	}()
	if err := a.Fault(); err != nil {
		b.Close()
		return err
	}
	err = a.storage(func() error {
		if a.opts.NoSync {
			return a.pdb.Apply(b, a.writeOp)
		}
		return a.pdb.ApplyNoSyncWait(b, a.writeOp)
	})
	if err != nil {
		// A batch the storage engine failed on may still be in its commit
		// pipeline: it is left to it.
		return err
	}
	a.keys.Add(uint64(b.Count()))
	defer b.Close()
	if applied != nil {
		applied()
	}
	unlocked = true
	if unlock != nil {
		unlock()
	}
	if a.opts.NoSync {
		return nil
	}
	return a.storage(b.SyncWait)
}

// Observer is told of the commands applied to one database. The commit
// path knows observers only through this interface: the structures
// derived from a database's keys (column, search and vector stores, the
// bitmap and record caches) keep current this way.
type Observer interface {
	// Prepare is called under the database's writer lock, after the
	// command is staged and before its batch becomes visible. tx says
	// what the command changed: the rows it wrote, the words new to a
	// table and whether it changed branches (the database's state after
	// it). The returned func, when not nil, is called once, still under
	// the writer lock: with true after the batch is visible and the
	// database's state published, or with false when it failed.
	Prepare(tx *Tx) (done func(applied bool))
	// Dropped is called once the database is deleted: no command will be
	// applied to it any more.
	Dropped()
}

// notify prepares every observer for the command tx and returns what
// tells them, once, how it ended.
func (d *DB) notify(tx *Tx) func(applied bool) {
	switch len(d.observers) {
	case 0:
		return func(bool) {}
	case 1:
		// The usual case, without a list to allocate.
		if done := d.observers[0].Prepare(tx); done != nil {
			return done
		}
		return func(bool) {}
	}
	var dones []func(bool)
	for _, o := range d.observers {
		if f := o.Prepare(tx); f != nil {
			dones = append(dones, f)
		}
	}
	return func(applied bool) {
		for _, f := range dones {
			f(applied)
		}
	}
}
