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

// TestDiskFull fills the disk under the engine mid-load: the write the
// storage fails on gets CodeUnavailable naming the cause, and so does
// every write after it, at once; the engine says so (Health); reads,
// queries and summaries go on, on every branch, a new branch's store
// included (no lock stays held); Close returns; and the data directory,
// opened again on a disk with room, holds every write that was
// acknowledged.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	disk := NewDiskFull(-1)
	e, err := Open(dir, Options{FS: disk.FS()})
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
	acked := map[string]int{}
	write := func(i int) error {
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
	disk.Fill()
	err = write(100)
	if CodeOf(err) != CodeUnavailable || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("a write on a full disk: %v (code %v)", err, CodeOf(err))
	}
	if h := e.Health(); h == nil || !strings.Contains(h.Error(), "no space left") {
		t.Fatalf("health on a full disk: %v", h)
	}
	start := time.Now()
	for i := 101; i < 110; i++ {
		if err := write(i); CodeOf(err) != CodeUnavailable {
			t.Fatalf("write %d after the fault: %v", i, err)
		}
	}
	if _, err := e.Schema().CreateTable(main, "u"); CodeOf(err) != CodeUnavailable {
		t.Fatalf("schema change after the fault: %v", err)
	}
	if _, err := e.Accounts().CreateUser(NewUser{Email: "late@example.com"}); CodeOf(err) != CodeUnavailable {
		t.Fatalf("catalog change after the fault: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("refusing writes took %v", d)
	}
	for _, ref := range []Ref{main, on(main, "dev")} {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := e.Summarize(ctx, ref, "t", SummarizeRequest{Summaries: []Summary{{Name: "c", Function: "count", Column: "*"}}})
		cancel()
		if err != nil {
			t.Fatalf("summary of %s after the fault: %v", ref.Branch, err)
		}
		// The write the storage failed on may show until a restart: its
		// batch was applied before its log was found unwritable.
		want := int64(len(acked))
		if ref.Branch == "dev" {
			want = 0
		}
		if got := res.Rows[0].Summaries[0].(int64); got != want && (ref.Branch == "dev" || got != want+1) {
			t.Fatalf("%s: %v records, want %d", ref.Branch, got, want)
		}
	}
	if rec, err := e.Get(main, "t", "r0042"); err != nil || rec.ID != "r0042" {
		t.Fatalf("get after the fault: %v %v", rec, err)
	}
	size := 5
	if res, err := e.Query(ctx, main, "t", QueryRequest{Page: PageInput{Size: &size}}, QueryOptions{}); err != nil || len(res.Records) != 5 {
		t.Fatalf("query after the fault: %v", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	select {
	case err := <-closed:
		if err == nil {
			t.Error("Close of a degraded engine reports nothing")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs on a full disk")
	}

	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for id, n := range acked {
		rec, err := e.Get(main, "t", id)
		if err != nil {
			t.Fatalf("acknowledged %s lost: %v", id, err)
		}
		if got := rec.Values["n"]; fmt.Sprint(got) != fmt.Sprint(n) {
			t.Fatalf("%s: n = %v, want %d", id, got, n)
		}
	}
	if err := write(200); err != nil {
		t.Fatalf("a write after the restart: %v", err)
	}
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
