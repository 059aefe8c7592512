package memstore

import "github.com/coppice-db/coppice/engine/internal/apply"

// A database's in-memory structures (column, search and vector stores,
// bitmap caches and the write marks that decide which branches may share
// a store) are kept current by the database itself, as the observer the
// write path tells of every command (apply.Observer).

// Prepare takes the store lock when stores exist and the command changes
// them, and makes the epochs of the written tables' caches odd until the
// command ends.
func (d *DB) Prepare(tx *apply.Tx) func(bool) {
	lock := d.hasStores.Load() && (len(tx.Rows()) > 0 || tx.ChangedBranches())
	if lock {
		d.storeMu.Lock()
	}
	endWrite := d.startWrite(tx) // cache epochs odd: a write is in flight
	return func(applied bool) {
		if applied {
			if tx.ChangedBranches() {
				d.forgetWrites()
			}
			if lock {
				d.updateStores(tx)
			}
		}
		endWrite() // even again: the write is visible, or failed
		if lock {
			d.storeMu.Unlock()
		}
	}
}

// Dropped makes the deleted database unreachable to new readers; its
// structures go with the last reader that holds it.
func (d *DB) Dropped() {
	d.reg.mu.Lock()
	delete(d.reg.dbs, d.ID)
	d.reg.mu.Unlock()
}

// forgetWrites drops the write marks of branches that no longer exist: a
// deleted branch writes no more. The caller holds the writer lock.
func (d *DB) forgetWrites() {
	st := d.State()
	for k := range d.written {
		if st.ByID[k.Branch] == nil {
			delete(d.written, k)
		}
	}
}
