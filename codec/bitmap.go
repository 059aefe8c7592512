package codec

// Bitmap values: posting lists written blind as deltas and folded together by
// a Pebble merge operator, so indexing a row never reads a bitmap.
//
// A stored value is one of
//
//	delta: 0x01 | uvarint len(A) | A | uvarint len(D) | D
//	full:  0x02 | uvarint len(A) | A
//
// where A (adds) and D (dels) are roaring bitmaps in the portable
// serialization format (https://github.com/RoaringBitmap/RoaringFormatSpec),
// run-optimized before writing, and a length of 0 stands for the empty set (no
// roaring bytes follow). Nothing may follow the last bitmap. A delta never has
// a row in both A and D; a full value is the whole set and has no D. These
// rules make the encoding canonical: the same (adds, dels, full) always gives
// the same bytes, whatever operations built the bitmaps.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
)

// Leading byte of a bitmap value; it doubles as the format version, so a new
// layout takes a new byte.
const (
	deltaTagDelta byte = 0x01
	deltaTagFull  byte = 0x02
)

// errBadDelta is wrapped by every DecodeDelta and DecodeBitmap error.
var errBadDelta = errors.New("codec: malformed bitmap value")

// Delta is a change to a set of row ids, or (Full) the set itself.
//
// Applying a delta removes Dels and then adds Adds, so a row in both ends up
// in the set; the constructors, Then and DecodeDelta keep the two disjoint
// (Then only if its inputs are).
// The zero Delta (nil bitmaps) is a valid empty change. A Delta owns its
// bitmaps and is not safe for concurrent use.
type Delta struct {
	Adds *roaring.Bitmap // never nil after Decode
	Dels *roaring.Bitmap // never nil after Decode; empty when Full
	Full bool            // Adds is the complete set: the merge reached the base
}

// NewDelta returns a change that adds and removes nothing, with both bitmaps
// allocated so callers can add rows to them directly.
func NewDelta() Delta {
	return Delta{Adds: roaring.New(), Dels: roaring.New()}
}

// AddDelta returns the change that inserts row into a set.
func AddDelta(row uint32) Delta {
	return Delta{Adds: roaring.BitmapOf(row), Dels: roaring.New()}
}

// DelDelta returns the change that removes row from a set.
func DelDelta(row uint32) Delta {
	return Delta{Adds: roaring.New(), Dels: roaring.BitmapOf(row)}
}

// AppendDelta appends the canonical encoding of d to dst and returns the
// extended slice. Rows in both Adds and Dels are encoded as adds only, and a
// Full delta's Dels are ignored.
//
// AppendDelta run-optimizes d's bitmaps in place: their contents are unchanged
// but their representation is not, so it must not run concurrently with any
// other use of d.
func AppendDelta(dst []byte, d Delta) []byte {
	if d.Full {
		dst = append(dst, deltaTagFull)
		return deltaAppendBitmap(dst, d.Adds)
	}
	dst = append(dst, deltaTagDelta)
	dst = deltaAppendBitmap(dst, d.Adds)
	dels := d.Dels
	if dels != nil && d.Adds != nil && dels.Intersects(d.Adds) {
		dels = roaring.AndNot(dels, d.Adds)
	}
	return deltaAppendBitmap(dst, dels)
}

// DecodeDelta decodes a value written by AppendDelta. Malformed input of any
// kind gives an error, never a panic. The result has non-nil, disjoint
// bitmaps and shares no memory with src, which may be reused at once.
//
// Everything AppendDelta rules out is rejected (unknown tag, trailing bytes,
// a row in both adds and dels, an empty set not written as length 0) except
// the choice of roaring containers: that follows roaring's heuristics, which
// may change between library versions, and values already stored must stay
// readable. Re-encoding a decoded value always gives canonical bytes.
func DecodeDelta(src []byte) (Delta, error) { return decodeDelta(src, true) }

