package memstore

import (
	"slices"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// Live-row counts. The rows of a table a branch sees change only with the
// writes to the layers of its lineage read as they are now (model.MaxSeq:
// its own top layer); the others are read frozen at a fork's seq. So once
// a branch's live rows of a table are counted from storage, the count
// holds for as long as its lineage is the same and none of those layers
// had the table written since. A child that has not written a table is
// counted once, not at every count: the metrics count every branch's
// records at every scrape, and a database with many children would read
// their live-row bitmaps from storage each time.

// liveCount is the remembered count of a table of a branch, with what it
// was counted under.
type liveCount struct {
	lin   model.Lineage
	marks []uint64 // Written of each layer of lin read at MaxSeq, in order
	n     int64
}

// CountMarks returns the write marks a live-row count of table of branch
// b depends on. Take them before the snapshot the rows are counted in: a
// command that writes the table after them changes them, so a count taken
// from a later snapshot is never remembered under marks it does not show.
func (d *DB) CountMarks(b *model.Branch, table uint32) []uint64 {
	var marks []uint64
	for _, lr := range b.Lineage {
		if lr.Seq == model.MaxSeq {
			marks = append(marks, d.Written(lr.Layer, table))
		}
	}
	return marks
}

// LiveCount returns the remembered live-row count of table of branch b,
// when its lineage and marks (CountMarks, taken now) are those it was
// counted under.
func (d *DB) LiveCount(b *model.Branch, table uint32, marks []uint64) (int64, bool) {
	v, ok := d.counts.Load(storeKey{Branch: b.ID, Table: table})
	if !ok {
		return 0, false
	}
	c := v.(*liveCount)
	if !slices.Equal(c.lin, b.Lineage) || !slices.Equal(c.marks, marks) {
		return 0, false
	}
	return c.n, true
}

// SetLiveCount remembers n as the live-row count of table of branch b,
// counted in a snapshot taken after marks were.
func (d *DB) SetLiveCount(b *model.Branch, table uint32, marks []uint64, n int64) {
	k := storeKey{Branch: b.ID, Table: table}
	d.counts.Store(k, &liveCount{lin: b.Lineage, marks: marks, n: n})
	// A command that removes the branch publishes its state before it
	// forgets the branch's counts (dropStale): a count stored after that
	// is seen here, so none outlives its branch.
	if d.State().ByID.At(b.ID) == nil {
		d.counts.Delete(k)
	}
}

// forgetCounts forgets the remembered counts of branch id.
func (d *DB) forgetCounts(id uint32) {
	d.counts.Range(func(k, _ any) bool {
		if k.(storeKey).Branch == id {
			d.counts.Delete(k)
		}
		return true
	})
}
