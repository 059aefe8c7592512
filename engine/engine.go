// Package engine is the embeddable Coppice database: workspaces, databases,
// copy-on-write branches, tables and records stored as encoded keys in
// Pebble. The HTTP service is a thin translation of JSON to the calls of this
// package, and other Go programs can call them directly.
//
// Every state change is a command value applied by one write path,
// internal/apply, which documents how commands stay deterministic and the
// lock order. The operations here check their input, resolve what a
// command must not compute itself (ids, times, secrets), make the command
// and hand it to that path; reads go to the layers of internal/layers and
// the in-memory structures derived from them. A command is one Pebble
// batch, synced before the call returns; concurrent writers share fsyncs.
// A database can be backed up and restored as one key range (backup.go).
// With Options.Cluster the engine is a node of a cluster (cluster.go):
// commands are proposed to the Raft group of their database or of the
// catalog and applied by every replica through the same path.
//
// An Engine is safe for concurrent use.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Options configure an Engine. The zero value is the production default.
type Options struct {
	// NoSync acknowledges writes before they reach the disk. Only benchmarks
	// of ceilings set it; a crash may lose acknowledged writes.
	NoSync bool
	// CacheSize is Pebble's block cache in bytes; 0 means DefaultCacheSize
	// without a MemoryLimit, and the share PlanMemory gives it with one.
	CacheSize int64
	// MemoryLimit is the memory the engine may take in all: the block
	// cache, the memtables, the structures derived in memory and room for
	// the requests in flight (PlanMemory shares it out). Past their budget
	// the derived structures are evicted, least recently used first, and
	// rebuilt when needed. 0 means no budget: they stay until their branch,
	// table or database goes. A server also sets the Go runtime's memory
	// limit (MemoryPlan.GoLimit).
	MemoryLimit int64
	// Clock returns the current time; nil means time.Now. Tests fix it.
	// Record timestamps, signed file links and the pauses of idle
	// compaction (CompactIdle) are read on it.
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
	// FS is the filesystem the storage engine uses; nil means the
	// operating system's. Tests of storage faults pass one that fails
	// (DiskFull).
	FS vfs.FS
	// Meta is the record metadata key under which filters, sorts, column
	// lists, summaries, aggregations and boosters name the metadata
	// columns ("<Meta>.createdAt"): "" means "svc"; the server's compat mode
	// sets "xata".
	Meta string
	// CompactIdle is the pause in a table's writes after which, once the
	// table took a bulk's worth of rows, its key ranges are compacted in
	// the background (idlecompact.go), so that reads after a bulk load are
	// as fast as on a compacted store. 0 means DefaultCompactIdle; a
	// negative value turns it off.
	CompactIdle time.Duration
	// Cluster, when set, makes the engine a node of a cluster that
	// replicates every database and the catalog (cluster.go); nil is a
	// single server.
	Cluster *ClusterOptions
	// MinFreeSpace is the room, in bytes, kept free on the data
	// directory's disk: while less is available, writes fail with
	// CodeUnavailable (and Health says why), before the storage engine
	// meets a full disk it cannot go on from; they resume once space is
	// freed. 0 means DefaultMinFreeSpace; a negative value turns the
	// check off.
	MinFreeSpace int64
}

// Engine is an open data directory.
type Engine struct {
	pdb  *pebble.DB
	dir  string // the data directory
	opts Options
	plan MemoryPlan
	ids  *model.IDGen
	obs  *observer
	ap   *apply.Applier     // the one write path
	cat  *catalog.Catalog   // the applier's, for readers
	mem  *memstore.Registry // the structures derived from each database

	accounts Accounts
	files    Files
	branches Branches
	schema   Schema

	// compactor compacts tables that went idle after bulk writes; nil when
	// Options.CompactIdle turns it off.
	compactor *idleCompactor

	// cl is the cluster this engine is a node of; nil on a single server.
	cl *Cluster

	space spaceGuard // refuses writes while the disk is short of room

	bg      sync.WaitGroup
	closing chan struct{}
}

// dataBlockSize is the size of the storage engine's data blocks. A point
// read of a record the block cache does not hold reads one whole block
// from the file (a system call, a checksum, an allocation and a cache
// insertion, each paid by the byte or by the block). At 2 KiB a block
// holds two or three records of the benchmark dataset, and the block
// cache keeps fewer bytes of records nobody asked for. With indexBlockSize,
// at 1e5 records of 100 words with a block cache a fifth of the store, a
// point get that misses both caches took about 6% less CPU in process
// than with 4 KiB blocks (Pebble's default) under a two-level index (11.6
// against 12.4 µs, twelve alternating runs), and the server's CPU per HTTP
// get about a tenth less; query pages were no slower. A posting bitmap
// larger than a block is one block whatever the size; the index takes
// about 15 bytes of every KiB stored.
const dataBlockSize = 2 << 10

