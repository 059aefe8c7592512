package layers

import (
	"fmt"
	"hash/maphash"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// TestIDFiltersFindWhatLookupIDFinds checks that a writer's filtered
// lookup finds every id LookupID finds: an id only in a lower layer, one
// only in the writer's batch (written before the filter was built, and
// after it with Add), a tombstone, and one the store gained after the
// filter was built (Forget).
func TestIDFiltersFindWhatLookupIDFinds(t *testing.T) {
	db, err := pebble.Open(t.TempDir(), &pebble.Options{Merger: Merger})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const dbID, table, lower, top = 1, 7, 2, 3
	lin := model.Lineage{{Layer: top, Seq: model.MaxSeq}, {Layer: lower, Seq: 10}}
	set := func(w interface {
		Set(k, v []byte, o *pebble.WriteOptions) error
	}, layer uint32, id string, e IDEntry) {
		if err := w.Set(codec.IDMapKey(nil, dbID, layer, table, id), EncodeIDEntry(e), nil); err != nil {
			t.Fatal(err)
		}
	}
	// The lower layer, committed: "low" and the tombstone of "gone".
	b := db.NewBatch()
	set(b, lower, "low", IDEntry{Row: 1, Seq: 5})
	set(b, top, "old", IDEntry{Row: 2, Seq: 11})
	set(b, top, "gone", IDEntry{Row: 3, Seq: 12, Deleted: true})
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}

	var f IDFilters
	batch := db.NewIndexedBatch()
	defer batch.Close()
	set(batch, top, "early", IDEntry{Row: 4, Seq: 13}) // before any filter
	check := func(id string) {
		t.Helper()
		we, wl, wok, err := LookupID(batch, dbID, lin, table, id)
		if err != nil {
			t.Fatal(err)
		}
		e, l, ok, err := f.LookupID(batch, dbID, lin, table, id)
		if err != nil {
			t.Fatal(err)
		}
		if e != we || l != wl || ok != wok {
			t.Fatalf("id %q: filtered lookup %v at %d (%v), want %v at %d (%v)", id, e, l, ok, we, wl, wok)
		}
	}
	for _, id := range []string{"low", "old", "gone", "early", "new"} {
		check(id)
	}
	// Written after the filter was built: found because the writer adds it.
	f.Add(top, table, "late")
	set(batch, top, "late", IDEntry{Row: 5, Seq: 13})
	check("late")
	// Written into the lower layer another way: found once forgotten.
	set(batch, lower, "copied", IDEntry{Row: 6, Seq: 9})
	f.Forget(lower, table)
	check("copied")
	if _, level, ok, err := f.LookupID(batch, dbID, lin, table, "low"); err != nil || level != 1 || !ok {
		t.Fatalf("low: level %d, ok %v, %v; want the lower layer's entry", level, ok, err)
	}
}

// TestIDFilterGrows checks that a filter grown far past its first part
// still holds every id added, and holds few that were not.
func TestIDFilterGrows(t *testing.T) {
	f := newIDFilter(0)
	const n = 300_000
	for i := range n {
		f.add(maphash.String(idSeed, fmt.Sprintf("r%08d", i)))
	}
	if len(f.parts) < 3 {
		t.Fatalf("%d parts, want the filter grown", len(f.parts))
	}
	for i := range n {
		if !f.mayHold(maphash.String(idSeed, fmt.Sprintf("r%08d", i))) {
			t.Fatalf("id %d added, not held", i)
		}
	}
	fp := 0
	for i := range n {
		if f.mayHold(maphash.String(idSeed, fmt.Sprintf("s%08d", i))) {
			fp++
		}
	}
	if r := float64(fp) / n; r > 0.05 {
		t.Fatalf("%.3f of absent ids held, want at most 0.05", r)
	}
}
