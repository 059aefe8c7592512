package engine

import (
	"sync"
	"sync/atomic"

	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// storeKey names the structures derived for one table of one branch.
type storeKey = model.TableKey

// database is one open database as readers see it: the database the
// write path applies commands to, and the structures derived from its
// keys in memory, which it keeps current as its observer.
type database struct {
	*apply.DB

	// written holds, for every table of a branch written since the open,
	// the seq of the last command that wrote its rows; guarded by the
	// writer lock.
	written map[storeKey]uint64

	storeState
	hasStores atomic.Bool // some column store exists: writers must update them
	caches    sync.Map    // storeKey → *bitmapCache

	// vectors are the vector stores of vector.go, guarded by storeMu.
	vectors map[vectorKey]*vectorStore

	obs    *observer // where background work reports
	forget func()    // makes the database unreachable, once deleted
}

// updateStores applies a command's row changes to the column stores, and
// drops the stores of branches it removed or whose schema it changed.
// The caller holds storeMu.
func (d *database) updateStores(tx *apply.Tx) {
	st := d.State()
	for k, s := range d.stores {
		if b := st.ByID[k.Branch]; b == nil || b.Version != s.version {
			delete(d.stores, k)
			if s.lent && s.owner == k.Branch {
				d.endLoans(s) // a borrower never outlives its owner's entry
			}
		}
	}
	for _, c := range tx.Rows() {
		k := storeKey{Branch: c.Branch, Table: c.Table}
		s := d.stores[k]
		switch {
		case s == nil:
		case s.owner != c.Branch:
			// A borrowed store: the branch now has rows of its own.
			delete(d.stores, k)
		default:
			if s.lent {
				d.endLoans(s)
			}
			s.apply(c.Row, c.Rec)
		}
	}
	d.updateSearch(tx)
	d.updateVectorStores(tx)
}
