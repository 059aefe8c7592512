package engine

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestBackupRestore backs up a database with two diverged branches,
// restores it under another name, and reads the same records from both
// branches; a corrupted backup restores nothing.
func TestBackupRestore(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{"t": {{Name: "s", Type: TypeString, Unique: true}, {Name: "n", Type: TypeInt}}})
	for i, s := range []string{"a", "b", "c"} {
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "t", ID: s, Values: map[string]any{"s": s, "n": json.Number(string(rune('0' + i)))}}); err != nil {
			t.Fatal(err)
		}
	}
	dev := Ref{ref.Workspace, ref.Database, "dev"}
	if err := e.Branches().Create(dev, CreateBranchRequest{}); err != nil {
		t.Fatal(err)
	}
	e.WriteOne(ref, Op{Kind: OpDelete, Table: "t", ID: "a"})
	e.WriteOne(dev, Op{Kind: OpUpdate, Table: "t", ID: "b", Values: map[string]any{"s": "B"}})
	var buf bytes.Buffer
	if err := e.BackupDatabase(ref.Workspace, ref.Database, &buf); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), buf.Bytes()...)
	bad[len(bad)/2] ^= 0xFF
	if err := e.RestoreDatabase(ref.Workspace, "broken", "local", bytes.NewReader(bad)); CodeOf(err) != CodeInvalid {
		t.Fatalf("corrupted backup: %v", err)
	}
	if _, err := e.GetDatabase(ref.Workspace, "broken"); CodeOf(err) != CodeNotFound {
		t.Fatalf("a failed restore left a database: %v", err)
	}
	if err := e.RestoreDatabase(ref.Workspace, "copy", "local", &buf); err != nil {
		t.Fatal(err)
	}
	cmain := Ref{ref.Workspace, "copy", "main"}
	cdev := Ref{ref.Workspace, "copy", "dev"}
	if _, err := e.Get(cmain, "t", "a"); CodeOf(err) != CodeNotFound {
		t.Fatalf("deleted record restored: %v", err)
	}
	if r, err := e.Get(cdev, "t", "a"); err != nil || r.Values["s"] != "a" {
		t.Fatalf("dev lost a record: %v %v", r, err)
	}
	if r, err := e.Get(cdev, "t", "b"); err != nil || r.Values["s"] != "B" || r.Version != 1 {
		t.Fatalf("dev's update: %+v %v", r, err)
	}
	// The copy is a database of its own: writes to it leave the original
	// alone, and its unique index came along.
	if _, err := e.WriteOne(cmain, Op{Kind: OpInsert, Table: "t", Values: map[string]any{"s": "c"}}); CodeOf(err) != CodeInvalid {
		t.Fatalf("unique index not restored: %v", err)
	}
	if _, err := e.WriteOne(cmain, Op{Kind: OpInsert, Table: "t", ID: "z", Values: map[string]any{"s": "z"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Get(ref, "t", "z"); CodeOf(err) != CodeNotFound {
		t.Fatalf("write to the copy reached the original: %v", err)
	}
}
