package apply

import (
	"maps"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// Group commit of single-record writes. Concurrent writes of one record
// each (WriteRecords of one operation) on a database are applied as one
// command: the writer that takes the database's writer lock stages every
// write waiting for it into one batch, one after the other, each seeing
// the ones before, and commits them with one sync; every caller is
// answered once that sync is done, its own failure included. A write that
// fails is left out of the group, which is possible because a
// one-operation write fails before it stages anything; should one fail
// after staging some of its keys, the group is dropped and its writes are
// applied one at a time instead. The bitmaps the writes share then take
// one merge operand each, and the counters one write.
//
// This happens only where no copy of the database replays the commands:
// a replicated database applies its log's entries one by one, so that
// every replica writes the same bytes.

// groupReq is one write waiting to be applied in a group.
type groupReq struct {
	cmd  *WriteRecords
	res  any
	err  error
	done chan struct{}
}

// groups reports whether w is applied in a group.
func (a *Applier) groups(w *WriteRecords) bool {
	return !a.opts.Replicated && !w.Bulk && len(w.Ops) == 1
}

// applyGrouped applies w with the other single-record writes waiting for
// d's writer lock, and returns w's result once it is durable.
func (a *Applier) applyGrouped(d *DB, w *WriteRecords) (any, error) {
	r := &groupReq{cmd: w, done: make(chan struct{})}
	d.gmu.Lock()
	d.queue = append(d.queue, r)
	d.gmu.Unlock()
	d.mu.Lock()
	d.gmu.Lock()
	reqs := d.queue
	d.queue = nil
	d.gmu.Unlock()
	if len(reqs) == 0 {
		// An earlier holder of the lock took r into its group.
		d.mu.Unlock()
	} else {
		a.applyGroup(d, reqs)
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
		reqs[0].res, reqs[0].err = a.applyLocked(d, reqs[0].cmd, nil)
		return
	}
	unlocked := false
	unlock := func() {
		if !unlocked {
			unlocked = true
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
	staged := 0
	for _, r := range reqs {
		n, rows, changes := tx.batch.Count(), maps.Clone(tx.rows), len(tx.changes)
		res, err := r.cmd.apply(tx)
		if err == nil {
			r.res = res
			staged++
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
	if staged == 0 {
		tx.batch.Close()
		return
	}
	if tx.pending.Bitmaps() >= unindexAt {
		tx.batch = a.unindexed(tx.batch)
	}
	if err := tx.finish(); err != nil {
		tx.batch.Close()
		fail(err)
		return
	}
	if err := a.commitTx(d, tx, unlock); err != nil {
		fail(err)
	}
}
