package catalog

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
)

// testHost stages what catalog commands start in databases as keys of
// the database's range that say so, so that the catalog's side of every
// command is checked without the databases themselves.
type testHost struct{}

func (testHost) InitDatabase(t *Tx, p *Database, first *FirstBranch) error {
	return t.Batch().Set(append(codec.DatabasePrefix(p.ID), "first"...), []byte(first.Name+first.PublicID), nil)
}

func (testHost) RestoreDatabase(t *Tx, p *Database, backup []byte) error {
	return t.Batch().Set(append(codec.DatabasePrefix(p.ID), "backup"...), backup, nil)
}

func (testHost) DropDatabase(t *Tx, p *Database) error {
	pre := codec.DatabasePrefix(p.ID)
	return t.Batch().DeleteRange(pre, codec.PrefixEnd(pre), nil)
}

// replica is one copy of a catalog on its own storage.
type replica struct {
	db  *pebble.DB
	cat *Catalog
}

func openReplica(t *testing.T) *replica {
	t.Helper()
	db, err := pebble.Open(t.TempDir(), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := Load(db)
	if err != nil {
		t.Fatal(err)
	}
	return &replica{db: db, cat: cat}
}

// stage stages cmd on r's catalog as applying it would, and returns the
// bytes of its batch without applying them.
func (r *replica) stage(t *testing.T, cmd Command) []byte {
	t.Helper()
	tx := NewTx(r.db.NewBatch())
	defer func() {
		tx.Batch().Close()
		tx.Release()
	}()
	if _, err := Stage(r.cat, tx, testHost{}, cmd); err != nil {
		t.Fatalf("%T: %v", cmd, err)
	}
	return bytes.Clone(tx.Batch().Repr())
}

// apply applies cmd to r and returns its result.
func (r *replica) apply(cmd Command) (any, error) {
	tx := NewTx(r.db.NewBatch())
	defer tx.Release()
	res, err := Stage(r.cat, tx, testHost{}, cmd)
	if err != nil {
		tx.Batch().Close()
		return nil, err
	}
	if err := tx.Batch().Commit(pebble.Sync); err != nil {
		return nil, err
	}
	tx.Publish(r.cat)
	return res, nil
}

// dump returns every key and value of r, in order.
func (r *replica) dump(t *testing.T) []byte {
	t.Helper()
	it, err := r.db.NewIter(nil)
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

// TestCatalogCommandCodec runs a command of every catalog kind on one
// catalog, and its encoded and decoded copy on another: each copy must
// encode to the same bytes, stage the same batch bytes on the same catalog
// and give the same result, and the two catalogs must end identical.
func TestCatalogCommandCodec(t *testing.T) {
	a, b := openReplica(t), openReplica(t)
	at := time.Date(2026, 3, 4, 5, 6, 7, 891000, time.UTC)
	ann := User{ID: "usr_ann", Email: "ann@example.com", Fullname: "Ann", Admin: true, CreatedAt: at}
	bob := User{ID: "usr_bob", Email: "bob@example.com", CreatedAt: at}
	acme := Workspace{Core: "acme01", Name: "Acme", Slug: "Acme", Plan: "free", CreatedAt: at}
	side := Workspace{Core: "side02", Name: "Side", Slug: "side", Plan: "free", CreatedAt: at}
	color := "red"
	inviteBob := Invite{ID: "inv1", Email: "bob@example.com", Role: RoleMaintainer, Expires: at.Add(InviteTTL), KeyHash: HashKey("ik_bob"), CreatedAt: at}
	inviteCy := Invite{ID: "inv2", Email: "cy@example.com", Role: RoleMaintainer, Expires: at.Add(InviteTTL), KeyHash: HashKey("ik_cy"), CreatedAt: at}
	cmds := []Command{
		&Bootstrap{User: ann, Workspace: acme, Key: APIKey{Name: "boot", UserID: ann.ID, CreatedAt: at, Hash: HashKey("cpk_boot")}},
		&CreateUser{User: bob},
		&UpdateUser{ID: bob.ID, Email: "Bob@example.com", Fullname: "Bob", Image: "b.png"},
		&CreateWorkspace{Workspace: side, Owner: bob.ID},
		&UpdateWorkspace{Caller: bob.ID, WS: "side02", Name: "Side project"},
		&CreateInvite{Caller: ann.ID, WS: "Acme-acme01", Invite: inviteBob},
		&AcceptInvite{Caller: bob.ID, WS: "acme01", KeyHash: HashKey("ik_bob"), Now: at.Add(time.Hour)},
		&CreateInvite{Caller: ann.ID, WS: "acme01", Invite: inviteCy},
		&UpdateInvite{Caller: ann.ID, WS: "acme01", InviteID: "inv2", Role: RoleOwner},
		&DeleteInvite{Caller: ann.ID, WS: "acme01", InviteID: "inv2"},
		&SetMemberRole{Caller: ann.ID, WS: "acme01", UserID: bob.ID, Role: RoleOwner},
		&CreateAPIKey{Key: APIKey{Name: "scoped", UserID: bob.ID, Workspace: "acme01", CreatedAt: at, Hash: HashKey("cpk_scoped")}},
		&CreateAPIKey{Key: APIKey{Name: "spare", UserID: bob.ID, CreatedAt: at, Hash: HashKey("cpk_spare")}},
		&DeleteAPIKey{UserID: bob.ID, Name: "spare"},
		&PlaceDatabase{Database: Database{Workspace: "acme01", Name: "shop", Region: "local", CreatedAt: at},
			First: &FirstBranch{Name: "main", PublicID: "bb_1", Now: at}},
		&RestoreDatabase{Database: Database{Workspace: "acme01", Name: "copy", Region: "local", CreatedAt: at}, Backup: []byte("range")},
		&PlaceDatabase{Database: Database{Name: "embedded", Region: "local", CreatedAt: at}},
		&SetNode{Node: Node{ID: 1, RaftAddr: "n1:7000", APIAddr: "n1:8080"}},
		&SetNode{Node: Node{ID: 2, RaftAddr: "n2:7000"}},
		&SetReplicas{DB: 1, Replicas: []Replica{{ID: 1, Node: 1, Addr: "n1:7000"}, {ID: 2, Node: 2, Addr: "n2:7000", Join: true}}},
		&SetReplicas{DB: 1, Prev: []Replica{{ID: 1, Node: 1, Addr: "n1:7000"}, {ID: 2, Node: 2, Addr: "n2:7000", Join: true}},
			Replicas: []Replica{{ID: 1, Node: 1, Addr: "n1:7000"}, {ID: 2, Node: 2, Addr: "n2:7000", Join: true, Removed: true}}},
		&RemoveNode{ID: 2},
		&UpdateDatabase{WS: "acme01", Name: "shop", NewName: "store", UIColor: &color},
		&DropDatabase{WS: "", Name: "embedded"},
		&DropDatabase{WS: "acme01", Name: "copy"},
		&SetServerState{Name: "test-setting", Value: []byte("0123456789abcdef")},
		&SetServerState{Name: "test-setting", Value: []byte("not taken")},
		&RemoveMember{Caller: ann.ID, WS: "acme01", UserID: bob.ID},
		&DeleteWorkspace{Caller: bob.ID, WS: "side02"},
		&DeleteUser{ID: bob.ID},
	}
	seen := map[Kind]bool{}
	for _, cmd := range cmds {
		seen[cmd.kind()] = true
		enc, err := Encode(cmd)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		dec, err := Decode(enc)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		if again, _ := Encode(dec); !bytes.Equal(again, enc) {
			t.Fatalf("%T encodes as %s, decoded as %s", cmd, enc[2:], again[2:])
		}
		if x, y := a.stage(t, cmd), a.stage(t, dec); !bytes.Equal(x, y) {
			t.Fatalf("%T: the decoded command stages other bytes", cmd)
		}
		resA, err := a.apply(cmd)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		resB, err := b.apply(dec)
		if err != nil {
			t.Fatalf("decoded %T: %v", cmd, err)
		}
		encA, err := EncodeResult(resA)
		if err != nil {
			t.Fatal(err)
		}
		if encB, _ := EncodeResult(resB); !bytes.Equal(encA, encB) {
			t.Fatalf("%T: results %s and %s", cmd, encA, encB)
		}
		back, err := DecodeResult(cmd, encA)
		if err != nil {
			t.Fatalf("%T: result %s: %v", cmd, encA, err)
		}
		if !reflect.DeepEqual(back, resA) {
			t.Fatalf("%T: result %#v decodes as %#v", cmd, resA, back)
		}
	}
	for k := range commands {
		if !seen[k] {
			t.Errorf("catalog command kind %d is not exercised", k)
		}
	}
	if !bytes.Equal(a.dump(t), b.dump(t)) {
		t.Error("the catalogs differ")
	}
	// The catalog is what it should be: ann alone in acme, one database.
	if ws := a.cat.Workspaces(ann.ID); len(ws) != 1 || ws[0].MemberCount != 1 {
		t.Errorf("workspaces %+v", ws)
	}
	if dbs := a.cat.Databases("acme01"); len(dbs) != 1 || dbs[0].Name != "store" || dbs[0].UIColor != "red" {
		t.Errorf("databases %+v", dbs)
	}
	// A cluster's shape: node 1 alone, holding the one replica left.
	if nodes := a.cat.Nodes(); len(nodes) != 1 || nodes[0].APIAddr != "n1:8080" {
		t.Errorf("nodes %+v", nodes)
	}
	if p, ok := a.cat.PlacementOf(1); !ok || len(p.Replicas) != 2 || !p.Replicas[1].Removed || p.NextReplicaID() != 3 || p.Name != "store" {
		t.Errorf("placement %+v", p)
	}
}

// TestCatalogCommandDecodeRejects checks that malformed encodings fail
// instead of decoding into a command.
func TestCatalogCommandDecodeRejects(t *testing.T) {
	for _, b := range [][]byte{nil, {1}, {2, byte(kindCreateUser), '{', '}'}, {1, 0, '{', '}'}, {1, 200, '{', '}'}, {1, byte(kindCreateUser), '['}} {
		if cmd, err := Decode(b); err == nil {
			t.Errorf("%q decodes as %#v", b, cmd)
		}
	}
}

// FuzzDecodeCatCommand decodes arbitrary bytes: no panic, and whatever
// decodes encodes to a form that decodes and encodes to itself.
func FuzzDecodeCatCommand(f *testing.F) {
	f.Add([]byte{1, byte(kindCreateUser), '{', '}'})
	f.Add(append([]byte{1, byte(kindUpdateDatabase)}, `{"ws":"w","name":"a","newName":"b","uiColor":"red"}`...))
	f.Add(append([]byte{1, byte(kindAcceptInvite)}, `{"caller":"u","keyHash":[1,2],"now":"2026-01-02T03:04:05Z"}`...))
	f.Fuzz(func(t *testing.T, b []byte) {
		cmd, err := Decode(b)
		if err != nil {
			return
		}
		enc, err := Encode(cmd)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("%q re-encoded as %q: %v", b, enc, err)
		}
		if enc2, _ := Encode(again); !bytes.Equal(enc, enc2) {
			t.Fatalf("%q re-encodes as %q", enc, enc2)
		}
	})
}
