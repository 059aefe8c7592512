package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// recFixture opens an engine with a database "db" whose main branch has the
// tables and columns given, on a fixed clock.
func recFixture(t testing.TB, tables map[string][]ColumnDef) (*Engine, Ref) {
	t.Helper()
	clock := time.Date(2024, 5, 1, 10, 20, 30, 123000000, time.UTC)
	e, err := Open(t.TempDir(), Options{Clock: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	u, err := e.Accounts().CreateUser(NewUser{Email: "owner@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := e.Accounts().CreateWorkspace(u.ID, "Test", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase(CreateDatabaseRequest{Workspace: ws.Core, Name: "db", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	ref := Ref{Workspace: ws.Core, Database: "db", Branch: "main"}
	// Link targets first: create every table, then add columns; both in
	// name order, so the schema lists the tables the same way every run.
	for _, name := range model.SortedKeys(tables) {
		if _, err := e.Schema().CreateTable(ref, name); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range model.SortedKeys(tables) {
		for _, c := range tables[name] {
			if _, err := e.Schema().AddColumn(ref, name, c); err != nil {
				t.Fatalf("add %s.%s: %v", name, c.Name, err)
			}
		}
	}
	return e, ref
}

func strp(s string) *string { return &s }

func u64p(v uint64) *uint64 { return &v }

// mustCode fails unless err carries code and its message contains want.
func mustCode(t *testing.T, err error, code Code, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want code %d %q", code, want)
	}
	if CodeOf(err) != code || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q (code %d), want code %d containing %q", err, CodeOf(err), code, want)
	}
}

func TestValueValidation(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{
		"t": {
			{Name: "b", Type: TypeBool},
			{Name: "i", Type: TypeInt},
			{Name: "f", Type: TypeFloat},
			{Name: "s", Type: TypeString},
			{Name: "e", Type: TypeEmail},
			{Name: "d", Type: TypeDatetime},
			{Name: "m", Type: TypeMultiple},
			{Name: "v", Type: TypeVector, Vector: &VectorDef{Dimension: 3}},
			{Name: "j", Type: TypeJSON},
			{Name: "o", Type: TypeObject, Columns: []ColumnDef{{Name: "x", Type: TypeInt}, {Name: "deep", Type: TypeObject, Columns: []ColumnDef{{Name: "y", Type: TypeString}}}}},
		},
	})
	f := func(values map[string]any, want string) {
		t.Helper()
		_, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "t", Values: values})
		if want == "" {
			if err != nil {
				t.Fatalf("%v: %v", values, err)
			}
			return
		}
		mustCode(t, err, CodeInvalid, want)
	}
	f(map[string]any{"b": true, "i": json.Number("-3"), "f": json.Number("1.5"), "s": "x", "e": "a@b.co",
		"d": "2024-01-02T03:04:05.678+02:00", "m": []any{"a", "b"}, "v": []any{json.Number("1"), json.Number("2"), json.Number("3")},
		"j": `{"b":1,"a":[true]}`, "o": map[string]any{"x": json.Number("1"), "deep": map[string]any{"y": "z"}}}, "")
	f(map[string]any{"b": "true"}, "column [b]: invalid value: expected a bool")
	f(map[string]any{"i": json.Number("1.5")}, "column [i]: invalid value: expected an integer")
	f(map[string]any{"i": "1"}, "column [i]")
	f(map[string]any{"f": "1"}, "column [f]")
	f(map[string]any{"s": 1}, "column [s]")
	f(map[string]any{"s": strings.Repeat("x", 2049)}, "longer than 2048")
	f(map[string]any{"e": "not-an-email"}, "invalid email")
	f(map[string]any{"d": "yesterday"}, "RFC 3339")
	f(map[string]any{"m": []any{"a", json.Number("1")}}, "array of strings")
	f(map[string]any{"v": []any{json.Number("1")}}, "vector has 1 dimensions, want 3")
	f(map[string]any{"j": "{bad"}, "JSON")
	f(map[string]any{"nope": 1}, "column [nope]: column not found")
	f(map[string]any{"o": map[string]any{"nope": 1}}, "column [o.nope]: column not found")
	f(map[string]any{"o": "x"}, "expected an object")

	res, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "t", Values: map[string]any{"j": `{"b":1,"a":[true]}`, "d": "2024-01-02T03:04:05.678+02:00"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Record.Values["j"]; got != JSONText(`{"a":[true],"b":1}`) {
		t.Errorf("json stored as %v, want sorted compact text", got)
	}
	if got := res.Record.Values["d"].(time.Time); !got.Equal(time.Date(2024, 1, 2, 1, 4, 5, 678000000, time.UTC)) {
		t.Errorf("datetime = %v", got)
	}
}

func TestConstraints(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{
		"teams": {{Name: "name", Type: TypeString}},
		"users": {
			{Name: "email", Type: TypeEmail, Unique: true},
			{Name: "name", Type: TypeString, NotNull: true, DefaultValue: strp("anon")},
			{Name: "score", Type: TypeInt, DefaultValue: strp("10")},
			{Name: "joined", Type: TypeDatetime, DefaultValue: strp("now")},
			{Name: "team", Type: TypeLink, Link: &LinkDef{Table: "teams"}},
			{Name: "must", Type: TypeBool, NotNull: true, DefaultValue: strp("false")},
		},
	})
	team, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "teams", ID: "t1", Values: map[string]any{"name": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "users", Values: map[string]any{"email": "a@x.io", "team": team.ID}})
	if err != nil {
		t.Fatal(err)
	}
	v := r.Record.Values
	if v["name"] != "anon" || v["score"] != int64(10) || v["must"] != false || !v["joined"].(time.Time).Equal(e.now()) {
		t.Fatalf("defaults not applied: %v", v)
	}
	if v["team"] != (Link{ID: "t1"}) {
		t.Fatalf("link = %v", v["team"])
	}
	if !strings.HasPrefix(r.ID, "rec_") || len(r.ID) != 24 {
		t.Fatalf("generated id %q", r.ID)
	}
	_, err = e.WriteOne(ref, Op{Kind: OpInsert, Table: "users", Values: map[string]any{"email": "a@x.io"}})
	mustCode(t, err, CodeInvalid, "column [email]: value is not unique")
	_, err = e.WriteOne(ref, Op{Kind: OpInsert, Table: "users", Values: map[string]any{"email": "b@x.io", "name": nil}})
	mustCode(t, err, CodeInvalid, "column [name]: null value on a notNull column")
	_, err = e.WriteOne(ref, Op{Kind: OpInsert, Table: "users", Values: map[string]any{"team": "nope"}})
	mustCode(t, err, CodeInvalid, "linked record [nope] not found")
	// Nulls never collide; updating a row to its own unique value is fine.
	for i := 0; i < 2; i++ {
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "users", Values: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.WriteOne(ref, Op{Kind: OpUpdate, Table: "users", ID: r.ID, Values: map[string]any{"email": "a@x.io"}}); err != nil {
		t.Fatal(err)
	}
	// Freeing a value makes it available again.
	if _, err := e.WriteOne(ref, Op{Kind: OpUpdate, Table: "users", ID: r.ID, Values: map[string]any{"email": "c@x.io"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "users", Values: map[string]any{"email": "a@x.io"}}); err != nil {
		t.Fatal(err)
	}
	// Adding a notNull column without default to a non-empty table fails.
	_, err = e.Schema().AddColumn(ref, "users", ColumnDef{Name: "req", Type: TypeString, NotNull: true})
	mustCode(t, err, CodeInvalid, "needs a defaultValue")
}

func TestWriteSemantics(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{
		"t": {{Name: "n", Type: TypeInt}, {Name: "f", Type: TypeFloat}, {Name: "s", Type: TypeString}},
	})
	put := func(op Op) OpResult {
		t.Helper()
		op.Table = "t"
		r, err := e.WriteOne(ref, op)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := put(Op{Kind: OpInsert, ID: "a", Values: map[string]any{"n": json.Number("7"), "s": "x"}})
	if !r.Created || r.Record.Version != 0 {
		t.Fatalf("insert: %+v", r)
	}
	_, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "t", ID: "a", CreateOnly: true})
	mustCode(t, err, CodeAlreadyExists, "record [a] already exists")
	// Replace: columns not given become null, version + 1, createdAt kept.
	r = put(Op{Kind: OpInsert, ID: "a", Values: map[string]any{"f": json.Number("2.5")}})
	if r.Created || r.Record.Version != 1 || r.Record.Values["s"] != nil || r.Record.Values["f"] != 2.5 {
		t.Fatalf("replace: %+v", r.Record)
	}
	_, err = e.WriteOne(ref, Op{Kind: OpUpdate, Table: "t", ID: "a", IfVersion: u64p(0), Values: map[string]any{"s": "y"}})
	mustCode(t, err, CodePrecondition, "version condition not met")
	r = put(Op{Kind: OpUpdate, ID: "a", IfVersion: u64p(1), Values: map[string]any{"n": map[string]any{"$increment": json.Number("3")}, "f": map[string]any{"$multiply": json.Number("4")}}})
	if r.Record.Values["n"] != int64(3) || r.Record.Values["f"] != 10.0 || r.Record.Version != 2 {
		t.Fatalf("numeric ops: %+v", r.Record)
	}
	r = put(Op{Kind: OpUpdate, ID: "a", Values: map[string]any{"n": map[string]any{"$divide": json.Number("2")}}})
	if r.Record.Values["n"] != int64(1) {
		t.Fatalf("int divide truncates: %v", r.Record.Values["n"])
	}
	_, err = e.WriteOne(ref, Op{Kind: OpUpdate, Table: "t", ID: "a", Values: map[string]any{"n": map[string]any{"$divide": json.Number("0")}}})
	mustCode(t, err, CodeInvalid, "division by zero")
	_, err = e.WriteOne(ref, Op{Kind: OpUpdate, Table: "t", ID: "a", Values: map[string]any{"s": map[string]any{"$increment": json.Number("1")}}})
	mustCode(t, err, CodeInvalid, "column [s]")
	_, err = e.WriteOne(ref, Op{Kind: OpUpdate, Table: "t", ID: "missing", Values: map[string]any{}})
	mustCode(t, err, CodeNotFound, "record [missing] not found")
	r = put(Op{Kind: OpUpdate, ID: "b", Upsert: true, Values: map[string]any{"s": "new"}})
	if !r.Created || r.Record.Version != 0 {
		t.Fatalf("upsert insert: %+v", r)
	}
	r = put(Op{Kind: OpUpdate, ID: "b", Upsert: true, Values: map[string]any{"n": json.Number("1")}})
	if r.Created || r.Record.Version != 1 || r.Record.Values["s"] != "new" {
		t.Fatalf("upsert update: %+v", r.Record)
	}
	r = put(Op{Kind: OpDelete, ID: "b"})
	if r.Record.Values["s"] != "new" {
		t.Fatalf("delete returns the record before: %+v", r.Record)
	}
	_, err = e.Get(ref, "t", "b")
	mustCode(t, err, CodeNotFound, "record [b] not found")
	_, err = e.WriteOne(ref, Op{Kind: OpDelete, Table: "t", ID: "b"})
	mustCode(t, err, CodeNotFound, "not found")
	// A deleted id can be inserted again.
	r = put(Op{Kind: OpInsert, ID: "b", CreateOnly: true, Values: map[string]any{"s": "again"}})
	if !r.Created || r.Record.Version != 0 {
		t.Fatalf("re-insert: %+v", r)
	}
	_, err = e.WriteOne(ref, Op{Kind: OpInsert, Table: "t", ID: "bad id!", Values: map[string]any{}})
	mustCode(t, err, CodeInvalid, "record id")
	_, err = e.WriteOne(ref, Op{Kind: OpInsert, Table: "t", ID: "x", Values: map[string]any{"id": "y"}})
	mustCode(t, err, CodeInvalid, "does not match")
	_, err = e.WriteOne(ref, Op{Kind: OpInsert, Table: "nope", Values: map[string]any{}})
	mustCode(t, err, CodeNotFound, "table [nope] not found")
}

