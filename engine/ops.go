package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/cockroachdb/pebble/v2"
	dto "github.com/prometheus/client_model/go"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
)

// Operations: a consistent copy of the whole data directory taken while it
// serves (Checkpoint), and the numbers metrics report (Stats).

// checkpointsDir is the directory inside the data directory where
// Checkpoint(ctx, "") puts its copies. The storage engine ignores it.
const checkpointsDir = "checkpoints"

// errEngineClosed is the answer of operations asked of a closed engine.
var errEngineClosed = errors.New("engine: closed")

// Checkpoint writes a consistent copy of the whole data directory, as of
// one moment, to dir, which must not exist; the copy is itself a data
// directory that Open opens. The write-ahead log is flushed and synced
// first, so every write acknowledged before the call is in the copy.
// Writes are held back only while the storage engine notes the files that
// make up the moment; table files are hard-linked when dir is on the data
// directory's filesystem (no copy, and no space until compactions replace
// them in the data directory), else copied. With dir "", the copy goes to
// a new directory under checkpoints/ in the data directory; the caller
// removes it when done. Checkpoint returns the copy's directory.
func (e *Engine) Checkpoint(ctx context.Context, dir string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if dir == "" {
		parent := filepath.Join(e.dir, checkpointsDir)
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return "", fmt.Errorf("engine: checkpoint: %w", err)
		}
		// A fresh name; the storage engine wants to create the directory.
		tmp, err := os.MkdirTemp(parent, time.Now().UTC().Format("20060102T150405Z-"))
		if err != nil {
			return "", fmt.Errorf("engine: checkpoint: %w", err)
		}
		if err := os.Remove(tmp); err != nil {
			return "", fmt.Errorf("engine: checkpoint: %w", err)
		}
		dir = tmp
	}
	var err error
	if !e.inForeground(func() { err = e.pdb.Checkpoint(dir, pebble.WithFlushedWAL()) }) {
		return "", errEngineClosed
	}
	if err != nil {
		return "", fmt.Errorf("engine: checkpoint: %w", err)
	}
	return dir, nil
}

// inForeground runs fn, which uses storage, unless the engine is closing;
// Close waits for it as for background work. It reports whether fn ran.
func (e *Engine) inForeground(fn func()) bool {
	done := make(chan struct{})
	if !e.background(func() {
		defer close(done)
		fn()
	}) {
		return false
	}
	<-done
	return true
}

// emptyFlush reports whether a flush's error only says that it wrote no
// table: a write-ahead log that holds no keys, such as the sync record
// Checkpoint leaves at the end of a checkpoint's log, flushes so when the
// copy is opened. Pebble does not export the error.
func emptyFlush(err error) bool { return err.Error() == "pebble: empty table" }

// VerifyBackup reads a database backup (what BackupDatabase writes) to its
// end and checks its format and checksum, without restoring it. A backup
// that fails here restores nothing.
func VerifyBackup(r io.Reader) error {
	return layers.ReadRange(r, func(k, v []byte) error { return nil })
}

// Stats is a report on the storage engine and the databases at one moment,
// for metrics.
type Stats struct {
	Storage StorageStats
	// Databases are the databases with the most bytes on disk, largest
	// first; at most as many as Stats was asked for.
	Databases []DatabaseStats
	// DatabaseCount is the number of databases in all.
	DatabaseCount int
	// BuildsInProgress is the number of in-memory structures (column
	// stores of tables) being built in the background.
	BuildsInProgress int
	// Memory are the figures of the memory budget.
	Memory MemoryStats
	// WritesRefused is why the engine refuses writes (Health): its storage
	// failed, or its disk is short of room; "" while it takes them.
	WritesRefused string
}

