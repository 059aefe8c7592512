package layers

import (
	"cmp"
	"encoding/binary"
	"runtime"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
)

// Pending holds the bitmap changes of one command on one database, by
// table of a layer and then by bitmap id, so that a writer staging a row
// finds its table once and each of the row's bitmaps with one lookup of
// its id, and reads inside the command find a bitmap's changes directly.
// A change is recorded as it comes, one word per row; the net delta of
// each chunk is worked out when the command finishes (or a read inside it
// needs one). A bulk insert adds increasing rows to each bitmap only, and
// then that is a copy: the postings of a batch are sorted row lists, and
// each (bitmap, chunk) gets one merge operand for the whole command.
type Pending struct {
	db     uint32
	tables map[layerTable]*PendingTable
	// Yield, when set, is called with runtime.Gosched between bitmaps
	// while Write stages them (yieldBitmaps); it must return promptly.
	Yield func()
}

// layerTable names a table of a layer.
type layerTable struct{ layer, table uint32 }

// PendingTable holds the staged changes of one table of one layer.
type PendingTable struct {
	layer, table uint32
	// staged are the bitmaps with staged changes, in the order they were
	// staged first; sorted says their ids strictly increase. A writer
	// staging a batch's postings in id order appends them without
	// looking any up, and spares Write the sort under the writer lock.
	staged []stagedBitmap
	sorted bool
	// byID indexes the first indexed of staged by id. It is brought up to
	// date by a lookup (find), not by appending in id order: a bulk write
	// stages tens of thousands of bitmaps and looks none of them up.
	byID    map[string]*pendingBitmap
	indexed int
	// expect is the number of bitmaps Expect was told of, the size byID
	// is made for.
	expect int
	// bitmaps and ops are room made by Expect for the bitmaps AddRows
	// stages and their rows, taken from the front.
	bitmaps []pendingBitmap
	ops     []uint64
}

// stagedBitmap is one bitmap of a PendingTable with its changes.
type stagedBitmap struct {
	id string
	pb *pendingBitmap
}

// find returns the staged changes of the bitmap id, or nil.
func (pt *PendingTable) find(id string) *pendingBitmap {
	pt.index()
	return pt.byID[id]
}

// index indexes the bitmaps staged since the last lookup.
func (pt *PendingTable) index() {
	if pt.indexed < len(pt.staged) {
		if pt.byID == nil {
			pt.byID = make(map[string]*pendingBitmap, max(pt.expect, len(pt.staged)))
		}
		for _, s := range pt.staged[pt.indexed:] {
			pt.byID[s.id] = s.pb
		}
		pt.indexed = len(pt.staged)
	}
}

// after reports whether id sorts after every staged bitmap's id while
// those are in strictly increasing order: then it is not staged yet, and
// appending it keeps them in order.
func (pt *PendingTable) after(id string) bool {
	return pt.sorted && (len(pt.staged) == 0 || pt.staged[len(pt.staged)-1].id < id)
}

// push appends a bitmap that is not staged yet.
func (pt *PendingTable) push(id string, pb *pendingBitmap) {
	if pt.sorted && len(pt.staged) > 0 && pt.staged[len(pt.staged)-1].id >= id {
		pt.sorted = false
	}
	pt.staged = append(pt.staged, stagedBitmap{id, pb})
}

