package apply

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// TestGroupPreparedWrites applies the same groups of single-record writes
// to two data directories: on one, the inserts are prepared before the
// writer lock, as they are while groups are under way, and the writer
// stages the bitmaps of a group's prepared inserts together; on the
// other, every write is staged under the lock record by record. The
// groups mix prepared inserts with updates, an insert of an existing id
// and one whose values do not convert, and their words are partly new to
// the table and partly stored by an earlier group. Every write must get
// the same answer on both sides, and the databases must end
// byte-identical.
func TestGroupPreparedWrites(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	cols := []model.ColumnDef{
		{Name: "title", Type: model.TypeString},
		{Name: "body", Type: model.TypeText},
		{Name: "tags", Type: model.TypeMultiple},
		{Name: "n", Type: model.TypeInt},
	}
	setup := func(a *Applier) uint32 { return placeNotes(t, a, at, cols) }
	a, b := openReplayReplica(t), openReplayReplica(t)
	dbA, dbB := setup(a), setup(b)
	if dbA != dbB {
		t.Fatalf("databases %d and %d", dbA, dbB)
	}
	r := rand.New(rand.NewPCG(7, 7))
	words := func(n, vocab int) string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("w%d", r.IntN(vocab))
		}
		return strings.Join(out, " ")
	}
	next := 0
	// group makes the writes of one group: mostly inserts, then an update
	// of an earlier record, an insert of an id that exists and one whose
	// value does not convert.
	group := func(round int) []*WriteRecords {
		var ws []*WriteRecords
		one := func(op model.Op) {
			op.Table = "notes"
			ws = append(ws, &WriteRecords{Branch: "main", Now: at.Add(time.Duration(round) * time.Second), Ops: []model.Op{op}})
		}
		for i := range 12 {
			next++
			one(model.Op{Kind: model.OpInsert, ID: fmt.Sprintf("r%03d", next), CreateOnly: true, Values: map[string]any{
				"title": words(2, 5),
				"body":  words(10, 20+40*round),
				"tags":  []any{fmt.Sprint("t", i%3), fmt.Sprint("t", i%3), "all"},
				"n":     int64(next % 4),
			}})
			switch i {
			case 4:
				one(model.Op{Kind: model.OpUpdate, ID: "r001", Values: map[string]any{"body": words(5, 30), "n": int64(round)}})
			case 7:
				one(model.Op{Kind: model.OpInsert, ID: "r002", CreateOnly: true, Values: map[string]any{"body": "again"}})
			case 9:
				one(model.Op{Kind: model.OpInsert, ID: fmt.Sprintf("bad%d", round), Values: map[string]any{"n": "not a number"}})
			}
		}
		return ws
	}
	for round := range 3 {
		wa := group(round)
		applyGroupBothWays(t, fmt.Sprint("round ", round), a, b, dbA, dbB, wa)
		nPrepared := 0
		for _, w := range wa {
			if w.prep != nil {
				nPrepared++
			}
		}
		// The 12 inserts and the insert of an existing id; not the update,
		// nor the insert whose value does not convert.
		if nPrepared != 13 {
			t.Fatalf("round %d: %d writes prepared, want 13", round, nPrepared)
		}
		compareReplicas(t, 0, round, a, b)
	}
}

