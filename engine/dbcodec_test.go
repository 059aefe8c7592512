package engine

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/catalog"
)

// stageDB stages cmd on database d of e as applying it would, and returns
// the bytes of its batch without applying them.
func stageDB(t *testing.T, e *Engine, d *database, cmd dbCommand) []byte {
	t.Helper()
	var out []byte
	err := e.inspect(d, func(tx *dbTx) error {
		if _, err := cmd.apply(tx); err != nil {
			return err
		}
		if err := tx.finish(); err != nil {
			return err
		}
		out = bytes.Clone(tx.batch.Repr())
		return nil
	})
	if err != nil {
		t.Fatalf("%T: %v", cmd, err)
	}
	return out
}

// replica is an engine holding one database, created by fixed commands so
// that every replica starts identical.
type replica struct {
	e *Engine
	d *database
}

func newReplica(t *testing.T, at time.Time) *replica {
	t.Helper()
	e, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	place := &catalog.PlaceDatabase{
		Database: catalog.Database{Name: "db", Region: "local", CreatedAt: at},
		First:    &catalog.FirstBranch{Name: "main", PublicID: "bb_main", Now: at},
	}
	if _, err := e.applyCatalog(place); err != nil {
		t.Fatal(err)
	}
	d, err := e.database("", "db")
	if err != nil {
		t.Fatal(err)
	}
	return &replica{e: e, d: d}
}

