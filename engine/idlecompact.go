package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
)

// Compaction after bulk writes. A bulk load leaves each bitmap chunk it
// touched as a stack of merge operands, one per batch, spread over L0 and
// the upper levels of the LSM tree with the records beside them; reads
// merge those operands and consult every level until compactions that
// the load's volume alone triggers happen to reach the keys, which they
// may never do once writes stop. So once a table has taken a bulk's worth
// of rows (and, once compacted, a quarter more than it had then) and then
// no write for a while, its key ranges are compacted
// down to the bottom level in the background: operands fold into one
// value per key and reads find each key in one place, as after
// Engine.Compact. One table at a time, never in the write path, and
// cancelled by Close.
//
// A table that took a bulk's worth of rows, but not enough to be due for
// a compaction (a large table's burst, or single writes), has its
// memtable flushed once it goes idle: the flush folds the operands each
// write left in the memtable into one per key, which every read would
// otherwise fold again (a posting that a thousand single inserts touched
// is a thousand operands), at the cost of writing the memtable once.
//
// A store that opens with files above its bottom level (the memtable the
// log replayed, which opening flushes; the last writes before the process
// stopped, whose idle compaction it never ran) keeps them for good: too
// few for the storage's own compactions to be due, they sit over the key
// ranges every read seeks, one more level for each to merge. So once the
// store has had no write for the pause after opening, it is compacted
// down to its bottom level, once, as Engine.Compact does.

// DefaultCompactIdle is the pause in a table's writes after which the key
// ranges they wrote are compacted (Options.CompactIdle 0).
const DefaultCompactIdle = 5 * time.Second

// idleCompactRows is the fewest rows a table of a layer must have taken
// since its last idle compaction for the next to be due: a bulk request's
// worth, so that a trickle of single writes does not rewrite a table.
const idleCompactRows = 1000

// idleCompactGrowth bounds the rewriting of a large table: a compaction
// rewrites all of the table's ranges, so the next is due only once the
// table has taken a further 1/idleCompactGrowth of the rows it had taken
// up to the last one. Bursts of writes to a large table then cost a
// bounded multiple of their own volume, not a rewrite of the table each.
const idleCompactGrowth = 4

// idleForget is how long a table of a layer that is not due is remembered
// after its last write: past it, its rows so far are forgotten (a table
// written again starts from idleCompactRows), so that the tables of
// deleted branches do not stay in memory.
const idleForget = time.Hour

// idleCompactKinds are the key kinds of a table that queries read: current
// records, the id map, bitmaps (postings, ordered postings, existence and
// live rows) and the words of the search stores.
var idleCompactKinds = [...]byte{codec.KindRecordCur, codec.KindIDMapCur, codec.KindBitmapCur, codec.KindTerm}

// layerTableKey names one table in one layer of one database: the unit of
// an idle compaction.
type layerTableKey struct{ db, layer, table uint32 }

// idleTable is what a table of a layer took since its last idle compaction.
type idleTable struct {
	rows  int       // rows written since the last idle compaction
	done  int       // rows written before it, since the process started
	fresh int       // rows written since the last idle flush or compaction
	last  time.Time // when last written
}

// due reports whether the table has taken enough rows for a compaction.
func (t *idleTable) due() bool { return t.rows >= t.dueRows() }

// flushDue reports whether the table has taken enough rows since the
// last idle flush or compaction for a flush.
func (t *idleTable) flushDue() bool { return t.fresh >= idleCompactRows }

// dueRows is the rows that make a compaction of the table due.
func (t *idleTable) dueRows() int { return max(idleCompactRows, t.done/idleCompactGrowth) }

// idleCompactor notes the tables commands write and compacts those that
// went idle after enough rows (idleTable.due), one at a time, in one
// background goroutine.
type idleCompactor struct {
	e    *Engine
	idle time.Duration

	mu      sync.Mutex
	written map[layerTableKey]*idleTable
	wake    chan struct{} // a table became due
	// done is closed when run returns: Close waits for it. (Not one of
	// the engine's background jobs, which tests wait for to settle: run
	// lasts until Close.)
	done chan struct{}

	// settle is set while the compaction of the store after opening is
	// due (there were files above the bottom level); opened is when it
	// opened and lastWrite the last write noted since.
	settle            bool
	opened, lastWrite time.Time

	runs, flushes, failures atomic.Int64
	bytes                   atomic.Uint64
	running                 atomic.Int64 // 1 while a table is being compacted
}

