package memstore

import (
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
type trigramIndex struct {
	grams    map[uint32]*roaring.Bitmap
	nonASCII roaring.Bitmap
}

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

// buildTrigrams indexes the present rows of a string column.
func buildTrigrams(c *Column) *trigramIndex {
	t := &trigramIndex{grams: map[uint32]*roaring.Bitmap{}}
	lists := map[uint32][]uint32{}
	var nonASCII []uint32
	it := c.present.Iterator()
	for it.HasNext() {
		row := it.Next()
		s := c.strs[row]
		eachTrigram(s, func(k uint32) {
			l := lists[k]
			if n := len(l); n > 0 && l[n-1] == row {
				return // rows come in ascending order: a repeat in this value
			}
			lists[k] = append(l, row)
		})
		if !isASCII(s) {
			nonASCII = append(nonASCII, row)
		}
	}
	for k, l := range lists {
		b := roaring.New()
		b.AddMany(l)
		b.RunOptimize()
		t.grams[k] = b
	}
	t.nonASCII.AddMany(nonASCII)
	return t
}

// update moves row from its old value (when had) to v.
func (t *trigramIndex) update(row uint32, old string, had bool, v codec.Value) {
	if had {
		eachTrigram(old, func(k uint32) {
			if b := t.grams[k]; b != nil {
				b.Remove(row)
				if b.IsEmpty() {
					delete(t.grams, k)
				}
			}
		})
		t.nonASCII.Remove(row)
	}
	if v.Kind != codec.KindString {
		return
	}
	eachTrigram(v.Str, func(k uint32) {
		b := t.grams[k]
		if b == nil {
			b = roaring.New()
			t.grams[k] = b
		}
		b.Add(row)
	})
	if !isASCII(v.Str) {
		t.nonASCII.Add(row)
	}
}

var _ index.SubstringValues = (*Column)(nil)

// SubstringCandidates returns a superset of the rows whose value contains
// sub (under simple case folding when fold), from the column's trigram
// index, which it builds on first use. ok is false when the index cannot
// narrow the rows: not a string column, sub shorter than three bytes, or
// a folded sub with non-ASCII bytes. It implements index.SubstringValues.
func (c *Column) SubstringCandidates(sub string, fold bool) (*roaring.Bitmap, bool) {
	if c.kind != codec.KindString || len(sub) < 3 || (fold && !isASCII(sub)) {
		return nil, false
	}
	ix := &c.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.tri == nil {
		ix.tri = buildTrigrams(c)
	}
	var bms []*roaring.Bitmap
	missing := false
	eachTrigram(sub, func(k uint32) {
		b := ix.tri.grams[k]
		if b == nil {
			missing = true
			return
		}
		if !slices.Contains(bms, b) {
			bms = append(bms, b)
		}
	})
	out := roaring.New()
	if !missing {
		slices.SortFunc(bms, func(a, b *roaring.Bitmap) int {
			return int(int64(a.GetCardinality()) - int64(b.GetCardinality()))
		})
		out = bms[0].Clone()
		for _, b := range bms[1:] {
			if out.And(b); out.IsEmpty() {
				break
			}
		}
	}
	if fold {
		out.Or(&ix.tri.nonASCII)
	}
	return out, true
}
