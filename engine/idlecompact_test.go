package engine

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
)

// tableRangesDump is every key of a table's idle-compacted ranges in a
// layer, with its value as reads see it, and the internal points storage
// holds for them (merge operands and shadowed versions included).
type tableRangesDump struct {
	values map[string][]byte
	points uint64
}

// dumpTableRanges reads the ranges an idle compaction of (db, layer,
// table) compacts.
func dumpTableRanges(t *testing.T, pdb *pebble.DB, db, layer, table uint32) tableRangesDump {
	t.Helper()
	out := tableRangesDump{values: map[string][]byte{}}
	for _, kind := range idleCompactKinds {
		lo := codec.TablePrefix(nil, db, layer, kind, table)
		it, err := pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: codec.PrefixEnd(lo)})
		if err != nil {
			t.Fatal(err)
		}
		for it.First(); it.Valid(); it.Next() {
			out.values[string(it.Key())] = bytes.Clone(it.Value())
		}
		out.points += it.Stats().InternalStats.PointCount
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// sameTableRanges reports how two dumps differ in what reads see: bitmap
// values as sets (the same set may encode differently after a merge), the
// rest byte for byte.
func sameTableRanges(a, b tableRangesDump) error {
	if len(a.values) != len(b.values) {
		return fmt.Errorf("%d keys, then %d", len(a.values), len(b.values))
	}
	for k, va := range a.values {
		vb, ok := b.values[k]
		if !ok {
			return fmt.Errorf("key %x gone", k)
		}
		if k[9] != codec.KindBitmapCur {
			if !bytes.Equal(va, vb) {
				return fmt.Errorf("key %x: %x, then %x", k, va, vb)
			}
			continue
		}
		da, err := codec.DecodeDeltaStored(va)
		if err != nil {
			return err
		}
		db, err := codec.DecodeDeltaStored(vb)
		if err != nil {
			return err
		}
		if !da.Full || !db.Full || !da.Adds.Equals(db.Adds) {
			return fmt.Errorf("bitmap key %x: %v (full %v), then %v (full %v)", k, da.Adds, da.Full, db.Adds, db.Full)
		}
	}
	return nil
}

