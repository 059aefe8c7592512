package apply

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
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// stageDB stages cmd on database d of a as applying it would, and returns
// the bytes of its batch without applying them.
func stageDB(t *testing.T, a *Applier, d *DB, cmd DBCommand) []byte {
	t.Helper()
	var out []byte
	err := a.inspect(d, func(tx *Tx) error {
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

// replica is a data directory holding one database, created by fixed
// commands so that every replica starts identical.
type replica struct {
	pdb *pebble.DB
	a   *Applier
	d   *DB
}

func newReplica(t *testing.T, at time.Time) *replica {
	t.Helper()
	pdb, err := pebble.Open(t.TempDir(), &pebble.Options{Merger: layers.Merger, Logger: quietLogger{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pdb.Close() })
	a, err := Open(pdb, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	place := &catalog.PlaceDatabase{
		Database: catalog.Database{Name: "db", Region: "local", CreatedAt: at},
		First:    &catalog.FirstBranch{Name: "main", PublicID: "bb_main", Now: at},
	}
	res, err := a.Apply(OnCatalog(place))
	if err != nil {
		t.Fatal(err)
	}
	return &replica{pdb: pdb, a: a, d: a.DB(res.(*catalog.Database).ID)}
}

// TestDatabaseCommandCodec runs a command of every database kind on one
// replica, and its encoded and decoded copy on another, as a replicated
// log would: each copy must encode to the same bytes, stage the same batch
// bytes on the same state and give the same result, and the two databases
// must end identical, key for key. Then the catalog commands that fill or
// empty a database's range run the same way, and the two data directories
// must end identical.
func TestDatabaseCommandCodec(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 123456000, time.UTC)
	a, b := newReplica(t, at), newReplica(t, at)
	later := func(n int) time.Time { return at.Add(time.Duration(n) * time.Minute) }
	hdr := func(id string, n int) SchemaHeader { return SchemaHeader{Branch: "main", ID: id, Now: later(n)} }
	head := "mig_0000000000000000000a"
	md := model.BranchMetadata{Repository: "repo", Branch: "feature", Stage: "dev", Labels: []string{"x"}}
	ver := uint64(0)
	cmds := []DBCommand{
		&SchemaOp{SchemaHeader: hdr("mig_0000000000000000000a", 1), Op: model.MigrationOp{AddTable: &model.TableOp{Table: "people"}}},
		&SetTableColumns{SchemaHeader: hdr("mig_0000000000000000000b", 2), Table: "people", Columns: []model.ColumnDef{
			{Name: "name", Type: model.TypeString, NotNull: true, DefaultValue: ptr("anon")},
			{Name: "age", Type: model.TypeInt},
			{Name: "score", Type: model.TypeFloat},
			{Name: "born", Type: model.TypeDatetime},
			{Name: "tags", Type: model.TypeMultiple},
			{Name: "bio", Type: model.TypeText},
			{Name: "mail", Type: model.TypeEmail, Unique: true},
			{Name: "ok", Type: model.TypeBool},
			{Name: "doc", Type: model.TypeJSON},
			{Name: "emb", Type: model.TypeVector, Vector: &model.VectorDef{Dimension: 3}},
			{Name: "pic", Type: model.TypeFile},
			{Name: "address", Type: model.TypeObject, Columns: []model.ColumnDef{{Name: "city", Type: model.TypeString}}},
		}},
		&Migrate{SchemaHeader: SchemaHeader{Branch: "main", ID: "mig_0000000000000000000c", Parent: ptr("mig_0000000000000000000b"), Now: later(3)},
			Ops: []model.MigrationOp{{AddColumn: &model.AddColumnOp{Table: "people", Column: model.ColumnDef{Name: "friend", Type: model.TypeLink, Link: &model.LinkDef{Table: "people"}}}}}},
		&WriteRecords{Branch: "main", Now: later(4), Ops: []model.Op{
			{Kind: model.OpInsert, Table: "people", ID: "ann", Values: map[string]any{
				"name": "Ann", "age": int64(1) << 60, "score": 2.5, "born": at.Add(-time.Hour), "tags": []string{"a", "b"},
				"bio": "likes long walks", "mail": "ann@example.com", "ok": true, "doc": map[string]any{"k": []any{1.5, "v"}},
				"emb": []float64{0.1, -2, 1e-9}, "address": map[string]any{"city": "Oslo"},
			}},
			{Kind: model.OpInsert, Table: "people", ID: "bob", Values: map[string]any{"age": 7, "friend": "ann", "score": math.Copysign(0, -1)}},
			{Kind: model.OpUpdate, Table: "people", ID: "bob", Values: map[string]any{"age": map[string]any{"$increment": int64(3)}}, IfVersion: &ver},
			{Kind: model.OpUpdate, Table: "people", ID: "cy", Upsert: true, Values: map[string]any{"born": "2020-01-02T03:04:05.000000006Z"}},
			{Kind: model.OpGet, Table: "people", ID: "ann"},
		}},
		&WriteFile{Branch: "main", Target: model.FileTarget{Table: "people", Record: "ann", Column: "pic"}, Put: true,
			Content: []byte("\x89PNG not really"), MediaType: "image/png", Now: later(5)},
		&CreateBranch{Name: "dev", From: "main", PublicID: "bb_dev", Now: later(6), Metadata: &md},
		&WriteRecords{Branch: "dev", Now: later(7), Ops: []model.Op{{Kind: model.OpDelete, Table: "people", ID: "cy"}}},
		&WriteRecords{Branch: "main", Now: later(8), Bulk: true, Ops: []model.Op{
			{Kind: model.OpInsert, Table: "people", ID: "dan", CreateOnly: true, Values: map[string]any{"name": "Dan"}},
		}},
		&CreateBranch{Name: "dev2", From: "dev", PublicID: "bb_dev2", Now: later(9)},
		&WriteRecords{Branch: "dev2", Now: later(10), Ops: []model.Op{{Kind: model.OpUpdate, Table: "people", ID: "bob", Values: map[string]any{"bio": "new"}}}},
		&SetBranchMetadata{Branch: "dev", Metadata: model.BranchMetadata{Stage: "prod"}},
		&SetGitMapping{Git: "feature/x", Branch: "dev"},
		&SetGitMapping{Git: "feature/y", Branch: "main"},
		&SetGitMapping{Git: "feature/y"},
		&PushMigration{SchemaHeader: SchemaHeader{Branch: "main", ID: "mig_0000000000000000000d", Parent: ptr("mig_0000000000000000000c"), Title: "t", Message: "m", Now: later(11)},
			Ops: []model.MigrationOp{{RenameColumn: &model.RenameColumnOp{Table: "people", OldName: "bio", NewName: "about"}}}},
		&Migrate{SchemaHeader: hdr("mig_0000000000000000000e", 12), Source: &head, Ops: []model.MigrationOp{{AddTable: &model.TableOp{Table: "pets"}}}},
		&WriteFile{Branch: "main", Target: model.FileTarget{Table: "people", Record: "ann", Column: "pic"}, Now: later(13)},
		&DeleteBranch{Name: "dev"},
	}
	var flatten []DBCommand
	seen := map[dbKind]bool{dbInit: true}
	run := func(cmd DBCommand) any {
		t.Helper()
		seen[cmd.kind()] = true
		res, dec := roundTrip(t, a, b, OnDatabase(a.d.ID, cmd))
		if x, y := stageDB(t, a.a, a.d, cmd), stageDB(t, a.a, a.d, dec.DB); !bytes.Equal(x, y) {
			t.Fatalf("%T: the decoded command stages other bytes", cmd)
		}
		resA, err := a.a.Apply(OnDatabase(a.d.ID, cmd))
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		resB, err := b.a.Apply(dec)
		if err != nil {
			t.Fatalf("decoded %T: %v", cmd, err)
		}
		res(resA, resB)
		return resA
	}
	for _, cmd := range cmds {
		run(cmd)
	}
	// Flattening: dev2's frozen part goes to a new layer on both sides.
	dev2 := a.d.State().Branches["dev2"]
	frozen := slices.Clone(dev2.Lineage[1:])
	layer := run(&StartFlatten{Branch: dev2.ID, Frozen: frozen}).(uint32)
	for _, r := range []*replica{a, b} {
		if err := r.a.Materialize(r.d.ID, dev2.Schema, frozen, layer); err != nil {
			t.Fatal(err)
		}
	}
	flatten = append(flatten, &FinishFlatten{Branch: dev2.ID, Frozen: frozen, Layer: layer})
	for _, cmd := range flatten {
		run(cmd)
	}
	if got := len(a.d.State().Branches["dev2"].Lineage); got != 2 {
		t.Errorf("dev2 has %d layers after flattening, want 2", got)
	}
	for k := range dbCommands {
		if !seen[k] {
			t.Errorf("database command kind %d is not exercised", k)
		}
	}
	prefix := codec.DatabasePrefix(a.d.ID)
	if x, y := dumpRange(t, a.pdb, prefix), dumpRange(t, b.pdb, prefix); !bytes.Equal(x, y) {
		t.Error("the databases differ")
	}
	// The writes did what they say.
	dev := a.d.State().Branches["dev2"]
	people, err := dev.Schema.Table("people")
	if err != nil {
		t.Fatal(err)
	}
	ent, _, ok, err := layers.LookupID(a.pdb, a.d.ID, dev.Lineage, people.ID, "bob")
	var rec codec.Record
	if err == nil && ok {
		_, ok, err = layers.ReadRow(a.pdb, a.d.ID, dev.Lineage, people.ID, ent.Row, &rec)
	}
	if err != nil || !ok {
		t.Fatalf("bob on dev2: %v %v", ok, err)
	}
	age, _ := rec.Get(people.ByPath["age"].ID)
	bio, _ := rec.Get(people.ByPath["bio"].ID)
	if age.Int != 10 || bio.Str != "new" {
		t.Errorf("bob on dev2: age %v, bio %v", age, bio)
	}

	// The catalog commands that start a database's range, through the same
	// encoding: a backup restored as a second database, then dropped.
	var backup bytes.Buffer
	snap := a.pdb.NewSnapshot()
	if err := layers.WriteRange(snap, a.d.ID, &backup); err != nil {
		t.Fatal(err)
	}
	snap.Close()
	for _, cmd := range []catalog.Command{
		&catalog.RestoreDatabase{Database: catalog.Database{Name: "copy", Region: "local", CreatedAt: later(20)}, Backup: backup.Bytes()},
		&catalog.PlaceDatabase{Database: catalog.Database{Name: "more", Region: "local", CreatedAt: later(21)},
			First: &catalog.FirstBranch{Name: "trunk", PublicID: "bb_trunk", Now: later(21)}},
		&catalog.DropDatabase{Name: "copy"},
	} {
		res, dec := roundTrip(t, a, b, OnCatalog(cmd))
		resA, err := a.a.Apply(OnCatalog(cmd))
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		resB, err := b.a.Apply(dec)
		if err != nil {
			t.Fatalf("decoded %T: %v", cmd, err)
		}
		res(resA, resB)
	}
	if x, y := dumpRange(t, a.pdb, nil), dumpRange(t, b.pdb, nil); !bytes.Equal(x, y) {
		t.Error("the data directories differ")
	}
	if d := a.a.DB(3); d == nil || d.State().Branches["trunk"] == nil {
		t.Error("the placed database has no first branch")
	}
}

// roundTrip encodes cmd, decodes it and checks that the decoded command
// encodes the same. It returns the decoded command and a check that two
// results of applying it, on each replica, encode alike and that the
// encoding decodes to a result that encodes alike again.
func roundTrip(t *testing.T, a, b *replica, cmd Command) (func(resA, resB any), Command) {
	t.Helper()
	enc, err := Encode(cmd)
	if err != nil {
		t.Fatalf("%T%T: %v", cmd.DB, cmd.Catalog, err)
	}
	dec, err := Decode(enc)
	if err != nil {
		t.Fatalf("%T%T: %v", cmd.DB, cmd.Catalog, err)
	}
	if again, _ := Encode(dec); !bytes.Equal(again, enc) {
		t.Fatalf("%T%T encodes as %q, decoded as %q", cmd.DB, cmd.Catalog, enc, again)
	}
	return func(resA, resB any) {
		t.Helper()
		encA, err := EncodeResult(cmd, resA)
		if err != nil {
			t.Fatal(err)
		}
		if encB, _ := EncodeResult(dec, resB); !bytes.Equal(encA, encB) {
			t.Fatalf("%T%T: results %s and %s", cmd.DB, cmd.Catalog, encA, encB)
		}
		back, err := DecodeResult(cmd, encA)
		if err != nil {
			t.Fatalf("%T%T: result %s: %v", cmd.DB, cmd.Catalog, encA, err)
		}
		if again, _ := EncodeResult(cmd, back); !bytes.Equal(again, encA) {
			t.Fatalf("%T%T: result %s decodes to %s", cmd.DB, cmd.Catalog, encA, again)
		}
	}, dec
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
	cmd := &WriteRecords{Branch: "b", Ops: []model.Op{{Kind: model.OpInsert, Table: "t", Values: map[string]any{
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
	got := dec.(*WriteRecords).Ops[0].Values
	want := map[string]any{"i": json.Number("4611686018427387905"), "z": json.Number("-0"), "d": "2026-01-02T03:04:05.000000006Z"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("values decode as %#v, want %#v", got, want)
	}
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// dumpRange returns every key and value of r under prefix (nil: all), in
// order.
func dumpRange(t *testing.T, r pebble.Reader, prefix []byte) []byte {
	t.Helper()
	opts := &pebble.IterOptions{}
	if prefix != nil {
		opts = &pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)}
	}
	it, err := r.NewIter(opts)
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

// quietLogger keeps Pebble's informational logging out of test output.
type quietLogger struct{ t testing.TB }

func (quietLogger) Infof(string, ...any)           {}
func (l quietLogger) Errorf(f string, args ...any) { l.t.Errorf(f, args...) }
func (l quietLogger) Fatalf(f string, args ...any) { l.t.Fatalf(f, args...) }
