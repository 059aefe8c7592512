package memstore

import (
	"context"
	"sync"

	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// A slot holds one structure derived for one table of one branch, its
// owner: the table's column store, its search store, or the vector store
// of one of its columns. The owner's writes keep it current; branches
// that see exactly the owner's rows of the table read it too (share.go).
//
// A query may read a structure for as long as it runs, and writes must
// not wait for it. So a slot is changed only by whoever holds its own lock
// for writing, and readers hold that lock for reading while they use it:
//
//   - A writer, once its batch is visible, queues its changes of the table
//     on the slot (the backlog) and applies them at once if it gets the
//     slot's lock without waiting; otherwise readers use the slot, and the
//     changes wait for the next writer or reader who gets the lock.
//   - A reader that finds changes queued applies them first if it gets the
//     lock without waiting. If it cannot, the slot does not show the
//     reader's snapshot: a reader that can goes without it (reading
//     storage), one that must have it waits for the slot's readers to be
//     done and applies the changes then (catchUp), new readers waiting
//     behind it. A reader never waits for a slot holding the store lock,
//     so writes never wait for readers.
//
// Readers decide and take their snapshot holding the lock of the slot's
// table (DB's tableLock) for reading, and writers of the table hold it for
// writing from before their batch becomes visible until their changes are
// queued: a reader that finds no change queued has a snapshot the slot
// shows exactly.
type slot struct {
	d     *DB
	kind  Kind
	owner storeKey // the owner branch and the table
	col   uint32   // the vector column, for a vector store
	sig   string   // model.Table.Sig of the table it was built for
	entry *Entry   // under the memory budget

	// mu is held for reading by the readers of the structure, and for
	// writing while changes are applied or the structure is built. Below
	// storeMu and the table locks in the lock order: nobody takes them
	// holding it, and nobody holding them waits for it but for a change
	// being applied, which takes no other lock.
	mu sync.RWMutex

	// building, dead and built are guarded by the lock of the table
	// (tableLock; or storeMu for writing).
	building bool          // the build has not ended: mu is held by the builder
	dead     bool          // dropped: no reader picks it, no write reaches it
	built    chan struct{} // closed when the build ends
	err      error         // why the build failed; set before built closes

	bmu     sync.Mutex // guards backlog and caught; a leaf
	backlog []change
	// caught is closed once the changes a reader waits to apply are
	// applied (catchUp); nil while none waits.
	caught chan struct{}

	// The structure, one of these by kind; set by the build.
	table  *TableStore
	search *SearchStore
	vector *VectorStore
}

// change is what one command did to a slot's table: the rows it wrote,
// and the words new to the table's layer.
type change struct {
	rows  []apply.RowChange
	terms map[string]struct{}
}

// newSlot returns a slot being built, its lock held by the caller.
func (d *DB) newSlot(kind Kind, owner storeKey, col uint32, t *model.Table) *slot {
	s := &slot{d: d, kind: kind, owner: owner, col: col, sig: t.Sig, building: true, built: make(chan struct{})}
	s.mu.Lock()
	return s
}

// queue adds a command's changes of the slot's table, applying them now
// when no reader holds the slot. The caller holds the table's lock for
// writing, or storeMu for writing.
func (s *slot) queue(c change) {
	s.bmu.Lock()
	s.backlog = append(s.backlog, c)
	s.bmu.Unlock()
	if s.mu.TryLock() {
		s.drain()
		s.mu.Unlock()
	}
}

// pending reports whether changes wait to be applied.
func (s *slot) pending() bool {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	return len(s.backlog) > 0
}

// drain applies the queued changes, in order. The caller holds mu for
// writing.
func (s *slot) drain() {
	applied := false
	for {
		s.bmu.Lock()
		b := s.backlog
		s.backlog = nil
		s.bmu.Unlock()
		if len(b) == 0 {
			break
		}
		applied = true
		for _, c := range b {
			s.apply(c)
		}
	}
	if applied && s.entry != nil && !s.building {
		s.entry.Resize(s.size())
	}
}

// apply applies one command's changes to the structure.
func (s *slot) apply(c change) {
	switch s.kind {
	case KindColumnStore:
		for i := range c.rows {
			s.table.apply(c.rows[i].Row, c.rows[i].Rec)
		}
	case KindSearchStore:
		s.search.apply(c)
	case KindVectorStore:
		for i := range c.rows {
			s.vector.apply(c.rows[i].Row, c.rows[i].Rec)
		}
	}
}

// size measures the structure. The caller holds mu.
func (s *slot) size() int64 {
	switch {
	case s.table != nil:
		return s.table.size()
	case s.search != nil:
		return s.search.size()
	case s.vector != nil:
		return s.vector.size()
	}
	return 0
}

// tryRead takes the slot for reading, applying the changes queued first
// when it can, without waiting. It fails when the slot is dead or being
// built (busy false), or when changes are queued and readers hold it, or
// someone waits to apply them (busy: catchUp waits for that). The caller
// holds the table's lock for reading: no change is queued meanwhile, and
// it must not wait for the slot's lock, which would hold back writers
// behind the slot's readers.
func (s *slot) tryRead() (ok, busy bool) {
	if s.dead || s.building {
		return false, false
	}
	if !s.mu.TryRLock() {
		return false, true
	}
	if !s.pending() {
		return true, false
	}
	s.mu.RUnlock()
	if !s.mu.TryLock() {
		return false, true
	}
	s.drain()
	s.mu.Unlock()
	if !s.mu.TryRLock() {
		return false, true
	}
	return true, false
}

// catchUp waits until the slot's readers are done, as long as ctx lasts,
// and applies the changes queued; new readers wait for it meanwhile. It
// holds no other lock. When ctx ends first, the changes are applied all
// the same once the readers are done.
func (s *slot) catchUp(ctx context.Context) error {
	select {
	case <-s.startCatchUp():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startCatchUp starts applying the changes queued once the slot's readers
// are done, in a goroutine of its own (one at a time), and returns what is
// closed when they are applied.
func (s *slot) startCatchUp() <-chan struct{} {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	if s.caught == nil {
		done := make(chan struct{})
		s.caught = done
		go func() {
			s.mu.Lock()
			s.drain()
			s.mu.Unlock()
			s.bmu.Lock()
			s.caught = nil
			s.bmu.Unlock()
			close(done)
		}()
	}
	return s.caught
}
