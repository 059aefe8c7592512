// Package engine is the embeddable Coppice database: workspaces, databases,
// copy-on-write branches, tables and records stored as encoded keys in
// Pebble. The HTTP service is a thin translation of JSON to the calls of this
// package, and other Go programs can call them directly.
//
// Every state change is a command value: a database's commands
// (dbcodec.go lists them) go through one path, Engine.apply (database.go),
// and the catalog's (catcodec.go) through applyCatalog (catalog.go).
// Identifiers, timestamps and `now` defaults are resolved before a command
// is applied, and applying it reads no clock and no randomness and never
// depends on map order, so the same commands on the same state write the
// same bytes; every command has a versioned encoding that keeps it so. A
// command is one Pebble batch, synced before the call returns; concurrent
// writers share fsyncs. A database can be backed up and restored as one
// key range (backup.go).
//
// An Engine is safe for concurrent use.
package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Options configure an Engine. The zero value is the production default.
type Options struct {
	// NoSync acknowledges writes before they reach the disk. Only benchmarks
	// of ceilings set it; a crash may lose acknowledged writes.
	NoSync bool
	// CacheSize is Pebble's block cache in bytes; 0 means
	// DefaultCacheSize.
	CacheSize int64
	// Clock returns the current time; nil means time.Now. Tests fix it.
	Clock func() time.Time
	// FlattenDepth is the lineage depth above which a branch's frozen
	// ancestors are flattened in the background; 0 means 4.
	FlattenDepth int
	// BackgroundBuildRows is the table size from which the in-memory column
	// store of a table is built in the background on first use, queries
	// reading storage meanwhile; smaller tables build it before answering.
	// 0 means 100,000; a negative value builds every store before answering.
	BackgroundBuildRows int
	// Logger receives the storage engine's log and every failure of work
	// the engine does in the background (flattening, store builds); nil
	// means slog.Default().
	Logger *slog.Logger
	// OnEvent, when set, is called with every Event: flushes, compactions,
	// write stalls, store builds, evictions and flattens. It is called from
	// background goroutines, and must be quick and safe for concurrent use.
	OnEvent func(Event)
	// Meta is the record metadata key under which filters, sorts, column
	// lists, summaries, aggregations and boosters name the metadata
	// columns ("<Meta>.createdAt"): "" means "svc"; the server's compat mode
	// sets "xata".
	Meta string
}

// Engine is an open data directory.
type Engine struct {
	pdb     *pebble.DB
	dir     string // the data directory
	opts    Options
	writeOp *pebble.WriteOptions
	ids     *model.IDGen
	obs     *observer

	accounts  Accounts
	files     Files
	observers []writeObserver // told of every database command applied

	catMu sync.Mutex // serializes catalog commands; see the lock order in database.go
	cat   *catalog   // guarded by its own RWMutex for readers

	hashes keyHashes // of secrets that authenticated lately

	// storeless makes every reader go without column stores; tests set it
	// to run the storage paths of the planner.
	storeless bool

	dbMu sync.RWMutex // see the lock order in database.go
	dbs  map[uint32]*database

	bg      sync.WaitGroup
	closing chan struct{}
}

// DefaultCacheSize is the block cache of Options.CacheSize 0: what a
// server at a million records of the benchmark dataset can afford within
// 2 GB, with its column stores.
const DefaultCacheSize = 256 << 20

// Open opens (creating if needed) the data directory dir.
func Open(dir string, opts Options) (*Engine, error) {
	if opts.CacheSize == 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.FlattenDepth == 0 {
		opts.FlattenDepth = 4
	}
	if opts.BackgroundBuildRows == 0 {
		opts.BackgroundBuildRows = 100_000
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	obs := &observer{log: opts.Logger, onEvent: opts.OnEvent}
	if opts.Meta == "" {
		opts.Meta = "svc"
	}
	cache := pebble.NewCache(opts.CacheSize)
	defer cache.Unref()
	popts := &pebble.Options{
		Cache:                       cache,
		Merger:                      bitmapMerger,
		MemTableSize:                64 << 20,
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       4,
		L0StopWritesThreshold:       24,
		LBaseMaxBytes:               256 << 20,
		CompactionConcurrencyRange:  func() (int, int) { return 1, 2 },
		Logger:                      pebbleLogger{opts.Logger},
		EventListener:               obs.pebbleListener(),
	}
	for i := range popts.Levels {
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		popts.Levels[i].BlockSize = 16 << 10
	}
	pdb, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("engine: open %s: %w", dir, err)
	}
	e := &Engine{
		pdb:     pdb,
		dir:     dir,
		opts:    opts,
		writeOp: &pebble.WriteOptions{Sync: !opts.NoSync},
		ids:     model.NewIDGen(),
		obs:     obs,
		dbs:     map[uint32]*database{},
		closing: make(chan struct{}),
	}
	e.accounts.e, e.files.e = e, e
	e.observers = []writeObserver{memObserver{}}
	if err := e.load(); err != nil {
		pdb.Close()
		return nil, err
	}
	return e, nil
}

// Close waits for background work, then closes the data directory. Calls
// after Close fail.
func (e *Engine) Close() error {
	select {
	case <-e.closing:
		return errors.New("engine: already closed")
	default:
	}
	close(e.closing)
	e.bg.Wait()
	return e.pdb.Close()
}

// background runs fn in a goroutine that Close waits for, unless the
// engine is closing; it reports whether fn was started.
func (e *Engine) background(fn func()) bool {
	select {
	case <-e.closing:
		return false
	default:
	}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		fn()
	}()
	return true
}

// now returns the engine clock's time, truncated to microseconds so that a
// timestamp survives a round trip through RFC 3339 output unchanged.
func (e *Engine) now() time.Time {
	return e.opts.Clock().UTC().Truncate(time.Microsecond)
}

// load reads the catalog and every database's metadata into memory.
func (e *Engine) load() error {
	cat, err := loadCatalog(e.pdb)
	if err != nil {
		return err
	}
	e.cat = cat
	for _, d := range cat.databases {
		db, err := loadDatabase(e.pdb, d.ID)
		if err != nil {
			return fmt.Errorf("engine: load database %d: %w", d.ID, err)
		}
		e.addDatabase(db)
	}
	// The secrets that sign cursors and file URLs are made now, so that
	// no read has to make one (see the lock order in database.go).
	for _, name := range []string{cursorSecretName, fileSecretName} {
		if _, err := e.serverSecret(name); err != nil {
			return err
		}
	}
	return nil
}

// addDatabase makes an open database reachable.
func (e *Engine) addDatabase(d *database) {
	d.obs = e.obs
	e.dbMu.Lock()
	e.dbs[d.id] = d
	e.dbMu.Unlock()
}

// commit applies a batch durably. The batch becomes visible when applied;
// then applied runs (publishing in-memory state) and unlock releases the
// writer's lock, so the next writer proceeds while this one waits for the WAL
// sync, which concurrent commits share. On failure applied does not run.
func (e *Engine) commit(b *pebble.Batch, applied, unlock func()) error {
	defer b.Close()
	var err error
	if e.opts.NoSync {
		err = e.pdb.Apply(b, e.writeOp)
	} else {
		err = e.pdb.ApplyNoSyncWait(b, e.writeOp)
	}
	if err == nil && applied != nil {
		applied()
	}
	if unlock != nil {
		unlock()
	}
	if err != nil || e.opts.NoSync {
		return err
	}
	return b.SyncWait()
}