// pending counts the tables that took enough rows (idleTable.due) and wait
// to go idle or to be compacted, the one being compacted included, and
// the store's compaction after opening while it waits.
func (c *idleCompactor) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := int(c.running.Load())
	if c.settle {
		n++
	}
	for _, t := range c.written {
		if t.due() {
			n++
		}
	}
	return n
}

// newIdleCompactor returns the compactor of e, which waits idle after a
// table's last write, and after opening when e's store holds files above
// its bottom level.
func newIdleCompactor(e *Engine, idle time.Duration) *idleCompactor {
	return &idleCompactor{e: e, idle: idle, written: map[layerTableKey]*idleTable{},
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		settle: aboveBottom(e.pdb.Metrics()), opened: e.opts.Clock()}
}

// aboveBottom reports whether a level above the deepest one holding files
// holds any.
func aboveBottom(m *pebble.Metrics) bool {
	bottom := len(m.Levels) - 1
	for bottom > 0 && m.Levels[bottom].TablesCount == 0 {
		bottom--
	}
	for l := range bottom {
		if m.Levels[l].TablesCount > 0 {
			return true
		}
	}
	return false
}

// observer returns the write path's observer of database d.
func (c *idleCompactor) observer(d *apply.DB) apply.Observer {
	return idleObserver{c: c, db: d}
}

// idleObserver tells the compactor of the rows each command applied to
// one database wrote.
type idleObserver struct {
	c  *idleCompactor
	db *apply.DB
}

// Prepare notes, once the command is applied, the tables its rows went to.
func (o idleObserver) Prepare(tx *apply.Tx) func(bool) {
	if len(tx.Rows()) == 0 {
		return nil
	}
	return func(applied bool) {
		if applied {
			o.c.note(o.db, tx.Rows())
		}
	}
}

// Dropped forgets the database's tables: its range is gone.
func (o idleObserver) Dropped() {
	o.c.mu.Lock()
	for k := range o.c.written {
		if k.db == o.db.ID {
			delete(o.c.written, k)
		}
	}
	o.c.mu.Unlock()
}

// note counts rows written to the top layers of their branches, as of the
// database's state after the command.
func (c *idleCompactor) note(d *apply.DB, rows []apply.RowChange) {
	st := d.State()
	now := c.e.opts.Clock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastWrite = now
	var k layerTableKey
	var t *idleTable
	prevBranch, prevTable := ^uint32(0), ^uint32(0)
	for _, r := range rows {
		if r.Branch != prevBranch || r.Table != prevTable {
			prevBranch, prevTable = r.Branch, r.Table
			b := st.ByID.At(r.Branch)
			if b == nil || len(b.Lineage) == 0 {
				t = nil
				continue
			}
			k = layerTableKey{d.ID, b.Lineage[0].Layer, r.Table}
			if t = c.written[k]; t == nil {
				t = &idleTable{}
				c.written[k] = t
			}
			t.last = now
		}
		if t == nil {
			continue
		}
		t.fresh++
		if t.rows++; t.rows == t.dueRows() || t.fresh == idleCompactRows {
			select {
			case c.wake <- struct{}{}:
			default:
			}
		}
	}
}

// idleWork is what the compactor does next.
type idleWork int

const (
	idleNothing idleWork = iota
	idleCompact          // compact a table's key ranges
	idleFlush            // flush the memtable
	idleSettle           // compact the store after opening
)

