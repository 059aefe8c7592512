package engine

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
)

// stageCatalog stages cmd on e's catalog as applying it would, and returns
// the bytes of its batch without applying them.
func stageCatalog(t *testing.T, e *Engine, cmd catCommand) []byte {
	t.Helper()
	e.catMu.Lock()
	defer e.catMu.Unlock()
	tx := &catTx{batch: e.pdb.NewBatch()}
	defer func() {
		tx.batch.Close()
		for _, f := range tx.release {
			f()
		}
	}()
	if _, err := cmd.apply(e.cat, tx, e); err != nil {
		t.Fatalf("%T: %v", cmd, err)
	}
	return bytes.Clone(tx.batch.Repr())
}

// dumpRange returns every key and value of e under prefix, in order,
// but for the keys in skip.
func dumpRange(t *testing.T, e *Engine, prefix []byte, skip ...[]byte) []byte {
	t.Helper()
	it, err := e.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []byte
	for ok := it.First(); ok; ok = it.Next() {
		if slices.ContainsFunc(skip, func(k []byte) bool { return bytes.Equal(k, it.Key()) }) {
			continue
		}
		out = codec.AppendU32(append(out, it.Key()...), uint32(len(it.Value())))
		out = append(out, it.Value()...)
	}
	return out
}

