package api

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coppice-db/coppice/engine"
)

// The engine's families. Storage, per-database and in-progress numbers are
// read at scrape time, all from one engine.Stats call per scrape; the
// counts of background work come from the engine's events
// (engine.Options.OnEvent = Metrics.EngineEvent).

// MaxDatabaseSeries caps the databases the per-database families report:
// the ones with the most bytes on disk. Each costs three series, and
// counting a database's records reads the live-row bitmap of each table of
// each branch (from memory when cached), so the cap bounds both the
// series and the work of a scrape. coppice_databases counts them all.
const MaxDatabaseSeries = 50

// engineEvents are the counters the engine's events feed. They exist, at
// zero, before the first event.
type engineEvents struct {
	stalls, stallSeconds                     prometheus.Counter
	builds, buildFailures, buildSeconds      prometheus.Counter
	flattens, flattenFailures, flattenSecond prometheus.Counter
}

// newEngineEvents makes the event counters.
func newEngineEvents() *engineEvents {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	return &engineEvents{
		stalls:          c("coppice_storage_write_stalls_total", "Times writes were held back while storage caught up (memtables or L0 full)."),
		stallSeconds:    c("coppice_storage_write_stall_seconds_total", "Time writes were held back by write stalls."),
		builds:          c("coppice_store_builds_total", "In-memory column stores of tables built from storage."),
		buildFailures:   c("coppice_store_build_failures_total", "Builds of in-memory column stores that failed (logged)."),
		buildSeconds:    c("coppice_store_build_seconds_total", "Time spent building in-memory column stores."),
		flattens:        c("coppice_branch_flattens_total", "Branch lineages flattened into one layer in the background."),
		flattenFailures: c("coppice_branch_flatten_failures_total", "Background flattens that failed (logged)."),
		flattenSecond:   c("coppice_branch_flatten_seconds_total", "Time spent flattening branch lineages."),
	}
}

// collectors lists the counters for registration.
func (ev *engineEvents) collectors() []prometheus.Collector {
	return []prometheus.Collector{ev.stalls, ev.stallSeconds, ev.builds, ev.buildFailures, ev.buildSeconds,
		ev.flattens, ev.flattenFailures, ev.flattenSecond}
}

// EngineEvent counts one of the engine's events; it is the function to set
// as engine.Options.OnEvent. Flushes, compactions and evictions are
// counted from the engine's own numbers at scrape time instead.
func (m *Metrics) EngineEvent(e engine.Event) {
	ev := m.events
	switch e.Kind {
	case engine.EventWriteStall:
		ev.stalls.Inc()
		ev.stallSeconds.Add(e.Duration.Seconds())
	case engine.EventStoreBuild:
		if e.Err != nil {
			ev.buildFailures.Inc()
			return
		}
		ev.builds.Inc()
		ev.buildSeconds.Add(e.Duration.Seconds())
	case engine.EventFlatten:
		if e.Err != nil {
			ev.flattenFailures.Inc()
			return
		}
		ev.flattens.Inc()
		ev.flattenSecond.Add(e.Duration.Seconds())
	}
}

// engineCollector reads the engine's Stats at each scrape.
type engineCollector struct {
	eng *engine.Engine
}