// indexBlockSize is the size up to which a table's index is one block.
// Pebble's default (4 KiB) partitions the index of any table of more than
// about a hundred blocks into a two-level index, and a point read then
// finds and searches a partition after the top level: one more block
// cache lookup per level it reads. The index of a table of the store's
// bottom level (8 MiB) fits in one block of this size; larger tables are
// partitioned, so that a cache miss never rereads more than this of an
// index.
const indexBlockSize = 256 << 10

// blockCompression is the compression of the storage engine's blocks:
// none. A point read of a record the block cache does not hold reads its
// data block from the file, and with Snappy then decompressed it into a
// second buffer, which took about twice the CPU of the read. At 1e5
// records of the benchmark dataset (100-word bodies) with a block cache a
// fifth of the store, an HTTP point get of a record read once cost about
// 58 µs of process CPU (load generator included) with Snappy and 47 µs
// without. The store is about 1.5× larger on disk (76 against 50 MiB
// there). Tables written before keep their compression until compactions
// rewrite them.
func blockCompression() *sstable.CompressionProfile { return sstable.NoCompression }

// l0CompactionThreshold is how many sublevels of L0 tables make a
// compaction into the base level due. A bulk load's flushes each span the
// whole key range of its postings, so every such compaction rewrites the
// whole base level; with 8 rather than 4 it comes half as often, and folds
// twice the operands into each posting chunk when it does. Loading 1.2e5
// documents of the benchmark dataset (the first 40% of a 3e5 load),
// compactions took 6 against 15 µs of server CPU per document (189
// against 199 in all), and 52 against 65 when the table's idle compaction
// also ran during the load; a read merges at most 8 sublevels until they
// run.
const l0CompactionThreshold = 8

// DefaultCacheSize is the block cache of Options.CacheSize 0: what a
// server at a million records of the benchmark dataset can afford within
// 2 GB, with its column stores.
const DefaultCacheSize = 256 << 20

// restingMemtables is how many memtables the storage engine holds between
// loads: the one filling and the one it keeps to reuse at the next flush.
const restingMemtables = 2

// storageCacheSize is the size of the storage engine's cache for a plan.
// Pebble charges the memtables it holds to its block cache (each one
// reserves its size there while it lives), and the plan counts them apart
// from the blocks: a cache of plan.CacheSize would keep blocks only in
// what the memtables leave of it, half of it between loads with the
// default plan (two 64 MiB memtables in 256 MiB) and none during a load
// that holds four. The cache takes the resting memtables on top, so that
// blocks have plan.CacheSize between loads (a memtable's size more before
// the first flush, with no memtable kept to reuse yet); during a load the
// memtables queued for flushing take their room from the blocks, and the
// cache and the memtables together stay within plan.CacheSize +
// plan.Memtables.
func storageCacheSize(plan MemoryPlan) int64 {
	return plan.CacheSize + restingMemtables*plan.MemtableSize
}

// Open opens (creating if needed) the data directory dir.
func Open(dir string, opts Options) (*Engine, error) {
	plan := PlanMemory(opts.MemoryLimit, opts.CacheSize)
	opts.CacheSize = plan.CacheSize
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
	if opts.CompactIdle == 0 {
		opts.CompactIdle = DefaultCompactIdle
	}
	if opts.MinFreeSpace == 0 {
		opts.MinFreeSpace = DefaultMinFreeSpace
	}
	obs := &observer{log: opts.Logger, onEvent: opts.OnEvent}
	if opts.Meta == "" {
		opts.Meta = "svc"
	}
	cache := pebble.NewCache(storageCacheSize(plan))
	defer cache.Unref()
	popts := &pebble.Options{
		Cache:                       cache,
		Merger:                      layers.Merger,
		MemTableSize:                uint64(plan.MemtableSize),
		MemTableStopWritesThreshold: heldMemtables,
		L0CompactionThreshold:       l0CompactionThreshold,
		L0StopWritesThreshold:       24,
		LBaseMaxBytes:               256 << 20,
		CompactionConcurrencyRange:  func() (int, int) { return 1, 2 },
		Logger:                      pebbleLogger{obs},
		EventListener:               obs.pebbleListener(),
		FS:                          backoffFS{FS: orDefault(opts.FS), failed: obs.failed.Load},
	}
	for i := range popts.Levels {
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		popts.Levels[i].BlockSize = dataBlockSize
		popts.Levels[i].IndexBlockSize = indexBlockSize
		popts.Levels[i].Compression = blockCompression
	}
	pdb, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("engine: open %s: %w", dir, err)
	}
	e := &Engine{
		pdb:     pdb,
		dir:     dir,
		opts:    opts,
		plan:    plan,
		ids:     model.NewIDGen(),
		obs:     obs,
		closing: make(chan struct{}),
		space:   spaceGuard{fs: orDefault(opts.FS), dir: dir, reserve: opts.MinFreeSpace},
	}
	e.accounts.e, e.files.e, e.branches.e, e.schema.e = e, e, e, e
	if err := checkDataDirKind(pdb, dir, opts.Cluster != nil); err != nil {
		pdb.Close()
		return nil, err
	}
	if err := e.load(); err != nil {
		pdb.Close()
		return nil, err
	}
	if opts.Cluster != nil {
		if err := e.startCluster(dir, opts.Cluster); err != nil {
			pdb.Close()
			return nil, err
		}
	}
	if e.compactor != nil {
		go e.compactor.run()
	}
	return e, nil
}

