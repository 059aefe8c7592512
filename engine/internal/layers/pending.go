package layers

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
)

// Pending holds the bitmap changes of one command, by bitmap (the
// chunk key without its chunk), so that reads inside the command find a
// bitmap's changes directly. A change is recorded as it comes, one word
// per row; the net delta of each chunk is worked out when the command
// finishes (or a read inside it needs one). A bulk insert adds increasing
// rows to each bitmap only, and then that is a copy.
type Pending struct {
	byBitmap map[string]*pendingBitmap
	key      []byte // scratch for lookups
}

// pendingBitmap holds the changes of one bitmap.
type pendingBitmap struct {
	layer uint32 // for the history log
	// ops are row<<1 | 1 for an add, row<<1 for a removal, in call order.
	ops []uint64
	// simple: the ops are adds of strictly increasing rows.
	simple bool
}

// chunkDelta is the net change of one chunk of a bitmap.
type chunkDelta struct {
	chunk uint16
	delta codec.Delta
}

// get returns the staged changes of the bitmap whose chunk keys start with
// prefix, or nil.
func (p *Pending) get(prefix []byte) *pendingBitmap {
	if p == nil {
		return nil
	}
	return p.byBitmap[string(prefix)]
}

// deltas returns the net change of each chunk the bitmap's rows fall in,
// in chunk order; chunks whose changes cancel out are left out. A row's
// changes alternate (each is exact), so its net change is its first one
// when its last one is the same, and nothing otherwise.
func (pb *pendingBitmap) deltas() []chunkDelta {
	ops := pb.ops
	if !pb.simple {
		ops = slices.Clone(ops)
		slices.SortStableFunc(ops, func(a, b uint64) int {
			switch {
			case a>>1 < b>>1:
				return -1
			case a>>1 > b>>1:
				return 1
			}
			return 0
		})
	}
	var out []chunkDelta
	var adds, dels []uint32
	chunk := -1
	flush := func() {
		if len(adds) > 0 || len(dels) > 0 {
			var d codec.Delta // nil sets are empty ones
			if len(adds) > 0 {
				d.Adds = roaring.BitmapOf(adds...)
			}
			if len(dels) > 0 {
				d.Dels = roaring.BitmapOf(dels...)
			}
			out = append(out, chunkDelta{chunk: uint16(chunk), delta: d})
		}
		adds, dels = adds[:0], dels[:0]
	}
	for i := 0; i < len(ops); {
		row := uint32(ops[i] >> 1)
		j := i + 1
		for j < len(ops) && uint32(ops[j]>>1) == row {
			j++
		}
		if c := int(row >> 16); c != chunk {
			flush()
			chunk = c
		}
		if first, last := ops[i]&1, ops[j-1]&1; first == last {
			if first == 1 {
				adds = append(adds, row)
			} else {
				dels = append(dels, row)
			}
		}
		i = j
	}
	flush()
	return out
}

// applyTo applies the staged changes to set.
func (pb *pendingBitmap) applyTo(set *roaring.Bitmap) {
	for _, cd := range pb.deltas() {
		cd.delta.ApplyTo(set) // chunks hold disjoint rows: any order
	}
}

// Write merges every staged delta into the batch in key order, and logs
// each in the history of a layer that has forks.
func (p *Pending) Write(b *pebble.Batch, forks map[uint32]uint64, seq uint64) error {
	type entry struct {
		prefix string
		pb     *pendingBitmap
	}
	entries := make([]entry, 0, len(p.byBitmap))
	for prefix, pb := range p.byBitmap {
		entries = append(entries, entry{prefix, pb})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.prefix, b.prefix) })
	var buf, key []byte
	// A command's bitmaps are nearly all in one layer: its fork state is
	// looked up once per layer change.
	layer, forked := uint32(0), false
	for i, e := range entries {
		prefix, pb := e.prefix, e.pb
		if i == 0 || pb.layer != layer {
			layer = pb.layer
			_, forked = forks[layer]
		}
		for _, cd := range pb.deltas() {
			buf = codec.AppendDelta(buf[:0], cd.delta)
			key = binary.BigEndian.AppendUint16(append(key[:0], prefix...), cd.chunk)
			if err := b.Merge(key, buf, nil); err != nil {
				return err
			}
			if forked {
				// The log key is the current key under the history kind,
				// then the commit's seq.
				hk := slices.Clone(key)
				hk[9] = codec.KindBitmapHist
				if err := b.Set(codec.AppendU64(hk, seq), buf, nil); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// NewPending returns an empty set of staged changes.
func NewPending() *Pending {
	return &Pending{byBitmap: map[string]*pendingBitmap{}}
}

// Add stages a change of one row in a bitmap of layer of database db.
// Each call must be exact: add only a row not in the set, remove only one
// in it.
func (p *Pending) Add(db, layer, tableID uint32, bitmapID string, row uint32, add bool) {
	p.key = append(codec.TablePrefix(p.key[:0], db, layer, codec.KindBitmapCur, tableID), bitmapID...)
	pb := p.byBitmap[string(p.key)]
	if pb == nil {
		pb = &pendingBitmap{layer: layer, simple: true}
		p.byBitmap[string(p.key)] = pb
	}
	op := uint64(row) << 1
	if add {
		op |= 1
	}
	if pb.simple && (!add || len(pb.ops) > 0 && pb.ops[len(pb.ops)-1] >= op) {
		pb.simple = false
	}
	pb.ops = append(pb.ops, op)
}