func TestTransactionsAreAtomic(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{"t": {{Name: "s", Type: TypeString, Unique: true}}})
	res, err := e.Write(context.Background(), ref, []Op{
		{Kind: OpInsert, Table: "t", ID: "a", Values: map[string]any{"s": "1"}},
		{Kind: OpUpdate, Table: "t", ID: "a", Values: map[string]any{"s": "2"}},
		{Kind: OpGet, Table: "t", ID: "a"},
		{Kind: OpInsert, Table: "t", ID: "b", Values: map[string]any{"s": "1"}},
		{Kind: OpDelete, Table: "t", ID: "b"},
		{Kind: OpDelete, Table: "t", ID: "zz"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[2].Record.Values["s"] != "2" || res[2].Record.Version != 1 || res[4].Rows != 1 || res[5].Rows != 0 {
		t.Fatalf("later operations must see earlier ones: %+v", res)
	}
	// A failure anywhere rolls back everything.
	_, err = e.Write(context.Background(), ref, []Op{
		{Kind: OpInsert, Table: "t", ID: "c", Values: map[string]any{"s": "3"}},
		{Kind: OpUpdate, Table: "t", ID: "a", Values: map[string]any{"s": "4"}},
		{Kind: OpDelete, Table: "t", ID: "teams", FailIfMissing: true},
	})
	var oe *OpErrors
	if !errors.As(err, &oe) || oe.Errors[0].Index != 2 || oe.Errors[0].Err.Message != "table [t]: no rows deleted" {
		t.Fatalf("transaction failure = %v", err)
	}
	if _, err := e.Get(ref, "t", "c"); CodeOf(err) != CodeNotFound {
		t.Fatalf("insert of a failed transaction is visible: %v", err)
	}
	if r, _ := e.Get(ref, "t", "a"); r.Values["s"] != "2" {
		t.Fatalf("update of a failed transaction is visible: %v", r.Values)
	}
	// Every operation that fails against the schema is reported before
	// any runs; what fails only when run (the missing record of index 1)
	// is not reached.
	_, err = e.Write(context.Background(), ref, []Op{
		{Kind: OpInsert, Table: "t", ID: "c", Values: map[string]any{"s": "3"}},
		{Kind: OpUpdate, Table: "t", ID: "missing", Values: map[string]any{"s": "4"}},
		{Kind: OpInsert, Table: "nope", Values: map[string]any{}},
		{Kind: OpUpdate, Table: "t", ID: "a", Values: map[string]any{"nope": "4"}},
		{Kind: OpInsert, Table: "t", Values: map[string]any{"s": json.Number("5")}},
	})
	if !errors.As(err, &oe) || fmt.Sprint(oe.Errors) != "[{2 table [nope] not found} {3 table [t]: column [nope]: column not found} "+
		"{4 table [t]: column [s]: invalid value: expected a string}]" {
		t.Fatalf("transaction validation = %v", err)
	}
	if err := e.CheckOps(ref, []Op{{Kind: OpInsert, Table: "t"}, {Kind: OpGet, Table: "t", ID: "x y"}}); !errors.As(err, &oe) ||
		len(oe.Errors) != 1 || oe.Errors[0].Index != 1 {
		t.Fatalf("CheckOps = %v", err)
	}
	if _, err := e.Get(ref, "t", "c"); CodeOf(err) != CodeNotFound {
		t.Fatalf("insert of a refused transaction is visible: %v", err)
	}
	// The unique value "3" was not taken by the failed transaction.
	if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "t", Values: map[string]any{"s": "3"}}); err != nil {
		t.Fatal(err)
	}
	// Bulk insert: all or nothing, every bad record reported.
	_, err = e.BulkInsert(context.Background(), ref, "t", []map[string]any{{"s": "10"}, {"s": json.Number("1")}, {"s": "11"}, {"nope": "x"}})
	if !errors.As(err, &oe) || len(oe.Errors) != 2 || oe.Errors[0].Index != 1 || oe.Errors[1].Index != 3 {
		t.Fatalf("bulk errors = %v", err)
	}
	_, err = e.BulkInsert(context.Background(), ref, "nope", []map[string]any{{"s": "10"}, {"s": "11"}})
	if !errors.As(err, &oe) || len(oe.Errors) != 1 || oe.Errors[0].Err.Code != CodeNotFound {
		t.Fatalf("bulk into a missing table = %v", err)
	}
	_, err = e.BulkInsert(context.Background(), ref, "t", []map[string]any{{"s": "20"}, {"s": "20"}})
	if !errors.As(err, &oe) || oe.Errors[0].Index != 1 {
		t.Fatalf("duplicate unique value inside one bulk: %v", err)
	}
	res, err = e.BulkInsert(context.Background(), ref, "t", []map[string]any{{"s": "20"}, {"id": "own", "s": "21"}})
	if err != nil || res[1].ID != "own" {
		t.Fatalf("bulk = %v, %v", res, err)
	}
	many := make([]map[string]any, MaxBulkRecords+1)
	_, err = e.BulkInsert(context.Background(), ref, "t", many)
	mustCode(t, err, CodeInvalid, "at most 1000")
}

