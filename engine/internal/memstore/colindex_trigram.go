package memstore

import (
	"bytes"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

// trigramIndex maps each three-byte sequence of a string column's values,
// with ASCII letters folded to upper case, to the rows whose value holds
// it. A value containing a string contains every trigram of it (bytes and
// ASCII folding commute with containment), so intersecting the trigrams
// of an argument gives a superset of the matches of $contains; rows with
// non-ASCII bytes, which Unicode case folding may match in other ways, are
// kept apart for $iContains.
//
// It lives in memory only. The first $contains on the column builds it
// from the values the column store already holds, then the writes the
// store applies keep it current (colindex.go), and a fork's copy of the
// store takes a copy of it along: no write rebuilds it. It is not kept
// across restarts: the store it derives from is built again from storage
// then anyway, and building the index from the store's values, a chunk of
// rows at a time, reads memory only.
type trigramIndex struct {
	// frozen holds the grams' rows as built, each gram's bitmap in
	// roaring's portable form, at the span at names: one byte array and a
	// map without pointers, instead of a bitmap and containers per gram
	// that the collector would mark on every cycle. It is never written:
	// the bitmaps read from it share its bytes.
	frozen []byte
	at     map[uint32]gramSpan
	// grams holds the bitmaps of the grams written since the build, read
	// from frozen on their first write; a gram here is not read from
	// frozen again, and an empty one has no rows.
	grams    map[uint32]*roaring.Bitmap
	nonASCII roaring.Bitmap
	bytes    int64 // the memory it takes, measured when built, then estimated
}

// gramSpan is where a gram's bitmap lies in a trigramIndex's frozen bytes.
type gramSpan struct{ off, n uint32 }

// gramSlot is what a key of a trigramIndex's at takes: the key and the
// span, a control byte, and the eighth of slots a map keeps free.
const gramSlot = (4 + 8 + 1) * 8 / 7

// gram returns the rows of the gram of key k, nil for none. A bitmap read
// from frozen is new, and is changed only by copying what changes.
func (t *trigramIndex) gram(k uint32) *roaring.Bitmap {
	if b, ok := t.grams[k]; ok {
		if b.IsEmpty() {
			return nil
		}
		return b
	}
	sp, ok := t.at[k]
	if !ok {
		return nil
	}
	b := roaring.New()
	if _, err := b.FromBuffer(t.frozen[sp.off : sp.off+sp.n]); err != nil {
		panic("memstore: trigram index: " + err.Error()) // written by freeze just before
	}
	return b
}

// written returns the bitmap of the gram of key k for a write to change,
// moving it out of frozen on its first write; nil when the gram has no
// rows.
func (t *trigramIndex) written(k uint32) *roaring.Bitmap {
	if b, ok := t.grams[k]; ok {
		return b
	}
	b := t.gram(k)
	if b == nil {
		return nil
	}
	b = b.Clone()
	b.CloneCopyOnWriteContainers() // its own containers, not frozen's
	t.grams[k] = b
	t.bytes += 64 + int64(b.GetSizeInBytes())
	return b
}

// freeze writes the bitmaps of grams into frozen and empties grams.
func (t *trigramIndex) freeze() {
	n := 0
	for _, b := range t.grams {
		n += align8(int(b.GetSerializedSizeInBytes()))
	}
	buf := bytes.NewBuffer(make([]byte, 0, n))
	t.at = make(map[uint32]gramSpan, len(t.grams))
	for k, b := range t.grams {
		off := buf.Len()
		if _, err := b.WriteTo(buf); err != nil {
			panic("memstore: trigram index: " + err.Error()) // a bytes.Buffer does not fail
		}
		t.at[k] = gramSpan{off: uint32(off), n: uint32(buf.Len() - off)}
		// Each bitmap starts 8-byte aligned: its containers are read in
		// place as arrays of words.
		buf.Write(make([]byte, align8(buf.Len())-buf.Len()))
	}
	t.frozen = buf.Bytes()
	clear(t.grams)
	t.bytes += int64(cap(t.frozen)) + gramSlot*int64(len(t.at))
}

// align8 rounds n up to a multiple of 8.
func align8(n int) int { return (n + 7) &^ 7 }

// foldASCII upper-cases an ASCII letter and leaves every other byte.
func foldASCII(b byte) byte {
	if 'a' <= b && b <= 'z' {
		return b - ('a' - 'A')
	}
	return b
}

// eachTrigram calls fn with the key of each trigram of s, in order, with
// repeats.
func eachTrigram(s string, fn func(k uint32)) {
	if len(s) < 3 {
		return
	}
	k := uint32(foldASCII(s[0]))<<8 | uint32(foldASCII(s[1]))
	for i := 2; i < len(s); i++ {
		k = (k<<8 | uint32(foldASCII(s[i]))) & 0xFFFFFF
		fn(k)
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// trigramChunk is how many rows buildTrigrams gathers before adding them
// to the bitmaps: one roaring container's worth, so that each gram's rows
// of a chunk go in as one container, and what the build holds besides the
// index stays bounded by the chunk, not by the column.
const trigramChunk = 1 << 16

// buildTrigrams indexes the present rows of a string column, a chunk of
// rows at a time. Grams of ASCII bytes, nearly all of them, find their
// list by a direct look-up of a 21-bit key; other grams go through a map.
func buildTrigrams(c *Column) *trigramIndex {
	t := &trigramIndex{grams: map[uint32]*roaring.Bitmap{}}
	type gram struct {
		key  uint32
		rows []uint32
	}
	var grams []gram              // of the column, in order of first sight
	ascii := make([]int32, 1<<21) // 7-bit gram key → index in grams + 1
	other := map[uint32]int32{}   // other gram keys → index in grams
	var touched []int32           // the grams holding rows of this chunk
	var nonASCII []uint32
	flush := func() {
		for _, g := range touched {
			l := grams[g].rows
			b := t.grams[grams[g].key]
			if b == nil {
				b = roaring.New()
				t.grams[grams[g].key] = b
			}
			b.AddMany(l)
			grams[g].rows = l[:0]
		}
		touched = touched[:0]
	}
	var buf [256]uint32
	it := c.present.ManyIterator()
	chunk := uint32(0)
	for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
		for _, row := range buf[:n] {
			if row>>16 != chunk {
				flush()
				chunk = row >> 16
			}
			s := c.strs.get(row)
			if len(s) < 3 {
				continue
			}
			high := byte(0)
			k := uint32(foldASCII(s[0]))<<8 | uint32(foldASCII(s[1]))
			high |= s[0] | s[1]
			for i := 2; i < len(s); i++ {
				high |= s[i]
				k = (k<<8 | uint32(foldASCII(s[i]))) & 0xFFFFFF
				var g int32
				if k&0x808080 == 0 {
					a := k>>2&0x1FC000 | k>>1&0x3F80 | k&0x7F
					if ascii[a] == 0 {
						grams = append(grams, gram{key: k})
						ascii[a] = int32(len(grams))
					}
					g = ascii[a] - 1
				} else {
					var ok bool
					if g, ok = other[k]; !ok {
						g = int32(len(grams))
						grams = append(grams, gram{key: k})
						other[k] = g
					}
				}
				l := grams[g].rows
				if n := len(l); n > 0 && l[n-1] == row {
					continue // a repeat in this value
				}
				if len(l) == 0 {
					touched = append(touched, g)
				}
				grams[g].rows = append(l, row)
			}
			if high >= 0x80 {
				nonASCII = append(nonASCII, row)
			}
		}
	}
	flush()
	for _, b := range t.grams {
		b.RunOptimize()
	}
	t.freeze()
	t.nonASCII.AddMany(nonASCII)
	t.bytes += int64(t.nonASCII.GetSizeInBytes())
	return t
}

// update moves row from its old value (when had) to v. The size it keeps
// counts two bytes a row of a gram, what an array container takes.
func (t *trigramIndex) update(row uint32, old string, had bool, v codec.Value) {
	if had {
		eachTrigram(old, func(k uint32) {
			if b := t.written(k); b != nil && b.CheckedRemove(row) {
				t.bytes -= 2
			}
		})
		t.nonASCII.Remove(row)
	}
	if v.Kind != codec.KindString {
		return
	}
	eachTrigram(v.Str, func(k uint32) {
		b := t.written(k)
		if b == nil {
			b = roaring.New()
			t.grams[k] = b
			t.bytes += 64
		}
		if b.CheckedAdd(row) {
			t.bytes += 2
		}
	})
	if !isASCII(v.Str) {
		t.nonASCII.Add(row)
	}
}

// clone returns a copy of t that changes apart from it. The copies share
// the frozen bytes, which neither writes.
func (t *trigramIndex) clone() *trigramIndex {
	n := &trigramIndex{frozen: t.frozen, at: t.at, grams: make(map[uint32]*roaring.Bitmap, len(t.grams)), bytes: t.bytes}
	for k, b := range t.grams {
		n.grams[k] = b.Clone()
	}
	n.nonASCII = *t.nonASCII.Clone()
	return n
}

var _ index.SubstringValues = (*Column)(nil)

// SubstringCandidates returns a superset of the rows whose value contains
// sub (under simple case folding when fold), from the column's trigram
// index, which it builds on first use, and the rows of it known to match
// without a look at their value (nil: none). ok is false when the index
// cannot narrow the rows: not a string column, sub shorter than three
// bytes, or a folded sub with non-ASCII bytes. It implements
// index.SubstringValues.
//
// The grams' rows are intersected rarest first, so that the later
// intersections are of a small set with a large one, which costs the
// small set's size.
//
// A sub of exactly one trigram needs no look at the values when the
// trigram says it all: folded, as ASCII bytes that fold to sub's are
// whole runes that Unicode folds the same way; exact, when sub has no
// ASCII letter to fold.
func (c *Column) SubstringCandidates(sub string, fold bool) (rows, sure *roaring.Bitmap, ok bool) {
	if c.kind != codec.KindString || len(sub) < 3 || (fold && !isASCII(sub)) {
		return nil, nil, false
	}
	ix := &c.ix
	ix.mu.Lock()
	if ix.tri == nil {
		ix.tri = buildTrigrams(c)
		c.indexBuilt()
	}
	// Writers, who change the index, wait for the readers of the store:
	// from here on it only is read.
	t := ix.tri
	ix.mu.Unlock()
	var keys []uint32
	eachTrigram(sub, func(k uint32) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	})
	bms := make([]*roaring.Bitmap, 0, len(keys))
	missing := false
	for _, k := range keys {
		b := t.gram(k)
		if b == nil {
			missing = true
			break
		}
		bms = append(bms, b)
	}
	switch {
	case missing:
		rows = roaring.New()
	case len(bms) == 1:
		rows = bms[0].Clone()
	default:
		slices.SortFunc(bms, func(a, b *roaring.Bitmap) int {
			return int(int64(a.GetCardinality()) - int64(b.GetCardinality()))
		})
		rows = roaring.And(bms[0], bms[1])
		for _, b := range bms[2:] {
			if rows.IsEmpty() {
				break
			}
			rows.And(b)
		}
	}
	if len(sub) == 3 && (fold || !hasASCIILetter(sub)) {
		sure = rows.Clone()
	}
	if fold {
		rows.Or(&t.nonASCII)
	}
	return rows, sure, true
}

// hasASCIILetter reports whether s holds an ASCII letter, which the
// trigram keys fold.
func hasASCIILetter(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i] | 0x20; 'a' <= b && b <= 'z' {
			return true
		}
	}
	return false
}
