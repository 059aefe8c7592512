package fts

import (
	"math"
	"math/bits"
)

// What the engine indexes for one text field: its distinct terms with how
// often each occurs, and its length in words. Term frequencies and lengths
// are kept coarsely, as bitmaps of rows: TFLevels says which frequencies
// get a bitmap of their own and LengthBucket how lengths are grouped.

// TFLevels are the term frequencies that get a bitmap: a row whose field
// holds a term at least TFLevels[i] times is in that term's i-th frequency
// bitmap. BM25 saturates quickly (k1 = 1.2), so a few levels rank almost as
// exact counts do.
var TFLevels = [...]uint8{2, 3, 5}

// TFClass returns the frequency a row counts with given how many TFLevels
// its count reaches: 1 for none, else the highest level reached.
func TFClass(levels int) int {
	if levels <= 0 {
		return 1
	}
	return int(TFLevels[min(levels, len(TFLevels))-1])
}

// Field collects the terms of one field value for indexing.
type Field struct {
	// TF counts each distinct term's occurrences.
	TF map[string]int
	// Words is the field's length in words.
	Words int
	toks  []Token
}

// Reset empties the field for reuse.
func (f *Field) Reset() {
	clear(f.TF)
	f.Words = 0
}

// Add analyses one text of the field (a multiple column adds each element).
func (f *Field) Add(text string) {
	if f.TF == nil {
		f.TF = map[string]int{}
	}
	f.toks = AppendTokens(f.toks[:0], text)
	for _, t := range f.toks {
		f.TF[t.Term]++
	}
	f.Words += len(f.toks)
}

// LengthBucket groups a field length in words: lengths below 16 exactly,
// longer ones in four buckets per power of two (16–19, 20–23, 24–27,
// 28–31, 32–39, …), so a bucket's lengths differ by less than 25%.
func LengthBucket(words int) uint8 {
	if words < 16 {
		return uint8(max(words, 0))
	}
	e := bits.Len32(uint32(min(words, 1<<31-1))) - 1 // ≥ 4
	sub := (words >> (e - 2)) & 3
	return uint8(16 + (e-4)*4 + sub)
}

// BucketLength is the smallest length in bucket b: what a field of that
// bucket counts as.
func BucketLength(b uint8) int {
	if b < 16 {
		return int(b)
	}
	e := int(b-16)/4 + 4
	sub := int(b-16) % 4
	return (4 + sub) << (e - 2)
}

// FieldLengths are the field lengths of one text column of a table, by
// row, kept in memory for BM25: each row's length bucket, and their sum
// and count for the column's average length. The engine keeps them current
// as rows are written (Set); a search reads them. They are not safe for
// concurrent use: the engine's locks order writers and searches.
type FieldLengths struct {
	bucket    []uint8  // by row: length bucket + 1, or 0 for no value
	maxBucket uint8    // the largest bucket+1 ever set
	docs      int      // rows with a value
	words     int      // sum of BucketLength over rows with a value
	perBucket [256]int // rows by bucket + 1
}

// Set records the length bucket of row's field, or that it has none when
// present is false.
func (f *FieldLengths) Set(row uint32, bucket uint8, present bool) {
	if int(row) < len(f.bucket) && f.bucket[row] != 0 {
		f.perBucket[f.bucket[row]]--
		f.docs--
		f.words -= BucketLength(f.bucket[row] - 1)
		f.bucket[row] = 0
	}
	if !present {
		return
	}
	if int(row) >= len(f.bucket) {
		n := int(row) + 1
		if n <= cap(f.bucket) {
			f.bucket = f.bucket[:n]
		} else {
			grown := make([]uint8, n, n+n/4+1024)
			copy(grown, f.bucket)
			f.bucket = grown
		}
	}
	f.bucket[row] = bucket + 1
	f.perBucket[bucket+1]++
	f.maxBucket = max(f.maxBucket, bucket+1)
	f.docs++
	f.words += BucketLength(bucket)
}

// AvgLen is the column's average field length in words.
func (f *FieldLengths) AvgLen() float64 {
	if f.docs == 0 {
		return 0
	}
	return float64(f.words) / float64(f.docs)
}

// minLength is the shortest length a row's field counts with in BM25 given
// the column's average: that of the lowest bucket holding a row, or the
// rounded average, which a row without a length counts with.
func (f *FieldLengths) minLength(avg float64) int {
	l := int(math.Round(avg))
	for b := 1; b <= int(f.maxBucket); b++ {
		if f.perBucket[b] > 0 {
			return min(l, BucketLength(uint8(b-1)))
		}
	}
	return l
}
