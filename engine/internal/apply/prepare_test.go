package apply

import (
	"bytes"
	"fmt"
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
