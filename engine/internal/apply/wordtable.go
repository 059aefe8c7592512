package apply

import "hash/maphash"

// wordTable finds a word of one text column among those a write's
// records met so far: its index in the gatherer's words. A bulk write of
// 1000 records looks up a hundred thousand words and more, most of them
// in a table of tens of thousands, and a lookup costs what its cache
// misses cost. A slot is 8 bytes, a hash tag with the word's length and
// the word's index, so that the table is half as large as its words'
// entries; a word whose tag matches is told apart by the first 8 bytes
// its entry keeps (wordPostings.head), an entry the lookup's caller
// reads anyway, and only a longer word is compared where it is kept.
//
// Open addressing with linear probing, at most half full. Not safe for
// concurrent use.
type wordTable struct {
	slots []wordSlot
	n     int // words added
}

// wordSlot is one place of a wordTable: empty if ref is 0, else the word
// of index ref-1.
type wordSlot struct {
	// tag is the hash's top 24 bits, then the word's length up to 255.
	tag uint32
	ref int32
}

// wordSeed is the hash seed of every wordTable: where a word lands
// decides memory layout only, never what a write stores.
var wordSeed = maphash.MakeSeed()

// newWordTable returns a table with room for n words before it grows.
func newWordTable(n int) wordTable {
	size := 16
	for size < 2*n {
		size *= 2
	}
	return wordTable{slots: make([]wordSlot, size)}
}

// index returns the index of s among words, the entries of the words
// added so far (terms are the words themselves), or adds s as index
// len(words) (added) and returns its first 8 bytes: the caller appends
// its entry with that head, and s to terms.
func (t *wordTable) index(s string, words []wordPostings, terms []string) (idx int32, head uint64, added bool) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow(terms)
	}
	h := maphash.String(wordSeed, s)
	tag := uint32(h>>40)<<8 | uint32(min(len(s), 255))
	head = wordHead(s)
	mask := uint32(len(t.slots) - 1)
	for pos := uint32(h) & mask; ; pos = (pos + 1) & mask {
		sl := &t.slots[pos]
		if sl.ref == 0 {
			*sl = wordSlot{tag: tag, ref: int32(len(words)) + 1}
			t.n++
			return int32(len(words)), head, true
		}
		if sl.tag == tag && words[sl.ref-1].head == head && (len(s) <= 8 || terms[sl.ref-1] == s) {
			return sl.ref - 1, head, false
		}
	}
}

// grow doubles the table, placing each word anew; terms are the words
// added, by index.
func (t *wordTable) grow(terms []string) {
	old := t.slots
	t.slots = make([]wordSlot, 2*len(old))
	mask := uint32(len(t.slots) - 1)
	for _, sl := range old {
		if sl.ref == 0 {
			continue
		}
		pos := uint32(maphash.String(wordSeed, terms[sl.ref-1])) & mask
		for t.slots[pos].ref != 0 {
			pos = (pos + 1) & mask
		}
		t.slots[pos] = sl
	}
}

// wordHead returns the first 8 bytes of s as an integer, zero-padded: with
// the length, all of a word of at most 8 bytes.
func wordHead(s string) uint64 {
	if len(s) >= 8 {
		return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	}
	var h uint64
	for i := 0; i < len(s); i++ {
		h |= uint64(s[i]) << (8 * i)
	}
	return h
}
