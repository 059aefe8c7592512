package memstore

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Closing the storage engine's earliest snapshot makes it look for
// compactions under its mutex, as that snapshot may have been all that
// kept obsolete versions: with reads one at a time, every read's snapshot
// is the earliest, and that look was a tenth of a small query. So a view's
// snapshot is taken above a floor: a snapshot that the registry keeps for
// at most floorAge, taken before the views' and closed after it. Closing
// a view's snapshot above it looks for nothing; the floor's close looks
// once for all of them. Versions it keeps from compactions are at most
// floorAge old, and none once reads stop.

// floorAge is how long a floor snapshot stays.
const floorAge = time.Second

// snapFloor is the registry's floor snapshot. The zero value has none.
type snapFloor struct {
	mu     sync.Mutex
	snap   *pebble.Snapshot // nil: none
	closed bool             // Close ran: no floor any more
}

// snapshot returns a new snapshot of pdb above the floor, which it takes
// when there is none.
func (f *snapFloor) snapshot(pdb *pebble.DB) *pebble.Snapshot {
	f.mu.Lock()
	if f.snap == nil && !f.closed {
		s := pdb.NewSnapshot()
		f.snap = s
		time.AfterFunc(floorAge, func() { f.drop(s) })
	}
	f.mu.Unlock()
	return pdb.NewSnapshot()
}

// drop closes the floor s, if it still is the floor.
func (f *snapFloor) drop(s *pebble.Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.snap == s {
		f.snap = nil
		_ = s.Close() // a snapshot's Close fails never
	}
}

// close closes the floor for good: the storage engine is closing.
func (f *snapFloor) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	if f.snap != nil {
		_ = f.snap.Close()
		f.snap = nil
	}
}
