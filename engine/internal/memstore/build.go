package memstore

import (
	"context"
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/index"
)

// Building a structure. The builder registers the slot, being built, and
// takes its snapshot under its table's lock (DB), so that every command
// writing the table after the snapshot queues its changes on the slot;
// then it builds without any lock of the database but the slot's own
// (writes go on), applies the changes queued meanwhile, and opens the
// slot to readers. A column store whose owner forked from a branch whose store
// shows the rows the owner started from is copied from that store, and
// only the owner's own layer is read.

// errNotVector stops building the vector store of a column a schema
// change made something else meanwhile.
var errNotVector = errors.New("engine: not a vector column")

// errDegraded stops building a shared structure on an engine whose
// storage failed: its readers go without, or build their own.
var errDegraded = errors.New("engine: storage failed")

// ensure makes sure the structure of kind (and vector column col) of
// table t of branch root exists, building it, or waiting for the build
// under way, when it does not.
func (d *DB) ensure(ctx context.Context, kind Kind, root *model.Branch, t *model.Table, col uint32) error {
	for {
		k := storeKey{Branch: root.ID, Table: t.ID}
		tl := d.readTable(t.ID)
		s := d.lookup(k, kind, col)
		d.doneReading(tl)
		if s == nil || s.sig != t.Sig {
			var started bool
			var err error
			if s, started, err = d.startBuild(ctx, kind, root, t, col); err != nil || started {
				return err
			}
		}
		select {
		case <-s.built:
		case <-ctx.Done():
			return ctx.Err()
		}
		if s.err == nil {
			return nil
		}
		if !isCtxErr(s.err) {
			return s.err
		}
		// Its builder gave up: build again, for this reader.
	}
}

// buildInBackground starts building the column store of a table of root
// in the background unless it exists or is being built. A failed build is
// dropped: the next reader starts another.
func (d *DB) buildInBackground(root *model.Branch, t *model.Table) {
	b, err := d.register(KindColumnStore, root, t, 0)
	if errors.Is(err, errDegraded) {
		return
	}
	if err != nil {
		d.reg.event(model.Event{Kind: model.EventStoreBuild, Err: err})
		return
	}
	if b == nil {
		return
	}
	d.reg.backgroundBuilds.Add(1)
	if !d.reg.opts.Background(func() {
		defer d.reg.backgroundBuilds.Add(-1)
		b.run(context.Background())
	}) {
		d.reg.backgroundBuilds.Add(-1)
		b.snap.Close()
		d.Unpin()
		b.abandon(errors.New("engine: closing"))
	}
}

// startBuild builds the structure of kind (and col) of a table of root
// now, until ctx ends, unless another builder registered it first: then it
// returns that slot to wait for, and started false.
func (d *DB) startBuild(ctx context.Context, kind Kind, root *model.Branch, t *model.Table, col uint32) (*slot, bool, error) {
	b, err := d.register(kind, root, t, col)
	if err != nil || b == nil {
		tl := d.readTable(t.ID)
		s := d.lookup(storeKey{Branch: root.ID, Table: t.ID}, kind, col)
		d.doneReading(tl)
		if err == nil && s == nil {
			err = errors.New("engine: a structure vanished while it was built")
		}
		return s, false, err
	}
	return b.s, true, b.run(ctx)
}

// build is a registered slot and what its builder reads.
type build struct {
	d    *DB
	s    *slot
	snap *pebble.Snapshot
	lin  model.Lineage // the owner's lineage at the snapshot
	t    *model.Table  // the owner's table at the snapshot
	base *slot         // a column store to copy, held for reading; nil: read every layer
}

