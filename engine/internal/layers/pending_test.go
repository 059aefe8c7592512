package layers

import (
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"
)

// TestPendingLookupAfterWrite stages bitmaps out of id order with a lookup
// between them, writes them (which sorts them), and looks each up again:
// every one is still found with its changes.
func TestPendingLookupAfterWrite(t *testing.T) {
	db, err := pebble.Open(t.TempDir(), &pebble.Options{Merger: Merger})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p := NewPending(1)
	pt := p.Table(0, 7)
	ids := []string{"m", "z", "a", "q", "b"}
	for i, id := range ids {
		pt.Add([]byte(id), uint32(i), true)
		if i == 1 {
			p.ApplyTo(0, 7, "m", nil) // indexes "m" and "z"
		}
	}
	b := db.NewBatch()
	defer b.Close()
	if err := p.Write(b, func(uint32) (uint64, bool) { return 0, false }, 1); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		set := roaring.New()
		if !p.ApplyTo(0, 7, id, set) || !set.Contains(uint32(i)) || set.GetCardinality() != 1 {
			t.Errorf("bitmap %q after Write: %v", id, set.ToArray())
		}
	}
}
