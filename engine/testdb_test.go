package engine

import (
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// The test database of the randomized and golden branch tests: a data
// directory with a fixed schema and clock, reopened at will.

// The schema every randomized and golden branch test uses: two tables with
// the same columns, so that row ids (allocated per table) collide across
// tables.
var (
	testTables  = []string{"items", "notes"}
	testColumns = []ColumnDef{
		{Name: "name", Type: TypeString},
		{Name: "code", Type: TypeString, Unique: true},
		{Name: "n", Type: TypeInt},
		{Name: "tags", Type: TypeMultiple},
		{Name: "score", Type: TypeFloat},
		{Name: "note", Type: TypeText},
	}
)

// testClock is a clock tests move by hand, so that the model knows the
// createdAt and updatedAt the engine stamps.
type testClock struct{ ns atomic.Int64 }

func (c *testClock) now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// tick moves the clock one millisecond forward and returns the new time in
// nanoseconds.
func (c *testClock) tick() int64 { return c.ns.Add(int64(time.Millisecond)) }

// advance moves the clock d forward: for the engine, d passes.
func (c *testClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// testDB is an engine with one database whose main branch has the tables of
// testTables, in a directory that survives reopening.
type testDB struct {
	tb    testing.TB
	dir   string
	opts  Options
	clock *testClock
	e     *Engine
	ws    string
}

func openTestDB(tb testing.TB, opts Options) *testDB {
	tb.Helper()
	db := &testDB{tb: tb, dir: tb.TempDir(), clock: &testClock{}}
	db.clock.ns.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	opts.Clock = db.clock.now
	opts.NoSync = true
	db.opts = opts
	e, err := Open(db.dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	db.e = e
	tb.Cleanup(func() {
		if db.e != nil {
			db.e.Close()
		}
	})
	u, err := e.Accounts().CreateUser(NewUser{Email: "model@example.com"})
	if err != nil {
		tb.Fatal(err)
	}
	ws, err := e.Accounts().CreateWorkspace(u.ID, "model", "")
	if err != nil {
		tb.Fatal(err)
	}
	db.ws = ws.Core
	if _, err := e.CreateDatabase(CreateDatabaseRequest{Workspace: ws.Core, Name: "db", Region: "local"}); err != nil {
		tb.Fatal(err)
	}
	for _, tn := range testTables {
		if _, err := e.Schema().CreateTable(db.ref("main"), tn); err != nil {
			tb.Fatal(err)
		}
		for _, c := range testColumns {
			if _, err := e.Schema().AddColumn(db.ref("main"), tn, c); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return db
}

func (db *testDB) ref(branch string) Ref { return Ref{db.ws, "db", branch} }

// reopen closes the engine and opens the same directory again.
func (db *testDB) reopen() {
	db.tb.Helper()
	if err := db.e.Close(); err != nil {
		db.tb.Fatal(err)
	}
	db.e = nil
	e, err := Open(db.dir, db.opts)
	if err != nil {
		db.tb.Fatal(err)
	}
	db.e = e
}

// branchState returns the open database and the named branch as published.
func (db *testDB) branchState(branch string) (*database, *model.Branch, error) {
	d, err := db.e.database(db.ws, "db")
	if err != nil {
		return nil, nil, err
	}
	b, err := d.State().Branch(branch)
	return d, b, err
}

// scanTable reads every record of a table in a branch through the branch's
// composed live bitmap, sorted by id. It checks that every live row has a
// visible record and that the id map names that row for the record's id.
func (db *testDB) scanTable(branch, tableName string) ([]*Record, error) {
	d, b, err := db.branchState(branch)
	if err != nil {
		return nil, err
	}
	t, err := b.Schema.Table(tableName)
	if err != nil {
		return nil, err
	}
	live, err := layers.ReadBitmap(db.e.pdb, d.ID, b.Lineage, t.ID, codec.LiveBitmapID(), nil)
	if err != nil {
		return nil, err
	}
	var out []*Record
	it := live.Iterator()
	for it.HasNext() {
		row := it.Next()
		var rec codec.Record
		_, ok, err := layers.ReadRow(db.e.pdb, d.ID, b.Lineage, t.ID, row, &rec)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("table %s: live row %d has no visible record", tableName, row)
		}
		ent, _, ok, err := layers.LookupID(db.e.pdb, d.ID, b.Lineage, t.ID, rec.ID)
		if err != nil {
			return nil, err
		}
		if !ok || ent.Row != row {
			return nil, fmt.Errorf("table %s: live row %d holds record %s, but the id map says row %d (found %v)", tableName, row, rec.ID, ent.Row, ok)
		}
		out = append(out, publicRecord(t, &rec))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	for i := 1; i < len(out); i++ {
		if out[i].ID == out[i-1].ID {
			return nil, fmt.Errorf("table %s: record %s is live in two rows", tableName, out[i].ID)
		}
	}
	return out, nil
}

// setRowCounters makes the next row id of every test table n+1: it writes
// their row counters (codec/KEYS.md) and reopens the engine, which reads
// them.
func (db *testDB) setRowCounters(n uint32) {
	db.tb.Helper()
	d, b, err := db.branchState("main")
	if err != nil {
		db.tb.Fatal(err)
	}
	for _, tn := range testTables {
		t, err := b.Schema.Table(tn)
		if err != nil {
			db.tb.Fatal(err)
		}
		k := codec.MetaKey(d.ID, codec.MetaCounter, codec.AppendU32([]byte("rows/"), t.ID))
		if err := db.e.pdb.Set(k, codec.AppendU64(nil, uint64(n)), pebble.Sync); err != nil {
			db.tb.Fatal(err)
		}
	}
	db.reopen()
}