// register registers the slot of kind (and col) of a table of root, being
// built, with the snapshot to build it from, unless a current one is
// registered already (then it returns nil).
func (d *DB) register(kind Kind, root *model.Branch, t *model.Table, col uint32) (*build, error) {
	if err := d.reg.opts.Fault(); err != nil {
		return nil, errDegraded
	}
	// Under the table's lock for writing (and storeMu for reading) the
	// state is current and no write of the table is in flight: the
	// snapshot shows every command that wrote it, and every later one
	// finds the slot. Commands writing other tables go on.
	d.Pin() // released by the build: the layers it reads stay
	tl := d.writeTable(t.ID)
	defer d.doneWriting(tl)
	st := d.State()
	if root = st.ByID.At(root.ID); root == nil {
		d.Unpin()
		return nil, model.NotFoundf("branch not found")
	}
	if t = root.Schema.TableByID(t.ID); t == nil {
		d.Unpin()
		return nil, model.NotFoundf("table not found")
	}
	if kind == KindVectorStore {
		if c := t.ByID[col]; c == nil || c.Type != model.TypeVector {
			d.Unpin()
			return nil, errNotVector
		}
	}
	k := storeKey{Branch: root.ID, Table: t.ID}
	if cur := d.lookup(k, kind, col); cur != nil {
		if cur.sig == t.Sig {
			d.Unpin()
			return nil, nil
		}
		d.drop(cur)
	}
	s := d.newSlot(kind, k, col, t)
	s.entry = d.reg.budget.Add(kind, func() { d.evict(s) })
	d.install(s)
	b := &build{d: d, s: s, lin: root.Lineage, t: t}
	if kind == KindColumnStore {
		b.base = d.copyBase(st, root, t)
	}
	b.snap = d.reg.pdb.NewSnapshot()
	return b, nil
}

// copyBase returns the column store a fork's store can be copied from,
// held for reading: the store of the rows of the table the fork started
// from, when its parent has not written them since. The caller holds the
// table's lock for writing.
func (d *DB) copyBase(st *apply.State, root *model.Branch, t *model.Table) *slot {
	p, pt := d.parentOf(st, root, t)
	if p == nil {
		return nil
	}
	pr, _ := d.shareRoot(st, p, pt)
	s := d.lookup(storeKey{Branch: pr.ID, Table: t.ID}, KindColumnStore, 0)
	if s == nil || s.sig != t.Sig {
		return nil
	}
	if ok, _ := s.tryRead(); !ok {
		return nil
	}
	s.entry.Touch() // the stores of its forks come from it: keep it
	return s
}

// run builds the structure and opens the slot to readers, or drops it
// when the build fails.
func (b *build) run(ctx context.Context) error {
	d, s := b.d, b.s
	start := time.Now()
	err := b.make(ctx)
	b.snap.Close()
	d.Unpin()
	if err != nil {
		b.abandon(err)
		d.reg.event(model.Event{Kind: model.EventStoreBuild, Err: err, Duration: time.Since(start)})
		return err
	}
	s.drain() // the changes of the commands after the snapshot
	size := s.size()
	// From here writers may apply their changes; readers wait for
	// building to end, under the table's lock, which is above the slot's.
	s.mu.Unlock()
	tl := d.writeTable(s.owner.Table)
	s.building = false
	d.doneWriting(tl)
	s.entry.Resize(size)
	close(s.built)
	d.reg.event(model.Event{Kind: model.EventStoreBuild, Duration: time.Since(start)})
	d.reg.Reclaim()
	return nil
}

// make builds the structure from the snapshot.
func (b *build) make(ctx context.Context) error {
	d, s := b.d, b.s
	var err error
	switch s.kind {
	case KindColumnStore:
		if b.base != nil {
			s.table = b.base.table.clone()
			b.base.mu.RUnlock()
			b.base = nil
			err = s.table.readLayer(ctx, b.snap, d.ID, b.lin[0], b.t)
		} else {
			s.table, err = buildTableStore(ctx, b.snap, d.ID, b.lin, b.t)
		}
		if err == nil {
			// A query in the default order walks the ids' order: sort
			// them here, not in the first such query.
			s.table.Column(index.MetaIDColumn).Order()
		}
	case KindSearchStore:
		s.search, err = BuildSearchStore(ctx, b.snap, d.ID, b.lin, b.t)
		if s.search != nil {
			s.search.background = d.reg.opts.Background
		}
	case KindVectorStore:
		s.vector, err = buildVectorStore(ctx, b.snap, d, b.lin, b.t, b.t.ByID[s.col])
	}
	return err
}

// abandon drops a slot whose build failed or never ran; readers waiting
// for it see err.
func (b *build) abandon(err error) {
	d, s := b.d, b.s
	if b.base != nil {
		b.base.mu.RUnlock()
		b.base = nil
	}
	s.table, s.search, s.vector = nil, nil, nil
	s.mu.Unlock()
	tl := d.writeTable(s.owner.Table)
	d.drop(s)
	s.building, s.err = false, err
	d.doneWriting(tl)
	close(s.built)
}
