package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// diskFullSetup opens an engine on a disk that fills at Fill, with a
// table t of main, a branch dev of it, and 100 acknowledged records.
func diskFullSetup(t *testing.T, minFree int64) (e *Engine, disk *DiskFull, dir string, write func(i int) error, acked map[string]int) {
	t.Helper()
	dir = t.TempDir()
	disk = NewDiskFull()
	e, err := Open(dir, Options{FS: disk.FS(), MinFreeSpace: minFree})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase(CreateDatabaseRequest{Name: "db", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	main := Ref{Database: "db", Branch: "main"}
	if _, err := e.Schema().CreateTable(main, "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Schema().AddColumn(main, "t", ColumnDef{Name: "n", Type: TypeInt}); err != nil {
		t.Fatal(err)
	}
	if err := e.Branches().Create(on(main, "dev"), CreateBranchRequest{}); err != nil {
		t.Fatal(err)
	}
	acked = map[string]int{}
	write = func(i int) error {
		id := fmt.Sprintf("r%04d", i)
		_, err := e.WriteOne(main, Op{Kind: OpInsert, Table: "t", ID: id, Values: map[string]any{"n": json.Number(fmt.Sprint(i))}})
		if err == nil {
			acked[id] = i
		}
		return err
	}
	for i := range 100 {
		if err := write(i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Summarize(ctx, main, "t", SummarizeRequest{Columns: []string{"n"}}); err != nil {
		t.Fatal(err)
	}
	return e, disk, dir, write, acked
}

// expectRefusals checks that writes of every kind fail at once with
// CodeUnavailable naming the full disk, and that Health says so.
func expectRefusals(t *testing.T, e *Engine, write func(i int) error, from int) {
	t.Helper()
	main := Ref{Database: "db", Branch: "main"}
	start := time.Now()
	for i := from; i < from+10; i++ {
		if err := write(i); CodeOf(err) != CodeUnavailable || !strings.Contains(err.Error(), "no space left") {
			t.Fatalf("write %d on a full disk: %v (code %v)", i, err, CodeOf(err))
		}
	}
	if h := e.Health(); h == nil || !strings.Contains(h.Error(), "no space left") {
		t.Fatalf("health on a full disk: %v", h)
	}
	if _, err := e.Schema().CreateTable(main, "u"); CodeOf(err) != CodeUnavailable {
		t.Fatalf("schema change on a full disk: %v", err)
	}
	if _, err := e.Accounts().CreateUser(NewUser{Email: "late@example.com"}); CodeOf(err) != CodeUnavailable {
		t.Fatalf("catalog change on a full disk: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("refusing writes took %v", d)
	}
}

// expectReads checks that gets, queries and summaries answer on both
// branches, main with want records (or want+1: a write the storage failed
// on may show until a restart, its batch applied before its log was
// found unwritable).
func expectReads(t *testing.T, e *Engine, want int) {
	t.Helper()
	main := Ref{Database: "db", Branch: "main"}
	for _, ref := range []Ref{main, on(main, "dev")} {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := e.Summarize(ctx, ref, "t", SummarizeRequest{Summaries: []Summary{{Name: "c", Function: "count", Column: "*"}}})
		cancel()
		if err != nil {
			t.Fatalf("summary of %s on a full disk: %v", ref.Branch, err)
		}
		w := int64(want)
		if ref.Branch == "dev" {
			w = 0
		}
		if got := res.Rows[0].Summaries[0].(int64); got != w && (ref.Branch == "dev" || got != w+1) {
			t.Fatalf("%s: %v records, want %d", ref.Branch, got, w)
		}
	}
	if rec, err := e.Get(main, "t", "r0042"); err != nil || rec.ID != "r0042" {
		t.Fatalf("get on a full disk: %v %v", rec, err)
	}
	size := 5
	if res, err := e.Query(ctx, main, "t", QueryRequest{Page: PageInput{Size: &size}}, QueryOptions{}); err != nil || len(res.Records) != 5 {
		t.Fatalf("query on a full disk: %v", err)
	}
}

// closeWithin closes e, failing the test when Close takes 10 s, and
// returns Close's error.
func closeWithin(t *testing.T, e *Engine) error {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	select {
	case err := <-closed:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs on a full disk")
		return nil
	}
}

// expectAcked opens dir again on a disk with room and checks that every
// acknowledged write is there, and that it takes writes.
func expectAcked(t *testing.T, dir string, acked map[string]int) {
	t.Helper()
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	main := Ref{Database: "db", Branch: "main"}
	for id, n := range acked {
		rec, err := e.Get(main, "t", id)
		if err != nil {
			t.Fatalf("acknowledged %s lost: %v", id, err)
		}
		if got := rec.Values["n"]; fmt.Sprint(got) != fmt.Sprint(n) {
			t.Fatalf("%s: n = %v, want %d", id, got, n)
		}
	}
	if _, err := e.WriteOne(main, Op{Kind: OpInsert, Table: "t", ID: "after", Values: map[string]any{}}); err != nil {
		t.Fatalf("a write after the restart: %v", err)
	}
}

// TestDiskFull fills the disk under the engine mid-load: every write
// after it fails at once with CodeUnavailable naming the cause, before it
// reaches the storage engine (the free-space reserve); the engine says so
// (Health); reads, queries and summaries go on, on every branch, a new
// branch's store included; writes resume once space is freed, without a
// restart; and the data directory holds every acknowledged write.
func TestDiskFull(t *testing.T) {
	e, disk, dir, write, acked := diskFullSetup(t, 0)
	disk.Fill()
	expectRefusals(t, e, write, 100)
	expectReads(t, e, len(acked))
	disk.Free()
	if err := write(150); err != nil {
		t.Fatalf("a write once space is freed: %v", err)
	}
	if h := e.Health(); h != nil {
		t.Fatalf("health once space is freed: %v", h)
	}
	if err := closeWithin(t, e); err != nil {
		t.Fatal(err)
	}
	expectAcked(t, dir, acked)
}

// TestDiskFullUnguarded fills the disk under an engine that keeps no
// space free: writes go on into the write-ahead log's preallocated
// blocks, until a flush cannot write its table; from then on the storage
// has failed, for good: every write fails at once naming the cause, even
// once space is freed; reads go on; Close returns, saying so; and the
// data directory, opened again on a disk with room, holds every write
// that was acknowledged, those after the disk filled included.
func TestDiskFullUnguarded(t *testing.T) {
	e, disk, dir, write, acked := diskFullSetup(t, -1)
	disk.Fill()
	if err := write(100); err != nil {
		t.Fatalf("a write into the log's preallocated blocks: %v", err)
	}
	if _, err := e.pdb.AsyncFlush(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); e.Health() == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the engine does not see its failed flush")
		}
	}
	disk.Free()
	expectRefusals(t, e, write, 101)
	expectReads(t, e, len(acked))
	if err := closeWithin(t, e); err == nil {
		t.Error("Close of a failed engine reports nothing")
	}
	expectAcked(t, dir, acked)
}

// TestManifestWriteFails makes the storage engine's manifest unwritable
// under a flush, which the storage engine takes as fatal: the engine
// degrades instead of the process dying. Writes are refused, reads go on,
// Close returns, and the directory opens again with every acknowledged
// write.
func TestManifestWriteFails(t *testing.T) {
	dir := t.TempDir()
	var armed atomic.Bool
	fsys := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if armed.Load() && strings.Contains(filepath.Base(op.Path), "MANIFEST") &&
			(op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpCreate) {
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	}))
	e, err := Open(dir, Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	main := Ref{Database: "db", Branch: "main"}
	if _, err := e.CreateDatabase(CreateDatabaseRequest{Name: "db", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Schema().CreateTable(main, "t"); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := e.WriteOne(main, Op{Kind: OpInsert, Table: "t", ID: fmt.Sprintf("r%02d", i), Values: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
	}
	armed.Store(true)
	if _, err := e.pdb.AsyncFlush(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); e.Health() == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the engine did not degrade on a flush with an unwritable manifest")
		}
	}
	if h := e.Health(); !strings.Contains(h.Error(), "no space left") {
		t.Fatalf("health: %v", h)
	}
	if _, err := e.WriteOne(main, Op{Kind: OpInsert, Table: "t", ID: "late", Values: map[string]any{}}); CodeOf(err) != CodeUnavailable {
		t.Fatalf("a write after the fault: %v", err)
	}
	if rec, err := e.Get(main, "t", "r07"); err != nil || rec.ID != "r07" {
		t.Fatalf("a read after the fault: %v %v", rec, err)
	}
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs after the fault")
	}
	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for i := range 50 {
		if _, err := e.Get(main, "t", fmt.Sprintf("r%02d", i)); err != nil {
			t.Fatalf("acknowledged r%02d lost: %v", i, err)
		}
	}
}
