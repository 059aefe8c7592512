package memstore

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestSnapshotsAboveTheFloor: views' snapshots are taken above a floor
// snapshot, so that closing them is not closing the earliest; the floor
// goes when it is dropped or closed, and none is taken after Close.
func TestSnapshotsAboveTheFloor(t *testing.T) {
	pdb, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	open := func() int { return pdb.Metrics().Snapshots.Count }
	var f snapFloor
	a := f.snapshot(pdb)
	if n := open(); n != 2 {
		t.Fatalf("%d snapshots open after the first, want it and the floor", n)
	}
	floor := f.snap
	if err := pdb.Set([]byte("k"), []byte("v"), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	b := f.snapshot(pdb)
	if f.snap != floor || open() != 3 {
		t.Fatalf("the second snapshot took another floor: %d open", open())
	}
	if _, closer, err := b.Get([]byte("k")); err != nil {
		t.Fatalf("a snapshot above the floor does not see a write before it: %v", err)
	} else {
		closer.Close()
	}
	a.Close()
	b.Close()
	f.drop(floor)
	if n := open(); n != 0 {
		t.Fatalf("%d snapshots open after the floor was dropped", n)
	}
	c := f.snapshot(pdb)
	f.close()
	c.Close()
	d := f.snapshot(pdb)
	d.Close()
	if n := open(); n != 0 {
		t.Fatalf("%d snapshots open after Close", n)
	}
}