// desc makes the description of an engine family.
func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// The families of engineCollector.
var (
	descDiskBytes       = desc("coppice_storage_disk_bytes", "Bytes of the storage engine's files in the data directory: tables (live and obsolete) and write-ahead logs.")
	descLevelFiles      = desc("coppice_storage_level_files", "Table files in each level of the LSM tree.", "level")
	descLevelBytes      = desc("coppice_storage_level_bytes", "Bytes of the table files in each level of the LSM tree.", "level")
	descReadAmp         = desc("coppice_storage_read_amplification", "Sorted runs a point read may consult: L0 sublevels and non-empty lower levels.")
	descCompactions     = desc("coppice_storage_compactions_total", "Compactions done since the data directory was opened.")
	descCompactionsNow  = desc("coppice_storage_compactions_in_progress", "Compactions running now.")
	descCompactionDebt  = desc("coppice_storage_compaction_debt_bytes", "Estimated bytes compactions must still rewrite for the LSM tree to settle.")
	descCompactionSecs  = desc("coppice_storage_compaction_seconds_total", "Time spent in compactions.")
	descIdleFlushes     = desc("coppice_storage_idle_flushes_total", "Memtable flushes made when a table that took a bulk's worth of rows, not enough to be compacted, went idle (--compact-idle): the flush folds the index updates its writes left in memory.")
	descIdleCompactions = desc("coppice_storage_idle_compactions_total", "Tables whose storage was compacted after their bulk writes went idle (--compact-idle).")
	descIdleFailures    = desc("coppice_storage_idle_compaction_failures_total", "Compactions of idle tables that failed (logged).")
	descIdlePending     = desc("coppice_storage_idle_compactions_pending", "Tables that took a bulk's worth of rows and wait for their writes to pause, or are being compacted (--compact-idle).")
	descIdleBytes       = desc("coppice_storage_idle_compacted_bytes_total", "Bytes the idle tables' key ranges took on disk before they were compacted.")
	descFlushes         = desc("coppice_storage_flushes_total", "Memtables flushed to table files.")
	descMemtableBytes   = desc("coppice_storage_memtable_bytes", "Memory of memtables and large batches.")
	descCacheBytes      = desc("coppice_storage_block_cache_bytes", "Bytes held by the block cache (--cache-size bounds it).")
	descCacheHits       = desc("coppice_storage_block_cache_hits_total", "Block cache lookups that found their block.")
	descCacheMisses     = desc("coppice_storage_block_cache_misses_total", "Block cache lookups that read their block from disk.")
	descWALBytes        = desc("coppice_storage_wal_bytes_total", "Bytes of commits written to the write-ahead log.")
	descWALPhysical     = desc("coppice_storage_wal_written_bytes_total", "Bytes written to write-ahead log files, with framing and padding.")
	descWALSyncs        = desc("coppice_storage_wal_syncs_total", "Syncs of the write-ahead log (commits waiting together share one).")
	descWALSyncSecs     = desc("coppice_storage_wal_sync_seconds_total", "Time spent syncing the write-ahead log.")
	descWALFiles        = desc("coppice_storage_wal_files", "Live write-ahead log files.")
	descWriteGroups     = desc("coppice_write_groups_total", "Commits of single-record writes and bulk inserts; concurrent ones share one commit and one sync.")
	descGroupedWrites   = desc("coppice_write_group_writes_total", "Writes held by those commits: divided by coppice_write_groups_total, the mean size of a group.")
	descLockHeld        = desc("coppice_write_lock_seconds_total", "Time commands held their database's writer lock: the part of a write no other write of the database overlaps.")
	descBuildsNow       = desc("coppice_store_builds_in_progress", "In-memory column stores being built in the background now.")
	descDatabases       = desc("coppice_databases", "Databases on this server.")
	descDBRecords       = desc("coppice_database_records", "Records of a database, summed over its branches (a record two branches share counts twice); the "+strconv.Itoa(MaxDatabaseSeries)+" largest databases only.", "workspace", "database")
	descDBBranches      = desc("coppice_database_branches", "Branches of a database; the "+strconv.Itoa(MaxDatabaseSeries)+" largest databases only.", "workspace", "database")
	descDBDiskBytes     = desc("coppice_database_disk_bytes", "Estimated bytes of a database's keys in table files (recent writes still in the write-ahead log not included); the "+strconv.Itoa(MaxDatabaseSeries)+" largest databases only.", "workspace", "database")
	descMemLimit        = desc("coppice_memory_limit_bytes", "Memory the server may take in all (--memory-limit); 0: no limit.")
	descMemBudget       = desc("coppice_memory_budget_bytes", "The budget of the structures derived in memory: --memory-limit less the block cache, the memtables and the reserve; 0: no limit.")
	descMemUsed         = desc("coppice_memory_used_bytes", "Bytes the structures derived in memory take, by kind.", "kind")
	descMemStructures   = desc("coppice_memory_structures", "Structures under the memory budget, by kind.", "kind")
	descMemEvictions    = desc("coppice_memory_evictions_total", "Structures evicted, and caches emptied, to stay within the memory budget, by kind.", "kind")
	descMemEvictedBytes = desc("coppice_memory_evicted_bytes_total", "Bytes of the structures evicted and caches emptied, by kind.", "kind")
	descWritesRefused   = desc("coppice_storage_writes_refused", "1 while writes are refused: the storage failed (a full disk, an I/O error), until a restart; or the disk has less room than --min-free-space, until space is freed; else 0.")
	engineCollectorDesc = []*prometheus.Desc{descDiskBytes, descLevelFiles, descLevelBytes, descReadAmp, descCompactions,
		descCompactionsNow, descCompactionDebt, descCompactionSecs, descIdleCompactions, descIdleFlushes, descIdleFailures, descIdleBytes, descIdlePending, descFlushes, descMemtableBytes, descCacheBytes,
		descCacheHits, descCacheMisses, descWALBytes, descWALPhysical, descWALSyncs, descWALSyncSecs, descWALFiles,
		descWriteGroups, descGroupedWrites, descLockHeld,
		descBuildsNow, descDatabases, descDBRecords, descDBBranches, descDBDiskBytes, descMemLimit, descMemBudget,
		descMemUsed, descMemStructures, descMemEvictions, descMemEvictedBytes, descWritesRefused}
)