// pendingBitmap holds the changes of one bitmap.
type pendingBitmap struct {
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

// get returns the staged changes of a bitmap of a table of a layer, or nil.
func (p *Pending) get(layer, table uint32, bitmapID []byte) *pendingBitmap {
	if p == nil {
		return nil
	}
	pt := p.tables[layerTable{layer, table}]
	if pt == nil {
		return nil
	}
	pt.index()
	return pt.byID[string(bitmapID)]
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

// Write merges every staged delta into the batch in key order (tables by
// layer and id, bitmaps by id), and logs each in the history of a layer
// that has forks.
func (p *Pending) Write(b *pebble.Batch, forks func(layer uint32) (uint64, bool), seq uint64) error {
	tables := make([]*PendingTable, 0, len(p.tables))
	for _, pt := range p.tables {
		tables = append(tables, pt)
	}
	slices.SortFunc(tables, func(a, b *PendingTable) int {
		if a.layer != b.layer {
			return cmp.Compare(a.layer, b.layer)
		}
		return cmp.Compare(a.table, b.table)
	})
	var buf, key []byte
	var rows []uint32
	for _, pt := range tables {
		_, forked := forks(pt.layer)
		if !pt.sorted {
			slices.SortFunc(pt.staged, func(a, b stagedBitmap) int { return strings.Compare(a.id, b.id) })
			pt.sorted = true // ids are distinct
			// The sort moved bitmaps in and out of the indexed prefix: a
			// later lookup indexes them all again (the same entries).
			pt.indexed = 0
		}
		prefix := codec.TablePrefix(nil, p.db, pt.layer, codec.KindBitmapCur, pt.table)
		for i, s := range pt.staged {
			if i%yieldBitmaps == yieldBitmaps-1 {
				// A bulk write stages thousands of bitmaps in a row: let a
				// waiting query run meanwhile.
				if p.Yield != nil {
					p.Yield()
				}
				runtime.Gosched()
			}
			key = append(append(key[:0], prefix...), s.id...)
			n := len(key)
			err := s.pb.encode(&buf, &rows, func(chunk uint16, delta []byte) error {
				key = binary.BigEndian.AppendUint16(key[:n], chunk)
				if err := b.Merge(key, delta, nil); err != nil {
					return err
				}
				if forked {
					// The log key is the current key under the history kind,
					// then the commit's seq.
					hk := slices.Clone(key)
					hk[9] = codec.KindBitmapHist
					if err := b.Set(codec.AppendU64(hk, seq), delta, nil); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// encode calls fn with the encoded net change of each chunk the bitmap's
// rows fall in, in chunk order, in *buf (rows is room for a chunk's
// rows). Adds of increasing rows, which is what a bulk insert stages,
// are encoded straight from the rows, without making their bitmaps.
func (pb *pendingBitmap) encode(buf *[]byte, rows *[]uint32, fn func(chunk uint16, delta []byte) error) error {
	if !pb.simple {
		for _, cd := range pb.deltas() {
			*buf = codec.AppendDelta((*buf)[:0], cd.delta)
			if err := fn(cd.chunk, *buf); err != nil {
				return err
			}
		}
		return nil
	}
	for i := 0; i < len(pb.ops); {
		chunk := uint32(pb.ops[i]>>1) >> 16
		r := (*rows)[:0]
		for ; i < len(pb.ops) && uint32(pb.ops[i]>>1)>>16 == chunk; i++ {
			r = append(r, uint32(pb.ops[i]>>1))
		}
		*rows = r
		*buf = codec.AppendAddsDelta((*buf)[:0], r)
		if err := fn(uint16(chunk), *buf); err != nil {
			return err
		}
	}
	return nil
}

// yieldBitmaps is how many bitmaps Write stages between yields of its
// processor: about as much work as a write does between its yields per
// record.
const yieldBitmaps = 256

// NewPending returns an empty set of staged changes of database db.
func NewPending(db uint32) *Pending {
	return &Pending{db: db, tables: map[layerTable]*PendingTable{}}
}

// Bitmaps counts the bitmaps with staged changes; p may be nil.
func (p *Pending) Bitmaps() int {
	if p == nil {
		return 0
	}
	n := 0
	for _, pt := range p.tables {
		n += len(pt.staged)
	}
	return n
}

// ChangedIDs returns the ids of the bitmaps of a table, in any layer, with
// staged changes, when there are at most limit of them; ok is false when
// there are more. p may be nil.
func (p *Pending) ChangedIDs(table uint32, limit int) (ids []string, ok bool) {
	if p == nil {
		return nil, true
	}
	n := 0
	for _, pt := range p.tables {
		if pt.table == table {
			n += len(pt.staged)
		}
	}
	if n > limit {
		return nil, false
	}
	ids = make([]string, 0, n)
	for _, pt := range p.tables {
		if pt.table == table {
			for _, s := range pt.staged {
				ids = append(ids, s.id)
			}
		}
	}
	return ids, true
}

// ApplyTo applies the staged changes of a bitmap of a table of a layer to
// set, unless set is nil, and reports whether there are any. p may be nil.
func (p *Pending) ApplyTo(layer, table uint32, bitmapID string, set *roaring.Bitmap) bool {
	if p == nil {
		return false
	}
	pt := p.tables[layerTable{layer, table}]
	if pt == nil {
		return false
	}
	pb := pt.find(bitmapID)
	if pb == nil {
		return false
	}
	if set != nil {
		pb.applyTo(set)
	}
	return true
}

// Layers returns the layers in which a table has staged changes. p may be
// nil.
func (p *Pending) Layers(table uint32) []uint32 {
	if p == nil {
		return nil
	}
	var out []uint32
	for k := range p.tables {
		if k.table == table {
			out = append(out, k.layer)
		}
	}
	return out
}

// Table returns the staged changes of a table of a layer, made on first use.
func (p *Pending) Table(layer, table uint32) *PendingTable {
	k := layerTable{layer, table}
	pt := p.tables[k]
	if pt == nil {
		pt = &PendingTable{layer: layer, table: table, sorted: true}
		p.tables[k] = pt
	}
	return pt
}

// Add stages a change of one row in a bitmap of the table. Each call must
// be exact: add only a row not in the set, remove only one in it.
func (pt *PendingTable) Add(bitmapID []byte, row uint32, add bool) {
	pt.index()
	pb := pt.byID[string(bitmapID)]
	if pb == nil {
		pb = &pendingBitmap{simple: true}
		pt.push(string(bitmapID), pb) // indexed by the next lookup
	}
	pb.stage(row, add)
}

// stage appends the change of one row to the bitmap's changes; they stay
// simple while they add rows in increasing order.
func (pb *pendingBitmap) stage(row uint32, add bool) {
	op := uint64(row) << 1
	if add {
		op |= 1
	}
	if pb.simple && (!add || len(pb.ops) > 0 && pb.ops[len(pb.ops)-1] >= op) {
		pb.simple = false
	}
	pb.ops = append(pb.ops, op)
}

// Expect makes room for n bitmaps and rows changes of theirs in a table
// with none staged yet, so that staging a batch's bitmaps does not grow
// the table's list and map step by step nor allocate each bitmap apart.
func (pt *PendingTable) Expect(n, rows int) {
	if len(pt.staged) == 0 && n > 0 {
		pt.staged = make([]stagedBitmap, 0, n)
		pt.expect = n
		pt.bitmaps = make([]pendingBitmap, n)
		pt.ops = make([]uint64, rows)
	}
}

// AddRows stages the addition of rows, in increasing order, to a bitmap
// of the table: Add of each row, with one lookup of the bitmap, or none
// when the bitmaps are staged in id order.
func (pt *PendingTable) AddRows(bitmapID string, rows []uint32) {
	var pb *pendingBitmap
	if !pt.after(bitmapID) {
		pb = pt.find(bitmapID)
	}
	if pb == nil {
		if len(pt.bitmaps) > 0 {
			pb, pt.bitmaps = &pt.bitmaps[0], pt.bitmaps[1:]
		} else {
			pb = &pendingBitmap{}
		}
		pb.simple = true
		if len(pt.ops) >= len(rows) {
			// Capped, so that appending more reallocates.
			pb.ops, pt.ops = pt.ops[:0:len(rows)], pt.ops[len(rows):]
		} else {
			pb.ops = make([]uint64, 0, len(rows))
		}
		pt.push(bitmapID, pb)
	}
	for _, row := range rows {
		pb.stage(row, true)
	}
}