// DecodeDeltaStored decodes a value this store wrote and read back through
// Pebble, whose blocks are checksummed: it checks everything DecodeDelta
// does except roaring's structural validation of the containers, whose cost
// grows with the square of a container's runs and would dominate reads.
func DecodeDeltaStored(src []byte) (Delta, error) { return decodeDelta(src, false) }

// DecodeBitmapStored is DecodeBitmap for values this store wrote (see
// DecodeDeltaStored).
func DecodeBitmapStored(src []byte) (*roaring.Bitmap, error) {
	d, err := decodeDelta(src, false)
	if err != nil {
		return nil, err
	}
	return d.Adds, nil
}

func decodeDelta(src []byte, validate bool) (Delta, error) {
	if len(src) == 0 {
		return Delta{}, fmt.Errorf("%w: empty", errBadDelta)
	}
	tag, rest := src[0], src[1:]
	if tag != deltaTagDelta && tag != deltaTagFull {
		return Delta{}, fmt.Errorf("%w: unknown tag %#x", errBadDelta, tag)
	}
	adds, rest, err := deltaReadBitmap(rest, validate)
	if err != nil {
		return Delta{}, fmt.Errorf("%w: adds: %v", errBadDelta, err)
	}
	d := Delta{Adds: adds, Full: tag == deltaTagFull}
	if d.Full {
		d.Dels = roaring.New()
	} else {
		if d.Dels, rest, err = deltaReadBitmap(rest, validate); err != nil {
			return Delta{}, fmt.Errorf("%w: dels: %v", errBadDelta, err)
		}
		if d.Dels.Intersects(d.Adds) {
			return Delta{}, fmt.Errorf("%w: a row is both added and deleted", errBadDelta)
		}
	}
	if len(rest) != 0 {
		return Delta{}, fmt.Errorf("%w: %d trailing bytes", errBadDelta, len(rest))
	}
	return d, nil
}

// DecodeBitmap returns the set a stored value stands for when it is the whole
// history of its key: a full value's set, or a delta's adds (a delta at the
// bottom of a key's history applies to the empty set). Errors are as for
// DecodeDelta, and the result does not alias src.
func DecodeBitmap(src []byte) (*roaring.Bitmap, error) {
	d, err := DecodeDelta(src)
	if err != nil {
		return nil, err
	}
	return d.Adds, nil
}

// Then composes d (the older change) with newer in place, so that applying d
// afterwards equals applying the old d and then newer. Composition is
// associative. If d is Full the result stays Full; if newer is Full the result
// is a copy of newer. newer is only read and must not share bitmaps with d.
func (d *Delta) Then(newer Delta) {
	d.ensure()
	if newer.Full {
		d.Adds = deltaClone(newer.Adds)
		d.Dels = roaring.New()
		d.Full = true
		return
	}
	// adds = (a1 − d2) ∪ a2, dels = (d1 − a2) ∪ d2: each row keeps the
	// verdict of the newest change that mentions it.
	if newer.Dels != nil {
		d.Adds.AndNot(newer.Dels)
	}
	if newer.Adds != nil {
		d.Adds.Or(newer.Adds)
	}
	if d.Full {
		return
	}
	if newer.Adds != nil {
		d.Dels.AndNot(newer.Adds)
	}
	if newer.Dels != nil {
		d.Dels.Or(newer.Dels)
	}
}

// Before composes older before d in place: afterwards applying d equals
// applying older and then the old d, as older.Then(d) would leave older.
// It costs what older holds, not what d holds, so that folding a long
// history newest first, as a merge operator does, is linear in the
// history rather than quadratic in the accumulated sets. older is
// consumed: Before may change its bitmaps and keep them.
func (d *Delta) Before(older Delta) {
	if d.Full {
		return
	}
	d.ensure()
	older.ensure()
	// adds = (a1 − d2) ∪ a2, dels = (d1 − a2) ∪ d2, both from d's sets as
	// they were; a full older keeps its dels, as Then does.
	older.Adds.AndNot(d.Dels)
	if !older.Full {
		older.Dels.AndNot(d.Adds)
	}
	d.Adds.Or(older.Adds)
	if older.Full {
		d.Full = true
		d.Dels = older.Dels
		return
	}
	d.Dels.Or(older.Dels)
}

