package memstore

import (
	"slices"

	"github.com/coppice-db/coppice/engine/internal/apply"
)

// A database's in-memory structures (column, search and vector stores,
// and bitmap caches) are kept current by the database itself, as the
// observer the write path tells of every command (apply.Observer).

// Prepare takes the store lock when the command changes branches, or the
// locks of the tables it writes when it writes rows (DB), and makes the
// epochs of the written tables' caches odd until the command ends. Once
// the command is applied, it drops the structures of branches and tables
// that went or changed their columns, and queues the rows written on the
// structures that follow them (slot.go); then it lets the readers in.
func (d *DB) Prepare(tx *apply.Tx) func(bool) {
	var locked []*tableLock
	exclusive := tx.ChangedBranches()
	switch {
	case exclusive:
		d.storeMu.Lock()
	case len(tx.Rows()) > 0:
		locked = d.lockWritten(tx.Rows())
	}
	endWrite := d.startWrite(tx) // cache epochs odd: a write is in flight
	if fn := d.reg.prepared.Load(); fn != nil && len(tx.Rows()) > 0 {
		(*fn)(tx)
	}
	return func(applied bool) {
		if applied {
			if exclusive {
				d.dropStale(tx)
			}
			if len(tx.Rows()) > 0 {
				d.queueChanges(tx)
			}
		}
		endWrite(applied) // even again: the write is visible, or failed
		switch {
		case exclusive:
			d.storeMu.Unlock()
		case locked != nil:
			for _, tl := range locked {
				tl.mu.Unlock()
			}
			d.storeMu.RUnlock()
		}
	}
}

// lockWritten takes storeMu for reading and the locks of the tables rows
// were written to for writing, in increasing table id, and returns those.
func (d *DB) lockWritten(rows []apply.RowChange) []*tableLock {
	ids := []uint32{rows[0].Table}
	for i := range rows {
		if t := rows[i].Table; !slices.Contains(ids, t) {
			ids = append(ids, t)
		}
	}
	slices.Sort(ids)
	d.storeMu.RLock()
	locked := make([]*tableLock, len(ids))
	for i, id := range ids {
		locked[i] = d.table(id)
		locked[i].mu.Lock()
	}
	return locked
}

// dropStale drops the structures and caches of the branches the command
// removed, and those of the tables of the branches it changed that are
// gone or hold other columns now. The caller holds storeMu for writing.
func (d *DB) dropStale(tx *apply.Tx) {
	st := d.State()
	for _, id := range tx.BranchesChanged() {
		b := st.ByID.At(id)
		d.tables.Range(func(tid, tl any) bool {
			ts := tl.(*tableLock).slots[id]
			if ts == nil {
				return true
			}
			var sig string
			if b != nil {
				if t := b.Schema.TableByID(tid.(uint32)); t != nil {
					sig = t.Sig
				}
			}
			var stale []*slot
			ts.all(func(s *slot) {
				if s.sig != sig {
					stale = append(stale, s)
				}
			})
			for _, s := range stale {
				d.drop(s)
			}
			return true
		})
		d.dropCaches(id, func(table uint32) bool { return b == nil || b.Schema.TableByID(table) == nil })
		d.forgetCounts(id)
	}
	d.pruneTables()
}

// queueChanges queues the rows a command wrote on the structures of their
// tables. The caller holds the locks of those tables for writing, or
// storeMu for writing.
func (d *DB) queueChanges(tx *apply.Tx) {
	rows := tx.Rows()
	first := storeKey{Branch: rows[0].Branch, Table: rows[0].Table}
	one := true
	for i := range rows {
		if rows[i].Branch != first.Branch || rows[i].Table != first.Table {
			one = false
			break
		}
	}
	if one {
		// The usual case, a command on one table: its rows as they are.
		d.queue(first, change{rows: rows, terms: tx.Terms()[first]})
		return
	}
	groups := map[storeKey][]apply.RowChange{}
	var order []storeKey
	for _, r := range rows {
		k := storeKey{Branch: r.Branch, Table: r.Table}
		if d.slotsOf(k) == nil {
			continue
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	for _, k := range order {
		d.queue(k, change{rows: groups[k], terms: tx.Terms()[k]})
	}
}

// slotsOf returns the structures of a table of a branch, or nil. The
// caller holds the table's lock or storeMu for writing.
func (d *DB) slotsOf(k storeKey) *tableSlots {
	if tl, ok := d.tables.Load(k.Table); ok {
		return tl.(*tableLock).slots[k.Branch]
	}
	return nil
}

// queue queues one command's changes of a table on its structures.
func (d *DB) queue(k storeKey, c change) {
	if ts := d.slotsOf(k); ts != nil {
		ts.all(func(s *slot) { s.queue(c) })
	}
}

// Dropped drops every structure and cache of the deleted database and
// makes it unreachable to new readers; the structures readers hold go with
// the last of them.
func (d *DB) Dropped() {
	d.reg.mu.Lock()
	delete(d.reg.dbs, d.ID)
	d.reg.mu.Unlock()
	d.ids.Remove()
	d.IDs.Clear()
	d.storeMu.Lock()
	d.tables.Range(func(_, tl any) bool {
		for _, ts := range tl.(*tableLock).slots {
			var all []*slot
			ts.all(func(s *slot) { all = append(all, s) })
			for _, s := range all {
				d.drop(s)
			}
		}
		return true
	})
	d.pruneTables()
	d.storeMu.Unlock()
	d.cachesMu.Lock()
	var branches []uint32
	for id := range d.cacheTables {
		branches = append(branches, id)
	}
	d.cachesMu.Unlock()
	for _, id := range branches {
		d.dropCaches(id, func(uint32) bool { return true })
	}
	d.counts.Clear()
}