// TestGroupPreparedLinks applies groups of bulk writes whose records link
// to records of their own table to two data directories, one preparing
// the writes (which looks their link targets up together before applying
// them, resolveLinks) and one applying them record by record. The links
// name records stored before, records deleted by an earlier write of the
// same group, records inserted earlier or later in the same write and
// records that never existed. Every write must get the same answer on
// both sides, and the databases must end byte-identical.
func TestGroupPreparedLinks(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	cols := []model.ColumnDef{
		{Name: "title", Type: model.TypeString},
		{Name: "parent", Type: model.TypeLink, Link: &model.LinkDef{Table: "notes"}},
	}
	setup := func(a *Applier) uint32 { return placeNotes(t, a, at, cols) }
	a, b := openReplayReplica(t), openReplayReplica(t)
	dbA, dbB := setup(a), setup(b)
	// bulk makes a write of 20 records, named prefix00…, whose parents
	// are given by record (none past the end of parents).
	bulk := func(prefix string, parents ...string) *WriteRecords {
		w := &WriteRecords{Branch: "main", Now: at, Bulk: true}
		for i := range 20 {
			v := map[string]any{"title": fmt.Sprint("t", i%3)}
			if i < len(parents) && parents[i] != "" {
				v["parent"] = parents[i]
			}
			w.Ops = append(w.Ops, model.Op{Kind: model.OpInsert, Table: "notes", ID: fmt.Sprintf("%s%02d", prefix, i), CreateOnly: true, Values: v})
		}
		return w
	}
	del := func(id string) *WriteRecords {
		return &WriteRecords{Branch: "main", Now: at, Ops: []model.Op{{Kind: model.OpDelete, Table: "notes", ID: id}}}
	}
	groups := [][]*WriteRecords{
		// Parents inserted earlier in the same write, one twice.
		{bulk("p", "", "p00", "p00", "p01")},
		{
			del("p03"),
			// Its first record links to the record just deleted: it
			// fails before staging anything, and the group goes on in
			// one batch.
			bulk("a", "p03", "p00"),
			bulk("b", "p00", "p01", "p02", "p04", "p01", "b00", "p00", "b03"),
			// A record inserted later in the same write, then one
			// that never existed: each fails at its record.
			bulk("c", "p00", "c05"),
			bulk("d", "p01", "p02", "nope"),
			del("p04"),
			// A record deleted in this group, after other writes linked
			// to it, in the middle of a write: the group is applied
			// write by write from there.
			bulk("e", "p00", "p01", "p04"),
			bulk("f", "p02", "b07", "f00"),
		},
	}
	for g, wa := range groups {
		applyGroupBothWays(t, fmt.Sprint("group ", g), a, b, dbA, dbB, wa)
		for i, w := range wa {
			if len(w.Ops) > 1 && w.prep == nil {
				t.Fatalf("group %d write %d not prepared", g, i)
			}
		}
		compareReplicas(t, 0, g, a, b)
	}
}

// applyGroupBothWays applies ws as one group to database dbA of a,
// preparing each write first as a concurrent writer does, and a copy of
// ws as one group to database dbB of b, unprepared, applied record by
// record. Every write must get the same answer on both sides; label
// names the group in a failure. The writes of ws keep what preparing
// them left (prep).
func applyGroupBothWays(t *testing.T, label string, a, b *Applier, dbA, dbB uint32, ws []*WriteRecords) {
	t.Helper()
	run := func(ap *Applier, db uint32, ws []*WriteRecords, prepared bool) []*groupReq {
		d := ap.DB(db)
		var reqs []*groupReq
		for _, w := range ws {
			if prepared {
				w.prepare(d, true)
			}
			reqs = append(reqs, &groupReq{cmd: w, done: make(chan struct{})})
		}
		d.mu.Lock()
		ap.applyGroup(d, reqs) // releases d.mu
		return reqs
	}
	copies := make([]*WriteRecords, len(ws))
	for i, w := range ws {
		c := *w
		c.Ops = slices.Clone(w.Ops)
		copies[i] = &c
	}
	ra, rb := run(a, dbA, ws, true), run(b, dbB, copies, false)
	for i := range ra {
		if fmt.Sprint(ra[i].err) != fmt.Sprint(rb[i].err) {
			t.Fatalf("%s write %d: %v / %v", label, i, ra[i].err, rb[i].err)
		}
		if ra[i].err != nil {
			t.Logf("%s write %d: %v", label, i, ra[i].err)
			continue
		}
		x, err := EncodeResult(OnDatabase(dbA, ws[i]), ra[i].res)
		if err != nil {
			t.Fatal(err)
		}
		y, _ := EncodeResult(OnDatabase(dbB, copies[i]), rb[i].res)
		if !bytes.Equal(x, y) {
			t.Fatalf("%s write %d: results %s and %s", label, i, x, y)
		}
	}
}
