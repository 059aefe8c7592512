package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// opsDB opens a data directory with synced writes and a database "db"
// with a table "t" of one string column; no accounts.
func opsDB(t *testing.T, dir string) (*engine.Engine, engine.Ref) {
	t.Helper()
	e, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ref := engine.Ref{Database: "db", Branch: "main"}
	if _, err := e.CreateDatabase(engine.CreateDatabaseRequest{Name: "db", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Schema().CreateTable(ref, "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Schema().SetTableColumns(ref, "t", []engine.ColumnDef{{Name: "s", Type: engine.TypeString}}); err != nil {
		t.Fatal(err)
	}
	return e, ref
}

// TestCheckpointUnderWrites takes checkpoints while writers insert records
// in sequence, each writer its own: a checkpoint holds, of every writer, a
// gap-free prefix of its records that includes every record acknowledged
// before the checkpoint began.
func TestCheckpointUnderWrites(t *testing.T) {
	dir := t.TempDir()
	e, ref := opsDB(t, dir)
	const writers = 4
	var acked [writers]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%06d", w, i)
				if _, err := e.WriteOne(ref, engine.Op{Kind: engine.OpInsert, Table: "t", ID: id, Values: map[string]any{"s": id}}); err != nil {
					t.Error(err)
					return
				}
				acked[w].Store(int64(i + 1))
			}
		}()
	}
	for acked[0].Load() < 20 {
		time.Sleep(time.Millisecond)
	}
	type taken struct {
		dir    string
		before [writers]int64
	}
	var cks []taken
	for i := range 3 {
		var c taken
		for w := range writers {
			c.before[w] = acked[w].Load()
		}
		target := ""
		if i == 2 {
			target = filepath.Join(t.TempDir(), "copy")
		}
		got, err := e.Checkpoint(context.Background(), target)
		if err != nil {
			t.Fatal(err)
		}
		if target != "" && got != target {
			t.Errorf("checkpoint went to %s, asked for %s", got, target)
		}
		if target == "" && filepath.Dir(got) != filepath.Join(dir, "checkpoints") {
			t.Errorf("checkpoint at %s, want it under the data directory's checkpoints/", got)
		}
		c.dir = got
		cks = append(cks, c)
	}
	close(stop)
	wg.Wait()

	if _, err := e.Checkpoint(context.Background(), cks[2].dir); err == nil {
		t.Error("a checkpoint into an existing directory succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Checkpoint(ctx, ""); err == nil {
		t.Error("a checkpoint with an ended context succeeded")
	}
	for _, c := range cks {
		var log bytes.Buffer
		ce, err := engine.Open(c.dir, engine.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatalf("open checkpoint: %v", err)
		}
		if log.Len() > 0 {
			t.Errorf("opening a checkpoint logged:\n%s", log.String())
		}
		for w := range writers {
			n := int64(0)
			for {
				id := fmt.Sprintf("w%d-%06d", w, n)
				if _, err := ce.Get(ref, "t", id); err != nil {
					break
				}
				n++
			}
			if n < c.before[w] {
				t.Errorf("checkpoint %s: writer %d has %d records, %d were acknowledged before it", c.dir, w, n, c.before[w])
			}
			// Nothing after the first gap: the copy is of one moment.
			for k := n + 1; k < n+5; k++ {
				if _, err := ce.Get(ref, "t", fmt.Sprintf("w%d-%06d", w, k)); err == nil {
					t.Errorf("checkpoint %s: writer %d has record %d but not %d", c.dir, w, k, n)
				}
			}
		}
		if err := ce.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The data directory opens again with its checkpoints inside it.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatalf("reopen with checkpoints inside: %v", err)
	}
	if _, err := e2.Get(ref, "t", "w0-000000"); err != nil {
		t.Error(err)
	}
	// A checkpoint without writes since the open: its log holds only the
	// sync record, which opening the copy flushes to no table, quietly.
	quiet, err := e2.Checkpoint(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	ce, err := engine.Open(quiet, engine.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ce.Close()
	if log.Len() > 0 {
		t.Errorf("opening a checkpoint logged:\n%s", log.String())
	}
	e2.Close()
	if _, err := e.Checkpoint(context.Background(), ""); err == nil {
		t.Error("checkpoint of a closed engine succeeded")
	}
}

// TestStats checks the numbers of storage and of databases: records and
// branches per database, the cap on databases, largest first.
func TestStats(t *testing.T) {
	dir := t.TempDir()
	e, ref := opsDB(t, dir)
	recs := make([]map[string]any, 500)
	for i := range recs {
		recs[i] = map[string]any{"id": fmt.Sprintf("r%04d", i), "s": fmt.Sprintf("a value long enough to take some room %d", i)}
	}
	if _, err := e.BulkInsert(context.Background(), ref, "t", recs); err != nil {
		t.Fatal(err)
	}
	if err := e.Branches().Create(engine.Ref{Database: "db", Branch: "dev"}, engine.CreateBranchRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.WriteOne(engine.Ref{Database: "db", Branch: "dev"}, engine.Op{Kind: engine.OpDelete, Table: "t", ID: "r0000"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase(engine.CreateDatabaseRequest{Name: "small", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	// Reopened, the write-ahead log is flushed to table files, which the
	// disk use of a database counts.
	e.Close()
	e, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.WriteOne(ref, engine.Op{Kind: engine.OpInsert, Table: "t", ID: "new", Values: map[string]any{"s": "x"}}); err != nil {
		t.Fatal(err)
	}

	// The storage counts a sync of its log just after it releases the
	// writes that waited for it: the count may lag the insert a moment.
	var st engine.Stats
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if st, err = e.Stats(10); err != nil {
			t.Fatal(err)
		}
		if st.Storage.WALSyncs > 0 || time.Now().After(deadline) {
			break
		}
	}
	if st.DatabaseCount != 2 || len(st.Databases) != 2 {
		t.Fatalf("databases: %d, listed %+v", st.DatabaseCount, st.Databases)
	}
	db := st.Databases[0]
	if db.Name != "db" || db.Branches != 2 || db.Records != 501+499 || db.DiskBytes == 0 {
		t.Errorf("largest database: %+v, want db with 2 branches and 501+499 records", db)
	}
	if small := st.Databases[1]; small.Name != "small" || small.Branches != 1 || small.Records != 0 {
		t.Errorf("second database: %+v", small)
	}
	s := st.Storage
	if s.WALSyncs == 0 || s.WALSyncTime <= 0 || s.WALBytesIn == 0 || s.WALBytesWritten < s.WALBytesIn ||
		s.DiskBytes == 0 || s.Levels[0].Files == 0 || s.Flushes == 0 || s.CacheHits+s.CacheMisses == 0 {
		t.Errorf("write-ahead log and disk: %+v", s)
	}
	// Counted since the engine opened: the one insert since, whose
	// record, id, counters and bitmaps are each a key.
	if s.KeysWritten < 4 || s.KeysWritten > 64 {
		t.Errorf("keys written: %d, want those of one insert", s.KeysWritten)
	}
	if st.BuildsInProgress != 0 {
		t.Errorf("builds in progress: %d", st.BuildsInProgress)
	}

	st, err = e.Stats(1)
	if err != nil {
		t.Fatal(err)
	}
	if st.DatabaseCount != 2 || len(st.Databases) != 1 {
		t.Errorf("capped at 1: %d databases, listed %+v", st.DatabaseCount, st.Databases)
	}
	if st, _ := e.Stats(0); len(st.Databases) != 0 || st.DatabaseCount != 2 {
		t.Errorf("capped at 0: %+v", st)
	}
	e.Close()
	if _, err := e.Stats(1); err == nil {
		t.Error("stats of a closed engine")
	}
}

// TestVerifyBackup checks a database backup without restoring it.
func TestVerifyBackup(t *testing.T) {
	e, ref := opsDB(t, t.TempDir())
	if _, err := e.WriteOne(ref, engine.Op{Kind: engine.OpInsert, Table: "t", ID: "a", Values: map[string]any{"s": "x"}}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := e.BackupDatabase("", "db", &buf); err != nil {
		t.Fatal(err)
	}
	if err := engine.VerifyBackup(bytes.NewReader(buf.Bytes())); err != nil {
		t.Errorf("a good backup: %v", err)
	}
	f := func(name string, b []byte) {
		t.Helper()
		if err := engine.VerifyBackup(bytes.NewReader(b)); engine.CodeOf(err) != engine.CodeInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	f("truncated", buf.Bytes()[:buf.Len()-1])
	f("cut at half", buf.Bytes()[:buf.Len()/2])
	f("with a byte more", append(bytes.Clone(buf.Bytes()), 0))
	bad := bytes.Clone(buf.Bytes())
	bad[len(bad)-10] ^= 1
	f("a flipped bit", bad)
	f("empty", nil)
}

// TestWordKeysWrittenOnce writes records whose words a table's layer
// already holds, before and after a restart and on a branch: the word's
// vocabulary key is written once per layer (the second write of the same
// words costs exactly their keys less), and every word stays searchable.
func TestWordKeysWrittenOnce(t *testing.T) {
	dir := t.TempDir()
	e, ref := opsDB(t, dir)
	insert := func(ref engine.Ref, id, s string) uint64 {
		t.Helper()
		before, err := e.Stats(0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.WriteOne(ref, engine.Op{Kind: engine.OpInsert, Table: "t", ID: id, Values: map[string]any{"s": s}}); err != nil {
			t.Fatal(err)
		}
		after, err := e.Stats(0)
		if err != nil {
			t.Fatal(err)
		}
		return after.Storage.KeysWritten - before.Storage.KeysWritten
	}
	first := insert(ref, "a", "alpha beta")
	second := insert(ref, "b", "beta alpha")
	if first != second+2 {
		t.Errorf("keys of a write of two new words: %d, of the same words again: %d; want 2 fewer", first, second)
	}
	e.Close()
	var err error
	if e, err = engine.Open(dir, engine.Options{}); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if n := insert(ref, "c", "alpha beta"); n != second {
		t.Errorf("keys of a write of stored words after a restart: %d, want %d", n, second)
	}
	if n := insert(ref, "d", "alpha gamma"); n != second+1 {
		t.Errorf("keys of a write of one new word: %d, want %d", n, second+1)
	}
	dev := engine.Ref{Database: "db", Branch: "dev"}
	if err := e.Branches().Create(dev, engine.CreateBranchRequest{}); err != nil {
		t.Fatal(err)
	}
	// The branch writes its own layer: the words are new to it once.
	devFirst := insert(dev, "e", "gamma delta")
	if n := insert(dev, "f", "delta gamma"); devFirst != n+2 {
		t.Errorf("keys on a branch: %d, then %d for the same words; want 2 fewer", devFirst, n)
	}
	search := func(ref engine.Ref, word string) []string {
		t.Helper()
		f := 0.0
		res, err := e.SearchTable(context.Background(), ref, "t", engine.SearchRequest{Query: &word, Fuzziness: &f}, engine.SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range res.Records {
			ids = append(ids, h.Doc.ID)
		}
		slices.Sort(ids)
		return ids
	}
	for _, c := range []struct {
		ref  engine.Ref
		word string
		want []string
	}{
		{ref, "alpha", []string{"a", "b", "c", "d"}},
		{ref, "gamma", []string{"d"}},
		{ref, "delta", nil},
		{dev, "alpha", []string{"a", "b", "c", "d"}},
		{dev, "gamma", []string{"d", "e", "f"}},
		{dev, "delta", []string{"e", "f"}},
	} {
		if got := search(c.ref, c.word); !slices.Equal(got, c.want) {
			t.Errorf("%s: search %q found %v, want %v", c.ref.Branch, c.word, got, c.want)
		}
	}
}
