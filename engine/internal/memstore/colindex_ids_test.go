package memstore

import (
	"math/rand/v2"
	"testing"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/index"
)

// TestIDIndexModel: random inserts and removes of rows under few hash
// values (long probe runs that wrap around the table, and growth) leave
// every row findable under its hash and no removed row findable, as a map
// says.
func TestIDIndexModel(t *testing.T) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 1))
		x := newIDIndex(0)
		want := map[uint32]uint32{} // row → hash
		for step := range 3000 {
			row := uint32(rng.IntN(400))
			if h, ok := want[row]; ok && rng.IntN(2) == 0 {
				x.remove(h, row)
				delete(want, row)
			} else if !ok {
				// Hashes near the top wrap around the table.
				h := uint32(rng.IntN(16)) - 8
				x.insert(h, row)
				want[row] = h
			}
			if x.n != len(want) {
				t.Fatalf("seed %d step %d: %d entries, want %d", seed, step, x.n, len(want))
			}
			if step%25 != 0 {
				continue
			}
			for r := range uint32(400) {
				h, live := want[r]
				if !live {
					h = uint32(r%16) - 8
				}
				got, ok := x.lookup(h, func(c uint32) bool { return c == r })
				if ok != live || (ok && got != r) {
					t.Fatalf("seed %d step %d: row %d under %d: %d %v, want live %v", seed, step, r, h, got, ok, live)
				}
			}
		}
	}
}

// TestTableStoreRowHint: the id index of a store follows inserts, deletes,
// an id moving to another row, and clones that change apart.
func TestTableStoreRowHint(t *testing.T) {
	s := newTableStore(&model.Table{})
	put := func(row uint32, id string) { s.apply(row, &codec.Record{ID: id}) }
	put(0, "a")
	put(1, "b")
	f := func(s *TableStore, id string, wantRow uint32, wantOK bool) {
		t.Helper()
		row, ok := s.RowHint(id)
		if ok != wantOK || (ok && row != wantRow) {
			t.Fatalf("RowHint(%q) = %d %v, want %d %v", id, row, ok, wantRow, wantOK)
		}
	}
	f(s, "a", 0, true) // builds the index
	f(s, "b", 1, true)
	f(s, "c", 0, false)
	put(2, "c")
	s.apply(1, nil)
	put(3, "b")
	f(s, "b", 3, true)
	f(s, "c", 2, true)
	c := s.clone()
	s.apply(0, nil)
	f(s, "a", 0, false)
	f(c, "a", 0, true)
	if s.cols[index.MetaIDColumn].ix.ids.Load().n != 2 {
		t.Fatalf("%d entries, want 2", s.cols[index.MetaIDColumn].ix.ids.Load().n)
	}
}
