package api

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/coppice-db/coppice/engine"
)

// TestEngineMetrics scrapes the engine's families after a short workload:
// storage numbers, per-database numbers (capped at MaxDatabaseSeries), the
// memory budget's figures and the counters of the engine's events.
func TestEngineMetrics(t *testing.T) {
	m := NewMetrics()
	ts := startServerEngine(t, Options{Metrics: m}, engine.Options{OnEvent: m.EngineEvent, MemoryLimit: 1 << 30})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := ServeMetrics(m, ln, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer stop()
	url := "http://" + ln.Addr().String() + "/metrics"

	ts.createDB("app")
	ts.createTable("app", "users", map[string]any{"name": "name", "type": "string"}, map[string]any{"name": "age", "type": "int"})
	for i := range 30 {
		ts.expect(201, "PUT", fmt.Sprintf("/db/app:main/tables/users/data/u%02d", i), map[string]any{"name": "n", "age": i})
	}
	ts.expect(201, "PUT", "/db/app:dev", map[string]any{"from": "main"})
	ts.expect(204, "DELETE", "/db/app:dev/tables/users/data/u00", nil)
	// A summary builds the table's column store.
	ts.expect(200, "POST", "/db/app:main/tables/users/summarize", map[string]any{"summaries": map[string]any{"n": map[string]any{"count": "*"}}})

	fams := scrape(t, url)
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		fam := fams[name]
		s := series(fam, labels)
		if s == nil {
			t.Errorf("no %s%v", name, labels)
			return -1
		}
		switch fam.GetType() {
		case dto.MetricType_COUNTER:
			return s.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return s.GetGauge().GetValue()
		}
		t.Errorf("%s: type %v", name, fam.GetType())
		return -1
	}
	for name, kind := range map[string]dto.MetricType{
		"coppice_storage_disk_bytes": dto.MetricType_GAUGE, "coppice_storage_level_files": dto.MetricType_GAUGE,
		"coppice_storage_level_bytes": dto.MetricType_GAUGE, "coppice_storage_read_amplification": dto.MetricType_GAUGE,
		"coppice_storage_compactions_total": dto.MetricType_COUNTER, "coppice_storage_compactions_in_progress": dto.MetricType_GAUGE,
		"coppice_storage_compaction_debt_bytes": dto.MetricType_GAUGE, "coppice_storage_compaction_seconds_total": dto.MetricType_COUNTER,
		"coppice_storage_flushes_total": dto.MetricType_COUNTER, "coppice_storage_memtable_bytes": dto.MetricType_GAUGE,
		"coppice_storage_idle_compactions_total": dto.MetricType_COUNTER, "coppice_storage_idle_flushes_total": dto.MetricType_COUNTER, "coppice_storage_idle_compaction_failures_total": dto.MetricType_COUNTER,
		"coppice_storage_idle_compacted_bytes_total": dto.MetricType_COUNTER, "coppice_storage_idle_compactions_pending": dto.MetricType_GAUGE, "coppice_storage_block_cache_bytes": dto.MetricType_GAUGE,
		"coppice_storage_block_cache_hits_total":   dto.MetricType_COUNTER,
		"coppice_storage_block_cache_misses_total": dto.MetricType_COUNTER, "coppice_storage_wal_bytes_total": dto.MetricType_COUNTER,
		"coppice_storage_wal_written_bytes_total": dto.MetricType_COUNTER, "coppice_storage_wal_syncs_total": dto.MetricType_COUNTER,
		"coppice_storage_wal_sync_seconds_total": dto.MetricType_COUNTER, "coppice_storage_wal_files": dto.MetricType_GAUGE,
		"coppice_write_groups_total": dto.MetricType_COUNTER, "coppice_write_group_writes_total": dto.MetricType_COUNTER,
		"coppice_write_lock_seconds_total":   dto.MetricType_COUNTER,
		"coppice_storage_write_stalls_total": dto.MetricType_COUNTER, "coppice_storage_write_stall_seconds_total": dto.MetricType_COUNTER,
		"coppice_store_builds_in_progress": dto.MetricType_GAUGE, "coppice_store_builds_total": dto.MetricType_COUNTER,
		"coppice_store_build_failures_total": dto.MetricType_COUNTER, "coppice_store_build_seconds_total": dto.MetricType_COUNTER,
		"coppice_memory_evictions_total": dto.MetricType_COUNTER, "coppice_branch_flattens_total": dto.MetricType_COUNTER,
		"coppice_branch_flatten_failures_total": dto.MetricType_COUNTER, "coppice_branch_flatten_seconds_total": dto.MetricType_COUNTER,
		"coppice_databases": dto.MetricType_GAUGE, "coppice_database_records": dto.MetricType_GAUGE,
		"coppice_database_branches": dto.MetricType_GAUGE, "coppice_database_disk_bytes": dto.MetricType_GAUGE,
		"coppice_memory_limit_bytes": dto.MetricType_GAUGE, "coppice_memory_budget_bytes": dto.MetricType_GAUGE,
		"coppice_memory_used_bytes": dto.MetricType_GAUGE, "coppice_memory_structures": dto.MetricType_GAUGE,
		"coppice_memory_evicted_bytes_total": dto.MetricType_COUNTER, "coppice_storage_writes_refused": dto.MetricType_GAUGE,
	} {
		if f := fams[name]; f == nil || f.GetType() != kind || len(f.GetMetric()) == 0 {
			t.Errorf("family %s: %v, want a %v", name, f, kind)
		}
	}
	if n := len(fams["coppice_storage_level_bytes"].GetMetric()); n != 7 {
		t.Errorf("%d levels", n)
	}
	if v := value("coppice_storage_wal_bytes_total", nil); v <= 0 {
		t.Errorf("WAL bytes %v after writes", v)
	}
	if g, w := value("coppice_write_groups_total", nil), value("coppice_write_group_writes_total", nil); g <= 0 || w < g {
		t.Errorf("%v writes in %v groups after writes", w, g)
	}
	if v := value("coppice_write_lock_seconds_total", nil); v <= 0 {
		t.Errorf("writer lock held %vs after writes", v)
	}
	if v := value("coppice_storage_block_cache_bytes", nil); v < 0 {
		t.Errorf("block cache bytes %v", v)
	}
	app := map[string]string{"workspace": ts.info.Workspace, "database": "app"}
	if v := value("coppice_database_records", app); v != 30+29 {
		t.Errorf("records of app: %v, want 30 on main + 29 on dev", v)
	}
	if v := value("coppice_database_branches", app); v != 2 {
		t.Errorf("branches of app: %v", v)
	}
	value("coppice_database_disk_bytes", app)
	if v := value("coppice_databases", nil); v != 1 {
		t.Errorf("databases: %v", v)
	}
	if v := value("coppice_store_builds_total", nil); v < 1 {
		t.Errorf("store builds after a summary: %v", v)
	}
	if v := value("coppice_store_builds_in_progress", nil); v != 0 {
		t.Errorf("builds in progress: %v", v)
	}
	if v := value("coppice_storage_write_stalls_total", nil); v != 0 {
		t.Errorf("write stalls: %v", v)
	}
	if v := value("coppice_storage_writes_refused", nil); v != 0 {
		t.Errorf("writes refused: %v", v)
	}
	// The memory budget: the limit, its share for derived structures, and
	// each kind of structure; the summary's column store is counted.
	if v := value("coppice_memory_limit_bytes", nil); v != 1<<30 {
		t.Errorf("memory limit: %v", v)
	}
	if v := value("coppice_memory_budget_bytes", nil); v != float64(engine.PlanMemory(1<<30, 0).Derived) {
		t.Errorf("memory budget: %v", v)
	}
	for _, name := range []string{"coppice_memory_used_bytes", "coppice_memory_structures", "coppice_memory_evictions_total",
		"coppice_memory_evicted_bytes_total"} {
		if n := len(fams[name].GetMetric()); n != 6 {
			t.Errorf("%s: %d kinds", name, n)
		}
	}
	column := map[string]string{"kind": "column_store"}
	if v := value("coppice_memory_used_bytes", column); v <= 0 {
		t.Errorf("column stores use %v bytes after a summary", v)
	}
	if v := value("coppice_memory_structures", column); v < 1 {
		t.Errorf("%v column stores after a summary", v)
	}
	if v := value("coppice_memory_evictions_total", column); v != 0 {
		t.Errorf("%v column stores evicted under a budget of hundreds of MiB", v)
	}
	mem := ts.eng.MemoryStats()
	if v := value("coppice_memory_used_bytes", map[string]string{"kind": "record_cache"}); v != float64(mem.Kinds["record_cache"].Used) {
		t.Errorf("record cache: %v bytes, the engine says %+v", v, mem.Kinds["record_cache"])
	}

	// Events the workload does not cause.
	m.EngineEvent(engine.Event{Kind: engine.EventWriteStall, Duration: 1500 * time.Millisecond})
	m.EngineEvent(engine.Event{Kind: engine.EventEviction, Count: 7}) // counted from the engine's figures
	m.EngineEvent(engine.Event{Kind: engine.EventFlatten, Duration: time.Second})
	m.EngineEvent(engine.Event{Kind: engine.EventFlatten, Err: errors.New("disk full")})
	m.EngineEvent(engine.Event{Kind: engine.EventStoreBuild, Err: errors.New("disk full")})
	m.EngineEvent(engine.Event{Kind: engine.EventCompaction, Bytes: 100})
	fams = scrape(t, url)
	for name, want := range map[string]float64{
		"coppice_storage_write_stalls_total": 1, "coppice_storage_write_stall_seconds_total": 1.5,
		"coppice_branch_flattens_total": 1, "coppice_branch_flatten_seconds_total": 1,
		"coppice_branch_flatten_failures_total": 1, "coppice_store_build_failures_total": 1,
	} {
		if v := value(name, nil); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	if v := value("coppice_memory_evictions_total", column); v != 0 {
		t.Errorf("an eviction event counted: %v column stores evicted", v)
	}

	// More databases than the cap: all are counted, the largest listed.
	for i := range MaxDatabaseSeries + 2 {
		if _, err := ts.eng.CreateDatabase(engine.CreateDatabaseRequest{Workspace: ts.info.Workspace, Name: fmt.Sprintf("d%03d", i), Region: "local"}); err != nil {
			t.Fatal(err)
		}
	}
	fams = scrape(t, url)
	if v := value("coppice_databases", nil); v != MaxDatabaseSeries+3 {
		t.Errorf("databases: %v", v)
	}
	for _, name := range []string{"coppice_database_records", "coppice_database_branches", "coppice_database_disk_bytes"} {
		if n := len(fams[name].GetMetric()); n != MaxDatabaseSeries {
			t.Errorf("%s: %d series, want the cap %d", name, n, MaxDatabaseSeries)
		}
	}
}