// TestIdleCompaction loads a table in bulk and a few rows into another, and
// checks that once writes pause the loaded table alone is compacted in the
// background: its merge operands fold (one point per key), every record
// and bitmap reads as before, and the compaction is counted and reported.
func TestIdleCompaction(t *testing.T) {
	var mu sync.Mutex
	var events []Event
	onEvent := func(ev Event) {
		if ev.Kind == EventIdleCompaction {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		}
	}
	const idle = 300 * time.Millisecond
	db := openTestDB(t, Options{CompactIdle: idle, OnEvent: onEvent})
	words := []string{"alder", "birch", "cedar", "damson", "elder", "fir", "ginkgo", "hazel"}
	for batch := range 3 {
		recs := make([]map[string]any, 500)
		for i := range recs {
			n := batch*len(recs) + i
			recs[i] = map[string]any{
				"name": words[n%len(words)], "code": fmt.Sprintf("c%05d", n), "n": n % 97,
				"tags":  []string{words[n%3], words[n%5]},
				"score": float64(n%13) / 4,
				"note":  fmt.Sprintf("%s and %s by the %s", words[n%7], words[n%4], words[(n/8)%8]),
			}
		}
		if _, err := db.e.BulkInsert(context.Background(), db.ref("main"), "items", recs); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := db.e.Stats(0); err != nil || st.Storage.IdleCompactionsPending != 1 {
		t.Fatalf("right after the load: %d idle compactions pending (%v), want 1", st.Storage.IdleCompactionsPending, err)
	}
	for i := range 10 {
		if _, err := db.e.BulkInsert(context.Background(), db.ref("main"), "notes",
			[]map[string]any{{"name": words[i%8], "code": fmt.Sprintf("n%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	// The clock stands still until the test moves it: no pause yet.
	d, b, err := db.branchState("main")
	if err != nil {
		t.Fatal(err)
	}
	items, err := b.Schema.Table("items")
	if err != nil {
		t.Fatal(err)
	}
	before := dumpTableRanges(t, db.e.pdb, d.ID, b.Lineage[0].Layer, items.ID)
	recsBefore, err := db.scanTable("main", "items")
	if err != nil {
		t.Fatal(err)
	}
	if len(recsBefore) != 1500 {
		t.Fatalf("%d records before", len(recsBefore))
	}

	db.clock.advance(idle)
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := db.e.Stats(0)
		if err != nil {
			t.Fatal(err)
		}
		if st.Storage.IdleCompactionFailures != 0 {
			t.Fatalf("idle compaction failed: %+v", st.Storage)
		}
		if st.Storage.IdleCompactions > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no idle compaction within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Long enough for the few rows of notes to be compacted if they counted.
	time.Sleep(3 * idle)
	st, err := db.e.Stats(0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Storage.IdleCompactions != 1 || st.Storage.IdleCompactedBytes == 0 || st.Storage.IdleCompactionsPending != 0 {
		t.Fatalf("idle compactions %d of %d bytes, %d pending; want 1 of the loaded table, none pending",
			st.Storage.IdleCompactions, st.Storage.IdleCompactedBytes, st.Storage.IdleCompactionsPending)
	}
	mu.Lock()
	if len(events) != 1 || events[0].Err != nil || events[0].Bytes != st.Storage.IdleCompactedBytes || events[0].Duration <= 0 {
		t.Errorf("events %+v", events)
	}
	mu.Unlock()

	after := dumpTableRanges(t, db.e.pdb, d.ID, b.Lineage[0].Layer, items.ID)
	if err := sameTableRanges(before, after); err != nil {
		t.Fatalf("the compaction changed what reads see: %v", err)
	}
	if after.points != uint64(len(after.values)) {
		t.Errorf("after the compaction: %d points for %d keys, want one each", after.points, len(after.values))
	}
	if before.points <= uint64(len(before.values)) {
		t.Errorf("before the compaction: %d points for %d keys; the load should leave merge operands", before.points, len(before.values))
	}
	recsAfter, err := db.scanTable("main", "items")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(recsBefore, recsAfter) {
		t.Fatal("records differ after the compaction")
	}
}

// TestIdleCompactionOff checks that a negative CompactIdle turns the
// compaction off.
func TestIdleCompactionOff(t *testing.T) {
	db := openTestDB(t, Options{CompactIdle: -1})
	recs := make([]map[string]any, idleCompactRows)
	for i := range recs {
		recs[i] = map[string]any{"name": "x", "code": fmt.Sprint(i)}
	}
	if _, err := db.e.BulkInsert(context.Background(), db.ref("main"), "items", recs); err != nil {
		t.Fatal(err)
	}
	if db.e.compactor != nil {
		t.Fatal("a compactor runs")
	}
	if st, err := db.e.Stats(0); err != nil || st.Storage.IdleCompactions != 0 {
		t.Fatalf("stats %+v, %v", st.Storage, err)
	}
}

// TestIdleCompactionGrowth checks that once a table has been compacted,
// the next compaction waits for the table to grow by a quarter of the rows
// it had taken: a burst of a bulk's worth into a large table is not a
// rewrite of the table.
func TestIdleCompactionGrowth(t *testing.T) {
	// The engine's clock moves only when the test moves it: the compactor
	// finds no pause within a load, however long its requests take.
	const idle = 500 * time.Millisecond
	db := openTestDB(t, Options{CompactIdle: idle})
	n := 0
	load := func(rows int) {
		t.Helper()
		for rows > 0 {
			recs := make([]map[string]any, min(rows, 1000))
			for i := range recs {
				recs[i] = map[string]any{"name": "x", "code": fmt.Sprintf("c%06d", n)}
				n++
			}
			if _, err := db.e.BulkInsert(context.Background(), db.ref("main"), "items", recs); err != nil {
				t.Fatal(err)
			}
			rows -= len(recs)
		}
	}
	storage := func() StorageStats {
		t.Helper()
		st, err := db.e.Stats(0)
		if err != nil {
			t.Fatal(err)
		}
		return st.Storage
	}
	stats := func() (done, pending int64) {
		t.Helper()
		st := storage()
		return st.IdleCompactions, int64(st.IdleCompactionsPending)
	}
	waitDone := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			done, pending := stats()
			if done == want && pending == 0 {
				return
			}
			if done > want || time.Now().After(deadline) {
				t.Fatalf("%d idle compactions (%d pending), want %d", done, pending, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	load(8000)
	db.clock.advance(idle)
	waitDone(1)
	// 8,000 rows compacted: the next is due after 2,000 more.
	load(1999)
	if _, pending := stats(); pending != 0 {
		t.Fatalf("after 1,999 rows more: %d idle compactions pending, want 0", pending)
	}
	// Not due for a compaction, but a bulk's worth: once idle, the memtable
	// that holds their index updates is flushed, once. A compaction, had
	// it been due, would have come first and left nothing to flush.
	db.clock.advance(idle)
	deadline := time.Now().Add(time.Minute)
	for st := storage(); st.IdleFlushes == 0; st = storage() {
		if st.IdleCompactions != 1 || time.Now().After(deadline) {
			t.Fatalf("after 1,999 rows more and a pause: %d idle compactions, %d idle flushes, want 1 and 1",
				st.IdleCompactions, st.IdleFlushes)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Time for a second flush or a compaction, were either due.
	time.Sleep(4 * idle)
	if st := storage(); st.IdleCompactions != 1 || st.IdleFlushes != 1 || st.Flushes < 2 {
		t.Fatalf("after 1,999 rows more and a pause: %d idle compactions, %d idle flushes, %d flushes, want 1, 1 and at least 2",
			st.IdleCompactions, st.IdleFlushes, st.Flushes)
	}
	load(1)
	if _, pending := stats(); pending != 1 {
		t.Fatalf("after 2,000 rows more: %d idle compactions pending, want 1", pending)
	}
	db.clock.advance(idle)
	waitDone(2)
}

// TestIdleCompactionAfterOpen checks that a store reopened with files
// above its bottom level (the writes its log replays, flushed on opening)
// is compacted down to one level once it has been idle for the pause, and
// reads as before; and that a store opened with none is left alone.
func TestIdleCompactionAfterOpen(t *testing.T) {
	db := openTestDB(t, Options{CompactIdle: -1})
	insert := func(from, n int) {
		t.Helper()
		recs := make([]map[string]any, n)
		for i := range recs {
			recs[i] = map[string]any{"name": fmt.Sprint("x", (from+i)%7), "code": fmt.Sprintf("c%05d", from+i)}
		}
		if _, err := db.e.BulkInsert(context.Background(), db.ref("main"), "items", recs); err != nil {
			t.Fatal(err)
		}
	}
	// The bulk of the table at the bottom, the last writes above it.
	insert(0, 1000)
	if err := db.e.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	insert(1000, 20)
	var mu sync.Mutex
	var events []Event
	const idle = 200 * time.Millisecond
	db.opts.CompactIdle = idle
	db.opts.OnEvent = func(ev Event) {
		if ev.Kind == EventIdleCompaction {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		}
	}
	db.reopen()
	if !aboveBottom(db.e.pdb.Metrics()) {
		t.Fatalf("no file above the bottom level after reopening: %+v", db.e.pdb.Metrics().Levels)
	}
	before, err := db.scanTable("main", "items")
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 1020 {
		t.Fatalf("%d records", len(before))
	}
	db.clock.advance(idle)
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := db.e.Stats(0)
		if err != nil {
			t.Fatal(err)
		}
		if st.Storage.IdleCompactions == 1 && st.Storage.IdleCompactionsPending == 0 {
			break
		}
		if st.Storage.IdleCompactions > 1 || st.Storage.IdleCompactionFailures > 0 || time.Now().After(deadline) {
			t.Fatalf("idle compactions %d (%d failed, %d pending), want 1", st.Storage.IdleCompactions,
				st.Storage.IdleCompactionFailures, st.Storage.IdleCompactionsPending)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if aboveBottom(db.e.pdb.Metrics()) {
		t.Errorf("files above the bottom level after the compaction: %+v", db.e.pdb.Metrics().Levels)
	}
	mu.Lock()
	if len(events) != 1 || events[0].Err != nil || events[0].Bytes == 0 {
		t.Errorf("events %+v", events)
	}
	mu.Unlock()
	after, err := db.scanTable("main", "items")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatal("records differ after the compaction")
	}

	// Opened again with nothing above the bottom: nothing to do.
	db.reopen()
	if db.e.compactor.pending() != 0 {
		t.Fatalf("%d idle compactions pending after opening a compacted store", db.e.compactor.pending())
	}
	db.clock.advance(idle)
	time.Sleep(3 * idle)
	if st, err := db.e.Stats(0); err != nil || st.Storage.IdleCompactions != 0 {
		t.Fatalf("idle compactions %d after opening a compacted store (%v)", st.Storage.IdleCompactions, err)
	}
}