// StorageStats are the storage engine's numbers. Counters count from the
// engine's Open.
type StorageStats struct {
	// DiskBytes is every file of the storage engine in the data directory:
	// tables (live, and obsolete ones not deleted yet) and write-ahead logs.
	DiskBytes uint64
	// Levels are the table files of each level of the LSM tree, L0 first.
	Levels [7]LevelStats
	// Compactions counts compactions done; CompactionsInProgress those
	// running; CompactionDebtBytes estimates the bytes compactions must
	// still rewrite for the tree to settle; CompactionTime is their total
	// duration.
	Compactions, CompactionsInProgress int64
	CompactionDebtBytes                uint64
	CompactionTime                     time.Duration
	// IdleCompactions counts the tables compacted after their bulk writes
	// went idle (Options.CompactIdle), and the store's compaction once idle
	// after opening; IdleCompactionFailures those that failed (logged),
	// and IdleCompactedBytes what their key ranges took on disk before.
	// IdleCompactionsPending are the tables that took a bulk's worth of
	// rows and are not compacted yet, and the store's compaction after
	// opening while due: waiting for writes to pause, or being compacted.
	IdleCompactions, IdleCompactionFailures int64
	IdleCompactedBytes                      uint64
	IdleCompactionsPending                  int
	// IdleFlushes counts the memtable flushes made when a table that took
	// a bulk's worth of rows, not enough for a compaction, went idle.
	IdleFlushes int64
	// Flushes counts memtables written to L0.
	Flushes int64
	// MemtableBytes is the memory of memtables (and large batches).
	MemtableBytes uint64
	// Block cache: bytes and blocks held, and lookups that hit or missed.
	CacheBytes, CacheBlocks, CacheHits, CacheMisses int64
	// Write-ahead log: bytes written by commits (WALBytesIn) and to files
	// (WALBytesWritten, with padding), syncs and their total duration,
	// and the live log files with their bytes.
	WALBytesIn, WALBytesWritten uint64
	WALSyncs                    uint64
	WALSyncTime                 time.Duration
	WALFiles                    int64
	WALBytes                    uint64
	// ReadAmplification is the number of sorted runs a point read may
	// consult: L0 sublevels plus non-empty lower levels.
	ReadAmplification int
	// KeysWritten counts the keys (sets, merges, deletions) of the
	// commands committed since the engine opened: divided by the records
	// written, what a record costs the memtable and the compactions after.
	KeysWritten uint64
	// WriteGroups counts the commits of single-record writes and bulk
	// inserts, each group of concurrent ones sharing one batch and one
	// sync; GroupedWrites counts the writes they held. Their ratio is the
	// mean size of the groups formed.
	WriteGroups, GroupedWrites uint64
	// WriterLockHeld sums how long commands held their database's writer
	// lock, which serializes them: divided by the records written, the
	// time per record that bounds a database's write rate.
	WriterLockHeld time.Duration
}

// LevelStats are the table files of one level.
type LevelStats struct {
	Files int64
	Bytes int64
	// Sublevels is the read amplification of the level (L0 may have many).
	Sublevels int32
}

// DatabaseStats are one database's numbers.
type DatabaseStats struct {
	// Workspace is the core id of the workspace ("" for a database outside
	// every workspace); Name the database's name.
	Workspace, Name string
	// Branches is the number of branches; Records the number of records,
	// summed over the branches (a record two branches share counts twice).
	Branches int
	Records  int64
	// DiskBytes estimates the bytes the database's key range takes in the
	// table files (the write-ahead log and memtables not included).
	DiskBytes uint64
}

// Stats reports on storage and on the maxDatabases databases with the most
// bytes on disk (0: none). Storage numbers come from the storage engine's
// counters; a database's records are counted as RecordCount does, from
// memory where its bitmaps are cached, else from storage, so asking for
// many large databases costs reads.
func (e *Engine) Stats(maxDatabases int) (Stats, error) {
	var st Stats
	var err error
	if !e.inForeground(func() { st, err = e.stats(maxDatabases) }) {
		return Stats{}, errEngineClosed
	}
	return st, err
}

