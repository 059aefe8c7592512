package codec

// This file holds the stored form of a row version. Unlike the ordered
// encoding it is compact rather than sortable; AppendRecord documents the
// byte layout.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"
)

// Field is one non-null column value of a record.
type Field struct {
	Col uint32 // column id, stable across renames
	Val Value
}

// Record is one stored version of a row. Fields holds the non-null columns
// sorted by Col with no duplicates and no KindNull values; Get and Set keep
// that invariant and DecodeRecord enforces it.
type Record struct {
	ID        string // public record id
	Version   uint64
	CreatedAt int64  // unix nanos UTC
	UpdatedAt int64  // unix nanos UTC
	Seq       uint64 // commit sequence number of the write that produced this version
	Deleted   bool   // a tombstone: the row was deleted at Seq (ID kept, Fields empty)
	Fields    []Field
}

// recordFormatV1 is the leading byte of every record; a new layout gets a new
// byte and DecodeRecord dispatches on it.
const recordFormatV1 byte = 0x01

// recordFlagDeleted is bit 0 of the flags byte; the other bits must be zero.
const recordFlagDeleted byte = 0x01

// ErrBadRecord reports bytes that are not a valid record encoding. Errors
// returned by DecodeRecord wrap it with the detail.
var ErrBadRecord = errors.New("codec: malformed record")

// AppendRecord appends the encoding of r to dst and returns the extended
// slice. The encoding is compact and not order-preserving. Varints are Go's
// encoding/binary varints (uvarint: 7 bits a byte, little end first; varint:
// zigzag then uvarint), always of minimal length. The layout:
//
//	01                   format version
//	flags                1 byte: bit 0 = Deleted, other bits 0
//	uvarint len | ID
//	uvarint Version
//	varint  CreatedAt
//	varint  UpdatedAt
//	uvarint Seq
//	uvarint nfields
//	nfields × field:
//	  uvarint Col        strictly increasing
//	  kind               1 byte, the Kind (1–7; never null)
//	  payload:
//	    bool             1 byte, 00 or 01
//	    int, datetime    varint
//	    float            8 bytes, IEEE-754 bits little-endian (stored exactly)
//	    string           uvarint len | bytes
//	    strings          uvarint count | count × (uvarint len | bytes)
//	    vector           uvarint count | count × 8 bytes as float
//
// Nothing may follow the last field. r must keep the Fields invariant
// (sorted, unique, non-null) and a tombstone has no fields: AppendRecord
// encodes what it is given, and DecodeRecord rejects a record that breaks
// the invariant.
func AppendRecord(dst []byte, r *Record) []byte {
	var flags byte
	if r.Deleted {
		flags |= recordFlagDeleted
	}
	dst = append(dst, recordFormatV1, flags)
	dst = appendLenString(dst, r.ID)
	dst = binary.AppendUvarint(dst, r.Version)
	dst = binary.AppendVarint(dst, r.CreatedAt)
	dst = binary.AppendVarint(dst, r.UpdatedAt)
	dst = binary.AppendUvarint(dst, r.Seq)
	dst = binary.AppendUvarint(dst, uint64(len(r.Fields)))
	for _, f := range r.Fields {
		dst = binary.AppendUvarint(dst, uint64(f.Col))
		dst = appendRecordValue(dst, f.Val)
	}
	return dst
}

func appendRecordValue(dst []byte, v Value) []byte {
	dst = append(dst, byte(v.Kind))
	switch v.Kind {
	case KindBool:
		return append(dst, byte(boolBit(v.Int)))
	case KindInt, KindDatetime:
		return binary.AppendVarint(dst, v.Int)
	case KindFloat:
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.Float))
	case KindString:
		return appendLenString(dst, v.Str)
	case KindStrings:
		dst = binary.AppendUvarint(dst, uint64(len(v.Strs)))
		for _, s := range v.Strs {
			dst = appendLenString(dst, s)
		}
		return dst
	case KindVector:
		dst = binary.AppendUvarint(dst, uint64(len(v.Vec)))
		for _, f := range v.Vec {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
		}
		return dst
	}
	return dst // KindNull and unknown kinds: the kind byte alone, which DecodeRecord rejects
}

