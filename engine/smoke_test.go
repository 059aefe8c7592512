package engine

import (
	"encoding/json"
	"testing"
)

func TestSmoke(t *testing.T) {
	e, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	u, err := e.CreateUser(NewUser{Email: "a@b.co"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := e.CreateWorkspace(u.ID, "My WS", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase(CreateDatabaseRequest{Workspace: ws.Core, Name: "db", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	ref := Ref{ws.Core, "db", "main"}
	if _, err := e.CreateTable(ref, "users"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AddColumn(ref, "users", ColumnDef{Name: "name", Type: TypeString, Unique: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AddColumn(ref, "users", ColumnDef{Name: "n", Type: TypeInt}); err != nil {
		t.Fatal(err)
	}
	r, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "users", Values: map[string]any{"name": "ann", "n": json.Number("3")}})
	if err != nil {
		t.Fatal(err)
	}
	id := r.ID
	if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "users", Values: map[string]any{"name": "ann"}}); err == nil {
		t.Fatal("unique not enforced")
	}
	if _, err := e.WriteOne(ref, Op{Kind: OpUpdate, Table: "users", ID: id, Values: map[string]any{"n": map[string]any{"$increment": json.Number("2")}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateBranch(Ref{ws.Core, "db", "dev"}, CreateBranchRequest{}); err != nil {
		t.Fatal(err)
	}
	dev := Ref{ws.Core, "db", "dev"}
	if _, err := e.WriteOne(ref, Op{Kind: OpUpdate, Table: "users", ID: id, Values: map[string]any{"n": json.Number("100")}}); err != nil {
		t.Fatal(err)
	}
	got, err := e.Get(dev, "users", id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Values["n"] != int64(5) || got.Version != 1 {
		t.Fatalf("dev sees %v v%d", got.Values, got.Version)
	}
	got, _ = e.Get(ref, "users", id)
	if got.Values["n"] != int64(100) {
		t.Fatalf("main sees %v", got.Values)
	}
	if _, err := e.WriteOne(dev, Op{Kind: OpDelete, Table: "users", ID: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Get(dev, "users", id); CodeOf(err) != CodeNotFound {
		t.Fatalf("deleted on dev: %v", err)
	}
	if _, err := e.Get(ref, "users", id); err != nil {
		t.Fatal(err)
	}
}
