package apply

import (
	"maps"
	"slices"
	"time"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// Group commit. Concurrent writes of records (WriteRecords: a
// single-record write or a bulk insert) on a database are applied as one
// command: the writer that takes the database's writer lock stages the
// writes waiting for it into one batch, one after the other, each seeing
// the ones before, and commits them with one sync; every caller is
// answered once that sync is done, its own failure included.
// Single-record inserts that arrive while groups are under way convert
// their values and list their bitmaps before they queue (prepare.go),
// side by side, so that the writer only stages them. A write that fails
// before it stages anything (a single-record write always does) is left
// out of the group; should one fail after staging some of its keys (a
// bulk insert whose later record is refused), the group is dropped and
// its writes are applied one at a time instead, so that each is applied
// whole or not at all, whatever the others hold. The bitmaps the writes
// share then take one merge operand each, and the counters and the words
// new to a layer one key each. A group holds up to maxGroupOps
// operations: the rest wait for the next one. At most maxGroupsInFlight
// groups of a database are under way at once, the next waiting for the
// sync of the oldest: while it syncs, the waiting writes pile up into one
// group instead of each committing alone. A waiting write's caller is
// told it only waits from then on (WriteRecords.Queued).
//
// This happens only where no copy of the database replays the commands:
// a replicated database applies its log's entries one by one, so that
// every replica writes the same bytes.

// maxGroupOps bounds the operations of a group: a few bulk inserts of
// 1000 records, which share most of their bitmaps, while the batch stays
// a few megabytes.
const maxGroupOps = 4096

// groupReq is one write waiting to be applied in a group.
type groupReq struct {
	cmd  *WriteRecords
	res  any
	err  error
	done chan struct{}
	// taken is set, under DB.gmu, once a writer took the request from
	// the queue into its group.
	taken bool
}

// groups reports whether w is applied in a group.
func (a *Applier) groups(w *WriteRecords) bool {
	return !a.opts.Replicated && len(w.Ops) > 0 && (w.Bulk || len(w.Ops) == 1)
}

// grouping reports whether writes of d are being applied in groups: a
// write arriving now waits for the writer lock or for a group's sync, and
// a single-record write prepares meanwhile what it can (prepare.go). A
// lone writer does not: it would only do the same work in another order.
func (d *DB) grouping() bool {
	d.gmu.Lock()
	defer d.gmu.Unlock()
	return d.groups > 0 || len(d.queue) > 0
}

// maxGroupsInFlight bounds the groups of a database taken from its queue
// and not yet synced: one syncing while the next is staged. A writer
// that would start a third waits, and the writes arriving meanwhile join
// its group: the groups grow with the writers rather than the syncs
// multiplying, and each sync carries fewer keys per write, the bitmaps
// the writes of a group share taking one operand each.
const maxGroupsInFlight = 2

// applyGrouped applies w with the other writes waiting for d's writer
// lock, and returns w's result once it is durable. Once it has a place
// among the groups in flight, the holder of the lock applies the oldest
// waiting writes as a group, and goes on with the next ones until its
// own has been applied.
func (a *Applier) applyGrouped(d *DB, w *WriteRecords) (any, error) {
	r := &groupReq{cmd: w, done: make(chan struct{})}
	d.gmu.Lock()
	d.queue = append(d.queue, r)
	d.gmu.Unlock()
	if w.Queued != nil {
		w.Queued()
	}
	for {
		d.gmu.Lock()
		for d.groups >= maxGroupsInFlight && !r.taken {
			if d.groupEnd == nil {
				d.groupEnd = make(chan struct{})
			}
			end := d.groupEnd
			d.gmu.Unlock()
			<-end
			d.gmu.Lock()
		}
		taken := r.taken
		d.gmu.Unlock()
		if taken {
			// An earlier holder of the lock took r into its group.
			break
		}
		d.mu.Lock()
		d.gmu.Lock()
		if r.taken || d.groups >= maxGroupsInFlight {
			d.gmu.Unlock()
			d.mu.Unlock()
			continue
		}
		n, ops := 0, 0
		for n < len(d.queue) && (n == 0 || ops+len(d.queue[n].cmd.Ops) <= maxGroupOps) {
			ops += len(d.queue[n].cmd.Ops)
			d.queue[n].taken = true
			n++
		}
		reqs := slices.Clone(d.queue[:n])
		d.queue = slices.Delete(d.queue, 0, n)
		d.groups++
		d.gmu.Unlock()
		a.applyGroup(d, reqs) // releases d.mu
		d.gmu.Lock()
		d.groups--
		if d.groupEnd != nil {
			close(d.groupEnd)
			d.groupEnd = nil
		}
		d.gmu.Unlock()
		if slices.Contains(reqs, r) {
			break
		}
	}
	<-r.done
	return r.res, r.err
}

// applyGroup applies reqs as one command; the caller holds d.mu, which is
// released once the batch is visible. Every request is answered, after
// the sync, when the call returns.
func (a *Applier) applyGroup(d *DB, reqs []*groupReq) {
	answer := func() {
		for _, r := range reqs {
			close(r.done)
		}
	}
	defer answer()
	if len(reqs) == 1 {
		if reqs[0].res, reqs[0].err = a.applyLocked(d, reqs[0].cmd, nil); reqs[0].err == nil {
			a.groupCommits.Add(1)
			a.groupedWrites.Add(1)
		}
		return
	}
	unlocked := false
	held := time.Now()
	unlock := func() {
		if !unlocked {
			unlocked = true
			a.lockHeld.Add(uint64(time.Since(held)))
			d.mu.Unlock()
		}
	}
	defer unlock()
	if d.dropped {
		for _, r := range reqs {
			r.err = model.NotFoundf("database not found")
		}
		return
	}
	tx := beginTx(d, a.pdb.NewIndexedBatch())
	for _, r := range reqs {
		if p := r.cmd.prep; p != nil && len(p.recs) == 1 {
			tx.oneBitmaps += len(p.postings)
			tx.oneJoins += p.joins
		}
	}
	nStaged := 0
	for _, r := range reqs {
		n, rows, changes := tx.batch.Count(), maps.Clone(tx.rows), len(tx.changes)
		res, err := r.cmd.apply(tx)
		if err == nil {
			r.res = res
			nStaged++
			continue
		}
		if tx.batch.Count() != n || len(tx.changes) != changes {
			// It staged part of its change: one at a time instead.
			tx.batch.Close()
			for i, r := range reqs {
				if i > 0 {
					d.mu.Lock()
				}
				r.res, r.err = a.applyLocked(d, r.cmd, nil)
			}
			unlocked = true // applyLocked released it
			return
		}
		tx.rows = rows // a row id it allocated is not used
		r.err = err
	}
	fail := func(err error) {
		for _, r := range reqs {
			if r.err == nil {
				r.res, r.err = nil, err
			}
		}
	}
	if nStaged == 0 {
		tx.batch.Close()
		return
	}
	if n := tx.pending.Bitmaps(); n >= unindexAt {
		tx.batch = a.unindexed(tx.batch, n)
	}
	if err := tx.finish(); err != nil {
		tx.batch.Close()
		fail(err)
		return
	}
	if err := a.commitTx(d, tx, unlock); err != nil {
		fail(err)
		return
	}
	a.groupCommits.Add(1)
	a.groupedWrites.Add(uint64(nStaged))
}