func appendLenString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// DecodeRecord decodes src into r, overwriting every field of r and reusing
// the backing array of r.Fields. The result does not alias src (strings and
// slices are copied), so src may be reused at once. Values previously in
// r.Fields are not modified, so Values copied out of r stay valid.
//
// Malformed input returns an error wrapping ErrBadRecord, never a panic:
// an unknown format byte or kind, a non-minimal varint, unsorted or duplicate
// columns, a null field, a tombstone with fields, a length longer than the
// bytes left, or trailing bytes. Every record it accepts re-encodes to src.
// On error r holds an unspecified partial result.
func DecodeRecord(src []byte, r *Record) error {
	d := recordDecoder{b: src}
	return d.record(r)
}

// DecodeRecordShared decodes src into r as DecodeRecord does, except that
// the record's strings are cut from a single copy of src instead of one
// copy each: one allocation for the record instead of one per string, and
// a string of it that is kept keeps the whole copy. It suits records read
// to be answered, or kept whole, and not the ones whose strings outlive
// the rest (such as ids put in an index).
func DecodeRecordShared(src []byte, r *Record) error {
	d := recordDecoder{b: src, src: src, shared: true}
	return d.record(r)
}

// DecodeRecordBorrowed decodes src into r as DecodeRecordShared does, but
// the record's strings are cut from src itself: nothing is copied, and r's
// strings are valid only while src is neither changed nor freed. It suits
// a record read to be answered at once, from storage's own buffer.
func DecodeRecordBorrowed(src []byte, r *Record) error {
	d := recordDecoder{b: src, src: src, shared: true}
	if len(src) > 0 {
		d.str = unsafe.String(unsafe.SliceData(src), len(src))
	}
	return d.record(r)
}

// record decodes a whole record from d into r.
func (d *recordDecoder) record(r *Record) error {
	if len(d.b) < 2 {
		return d.fail("truncated header")
	}
	if d.b[0] != recordFormatV1 {
		return d.fail(fmt.Sprintf("unknown format byte %#02x", d.b[0]))
	}
	flags := d.b[1]
	if flags&^recordFlagDeleted != 0 {
		return d.fail(fmt.Sprintf("unknown flags %#02x", flags))
	}
	d.b = d.b[2:]
	r.Deleted = flags&recordFlagDeleted != 0
	r.ID = d.lenString()
	r.Version = d.uvarint()
	r.CreatedAt = d.varint()
	r.UpdatedAt = d.varint()
	r.Seq = d.uvarint()
	n := d.uvarint()
	if d.err != nil {
		return d.err
	}
	// A field takes at least three bytes: column, kind and a one-byte payload.
	if n > uint64(len(d.b)/3) {
		return d.fail(fmt.Sprintf("%d fields in %d bytes", n, len(d.b)))
	}
	if r.Deleted && n != 0 {
		return d.fail("tombstone with fields")
	}
	r.Fields = slices.Grow(r.Fields[:0], int(n))
	for i := range n {
		col := d.uvarint()
		if d.err == nil && col > math.MaxUint32 {
			return d.fail(fmt.Sprintf("column id %d overflows uint32", col))
		}
		if d.err == nil && i > 0 && uint32(col) <= r.Fields[i-1].Col {
			return d.fail(fmt.Sprintf("column %d after column %d", col, r.Fields[i-1].Col))
		}
		v := d.value()
		if d.err != nil {
			return d.err
		}
		r.Fields = append(r.Fields, Field{Col: uint32(col), Val: v})
	}
	if len(d.b) != 0 {
		return d.fail(fmt.Sprintf("%d trailing bytes", len(d.b)))
	}
	return nil
}

// recordDecoder consumes a record from the front of b. After the first error
// every method returns a zero value and err keeps the first error, so the
// caller may check once after a run of reads.
type recordDecoder struct {
	b   []byte
	err error
	// With shared, strings are cut from str, a copy of src (of which b
	// is the unread end) made at the first string, or src itself
	// (DecodeRecordBorrowed).
	shared bool
	src    []byte
	str    string
}

func (d *recordDecoder) fail(msg string) error {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrBadRecord, msg)
	}
	d.b = nil
	return d.err
}

func (d *recordDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated or overflowing varint")
		return 0
	}
	// A minimal varint never ends in a zero byte (binary.Uvarint accepts
	// padded ones, which would give a second encoding of the same record).
	if n > 1 && d.b[n-1] == 0 {
		d.fail("non-minimal varint")
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *recordDecoder) varint() int64 {
	ux := d.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// length reads a count of items of at least size bytes each and checks that
// the rest of the input can hold them, which bounds every allocation by the
// input size.
func (d *recordDecoder) length(size int) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)/size) {
		d.fail(fmt.Sprintf("length %d exceeds the %d bytes left", n, len(d.b)))
		return 0
	}
	return int(n)
}

