package layers

import (
	"bytes"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// ScanPostings walks the distinct values of one column's postings in order
// across a branch's lineage and calls fn with each value's bitmap id and its
// rows in the branch (values with no rows are skipped). lo and hi bound the
// bitmap ids (hi exclusive; nil means the column's bounds). fn returns false
// to stop.
func ScanPostings(r pebble.Reader, db uint32, lin model.Lineage, tableID, col uint32, lo, hi []byte, desc bool, fn func(bitmapID []byte, rows *roaring.Bitmap) bool) error {
	colPrefix := codec.PostingColumnPrefix(nil, col)
	if lo == nil {
		lo = colPrefix
	}
	if hi == nil {
		hi = codec.PrefixEnd(colPrefix)
	}
	levels := make([]*postingCursor, len(lin))
	masks := make([]*roaring.Bitmap, len(lin))
	defer func() {
		for _, c := range levels {
			if c != nil {
				c.it.Close()
			}
		}
	}()
	for i, lr := range lin {
		c, err := newPostingCursor(r, db, lr, tableID, colPrefix, lo, hi, desc)
		if err != nil {
			return err
		}
		levels[i] = c
		if i < len(lin)-1 {
			m, err := ReadLayerBitmap(r, db, lr, tableID, codec.MaskBitmapID(), nil)
			if err != nil {
				return err
			}
			masks[i] = m
		}
	}
	for {
		// The next value: the smallest (largest when desc) id among levels.
		var next []byte
		for _, c := range levels {
			if c.id == nil {
				continue
			}
			if next == nil || (!desc && bytes.Compare(c.id, next) < 0) || (desc && bytes.Compare(c.id, next) > 0) {
				next = c.id
			}
		}
		if next == nil {
			break
		}
		next = bytes.Clone(next)
		acc := roaring.New()
		for i := len(levels) - 1; i >= 0; i-- {
			if masks[i] != nil {
				acc.AndNot(masks[i])
			}
			c := levels[i]
			if c.id != nil && bytes.Equal(c.id, next) {
				acc.Or(c.rows)
				if err := c.advance(); err != nil {
					return err
				}
			}
		}
		if acc.IsEmpty() {
			continue
		}
		if !fn(next, acc) {
			return nil
		}
	}
	for _, c := range levels {
		if err := c.it.Error(); err != nil {
			return err
		}
	}
	return nil
}

// postingCursor iterates one layer's postings of a column grouped by value,
// each read as of the layer's seq.
type postingCursor struct {
	it     *pebble.Iterator
	prefix int // length of the table prefix before the bitmap id
	desc   bool
	valid  bool
	id     []byte          // current bitmap id; nil when exhausted
	rows   *roaring.Bitmap // its rows
	undo   map[string][]loggedDelta
}

// loggedDelta is one delta of a layer's history log: the commit that
// wrote it and the change.
type loggedDelta struct {
	seq uint64
	d   codec.Delta
}

// newPostingCursor opens a cursor over the postings of one layer of a
// lineage between lo and hi, as that layer is read at its seq.
func newPostingCursor(r pebble.Reader, db uint32, lr model.LayerRef, tableID uint32, colPrefix, lo, hi []byte, desc bool) (*postingCursor, error) {
	tp := codec.TablePrefix(nil, db, lr.Layer, codec.KindBitmapCur, tableID)
	it, err := r.NewIter(&pebble.IterOptions{
		LowerBound: append(bytes.Clone(tp), lo...),
		UpperBound: append(bytes.Clone(tp), hi...),
	})
	if err != nil {
		return nil, err
	}
	c := &postingCursor{it: it, prefix: len(tp), desc: desc}
	if lr.Seq != model.MaxSeq {
		if c.undo, err = loadUndo(r, db, lr, tableID, colPrefix); err != nil {
			it.Close()
			return nil, err
		}
	}
	if desc {
		c.valid = it.Last()
	} else {
		c.valid = it.First()
	}
	return c, c.advance()
}

// advance reads the next value group.
func (c *postingCursor) advance() error {
	c.id = nil
	for c.valid {
		k := c.it.Key()
		if len(k) < c.prefix+3 {
			c.step()
			continue
		}
		id := bytes.Clone(k[c.prefix : len(k)-2])
		rows := roaring.New()
		for c.valid {
			k = c.it.Key()
			if len(k) < c.prefix+3 || !bytes.Equal(k[c.prefix:len(k)-2], id) {
				break
			}
			v, err := c.it.ValueAndErr()
			if err != nil {
				return err
			}
			b, err := codec.DecodeBitmapStored(v)
			if err != nil {
				return err
			}
			rows.Or(b)
			c.step()
		}
		for _, l := range c.undo[string(id)] {
			l.d.UndoFrom(rows)
		}
		c.id, c.rows = id, rows
		return nil
	}
	return c.it.Error()
}

// step moves the cursor past its current key.
func (c *postingCursor) step() {
	if c.desc {
		c.valid = c.it.Prev()
	} else {
		c.valid = c.it.Next()
	}
}

// loadUndo reads the logged deltas of a column's postings newer than the
// layer's seq, grouped by bitmap id, newest first.
func loadUndo(r pebble.Reader, db uint32, lr model.LayerRef, tableID uint32, colPrefix []byte) (map[string][]loggedDelta, error) {
	hp := append(codec.TablePrefix(nil, db, lr.Layer, codec.KindBitmapHist, tableID), colPrefix...)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: hp, UpperBound: codec.PrefixEnd(hp)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	out := map[string][]loggedDelta{}
	tpLen := len(hp) - len(colPrefix)
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) < tpLen+len(colPrefix)+10 {
			continue
		}
		_, seq, err := codec.ParseHistSeq(k)
		if err != nil || seq <= lr.Seq {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		d, err := codec.DecodeDeltaStored(v)
		if err != nil {
			return nil, err
		}
		id := string(k[tpLen : len(k)-10])
		out[id] = append(out[id], loggedDelta{seq, d})
	}
	for _, l := range out {
		sort.Slice(l, func(i, j int) bool { return l[i].seq > l[j].seq })
	}
	return out, it.Error()
}