// stats is Stats's work.
func (e *Engine) stats(maxDatabases int) (Stats, error) {
	st := Stats{Storage: storageStats(e.pdb.Metrics())}
	st.Storage.KeysWritten = e.ap.KeysWritten()
	st.Storage.WriteGroups, st.Storage.GroupedWrites = e.ap.WriteGroups()
	st.Storage.WriterLockHeld = e.ap.WriterLockHeld()
	if c := e.compactor; c != nil {
		st.Storage.IdleCompactions = c.runs.Load()
		st.Storage.IdleCompactionFailures = c.failures.Load()
		st.Storage.IdleCompactedBytes = c.bytes.Load()
		st.Storage.IdleCompactionsPending = c.pending()
		st.Storage.IdleFlushes = c.flushes.Load()
	}
	places := e.cat.Placements()
	st.DatabaseCount = len(places)
	dbs := make([]DatabaseStats, 0, len(places))
	for _, p := range places {
		prefix := codec.DatabasePrefix(p.ID)
		n, err := e.pdb.EstimateDiskUsage(prefix, codec.PrefixEnd(prefix))
		if err != nil {
			return Stats{}, err
		}
		dbs = append(dbs, DatabaseStats{Workspace: p.Workspace, Name: p.Name, DiskBytes: n})
	}
	sort.Slice(dbs, func(i, j int) bool {
		if dbs[i].DiskBytes != dbs[j].DiskBytes {
			return dbs[i].DiskBytes > dbs[j].DiskBytes
		}
		if dbs[i].Workspace != dbs[j].Workspace {
			return dbs[i].Workspace < dbs[j].Workspace
		}
		return dbs[i].Name < dbs[j].Name
	})
	dbs = dbs[:min(len(dbs), max(maxDatabases, 0))]
	for i := range dbs {
		d := &dbs[i]
		branches, err := e.branches.List(d.Workspace, d.Name)
		if CodeOf(err) == CodeNotFound {
			continue // deleted meanwhile
		}
		if err != nil {
			return Stats{}, err
		}
		d.Branches = len(branches)
		for _, b := range branches {
			n, err := e.RecordCount(Ref{Workspace: d.Workspace, Database: d.Name, Branch: b.Name})
			if CodeOf(err) == CodeNotFound {
				continue
			}
			if err != nil {
				return Stats{}, err
			}
			d.Records += n
		}
	}
	st.Databases = dbs
	st.BuildsInProgress = e.mem.BuildsInProgress()
	st.Memory = e.MemoryStats()
	if err := e.Health(); err != nil {
		st.WritesRefused = err.Error()
	}
	return st, nil
}

// storageStats picks the numbers of a report of the storage engine.
func storageStats(m *pebble.Metrics) StorageStats {
	s := StorageStats{
		DiskBytes:             m.DiskSpaceUsage(),
		Compactions:           m.Compact.Count,
		CompactionsInProgress: m.Compact.NumInProgress,
		CompactionDebtBytes:   m.Compact.EstimatedDebt,
		CompactionTime:        m.Compact.Duration,
		Flushes:               m.Flush.Count,
		MemtableBytes:         m.MemTable.Size,
		CacheBytes:            m.BlockCache.Size,
		CacheBlocks:           m.BlockCache.Count,
		CacheHits:             m.BlockCache.Hits,
		CacheMisses:           m.BlockCache.Misses,
		WALBytesIn:            m.WAL.BytesIn,
		WALBytesWritten:       m.WAL.BytesWritten,
		WALFiles:              m.WAL.Files,
		WALBytes:              m.WAL.Size,
		ReadAmplification:     m.ReadAmp(),
	}
	for i := range s.Levels {
		l := &m.Levels[i]
		s.Levels[i] = LevelStats{Files: l.TablesCount, Bytes: l.TablesSize, Sublevels: l.Sublevels}
	}
	// The storage engine times every sync of the log in a histogram of
	// nanoseconds: its count is the number of syncs.
	if h := m.LogWriter.FsyncLatency; h != nil {
		var out dto.Metric
		if h.Write(&out) == nil && out.Histogram != nil {
			s.WALSyncs = out.Histogram.GetSampleCount()
			s.WALSyncTime = time.Duration(out.Histogram.GetSampleSum())
		}
	}
	return s
}