func (d *recordDecoder) lenString() string {
	n := d.length(1)
	if d.err != nil {
		return ""
	}
	var s string
	if d.shared {
		if d.str == "" {
			d.str = string(d.src)
		}
		at := len(d.src) - len(d.b)
		s = d.str[at : at+n]
	} else {
		s = string(d.b[:n]) // copies: the record must not alias src
	}
	d.b = d.b[n:]
	return s
}

func (d *recordDecoder) float() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("truncated float")
		return 0
	}
	f := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return f
}

func (d *recordDecoder) value() Value {
	if d.err != nil {
		return Value{}
	}
	if len(d.b) == 0 {
		d.fail("truncated field")
		return Value{}
	}
	k := Kind(d.b[0])
	d.b = d.b[1:]
	switch k {
	case KindBool:
		if len(d.b) == 0 || d.b[0] > 1 {
			d.fail("bad bool")
			return Value{}
		}
		v := Value{Kind: KindBool, Int: int64(d.b[0])}
		d.b = d.b[1:]
		return v
	case KindInt, KindDatetime:
		return Value{Kind: k, Int: d.varint()}
	case KindFloat:
		return Value{Kind: KindFloat, Float: d.float()}
	case KindString:
		return Value{Kind: KindString, Str: d.lenString()}
	case KindStrings:
		n := d.length(1)
		var ss []string
		if n > 0 {
			ss = make([]string, n)
		}
		for i := range ss {
			ss[i] = d.lenString()
		}
		return Value{Kind: KindStrings, Strs: ss}
	case KindVector:
		n := d.length(8)
		var vec []float64
		if n > 0 {
			vec = make([]float64, n)
		}
		for i := range vec {
			vec[i] = d.float()
		}
		return Value{Kind: KindVector, Vec: vec}
	}
	d.fail(fmt.Sprintf("bad field kind %v", k))
	return Value{}
}

// Get returns the value of column col and whether it is present; an absent
// column is null. It binary-searches Fields, so it relies on their order.
func (r *Record) Get(col uint32) (Value, bool) {
	if i, ok := r.find(col); ok {
		return r.Fields[i].Val, true
	}
	return Value{}, false
}

// Set stores v in column col, inserting the field in order or replacing the
// existing one. A KindNull v removes the column instead, since null columns
// are absent. Set keeps v's Strs and Vec; it does not copy them.
func (r *Record) Set(col uint32, v Value) {
	i, ok := r.find(col)
	switch {
	case v.Kind == KindNull:
		if ok {
			r.Fields = slices.Delete(r.Fields, i, i+1)
		}
	case ok:
		r.Fields[i].Val = v
	default:
		r.Fields = slices.Insert(r.Fields, i, Field{Col: col, Val: v})
	}
}

func (r *Record) find(col uint32) (int, bool) {
	return slices.BinarySearchFunc(r.Fields, col, func(f Field, c uint32) int {
		switch {
		case f.Col < c:
			return -1
		case f.Col > c:
			return 1
		}
		return 0
	})
}

// Clone returns a deep copy of r: the copy shares no slice with r, so either
// may be modified freely. Clone of nil is nil.
func (r *Record) Clone() *Record {
	if r == nil {
		return nil
	}
	c := *r
	if r.Fields != nil {
		c.Fields = make([]Field, len(r.Fields))
		for i, f := range r.Fields {
			c.Fields[i] = Field{Col: f.Col, Val: cloneValue(f.Val)}
		}
	}
	return &c
}

func cloneValue(v Value) Value {
	v.Strs = slices.Clone(v.Strs)
	v.Vec = slices.Clone(v.Vec)
	return v
}

// RecordSeq returns the Seq of an encoded record by reading its header
// only: versioned reads check it before deciding which version to decode.
func RecordSeq(src []byte) (uint64, error) {
	d := recordDecoder{b: src}
	if len(d.b) < 2 || d.b[0] != recordFormatV1 {
		return 0, d.fail("bad header")
	}
	d.b = d.b[2:]
	n := d.length(1)
	if d.err != nil {
		return 0, d.err
	}
	d.b = d.b[n:]
	d.uvarint()
	d.varint()
	d.varint()
	seq := d.uvarint()
	return seq, d.err
}
