package apply

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// TestPreparedBulkSameBytes checks that a bulk write prepared before the
// writer lock stores the same keys and values as one worked out under
// it: records whose text repeats words (their frequency bitmaps), shares
// them between two searchable columns and between records, with a
// multiple holding a value twice and a record that is refused.
func TestPreparedBulkSameBytes(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	cols := []model.ColumnDef{
		{Name: "title", Type: model.TypeString},
		{Name: "body", Type: model.TypeText},
		{Name: "tags", Type: model.TypeMultiple},
		{Name: "views", Type: model.TypeInt},
	}
	bodies := []string{
		"the cat and the hat", "a a a a a b b b c c", "Cat CAT cat cat cat cat",
		"hat trick", "", "zebra", "the the the", "ünïcode wörds wörds",
	}
	writes := func(first int) []*WriteRecords {
		var ws []*WriteRecords
		for k := range 3 {
			w := &WriteRecords{Branch: "main", Now: at, Bulk: true}
			for i := range 40 {
				n := first + k*40 + i
				vals := map[string]any{
					"title": bodies[(n+3)%len(bodies)],
					"body":  bodies[n%len(bodies)] + " " + bodies[(n*7)%len(bodies)],
					"tags":  []any{fmt.Sprintf("t%d", n%3), "x", fmt.Sprintf("t%d", n%3)},
					"views": n % 5,
				}
				if k == 2 && i == 39 {
					vals["views"] = "many" // refused: the write applies nothing
				}
				w.Ops = append(w.Ops, model.Op{Kind: model.OpInsert, Table: "notes", ID: fmt.Sprintf("r%d", n%90), Values: vals})
			}
			ws = append(ws, w)
		}
		return ws
	}
	run := func(minOps int) []byte {
		defer func(n int) { prepareMinOps = n }(prepareMinOps)
		prepareMinOps = minOps
		pdb, err := pebble.Open(t.TempDir(), &pebble.Options{Merger: layers.Merger, Logger: quietLogger{t}})
		if err != nil {
			t.Fatal(err)
		}
		defer pdb.Close()
		a, err := Open(pdb, Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		db := placeNotes(t, a, at, cols)
		for _, w := range append(writes(0), writes(100)...) {
			_, err := a.Apply(OnDatabase(db, w))
			if wantErr := w.Ops[len(w.Ops)-1].Values["views"] == "many"; (err != nil) != wantErr {
				t.Fatalf("prepared from %d ops: error %v, want one: %v", minOps, err, wantErr)
			}
			if w.prep == nil && len(w.Ops) >= minOps {
				t.Fatalf("prepared from %d ops: a write of %d was not prepared", minOps, len(w.Ops))
			}
		}
		return dumpRange(t, pdb, nil)
	}
	prepared, unprepared := run(2), run(1<<30)
	if !bytes.Equal(prepared, unprepared) {
		t.Fatalf("prepared writes stored %d bytes of keys and values, unprepared ones %d, not the same", len(prepared), len(unprepared))
	}
}

// TestSortPostingsOrdersIDs checks that prepared postings come out in the
// order of their ids, among ids that share their first 16 bytes, are
// prefixes of one another or end in zero bytes (a word's bitmap id and
// its frequency bitmaps' ids are such), few of them or a bulk write's
// many.
func TestSortPostingsOrdersIDs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		var ps []posting
		seen := map[string]bool{}
		n := 1 + r.IntN(60)
		if round%4 == 0 {
			n = radixMin + r.IntN(2000) // sorted by radix
		}
		for range n {
			id := make([]byte, r.IntN(24))
			for i := range id {
				id[i] = "\x00\x01ab\xff"[r.IntN(5)]
			}
			if r.IntN(3) == 0 && len(ps) > 0 {
				// extend another id, by zero bytes or others
				id = append([]byte(ps[r.IntN(len(ps))].id), id[:min(len(id), r.IntN(3))]...)
			}
			if !seen[string(id)] {
				seen[string(id)] = true
				ps = append(ps, posting{id: string(id)})
			}
		}
		got := sortPostings(ps)
		want := slices.Clone(ps)
		slices.SortFunc(want, func(a, b posting) int { return strings.Compare(a.id, b.id) })
		for i := range want {
			if got[i].id != want[i].id {
				t.Fatalf("round %d: at %d got %q, want %q", round, i, got[i].id, want[i].id)
			}
		}
	}
}