// TestCatalogCommandCodec runs a command of every catalog kind on one
// engine, and its encoded and decoded copy on another: each copy must
// encode to the same bytes, stage the same batch bytes on the same catalog
// and give the same result, and the two catalogs must end identical.
func TestCatalogCommandCodec(t *testing.T) {
	open := func() *Engine {
		e, err := Open(t.TempDir(), Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	a, b := open(), open()
	at := time.Date(2026, 3, 4, 5, 6, 7, 891000, time.UTC)
	ann := User{ID: "usr_ann", Email: "ann@example.com", Fullname: "Ann", Admin: true, CreatedAt: at}
	bob := User{ID: "usr_bob", Email: "bob@example.com", CreatedAt: at}
	acme := Workspace{Core: "acme01", Name: "Acme", Slug: "Acme", Plan: "free", CreatedAt: at}
	side := Workspace{Core: "side02", Name: "Side", Slug: "side", Plan: "free", CreatedAt: at}
	color := "red"
	inviteBob := Invite{ID: "inv1", Email: "bob@example.com", Role: RoleMaintainer, Expires: at.Add(InviteTTL), KeyHash: HashKey("ik_bob"), CreatedAt: at}
	inviteCy := Invite{ID: "inv2", Email: "cy@example.com", Role: RoleMaintainer, Expires: at.Add(InviteTTL), KeyHash: HashKey("ik_cy"), CreatedAt: at}
	cmds := []catCommand{
		&bootstrap{User: ann, Workspace: acme, Key: APIKey{Name: "boot", UserID: ann.ID, CreatedAt: at, Hash: HashKey("cpk_boot")}},
		&createUser{User: bob},
		&updateUser{ID: bob.ID, Email: "Bob@example.com", Fullname: "Bob", Image: "b.png"},
		&createWorkspace{Workspace: side, Owner: bob.ID},
		&updateWorkspace{Caller: bob.ID, WS: "side02", Name: "Side project"},
		&createInvite{Caller: ann.ID, WS: "Acme-acme01", Invite: inviteBob},
		&acceptInvite{Caller: bob.ID, WS: "acme01", KeyHash: HashKey("ik_bob"), Now: at.Add(time.Hour)},
		&createInvite{Caller: ann.ID, WS: "acme01", Invite: inviteCy},
		&updateInvite{Caller: ann.ID, WS: "acme01", InviteID: "inv2", Role: RoleOwner},
		&deleteInvite{Caller: ann.ID, WS: "acme01", InviteID: "inv2"},
		&setMemberRole{Caller: ann.ID, WS: "acme01", UserID: bob.ID, Role: RoleOwner},
		&createAPIKey{Key: APIKey{Name: "scoped", UserID: bob.ID, Workspace: "acme01", CreatedAt: at, Hash: HashKey("cpk_scoped")}},
		&createAPIKey{Key: APIKey{Name: "spare", UserID: bob.ID, CreatedAt: at, Hash: HashKey("cpk_spare")}},
		&deleteAPIKey{UserID: bob.ID, Name: "spare"},
		&placeDatabase{Database: Database{Workspace: "acme01", Name: "shop", Region: "local", CreatedAt: at}},
		&placeDatabase{Database: Database{Name: "embedded", Region: "local", CreatedAt: at}},
		&updateDatabase{WS: "acme01", Name: "shop", NewName: "store", UIColor: &color},
		&dropDatabase{WS: "", Name: "embedded"},
		&setServerState{Name: "test-setting", Value: []byte("0123456789abcdef")},
		&setServerState{Name: "test-setting", Value: []byte("not taken")},
		&removeMember{Caller: ann.ID, WS: "acme01", UserID: bob.ID},
		&deleteWorkspace{Caller: bob.ID, WS: "side02"},
		&deleteUser{ID: bob.ID},
	}
	seen := map[catKind]bool{}
	for _, cmd := range cmds {
		seen[cmd.kind()] = true
		enc, err := encodeCatCommand(cmd)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		dec, err := decodeCatCommand(enc)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		if again, _ := encodeCatCommand(dec); !bytes.Equal(again, enc) {
			t.Fatalf("%T encodes as %s, decoded as %s", cmd, enc[2:], again[2:])
		}
		if x, y := stageCatalog(t, a, cmd), stageCatalog(t, a, dec); !bytes.Equal(x, y) {
			t.Fatalf("%T: the decoded command stages other bytes", cmd)
		}
		resA, err := a.applyCatalog(cmd, nil)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		resB, err := b.applyCatalog(dec, nil)
		if err != nil {
			t.Fatalf("decoded %T: %v", cmd, err)
		}
		encA, err := encodeCatResult(resA)
		if err != nil {
			t.Fatal(err)
		}
		if encB, _ := encodeCatResult(resB); !bytes.Equal(encA, encB) {
			t.Fatalf("%T: results %s and %s", cmd, encA, encB)
		}
		back, err := decodeCatResult(cmd.kind(), encA)
		if err != nil {
			t.Fatalf("%T: result %s: %v", cmd, encA, err)
		}
		if !reflect.DeepEqual(back, resA) {
			t.Fatalf("%T: result %#v decodes as %#v", cmd, resA, back)
		}
	}
	for k := range catCommands {
		if !seen[k] {
			t.Errorf("catalog command kind %d is not exercised", k)
		}
	}
	// Each engine made its own secrets when it opened: compare the rest.
	secrets := [][]byte{
		codec.CatalogKey(codec.CatServerState, []byte(cursorSecretName)),
		codec.CatalogKey(codec.CatServerState, []byte(fileSecretName)),
	}
	if x, y := dumpRange(t, a, []byte{codec.NSCatalog}, secrets...), dumpRange(t, b, []byte{codec.NSCatalog}, secrets...); !bytes.Equal(x, y) {
		t.Error("the catalogs differ")
	}
	// The catalog is what it should be: ann alone in acme, one database.
	if ws := a.Accounts().ListWorkspaces(ann.ID); len(ws) != 1 || ws[0].MemberCount != 1 {
		t.Errorf("workspaces %+v", ws)
	}
	if dbs := a.ListDatabases("acme01"); len(dbs) != 1 || dbs[0].Name != "store" || dbs[0].UIColor != "red" {
		t.Errorf("databases %+v", dbs)
	}
}

// TestCatalogCommandDecodeRejects checks that malformed encodings fail
// instead of decoding into a command.
func TestCatalogCommandDecodeRejects(t *testing.T) {
	for _, b := range [][]byte{nil, {1}, {2, byte(catCreateUser), '{', '}'}, {1, 0, '{', '}'}, {1, 200, '{', '}'}, {1, byte(catCreateUser), '['}} {
		if cmd, err := decodeCatCommand(b); err == nil {
			t.Errorf("%q decodes as %#v", b, cmd)
		}
	}
}

// FuzzDecodeCatCommand decodes arbitrary bytes: no panic, and whatever
// decodes encodes to a form that decodes and encodes to itself.
func FuzzDecodeCatCommand(f *testing.F) {
	f.Add([]byte{1, byte(catCreateUser), '{', '}'})
	f.Add(append([]byte{1, byte(catUpdateDatabase)}, `{"ws":"w","name":"a","newName":"b","uiColor":"red"}`...))
	f.Add(append([]byte{1, byte(catAcceptInvite)}, `{"caller":"u","keyHash":[1,2],"now":"2026-01-02T03:04:05Z"}`...))
	f.Fuzz(func(t *testing.T, b []byte) {
		cmd, err := decodeCatCommand(b)
		if err != nil {
			return
		}
		enc, err := encodeCatCommand(cmd)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeCatCommand(enc)
		if err != nil {
			t.Fatalf("%q re-encoded as %q: %v", b, enc, err)
		}
		if enc2, _ := encodeCatCommand(again); !bytes.Equal(enc, enc2) {
			t.Fatalf("%q re-encodes as %q", enc, enc2)
		}
	})
}