// TestDatabaseCommandCodec runs a command of every database kind on one
// replica, and its encoded and decoded copy on another: each copy must
// encode to the same bytes, stage the same batch bytes on the same state
// and give the same result, and the two databases must end identical, key
// for key.
func TestDatabaseCommandCodec(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 123456000, time.UTC)
	a, b := newReplica(t, at), newReplica(t, at)
	later := func(n int) time.Time { return at.Add(time.Duration(n) * time.Minute) }
	hdr := func(id string, n int) schemaHeader { return schemaHeader{Branch: "main", ID: id, Now: later(n)} }
	head := "mig_0000000000000000000a"
	md := BranchMetadata{Repository: "repo", Branch: "feature", Stage: "dev", Labels: []string{"x"}}
	ver := uint64(0)
	cmds := []dbCommand{
		&schemaOp{schemaHeader: hdr("mig_0000000000000000000a", 1), Op: MigrationOp{AddTable: &TableOp{Table: "people"}}},
		&setTableColumns{schemaHeader: hdr("mig_0000000000000000000b", 2), Table: "people", Columns: []ColumnDef{
			{Name: "name", Type: TypeString, NotNull: true, DefaultValue: ptr("anon")},
			{Name: "age", Type: TypeInt},
			{Name: "score", Type: TypeFloat},
			{Name: "born", Type: TypeDatetime},
			{Name: "tags", Type: TypeMultiple},
			{Name: "bio", Type: TypeText},
			{Name: "mail", Type: TypeEmail, Unique: true},
			{Name: "ok", Type: TypeBool},
			{Name: "doc", Type: TypeJSON},
			{Name: "emb", Type: TypeVector, Vector: &VectorDef{Dimension: 3}},
			{Name: "pic", Type: TypeFile},
			{Name: "address", Type: TypeObject, Columns: []ColumnDef{{Name: "city", Type: TypeString}}},
		}},
		&migrate{schemaHeader: schemaHeader{Branch: "main", ID: "mig_0000000000000000000c", Parent: ptr("mig_0000000000000000000b"), Now: later(3)},
			Ops: []MigrationOp{{AddColumn: &AddColumnOp{Table: "people", Column: ColumnDef{Name: "friend", Type: TypeLink, Link: &LinkDef{Table: "people"}}}}}},
		&writeRecords{Branch: "main", Now: later(4), Ops: []Op{
			{Kind: OpInsert, Table: "people", ID: "ann", Values: map[string]any{
				"name": "Ann", "age": int64(1) << 60, "score": 2.5, "born": at.Add(-time.Hour), "tags": []string{"a", "b"},
				"bio": "likes long walks", "mail": "ann@example.com", "ok": true, "doc": map[string]any{"k": []any{1.5, "v"}},
				"emb": []float64{0.1, -2, 1e-9}, "address": map[string]any{"city": "Oslo"},
			}},
			{Kind: OpInsert, Table: "people", ID: "bob", Values: map[string]any{"age": 7, "friend": "ann", "score": math.Copysign(0, -1)}},
			{Kind: OpUpdate, Table: "people", ID: "bob", Values: map[string]any{"age": map[string]any{"$increment": int64(3)}}, IfVersion: &ver},
			{Kind: OpUpdate, Table: "people", ID: "cy", Upsert: true, Values: map[string]any{"born": "2020-01-02T03:04:05.000000006Z"}},
			{Kind: OpGet, Table: "people", ID: "ann"},
		}},
		&writeFile{Branch: "main", Target: FileTarget{Table: "people", Record: "ann", Column: "pic"}, Put: true,
			Content: []byte("\x89PNG not really"), MediaType: "image/png", Now: later(5)},
		&createBranch{Name: "dev", From: "main", PublicID: "bb_dev", Now: later(6), Metadata: &md},
		&writeRecords{Branch: "dev", Now: later(7), Ops: []Op{{Kind: OpDelete, Table: "people", ID: "cy"}}},
		&writeRecords{Branch: "main", Now: later(8), Bulk: true, Ops: []Op{
			{Kind: OpInsert, Table: "people", ID: "dan", CreateOnly: true, Values: map[string]any{"name": "Dan"}},
		}},
		&createBranch{Name: "dev2", From: "dev", PublicID: "bb_dev2", Now: later(9)},
		&writeRecords{Branch: "dev2", Now: later(10), Ops: []Op{{Kind: OpUpdate, Table: "people", ID: "bob", Values: map[string]any{"bio": "new"}}}},
		&setBranchMetadata{Branch: "dev", Metadata: BranchMetadata{Stage: "prod"}},
		&setGitMapping{Git: "feature/x", Branch: "dev"},
		&setGitMapping{Git: "feature/y", Branch: "main"},
		&setGitMapping{Git: "feature/y"},
		&pushMigration{schemaHeader: schemaHeader{Branch: "main", ID: "mig_0000000000000000000d", Parent: ptr("mig_0000000000000000000c"), Title: "t", Message: "m", Now: later(11)},
			Ops: []MigrationOp{{RenameColumn: &RenameColumnOp{Table: "people", OldName: "bio", NewName: "about"}}}},
		&migrate{schemaHeader: hdr("mig_0000000000000000000e", 12), Source: &head, Ops: []MigrationOp{{AddTable: &TableOp{Table: "pets"}}}},
		&writeFile{Branch: "main", Target: FileTarget{Table: "people", Record: "ann", Column: "pic"}, Now: later(13)},
		&deleteBranch{Name: "dev"},
	}
	var flatten []dbCommand
	seen := map[dbKind]bool{dbInit: true}
	run := func(cmd dbCommand) any {
		t.Helper()
		seen[cmd.kind()] = true
		enc, err := encodeDBCommand(cmd)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		dec, err := decodeDBCommand(enc)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		if again, _ := encodeDBCommand(dec); !bytes.Equal(again, enc) {
			t.Fatalf("%T encodes as %s, decoded as %s", cmd, enc[2:], again[2:])
		}
		if x, y := stageDB(t, a.e, a.d, cmd), stageDB(t, a.e, a.d, dec); !bytes.Equal(x, y) {
			t.Fatalf("%T: the decoded command stages other bytes", cmd)
		}
		resA, err := a.e.apply(a.d, cmd)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		resB, err := b.e.apply(b.d, dec)
		if err != nil {
			t.Fatalf("decoded %T: %v", cmd, err)
		}
		encA, err := encodeDBResult(resA)
		if err != nil {
			t.Fatal(err)
		}
		if encB, _ := encodeDBResult(resB); !bytes.Equal(encA, encB) {
			t.Fatalf("%T: results %s and %s", cmd, encA, encB)
		}
		back, err := decodeDBResult(cmd.kind(), encA)
		if err != nil {
			t.Fatalf("%T: result %s: %v", cmd, encA, err)
		}
		if again, _ := encodeDBResult(back); !bytes.Equal(again, encA) {
			t.Fatalf("%T: result %s decodes to %s", cmd, encA, again)
		}
		return resA
	}
	for _, cmd := range cmds {
		run(cmd)
	}
	// Flattening: dev2's frozen part goes to a new layer on both sides.
	dev2 := a.d.state.Load().branches["dev2"]
	frozen := slices.Clone(dev2.Lineage[1:])
	layer := run(&startFlatten{Branch: dev2.ID, Frozen: frozen}).(uint32)
	for _, r := range []*replica{a, b} {
		if err := r.e.materialize(r.d.id, dev2.Schema, frozen, layer); err != nil {
			t.Fatal(err)
		}
	}
	flatten = append(flatten, &finishFlatten{Branch: dev2.ID, Frozen: frozen, Layer: layer})
	for _, cmd := range flatten {
		run(cmd)
	}
	if got := len(a.d.state.Load().branches["dev2"].Lineage); got != 2 {
		t.Errorf("dev2 has %d layers after flattening, want 2", got)
	}
	for k := range dbCommands {
		if !seen[k] {
			t.Errorf("database command kind %d is not exercised", k)
		}
	}
	prefix := codec.DatabasePrefix(a.d.id)
	if x, y := dumpRange(t, a.e, prefix), dumpRange(t, b.e, prefix); !bytes.Equal(x, y) {
		t.Error("the databases differ")
	}
	// The writes did what they say.
	rec, err := a.e.Get(Ref{Database: "db", Branch: "dev2"}, "people", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Values["age"] != int64(10) || rec.Values["bio"] != "new" {
		t.Errorf("bob on dev2: %v", rec.Values)
	}
}

