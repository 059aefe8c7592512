package index

import (
	"encoding/binary"
	"unsafe"
)

// PackedStrings is the values of a string column by row, kept in one byte
// array rather than as a string per row, so that the memory holding them
// has no pointers for the collector to follow: Offs[row] is where the
// row's value starts in Data, as its length (a uvarint) then its bytes.
// The bytes of Data that values were cut from are never rewritten, so the
// strings At returns stay valid after the array is dropped or grows.
type PackedStrings struct {
	Data []byte
	Offs []uint64
}

// Len is the number of rows the values are kept for.
func (p PackedStrings) Len() int { return len(p.Offs) }

// At returns the value of row, which is less than Len; the string shares
// the bytes of Data.
func (p PackedStrings) At(row uint32) string {
	return packedAt(p.Data, p.Offs[row])
}

// packedAt returns the value that starts at off in data.
func packedAt(data []byte, off uint64) string {
	b := data[off:]
	n, k := uint64(b[0]), 1
	if n >= 0x80 {
		n, k = binary.Uvarint(b)
	}
	if n == 0 {
		return ""
	}
	return unsafe.String(&b[k], int(n))
}
