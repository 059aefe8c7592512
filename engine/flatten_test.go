package engine

import (
	"fmt"
	"testing"
)

// TestFlatten forks a chain deeper than FlattenDepth with writes at every
// level, and checks that the deep branch is flattened in the background and
// reads the same records before and after.
func TestFlatten(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{FlattenDepth: 3})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := e.Accounts().CreateUser(NewUser{Email: "f@example.com"})
	ws, _ := e.Accounts().CreateWorkspace(u.ID, "ws", "")
	if _, err := e.CreateDatabase(CreateDatabaseRequest{Workspace: ws.Core, Name: "db", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	ref := func(b string) Ref { return Ref{ws.Core, "db", b} }
	if _, err := e.Schema().CreateTable(ref("main"), "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Schema().AddColumn(ref("main"), "t", ColumnDef{Name: "v", Type: TypeString}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	prev := "main"
	for level := 0; level < 6; level++ {
		for i := 0; i < 5; i++ {
			id := fmt.Sprintf("r%d", i)
			v := fmt.Sprintf("%s-%d", prev, level)
			if _, err := e.WriteOne(ref(prev), Op{Kind: OpInsert, Table: "t", ID: id, Values: map[string]any{"v": v}}); err != nil {
				t.Fatal(err)
			}
			want[id] = v
		}
		if level%2 == 1 {
			if _, err := e.WriteOne(ref(prev), Op{Kind: OpDelete, Table: "t", ID: "r4"}); err != nil {
				t.Fatal(err)
			}
			delete(want, "r4")
		}
		next := fmt.Sprintf("b%d", level)
		if err := e.Branches().Create(ref(next), CreateBranchRequest{From: prev}); err != nil {
			t.Fatal(err)
		}
		prev = next
	}
	e.bg.Wait()
	d, _ := e.database(ws.Core, "db")
	for name, b := range d.State().Branches {
		if len(b.Lineage) > 3 {
			t.Errorf("branch %s has lineage depth %d after flattening, want ≤ 3", name, len(b.Lineage))
		}
	}
	if depth := len(d.State().Branches["b4"].Lineage); depth != 2 {
		t.Fatalf("b4 lineage depth = %d, want 2 (flattened)", depth)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(dir, Options{FlattenDepth: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Get(ref(prev), "t", "r4"); CodeOf(err) != CodeNotFound {
		t.Fatalf("deleted r4: %v", err)
	}
	for id, v := range want {
		r, err := e.Get(ref(prev), "t", id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if r.Values["v"] != v {
			t.Fatalf("%s = %v, want %s", id, r.Values["v"], v)
		}
	}
}