// Describe sends the descriptions of every family.
func (c engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range engineCollectorDesc {
		ch <- d
	}
}

// Collect reads the engine's Stats once and sends every family. A closed
// engine (the server shutting down) reports nothing.
func (c engineCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.eng.Stats(MaxDatabaseSeries)
	if err != nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	s := st.Storage
	gauge(descDiskBytes, float64(s.DiskBytes))
	for i, l := range s.Levels {
		level := strconv.Itoa(i)
		gauge(descLevelFiles, float64(l.Files), level)
		gauge(descLevelBytes, float64(l.Bytes), level)
	}
	gauge(descReadAmp, float64(s.ReadAmplification))
	counter(descCompactions, float64(s.Compactions))
	gauge(descCompactionsNow, float64(s.CompactionsInProgress))
	gauge(descCompactionDebt, float64(s.CompactionDebtBytes))
	counter(descCompactionSecs, s.CompactionTime.Seconds())
	counter(descIdleCompactions, float64(s.IdleCompactions))
	counter(descIdleFlushes, float64(s.IdleFlushes))
	counter(descIdleFailures, float64(s.IdleCompactionFailures))
	counter(descIdleBytes, float64(s.IdleCompactedBytes))
	gauge(descIdlePending, float64(s.IdleCompactionsPending))
	counter(descFlushes, float64(s.Flushes))
	gauge(descMemtableBytes, float64(s.MemtableBytes))
	gauge(descCacheBytes, float64(s.CacheBytes))
	counter(descCacheHits, float64(s.CacheHits))
	counter(descCacheMisses, float64(s.CacheMisses))
	counter(descWALBytes, float64(s.WALBytesIn))
	counter(descWALPhysical, float64(s.WALBytesWritten))
	counter(descWALSyncs, float64(s.WALSyncs))
	counter(descWALSyncSecs, s.WALSyncTime.Seconds())
	gauge(descWALFiles, float64(s.WALFiles))
	counter(descWriteGroups, float64(s.WriteGroups))
	counter(descGroupedWrites, float64(s.GroupedWrites))
	counter(descLockHeld, s.WriterLockHeld.Seconds())
	gauge(descBuildsNow, float64(st.BuildsInProgress))
	gauge(descDatabases, float64(st.DatabaseCount))
	for _, d := range st.Databases {
		gauge(descDBRecords, float64(d.Records), d.Workspace, d.Name)
		gauge(descDBBranches, float64(d.Branches), d.Workspace, d.Name)
		gauge(descDBDiskBytes, float64(d.DiskBytes), d.Workspace, d.Name)
	}
	mem := st.Memory
	gauge(descMemLimit, float64(mem.MemoryLimit))
	gauge(descMemBudget, float64(mem.Limit))
	for kind, k := range mem.Kinds {
		gauge(descMemUsed, float64(k.Used), kind)
		gauge(descMemStructures, float64(k.Structures), kind)
		counter(descMemEvictions, float64(k.Evictions), kind)
		counter(descMemEvictedBytes, float64(k.EvictedBytes), kind)
	}
	refused := 0.0
	if st.WritesRefused != "" {
		refused = 1
	}
	gauge(descWritesRefused, refused)
}
