package memstore

import (
	"encoding/binary"
	"slices"
	"unsafe"
)

// A string or multiple column keeps its values in a strArena: one byte
// array of entries plus the offset of each row's entry, so that a million
// values are two allocations without pointers instead of a million
// strings the collector marks on every cycle. A string's entry is its
// length (a uvarint) then its bytes; a multiple's is the count of its
// strings (a uvarint) then each string's entry. The array is append-only:
// the bytes an entry was written to are never written again, so the
// strings cut from it stay valid whatever the column does next. A rewrite
// of a row leaves its old entry behind as garbage; once garbage is most of
// the array, the live entries are copied to a new one.

// strArena holds the entries of one column by row. offs[row] == 0, the
// offset of the empty entry every arena starts with, is a row without a
// value or with an empty one.
type strArena struct {
	data    []byte
	offs    []uint64
	garbage int64 // bytes of data no row refers to
}

// minRepack is the least garbage worth copying an arena for.
const minRepack = 64 << 10

// str returns the string whose entry is at off, sharing the arena's bytes,
// and the offset just past the entry.
func (a *strArena) str(off uint64) (string, uint64) {
	b := a.data[off:]
	n, k := uint64(b[0]), 1
	if n >= 0x80 {
		n, k = binary.Uvarint(b)
	}
	end := off + uint64(k) + n
	if n == 0 {
		return "", end
	}
	return unsafe.String(&b[k], int(n)), end
}

// get returns the string of row.
func (a *strArena) get(row uint32) string {
	if int(row) >= len(a.offs) {
		return ""
	}
	s, _ := a.str(a.offs[row])
	return s
}

// list returns the strings of row, a multiple; nil for none. The slice is
// new, the strings share the arena's bytes.
func (a *strArena) list(row uint32) []string {
	if int(row) >= len(a.offs) || a.offs[row] == 0 {
		return nil
	}
	off := a.offs[row]
	n, k := binary.Uvarint(a.data[off:])
	off += uint64(k)
	l := make([]string, n)
	for i := range l {
		l[i], off = a.str(off)
	}
	return l
}

// entryLen is the length of the entry at off: a string's, or a multiple's
// when list.
func (a *strArena) entryLen(off uint64, list bool) uint64 {
	if !list {
		_, end := a.str(off)
		return end - off
	}
	n, k := binary.Uvarint(a.data[off:])
	end := off + uint64(k)
	for range n {
		_, end = a.str(end)
	}
	return end - off
}

// setStr records row's string; when clear, the row has no value.
func (a *strArena) setStr(row uint32, s string, clear bool) {
	a.drop(row, false)
	if !clear {
		a.hold(row)
	}
	if !clear && s != "" {
		off := a.reserve(binary.MaxVarintLen64 + len(s))
		a.data = binary.AppendUvarint(a.data, uint64(len(s)))
		a.data = append(a.data, s...)
		a.offs[row] = off
	}
	a.maybeRepack(false)
}

// setList records row's strings, a multiple; when clear, the row has no
// value.
func (a *strArena) setList(row uint32, l []string, clear bool) {
	a.drop(row, true)
	if !clear {
		a.hold(row)
	}
	if !clear && len(l) > 0 {
		need := binary.MaxVarintLen64 * (1 + len(l))
		for _, s := range l {
			need += len(s)
		}
		off := a.reserve(need)
		a.data = binary.AppendUvarint(a.data, uint64(len(l)))
		for _, s := range l {
			a.data = binary.AppendUvarint(a.data, uint64(len(s)))
			a.data = append(a.data, s...)
		}
		a.offs[row] = off
	}
	a.maybeRepack(true)
}

// drop turns row's entry, if any, into garbage and leaves the row empty.
func (a *strArena) drop(row uint32, list bool) {
	if int(row) >= len(a.offs) || a.offs[row] == 0 {
		return
	}
	a.garbage += int64(a.entryLen(a.offs[row], list))
	a.offs[row] = 0
}

// hold makes room for the offset of row, which is to hold a value: every
// such row has an offset, if only that of the empty entry.
func (a *strArena) hold(row uint32) {
	a.offs = grow(a.offs, int(row)+1)
	if len(a.data) == 0 {
		a.data = make([]byte, 1, 4096)
	}
}

// reserve makes room for need more bytes of entries, growing by a
// quarter, and returns where the next entry starts.
func (a *strArena) reserve(need int) uint64 {
	if len(a.data)+need > cap(a.data) {
		nd := make([]byte, len(a.data), len(a.data)+len(a.data)/4+need+4096)
		copy(nd, a.data)
		a.data = nd
	}
	return uint64(len(a.data))
}

// maybeRepack copies the live entries to a new array once garbage is half
// of the array or more. Strings cut from the old array keep it alive until
// they are dropped.
func (a *strArena) maybeRepack(list bool) {
	if a.garbage < minRepack || a.garbage < int64(len(a.data))/2 {
		return
	}
	nd := make([]byte, 1, int64(len(a.data))-a.garbage+int64(len(a.data))/8)
	for row, off := range a.offs {
		if off == 0 {
			continue
		}
		e := a.data[off : off+a.entryLen(off, list)]
		a.offs[row] = uint64(len(nd))
		nd = append(nd, e...)
	}
	a.data, a.garbage = nd, 0
}

// clone returns a copy of a that changes apart from it. The copy shares
// the entries written so far; its array is capped, so that its appends
// go to an array of its own and never into bytes a shares.
func (a *strArena) clone() strArena {
	return strArena{data: a.data[:len(a.data):len(a.data)], offs: slices.Clone(a.offs), garbage: a.garbage}
}

// bytes is the memory the arena takes.
func (a *strArena) bytes() int64 { return int64(cap(a.data)) + 8*int64(cap(a.offs)) }