// next picks the work due at now and marks it begun: the compaction of
// the table idle longest among those due (k), else a flush when an idle
// table is due for one, else the compaction of the store after opening
// once no write came for the pause. Without any, wait is how long until
// the first work is due (0: none will be until more rows come).
func (c *idleCompactor) next(now time.Time) (work idleWork, k layerTableKey, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var oldest time.Time
	for key, t := range c.written {
		if !t.due() && !t.flushDue() {
			if now.Sub(t.last) > idleForget {
				delete(c.written, key)
			}
			continue
		}
		if due := t.last.Add(c.idle); due.After(now) {
			if w := due.Sub(now); wait == 0 || w < wait {
				wait = w
			}
			continue
		}
		switch {
		case t.due() && (work != idleCompact || t.last.Before(oldest)):
			work, k, oldest = idleCompact, key, t.last
		case work == idleNothing:
			work = idleFlush
		}
	}
	if work == idleNothing && c.settle {
		due := c.opened
		if c.lastWrite.After(due) {
			due = c.lastWrite
		}
		if due = due.Add(c.idle); due.After(now) {
			if w := due.Sub(now); wait == 0 || w < wait {
				wait = w
			}
		} else {
			work = idleSettle
		}
	}
	switch work {
	case idleCompact:
		t := c.written[k]
		t.done += t.rows
		t.rows, t.fresh = 0, 0
	case idleFlush:
		// One flush folds what every table left in the memtable.
		for _, t := range c.written {
			t.fresh = 0
		}
	case idleSettle:
		c.settle = false
	default:
		return work, k, wait
	}
	c.running.Store(1)
	return work, k, 0
}

// run compacts tables as they go idle until the engine closes; a
// compaction under way then stops at its next step. Pauses are measured on
// the engine's clock (Options.Clock).
func (c *idleCompactor) run() {
	defer close(c.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.e.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		work, k, wait := c.next(c.e.opts.Clock())
		if work != idleNothing {
			switch work {
			case idleCompact:
				c.compact(ctx, k)
			case idleSettle:
				c.settleStore(ctx)
			default:
				c.flush(ctx)
			}
			if ctx.Err() != nil {
				return
			}
			continue
		}
		var tick <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			tick = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-tick:
		}
	}
}

// compact compacts the key ranges of one table of a layer to the bottom
// of the LSM tree and reports it as an EventIdleCompaction; Bytes is what
// the ranges took on disk before. Being cancelled is not a failure.
func (c *idleCompactor) compact(ctx context.Context, k layerTableKey) {
	defer c.running.Store(0)
	start := time.Now()
	var before uint64
	var err error
	for _, kind := range idleCompactKinds {
		lo := codec.TablePrefix(nil, k.db, k.layer, kind, k.table)
		hi := codec.PrefixEnd(lo)
		n, derr := c.e.pdb.EstimateDiskUsage(lo, hi)
		if derr != nil {
			err = derr
			break
		}
		before += n
		if err = c.e.pdb.Compact(ctx, lo, hi, false); err != nil {
			break
		}
	}
	c.compacted(ctx, start, before, err)
}

// settleStore compacts the whole store to its bottom level, unless
// nothing is left above it by now, and reports it as an
// EventIdleCompaction; Bytes is what the store took on disk before.
func (c *idleCompactor) settleStore(ctx context.Context) {
	defer c.running.Store(0)
	if !aboveBottom(c.e.pdb.Metrics()) {
		return
	}
	start := time.Now()
	// Every key starts with a namespace byte below 0xff.
	lo, hi := []byte{0}, []byte{0xff}
	before, err := c.e.pdb.EstimateDiskUsage(lo, hi)
	if err == nil {
		err = c.e.pdb.Compact(ctx, lo, hi, false)
	}
	c.compacted(ctx, start, before, err)
}

// compacted counts and reports an idle compaction begun at start over
// key ranges that took before bytes on disk; one its context cancelled
// (the engine closing) is neither.
func (c *idleCompactor) compacted(ctx context.Context, start time.Time, before uint64, err error) {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return
	}
	if err != nil {
		c.failures.Add(1)
	} else {
		c.runs.Add(1)
		c.bytes.Add(before)
	}
	c.e.obs.event(Event{Kind: EventIdleCompaction, Duration: time.Since(start), Bytes: before, Err: err})
}

// flush flushes the memtable, and waits for it unless cancelled (a flush
// on a failed disk never ends: its failure is the flush's, reported by
// the storage engine's events). It counts as an idle flush.
func (c *idleCompactor) flush(ctx context.Context) {
	defer c.running.Store(0)
	flushed, err := c.e.pdb.AsyncFlush()
	if err != nil {
		c.failures.Add(1)
		c.e.obs.event(Event{Kind: EventIdleCompaction, Err: err})
		return
	}
	select {
	case <-flushed:
		c.flushes.Add(1)
	case <-ctx.Done():
	}
}