// ApplyTo applies d to set in place: set = set − Dels ∪ Adds, or set = Adds
// when d is Full. set must not be nil.
func (d Delta) ApplyTo(set *roaring.Bitmap) {
	if d.Full {
		set.Clear()
	} else if d.Dels != nil {
		set.AndNot(d.Dels)
	}
	if d.Adds != nil {
		set.Or(d.Adds)
	}
}

// UndoFrom reverses d on set in place: set = set − Adds ∪ Dels. The result is
// the set before d only if d was exact, that is its Adds were all absent and
// its Dels all present when it was applied; deltas logged next to a bitmap's
// writes are exact, so undoing them newest first walks the bitmap back in
// time. A Full delta is undone as if it had been applied to the empty set.
func (d Delta) UndoFrom(set *roaring.Bitmap) {
	if d.Adds != nil {
		set.AndNot(d.Adds)
	}
	if !d.Full && d.Dels != nil {
		set.Or(d.Dels)
	}
}

// ensure allocates nil bitmaps so the zero Delta can be composed.
func (d *Delta) ensure() {
	if d.Adds == nil {
		d.Adds = roaring.New()
	}
	if d.Dels == nil {
		d.Dels = roaring.New()
	}
}

func deltaClone(b *roaring.Bitmap) *roaring.Bitmap {
	if b == nil {
		return roaring.New()
	}
	return b.Clone()
}

// deltaAppendBitmap appends uvarint length + portable serialization of b, or
// a single 0 for an empty (or nil) b.
func deltaAppendBitmap(dst []byte, b *roaring.Bitmap) []byte {
	if b == nil || b.IsEmpty() {
		return append(dst, 0)
	}
	b.RunOptimize()
	n := b.GetSerializedSizeInBytes()
	dst = binary.AppendUvarint(dst, n)
	w := deltaAppender{buf: dst}
	written, err := b.WriteTo(&w)
	if err != nil || uint64(written) != n {
		// deltaAppender cannot fail, and roaring computes the size from the
		// same containers it writes.
		panic(fmt.Sprintf("codec: roaring wrote %d bytes, announced %d (err %v)", written, n, err))
	}
	return w.buf
}