// orDefault returns fs, or the operating system's filesystem when fs is nil.
func orDefault(fs vfs.FS) vfs.FS {
	if fs == nil {
		return vfs.Default
	}
	return fs
}

// Close waits for background work, then closes the data directory. Calls
// after Close fail. An engine whose storage failed (Health) closes what it
// can and returns the failure; what was acknowledged is durable already.
func (e *Engine) Close() error {
	select {
	case <-e.closing:
		return errors.New("engine: already closed")
	default:
	}
	close(e.closing)
	e.bg.Wait()
	if e.compactor != nil {
		<-e.compactor.done
	}
	if e.cl != nil {
		if err := e.cl.close(); err != nil {
			e.opts.Logger.Error("close cluster node", "err", err)
		}
	}
	if e.mem != nil {
		e.mem.Close()
	}
	fault := e.ap.Fault()
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil && fault != nil {
				err = fmt.Errorf("%v", p)
			}
		}()
		return e.pdb.Close()
	}()
	if fault != nil {
		return fmt.Errorf("engine: closed after a storage failure (%v): %w", err, fault)
	}
	return err
}

// Health returns nil while the engine takes writes, and else why not:
// its storage failed (a full disk, an I/O error), and it answers reads
// only, until it is opened again; or its disk has less room than
// Options.MinFreeSpace, until space is freed. Writes then fail with
// CodeUnavailable.
func (e *Engine) Health() error {
	if err := e.storageFault(); err != nil {
		return err
	}
	return e.space.check()
}

// storageFault returns why the storage failed, for good until a restart,
// or nil.
func (e *Engine) storageFault() error {
	if e.ap == nil {
		return nil // still opening
	}
	return e.ap.Fault()
}

// Compact compacts the whole store down to its bottom level: every
// bitmap's merge operands fold into one value and deleted keys go. A bulk
// load leaves a delta per bitmap chunk and batch that reads merge until
// compactions reach them; this settles them at once (benchmarks compare
// reads after a load with reads after it).
func (e *Engine) Compact(ctx context.Context) error {
	// Every key starts with a namespace byte below 0xff.
	return e.pdb.Compact(ctx, []byte{0}, []byte{0xff}, true)
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
	e.mem = memstore.NewRegistry(e.pdb, memstore.Options{
		BackgroundBuildRows: e.opts.BackgroundBuildRows, MemoryLimit: e.plan.Derived,
		Background: e.background, Event: e.obs.event, Fault: e.Health,
	})
	memory := e.MemoryStats
	e.obs.memory.Store(&memory)
	observe := e.mem.Open
	if e.opts.CompactIdle > 0 {
		e.compactor = newIdleCompactor(e, e.opts.CompactIdle)
		observe = func(d *apply.DB) []apply.Observer {
			return append(e.mem.Open(d), e.compactor.observer(d))
		}
	}
	ap, err := apply.Open(e.pdb, apply.Options{NoSync: e.opts.NoSync, Replicated: e.opts.Cluster != nil,
		Logger: e.opts.Logger, Observe: observe})
	if err != nil {
		return err
	}
	e.ap, e.cat = ap, ap.Catalog()
	fail := ap.Fail
	e.obs.fail.Store(&fail)
	if e.opts.Cluster != nil {
		return nil // the cluster's node makes the secrets once it can
	}
	// The secrets that sign cursors and file URLs are made now, so that
	// no read has to make one (see the lock order in internal/apply).
	for _, name := range []string{cursorSecretName, fileSecretName} {
		if _, err := e.serverSecret(name); err != nil {
			return err
		}
	}
	return nil
}

// apply applies a command to database d through the one write path, or
// through its group in a cluster; the structures it made grow are trimmed
// to their budget after.
func (e *Engine) apply(d *database, cmd apply.DBCommand) (any, error) {
	if err := e.space.check(); err != nil {
		return nil, err
	}
	var res any
	var err error
	if e.cl != nil {
		res, err = e.cl.propose(apply.OnDatabase(d.ID, cmd))
	} else {
		res, err = e.ap.Apply(apply.OnDatabase(d.ID, cmd))
	}
	e.mem.Reclaim()
	return res, err
}

// applyCatalog applies a catalog command through the one write path, or
// through the catalog's group in a cluster.
func (e *Engine) applyCatalog(cmd catalog.Command) (any, error) {
	if err := e.space.check(); err != nil {
		return nil, err
	}
	if e.cl != nil {
		return e.cl.applyCatalog(cmd)
	}
	return e.ap.Apply(apply.OnCatalog(cmd))
}