func TestSchemaChangesRecordMigrations(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{})
	c1, err := e.Schema().CreateTable(ref, "t")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := e.Schema().AddColumn(ref, "t", ColumnDef{Name: "a", Type: TypeString})
	if err != nil {
		t.Fatal(err)
	}
	if c2.ParentMigrationID != c1.MigrationID || !strings.HasPrefix(c2.MigrationID, "mig_") {
		t.Fatalf("migration chain %+v → %+v", c1, c2)
	}
	det, err := e.Branches().Details(ref)
	if err != nil {
		t.Fatal(err)
	}
	if det.Version != 2 || det.LastMigrationID != c2.MigrationID {
		t.Fatalf("branch version %d head %s", det.Version, det.LastMigrationID)
	}
	_, err = e.Schema().CreateTable(ref, "T")
	mustCode(t, err, CodeAlreadyExists, "already exists")
	_, err = e.Schema().CreateTable(ref, "bad name")
	mustCode(t, err, CodeInvalid, "table name [bad name] is invalid")
	_, err = e.Schema().AddColumn(ref, "t", ColumnDef{Name: "$x", Type: TypeString})
	mustCode(t, err, CodeInvalid, "must not start with '$'")
	_, err = e.Schema().AddColumn(ref, "t", ColumnDef{Name: "id", Type: TypeString})
	mustCode(t, err, CodeInvalid, "reserved")
	_, err = e.Schema().AddColumn(ref, "t", ColumnDef{Name: "v", Type: TypeVector, Vector: &VectorDef{Dimension: 1}})
	mustCode(t, err, CodeInvalid, "between 2 and 10000")
	_, err = e.Schema().AddColumn(ref, "t", ColumnDef{Name: "l", Type: TypeLink, Link: &LinkDef{Table: "nope"}})
	mustCode(t, err, CodeInvalid, "link target table [nope] not found")
	_, err = e.Schema().AddColumn(ref, "t", ColumnDef{Name: "x", Type: "wat"})
	mustCode(t, err, CodeInvalid, "unknown type [wat]")
	_, err = e.Schema().AddColumn(ref, "t", ColumnDef{Name: "i", Type: TypeInt, DefaultValue: strp("x")})
	mustCode(t, err, CodeInvalid, "not an int")
	if _, err := e.Schema().AddColumn(ref, "t", ColumnDef{Name: "self", Type: TypeLink, Link: &LinkDef{Table: "t"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Schema().RenameTable(ref, "t", "u"); err != nil {
		t.Fatal(err)
	}
	det, _ = e.Branches().Details(ref)
	tbl := det.Schema.Tables[0]
	if tbl.Name != "u" || tbl.Columns[1].Link.Table != "u" || len(tbl.RevLinks) != 1 || tbl.RevLinks[0] != (RevLink{Table: "u", Column: "self"}) {
		t.Fatalf("renamed table: %+v", tbl)
	}
	if _, err := e.Schema().RenameColumn(ref, "u", "a", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Schema().DeleteColumn(ref, "u", "b"); err != nil {
		t.Fatal(err)
	}
	det, _ = e.Branches().Details(ref)
	u, _ := det.Schema.Table("u")
	if cols := u.Columns; len(cols) != 1 || cols[0].Name != "self" {
		t.Fatalf("columns after rename+delete: %+v", u.Columns)
	}
}

func TestUpsertNumericOperatorsStartFromZero(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{"t": {{Name: "n", Type: TypeInt}}})
	inc := map[string]any{"n": map[string]any{"$increment": json.Number("2")}}
	r, err := e.WriteOne(ref, Op{Kind: OpUpdate, Upsert: true, Table: "t", ID: "a", Values: inc})
	if err != nil || r.Record.Values["n"] != int64(2) || !r.Created {
		t.Fatalf("upsert insert with $increment: %+v %v", r, err)
	}
	r, err = e.WriteOne(ref, Op{Kind: OpUpdate, Upsert: true, Table: "t", ID: "a", Values: inc})
	if err != nil || r.Record.Values["n"] != int64(4) {
		t.Fatalf("upsert update with $increment: %+v %v", r, err)
	}
	_, err = e.WriteOne(ref, Op{Kind: OpInsert, Table: "t", Values: inc})
	mustCode(t, err, CodeInvalid, "column [n]")
}

// TestBulkInsertFindsEveryID checks that a bulk insert, which looks up
// ids mostly new to the table, still finds each id a layer holds: one
// written before the data directory was reopened, one earlier in the same
// request, one only in an ancestor's layer of a branch (deep enough to be
// flattened), and not one whose record was deleted.
func TestBulkInsertFindsEveryID(t *testing.T) {
	db := openTestDB(t, Options{})
	main := db.ref("main")
	bulk := func(ref Ref, ids ...string) error {
		t.Helper()
		recs := make([]map[string]any, len(ids))
		for i, id := range ids {
			recs[i] = map[string]any{"id": id, "name": id}
		}
		_, err := db.e.BulkInsert(context.Background(), ref, "items", recs)
		return err
	}
	exists := func(err error, id string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "record ["+id+"] already exists") {
			t.Fatalf("error %v, want record [%s] already exists", err, id)
		}
	}
	if err := bulk(main, "a", "b"); err != nil {
		t.Fatal(err)
	}
	exists(bulk(main, "c", "a"), "a")
	db.reopen()
	exists(bulk(main, "d", "b"), "b")
	exists(bulk(main, "e", "f", "e"), "e")
	ref, ids := main, []string{"a", "b"}
	for i := range 6 {
		child := db.ref(fmt.Sprintf("child%d", i))
		if err := db.e.Branches().Create(child, CreateBranchRequest{From: ref.Branch}); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			exists(bulk(child, "new", id), id)
		}
		id := fmt.Sprintf("g%d", i)
		if err := bulk(child, id); err != nil {
			t.Fatal(err)
		}
		ref, ids = child, append(ids, id)
	}
	if _, err := db.e.WriteOne(ref, Op{Kind: OpDelete, Table: "items", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := bulk(ref, "a"); err != nil {
		t.Fatalf("insert of a deleted id: %v", err)
	}
	exists(bulk(main, "a"), "a")
}