// deltaReadBitmap reads one length-prefixed bitmap from the front of src and
// returns it with the rest of src. The bitmap is copied out of src and
// validated, so a corrupt value cannot yield an inconsistent bitmap.
func deltaReadBitmap(src []byte, validate bool) (*roaring.Bitmap, []byte, error) {
	n, k := binary.Uvarint(src)
	if k <= 0 {
		return nil, nil, errors.New("bad length")
	}
	src = src[k:]
	if n > uint64(len(src)) {
		return nil, nil, fmt.Errorf("length %d exceeds the %d bytes left", n, len(src))
	}
	body, rest := src[:n], src[n:]
	b := roaring.New()
	if n == 0 {
		return b, rest, nil
	}
	// A bytes.Reader (unlike FromBuffer) makes roaring copy every container,
	// so the bitmap does not alias src.
	read, err := b.ReadFrom(bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if read != int64(n) {
		return nil, nil, fmt.Errorf("roaring used %d of %d bytes", read, n)
	}
	if validate {
		if err := b.Validate(); err != nil {
			return nil, nil, err
		}
	}
	if b.IsEmpty() {
		return nil, nil, errors.New("empty set not written as length 0")
	}
	return b, rest, nil
}

// deltaAppender is an io.Writer that appends to a byte slice and never fails.
type deltaAppender struct{ buf []byte }

func (w *deltaAppender) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// Roaring's portable format, as much of it as AppendAddsDelta writes:
// the cookies of a bitmap without and with run containers, and the most
// values an array container holds.
const (
	roaringCookieNoRuns = 12346
	roaringCookieRuns   = 12347
	roaringMaxArray     = 4096
)

// AppendAddsDelta appends to dst the encoding of the delta that adds rows,
// which increase strictly, and returns the extended slice: the bytes
// AppendDelta writes for that delta, without making its bitmap when the
// rows fall in one container of up to roaringMaxArray of them, as a
// batch's postings in one chunk of rows do. Such a container is written
// as roaring writes it after RunOptimize: as runs when they take fewer
// bytes than the array.
func AppendAddsDelta(dst []byte, rows []uint32) []byte {
	if len(rows) == 0 {
		return AppendDelta(dst, Delta{})
	}
	key := rows[0] >> 16
	if len(rows) > roaringMaxArray || rows[len(rows)-1]>>16 != key {
		return AppendDelta(dst, Delta{Adds: roaring.BitmapOf(rows...)})
	}
	runs := 1
	for i := 1; i < len(rows); i++ {
		if rows[i] != rows[i-1]+1 {
			runs++
		}
	}
	card := len(rows)
	dst = append(dst, deltaTagDelta)
	if 2+4*runs < 2*card {
		// cookie and container count - 1, a run flag for the one
		// container, its key and cardinality - 1, no offsets below four
		// containers, then the runs: their count and each one's first
		// row and length - 1.
		n := 4 + 1 + 4 + 2 + 4*runs
		dst = binary.AppendUvarint(dst, uint64(n))
		dst = binary.LittleEndian.AppendUint16(dst, roaringCookieRuns)
		dst = binary.LittleEndian.AppendUint16(dst, 0)
		dst = append(dst, 1)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(key))
		dst = binary.LittleEndian.AppendUint16(dst, uint16(card-1))
		dst = binary.LittleEndian.AppendUint16(dst, uint16(runs))
		start := 0
		for i := 1; i <= len(rows); i++ {
			if i == len(rows) || rows[i] != rows[i-1]+1 {
				dst = binary.LittleEndian.AppendUint16(dst, uint16(rows[start]))
				dst = binary.LittleEndian.AppendUint16(dst, uint16(i-1-start))
				start = i
			}
		}
	} else {
		// cookie, container count, its key and cardinality - 1, the
		// offset of its content, then the content.
		n := 4 + 4 + 4 + 4 + 2*card
		dst = binary.AppendUvarint(dst, uint64(n))
		dst = binary.LittleEndian.AppendUint32(dst, roaringCookieNoRuns)
		dst = binary.LittleEndian.AppendUint32(dst, 1)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(key))
		dst = binary.LittleEndian.AppendUint16(dst, uint16(card-1))
		dst = binary.LittleEndian.AppendUint32(dst, 16)
		for _, r := range rows {
			dst = binary.LittleEndian.AppendUint16(dst, uint16(r))
		}
	}
	return append(dst, 0) // no removals
}

// IsCanonicalAddsDelta reports whether src is what AppendAddsDelta writes
// for the rows it holds: a delta that only adds rows, all in one array or
// run container of up to roaringMaxArray of them, written as runs exactly
// when they take fewer bytes than the array. Such a value is the encoding
// of its set, so a merge of it alone may keep its bytes instead of
// decoding and writing them again. It reads the value without allocating;
// any other value, well-formed or not, gives false.
func IsCanonicalAddsDelta(src []byte) bool {
	body, isRuns, ok := addsDeltaContainer(src)
	if !ok {
		return false
	}
	var minimal [binary.MaxVarintLen64]byte
	if binary.PutUvarint(minimal[:], uint64(len(body))) != len(src)-2-len(body) {
		return false // the body's length not written in its fewest bytes
	}
	le := binary.LittleEndian
	if isRuns {
		card, runs := int(le.Uint16(body[7:]))+1, int(le.Uint16(body[9:]))
		if runs == 0 || len(body) != 11+4*runs || card > roaringMaxArray || 2+4*runs >= 2*card {
			return false
		}
		next, rows := 0, 0 // the lowest value the next run may start at
		for i := range runs {
			first, length := int(le.Uint16(body[11+4*i:])), int(le.Uint16(body[13+4*i:]))
			if first < next || first+length > 0xFFFF {
				return false
			}
			rows += length + 1
			next = first + length + 2 // runs neither overlap nor touch
		}
		return rows == card
	}
	card := int(le.Uint16(body[10:])) + 1
	if card > roaringMaxArray || len(body) != 16+2*card {
		return false
	}
	runs := 1
	for i := 1; i < card; i++ {
		v, prev := le.Uint16(body[16+2*i:]), le.Uint16(body[14+2*i:])
		if v <= prev {
			return false
		}
		if v != prev+1 {
			runs++
		}
	}
	return 2+4*runs >= 2*card
}

