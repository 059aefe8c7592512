package memstore

import (
	"slices"

	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Branches share their parent's structures. A fork's lineage is a new top
// layer over its parent's top layer, read as of the fork's seq, over the
// rest of the parent's lineage. While the fork has written no row of a
// table in its own layer, and the parent none in its top layer since the
// fork, both see the same rows of the table; with the same columns, the
// structures derived from them are the same, and the fork reads its
// parent's. This is decided from the lineages and the write marks stored
// with the data (apply.DB.Written), never from what this process saw, so
// it holds after a restart too; it is decided anew at every read, so a
// write of either ends the sharing at once.

// shareRoot returns the branch whose rows of table t branch b sees exactly,
// going up its forks for as long as neither side has written the table,
// and that branch's table. The caller holds the table's lock (DB) or the
// writer lock, so that the write marks agree with its snapshot.
func (d *DB) shareRoot(st *apply.State, b *model.Branch, t *model.Table) (*model.Branch, *model.Table) {
	for {
		p, pt := d.parentOf(st, b, t)
		if p == nil || d.Written(b.Lineage[0].Layer, t.ID) != 0 {
			return b, t
		}
		b, t = p, pt
	}
}

// parentOf returns the branch b was forked from, with its table t, when
// that branch has not written the table since the fork and holds it with
// the same columns; else nil.
func (d *DB) parentOf(st *apply.State, b *model.Branch, t *model.Table) (*model.Branch, *model.Table) {
	if len(b.Lineage) < 2 {
		return nil, nil
	}
	fork := b.Lineage[1]
	p := st.ByTop.At(fork.Layer)
	if p == nil || !slices.Equal(p.Lineage[1:], b.Lineage[2:]) || d.Written(fork.Layer, t.ID) > fork.Seq {
		return nil, nil
	}
	pt := p.Schema.TableByID(t.ID)
	if pt == nil || pt.Sig != t.Sig {
		return nil, nil
	}
	return p, pt
}

// SharedCache returns the table cache of the ancestor whose rows of table
// t branch b sees exactly (shareRoot), its epoch and the ancestor's table,
// read together under the table's lock: at that instant b's rows of t are
// the ancestor's as of that epoch, and an entry of the ancestor's that
// holds at it holds for b. ok is false when b reads its own rows, or when
// the state shows b or t no more (gone, or its schema changed).
func (d *DB) SharedCache(b *model.Branch, t *model.Table) (c *BitmapCache, epoch uint64, rt *model.Table, ok bool) {
	if len(b.Lineage) < 2 {
		return nil, 0, nil, false // a branch with no parent
	}
	tl := d.readTable(t.ID)
	defer d.doneReading(tl)
	st := d.State()
	cur := st.ByID.At(b.ID)
	if cur == nil || cur.Schema.TableByID(t.ID) != t {
		return nil, 0, nil, false
	}
	root, rt := d.shareRoot(st, cur, t)
	if root == cur {
		return nil, 0, nil, false
	}
	c = d.cacheFor(storeKey{Branch: root.ID, Table: rt.ID})
	// No write of the table is in flight under its lock: the epoch is even.
	if epoch = c.Epoch(); epoch%2 != 0 {
		return nil, 0, nil, false
	}
	return c, epoch, rt, true
}
