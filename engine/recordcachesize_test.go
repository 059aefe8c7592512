package engine

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRecordCacheBytes: what a record cache counts against its memory
// budget is what its records take of the heap, within a fifth.
func TestRecordCacheBytes(t *testing.T) {
	db := openTestDB(t, Options{})
	e, ref := db.e, db.ref("main")
	const n = 2000
	ids := make([]string, n)
	ops := make([]Op, 0, 100)
	for i := range ids {
		ids[i] = "rec" + strconv.Itoa(i)
		ops = append(ops, Op{Kind: OpInsert, Table: "items", ID: ids[i], Values: map[string]any{
			"name": "name " + strconv.Itoa(i), "code": "c" + strconv.Itoa(i), "n": i, "score": float64(i) / 3,
			"tags": []any{"red", "green", "blue" + strconv.Itoa(i%7)},
			"note": strings.Repeat("a few words of text ", 10+i%20),
		}})
		if len(ops) == cap(ops) {
			if _, err := e.Write(t.Context(), ref, ops); err != nil {
				t.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	read := func(c *RecordCache) {
		for _, id := range ids {
			if _, err := e.GetView(c, ref, "items", id); err != nil {
				t.Fatal(err)
			}
		}
	}
	read(nil) // what reads build besides the cache is built before
	heap := func() int64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	// The heap is the process's: whatever else runs in it (the storage
	// engine's background work, goroutines of earlier tests winding down)
	// moves it too. Three caches filled in turn, the median ratio judged.
	ratios := make([]float64, 3)
	for i := range ratios {
		c := NewRecordCache(64 << 20)
		before := heap()
		read(c)
		read(c) // a record is cached at its second read
		took := heap() - before
		counted := c.Bytes()
		runtime.KeepAlive(c)
		t.Logf("counted %d, took %d", counted, took)
		if counted < n*500 {
			t.Fatalf("the cache counts %d bytes for %d records: not all of them cached", counted, n)
		}
		ratios[i] = float64(counted) / float64(took)
	}
	slices.Sort(ratios)
	if r := ratios[1]; r < 0.8 || r > 1.25 {
		t.Errorf("the cache counts %.2f× what its records took of the heap (median of %.2f)", r, ratios)
	}
}