// addsDeltaContainer returns the serialized roaring bitmap of src when src
// is a delta that only adds rows and that bitmap holds one container, run
// or array (isRuns says which), checked as far as its header; ok is false
// for any other value.
func addsDeltaContainer(src []byte) (body []byte, isRuns, ok bool) {
	if len(src) < 2 || src[0] != deltaTagDelta || src[len(src)-1] != 0 {
		return nil, false, false
	}
	n, k := binary.Uvarint(src[1:])
	if k <= 0 || n == 0 || uint64(len(src)) != 1+uint64(k)+n+1 {
		return nil, false, false
	}
	body = src[1+k : len(src)-1]
	le := binary.LittleEndian
	switch {
	case len(body) >= 13 && le.Uint32(body) == roaringCookieRuns && body[4] == 1:
		return body, true, true
	case len(body) >= 16 && le.Uint32(body) == roaringCookieNoRuns && le.Uint32(body[4:]) == 1 && le.Uint32(body[12:]) == 16:
		return body, false, true
	}
	return nil, false, false
}

// AppendAddsDeltaRows is the inverse of AppendAddsDelta for its cheap
// shape: if src is a delta that only adds rows, all in one array or run
// container, it appends those rows, increasing, to dst and returns the
// extended slice and true, without making a bitmap. For any other value,
// well-formed or not, it returns dst unchanged and false, and the caller
// decodes src with DecodeDeltaStored, which reports any corruption.
func AppendAddsDeltaRows(dst []uint32, src []byte) ([]uint32, bool) {
	body, isRuns, ok := addsDeltaContainer(src)
	if !ok {
		return dst, false
	}
	le := binary.LittleEndian
	start := len(dst)
	if isRuns {
		// One run container: key, cardinality - 1, run count, runs.
		key, card, runs := uint32(le.Uint16(body[5:]))<<16, int(le.Uint16(body[7:]))+1, int(le.Uint16(body[9:]))
		if runs == 0 || len(body) != 11+4*runs {
			return dst, false
		}
		next := 0 // the lowest value the next run may start at
		for i := range runs {
			first, last := int(le.Uint16(body[11+4*i:])), int(le.Uint16(body[11+4*i:]))+int(le.Uint16(body[13+4*i:]))
			if first < next || last > 0xFFFF {
				return dst[:start], false
			}
			for v := first; v <= last; v++ {
				dst = append(dst, key|uint32(v))
			}
			next = last + 2 // runs neither overlap nor touch
		}
		if len(dst)-start != card {
			return dst[:start], false
		}
		return dst, true
	}
	// One array container: key, cardinality - 1, offset, values.
	key, card := uint32(le.Uint16(body[8:]))<<16, int(le.Uint16(body[10:]))+1
	if card > roaringMaxArray || len(body) != 16+2*card {
		return dst, false
	}
	for i := range card {
		v := le.Uint16(body[16+2*i:])
		if i > 0 && v <= le.Uint16(body[14+2*i:]) {
			return dst[:start], false
		}
		dst = append(dst, key|uint32(v))
	}
	return dst, true
}