// TestDatabaseCommandDecodeRejects checks that malformed encodings fail
// instead of decoding into a command.
func TestDatabaseCommandDecodeRejects(t *testing.T) {
	for _, b := range [][]byte{nil, {1}, {2, byte(dbInit), '{', '}'}, {1, 0, '{', '}'}, {1, 200, '{', '}'},
		{1, byte(dbWriteRecords), '['}, append([]byte{1, byte(dbInit)}, `{} {}`...)} {
		if cmd, err := decodeDBCommand(b); err == nil {
			t.Errorf("%q decodes as %#v", b, cmd)
		}
	}
}

// FuzzDecodeDBCommand decodes arbitrary bytes: no panic, and whatever
// decodes encodes to a form that decodes and encodes to itself.
func FuzzDecodeDBCommand(f *testing.F) {
	f.Add([]byte{1, byte(dbInit), '{', '}'})
	f.Add(append([]byte{1, byte(dbWriteRecords)}, `{"branch":"main","now":"2026-01-02T03:04:05Z","ops":[{"Kind":1,"Table":"t","ID":"r","Values":{"n":12345678901234567890,"f":1.5e300,"s":"x"}}]}`...))
	f.Add(append([]byte{1, byte(dbSetTableColumns)}, `{"branch":"main","id":"mig_x","now":"2026-01-02T03:04:05Z","table":"t","columns":[{"name":"c","type":"int"}]}`...))
	f.Fuzz(func(t *testing.T, b []byte) {
		cmd, err := decodeDBCommand(b)
		if err != nil {
			return
		}
		enc, err := encodeDBCommand(cmd)
		if err != nil {
			return // a value JSON cannot hold, such as a number out of range
		}
		again, err := decodeDBCommand(enc)
		if err != nil {
			t.Fatalf("%q re-encoded as %q: %v", b, enc, err)
		}
		if enc2, _ := encodeDBCommand(again); !bytes.Equal(enc, enc2) {
			t.Fatalf("%q re-encodes as %q", enc, enc2)
		}
	})
}

// TestDatabaseCommandValuesExact checks that record values survive the
// encoding exactly: integers beyond 2^53, negative zero and nanoseconds.
func TestDatabaseCommandValuesExact(t *testing.T) {
	cmd := &writeRecords{Branch: "b", Ops: []Op{{Kind: OpInsert, Table: "t", Values: map[string]any{
		"i": int64(1)<<62 + 1, "z": math.Copysign(0, -1), "d": time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
	}}}}
	enc, err := encodeDBCommand(cmd)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := decodeDBCommand(enc)
	if err != nil {
		t.Fatal(err)
	}
	got := dec.(*writeRecords).Ops[0].Values
	want := map[string]any{"i": json.Number("4611686018427387905"), "z": json.Number("-0"), "d": "2026-01-02T03:04:05.000000006Z"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("values decode as %#v, want %#v", got, want)
	}
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// dumpRange returns every key and value of e under prefix, in order.
func dumpRange(t *testing.T, e *Engine, prefix []byte) []byte {
	t.Helper()
	it, err := e.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []byte
	for ok := it.First(); ok; ok = it.Next() {
		out = codec.AppendU32(append(out, it.Key()...), uint32(len(it.Value())))
		out = append(out, it.Value()...)
	}
	return out
}
