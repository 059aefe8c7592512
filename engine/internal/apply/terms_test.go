package apply

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// wordsObserver notes the words each command reports new to a layer.
type wordsObserver struct{ news *[][]string }

func (o wordsObserver) Prepare(tx *Tx) func(bool) {
	var words []string
	for _, set := range tx.Terms() {
		words = append(words, slices.Collect(maps.Keys(set))...)
	}
	slices.Sort(words)
	*o.news = append(*o.news, words)
	return nil
}

func (wordsObserver) Dropped() {}

// TestNewWords checks the words a write reports new to a layer and
// stores the keys of: exactly those not stored before, whether the
// stored ones are all remembered, only some of them (more than fit),
// or none (after a restart), in a single-record write and in a bulk
// write, prepared before the writer lock.
func TestNewWords(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	var news [][]string
	var pdb *pebble.DB
	var a *Applier
	open := func() {
		t.Helper()
		if pdb != nil {
			if err := pdb.Close(); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		if pdb, err = pebble.Open(dir, &pebble.Options{Merger: layers.Merger, Logger: quietLogger{t}}); err != nil {
			t.Fatal(err)
		}
		obs := func(*DB) []Observer { return []Observer{wordsObserver{&news}} }
		if a, err = Open(pdb, Options{NoSync: true, Observe: obs}); err != nil {
			t.Fatal(err)
		}
	}
	open()
	t.Cleanup(func() { pdb.Close() })
	db := placeNotes(t, a, at, []model.ColumnDef{{Name: "body", Type: model.TypeText}})
	n := 0
	write := func(bodies ...string) {
		t.Helper()
		w := &WriteRecords{Branch: "main", Now: at, Bulk: len(bodies) > 1}
		for _, b := range bodies {
			n++
			w.Ops = append(w.Ops, model.Op{Kind: model.OpInsert, Table: "notes", ID: "r" + strings.Repeat("x", n), Values: map[string]any{"body": b}})
		}
		news = nil
		if _, err := a.Apply(OnDatabase(db, w)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want ...string) {
		t.Helper()
		if len(news) != 1 || !slices.Equal(news[0], want) {
			t.Fatalf("new words %q, want %q", news, want)
		}
		d := a.DB(db)
		b, _ := d.State().Branch("main")
		tbl, _ := b.Schema.Table("notes")
		for _, w := range want {
			if _, closer, err := pdb.Get(codec.TermKey(nil, db, b.Lineage[0].Layer, tbl.ID, w)); err != nil {
				t.Fatalf("word %q: %v", w, err)
			} else {
				closer.Close()
			}
		}
	}
	bulk := func(words string) []string {
		out := make([]string, prepareMinOps)
		for i := range out {
			out[i] = words
		}
		return out
	}

	defer func(m int) { maxKnownTerms = m }(maxKnownTerms)
	maxKnownTerms = 4 // fewer than the first write's words
	write("alpha beta gamma delta epsilon")
	check("alpha", "beta", "delta", "epsilon", "gamma")
	write("alpha beta gamma delta epsilon zeta")
	check("zeta")
	write(bulk("alpha beta gamma delta epsilon zeta eta")...)
	check("eta")

	open() // nothing remembered, more stored words than fit
	write("alpha beta gamma delta epsilon zeta eta theta")
	check("theta")

	maxKnownTerms = 1 << 18
	open() // every stored word fits
	write("alpha theta iota")
	check("iota")
	write(bulk("beta iota kappa")...)
	check("kappa")
	write("kappa lambda")
	check("lambda")
}

// placeNotes creates database "db" with its main branch, and in it the
// table "notes" with columns cols; it returns the database's id.
func placeNotes(t testing.TB, a *Applier, at time.Time, cols []model.ColumnDef) uint32 {
	t.Helper()
	res, err := a.Apply(OnCatalog(&catalog.PlaceDatabase{
		Database: catalog.Database{Name: "db", Region: "local", CreatedAt: at},
		First:    &catalog.FirstBranch{Name: "main", PublicID: "bb_main", Now: at},
	}))
	if err != nil {
		t.Fatal(err)
	}
	db := res.(*catalog.Database).ID
	hdr := func(id string) SchemaHeader { return SchemaHeader{Branch: "main", ID: id, Now: at} }
	for _, cmd := range []DBCommand{
		&SchemaOp{SchemaHeader: hdr("mig_0000000000000000000a"), Op: model.MigrationOp{AddTable: &model.TableOp{Table: "notes"}}},
		&SetTableColumns{SchemaHeader: hdr("mig_0000000000000000000b"), Table: "notes", Columns: cols},
	} {
		if _, err := a.Apply(OnDatabase(db, cmd)); err != nil {
			t.Fatal(err)
		}
	}
	return db
}
