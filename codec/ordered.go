package codec

// This file holds the order-preserving encoding of scalar values used inside
// keys; AppendOrdered documents the byte layout.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Type tags of the ordered encoding, in sort order.
const (
	ordTagNull     byte = 0x05
	ordTagFalse    byte = 0x10
	ordTagTrue     byte = 0x11
	ordTagInt      byte = 0x20
	ordTagFloat    byte = 0x30
	ordTagString   byte = 0x40
	ordTagDatetime byte = 0x50
)

// Bytes inside an encoded string: 00 is escaped as 00 FF and 00 01 ends it.
const (
	ordEscape     byte = 0x00
	ordEscaped00  byte = 0xFF
	ordTerminator byte = 0x01
)

// ErrNotScalar is returned by AppendOrdered for kinds that have no single
// ordered encoding (string lists and vectors: index their elements instead)
// and for kinds outside the defined set.
var ErrNotScalar = errors.New("codec: value kind has no ordered encoding")

// ErrBadValue reports bytes that are not a valid ordered encoding. Errors
// returned by DecodeOrdered wrap it with the detail.
var ErrBadValue = errors.New("codec: malformed ordered value")

// AppendOrdered appends the order-preserving encoding of a scalar value (Null,
// Bool, Int, Float, String, Datetime) to dst and returns the extended slice.
// For KindStrings, KindVector and unknown kinds it returns dst unchanged and
// an error wrapping ErrNotScalar.
//
// bytes.Compare of two encodings (Pebble's default comparer) agrees with
// Compare of the values. Each encoding is self-delimiting, so a key may carry
// several values in a row or continue after one. The layout, a one-byte tag
// in sort order and then the payload:
//
//	null             05
//	false            10
//	true             11
//	int i            20 | uint64(i) XOR 1<<63, 8 bytes big-endian
//	float f          30 | b, 8 bytes big-endian: b is the IEEE-754 bits of f
//	                      with -0 folded to +0 and NaN made canonical
//	                      (7FF8000000000000), then all bits inverted if the
//	                      sign bit is set, else the sign bit set
//	string s         40 | s with each 00 written as 00 FF | 00 01
//	datetime t       50 | uint64(unix nanos) XOR 1<<63, 8 bytes big-endian
//
// The tags leave gaps for kinds added later. Flipping the sign bit makes
// two's-complement integers sort as unsigned bytes; the float transform does
// the same for sign-magnitude floats and puts NaN after +Inf. The string
// terminator 00 01 sorts below every escaped byte (00 FF or a non-zero byte),
// so a string sorts before its extensions, and the escaped bytes of p are a
// prefix of every encoded string that starts with p (see OrderedStringPrefix).
//
// DecodeOrdered accepts exactly the bytes this function produces.
func AppendOrdered(dst []byte, v Value) ([]byte, error) {
	switch v.Kind {
	case KindNull:
		return append(dst, ordTagNull), nil
	case KindBool:
		if v.Int != 0 {
			return append(dst, ordTagTrue), nil
		}
		return append(dst, ordTagFalse), nil
	case KindInt:
		return binary.BigEndian.AppendUint64(append(dst, ordTagInt), flipSign(v.Int)), nil
	case KindFloat:
		return binary.BigEndian.AppendUint64(append(dst, ordTagFloat), orderedFloatBits(v.Float)), nil
	case KindString:
		return append(appendEscaped(append(dst, ordTagString), v.Str), ordEscape, ordTerminator), nil
	case KindDatetime:
		return binary.BigEndian.AppendUint64(append(dst, ordTagDatetime), flipSign(v.Int)), nil
	}
	return dst, fmt.Errorf("%w: %v", ErrNotScalar, v.Kind)
}

// OrderedStringPrefix appends the encoding of the string p without its
// terminator to dst. An encoded string begins with these bytes if and only if
// the string starts with p, so the encoded strings starting with p are the key
// range [prefix, PrefixEnd(prefix)) — a $startsWith filter is a range scan.
func OrderedStringPrefix(dst []byte, p string) []byte {
	return appendEscaped(append(dst, ordTagString), p)
}

// DecodeOrdered decodes one value from the front of src and returns it with
// the bytes after it. The value does not alias src; rest does. Decoding is
// strict: an unknown tag, a short payload, an encoded -0 or non-canonical NaN,
// a bad escape or a missing terminator return an error wrapping ErrBadValue
// (never a panic). So re-encoding a decoded value gives back exactly the
// bytes consumed, and decoding an encoding gives back an Equal value.
func DecodeOrdered(src []byte) (v Value, rest []byte, err error) {
	if len(src) == 0 {
		return Value{}, nil, fmt.Errorf("%w: empty input", ErrBadValue)
	}
	tag, body := src[0], src[1:]
	switch tag {
	case ordTagNull:
		return Null(), body, nil
	case ordTagFalse:
		return Bool(false), body, nil
	case ordTagTrue:
		return Bool(true), body, nil
	case ordTagInt, ordTagDatetime:
		if len(body) < 8 {
			return Value{}, nil, fmt.Errorf("%w: truncated %v", ErrBadValue, tagKind(tag))
		}
		i := int64(binary.BigEndian.Uint64(body) ^ signBit)
		return Value{Kind: tagKind(tag), Int: i}, body[8:], nil
	case ordTagFloat:
		if len(body) < 8 {
			return Value{}, nil, fmt.Errorf("%w: truncated float", ErrBadValue)
		}
		enc := binary.BigEndian.Uint64(body)
		bits := enc ^ signBit
		if enc&signBit == 0 {
			bits = ^enc
		}
		f := math.Float64frombits(bits)
		if orderedFloatBits(f) != enc {
			return Value{}, nil, fmt.Errorf("%w: non-canonical float %016x", ErrBadValue, enc)
		}
		return Value{Kind: KindFloat, Float: f}, body[8:], nil
	case ordTagString:
		s, n, err := decodeEscaped(body)
		if err != nil {
			return Value{}, nil, err
		}
		return String(s), body[n:], nil
	}
	return Value{}, nil, fmt.Errorf("%w: unknown tag %#02x", ErrBadValue, tag)
}

const signBit = uint64(1) << 63

func flipSign(i int64) uint64 { return uint64(i) ^ signBit }

func tagKind(tag byte) Kind {
	if tag == ordTagDatetime {
		return KindDatetime
	}
	return KindInt
}

// orderedFloatBits maps f to a uint64 whose unsigned order is compareFloat's.
func orderedFloatBits(f float64) uint64 {
	bits := math.Float64bits(canonFloat(f))
	if bits&signBit != 0 {
		return ^bits
	}
	return bits | signBit
}

func appendEscaped(dst []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(append(dst, s[:i]...), ordEscape, ordEscaped00)
		s = s[i+1:]
	}
}

// decodeEscaped decodes an escaped, terminated string from the front of b and
// returns it with the number of bytes consumed, terminator included.
func decodeEscaped(b []byte) (string, int, error) {
	var buf []byte // nil until the first escape: most strings have none
	start := 0
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], 0)
		if j < 0 {
			return "", 0, fmt.Errorf("%w: unterminated string", ErrBadValue)
		}
		i += j
		if i+1 >= len(b) {
			return "", 0, fmt.Errorf("%w: truncated string escape", ErrBadValue)
		}
		switch b[i+1] {
		case ordTerminator:
			if buf == nil {
				return string(b[start:i]), i + 2, nil
			}
			return string(append(buf, b[start:i]...)), i + 2, nil
		case ordEscaped00:
			buf = append(append(buf, b[start:i]...), 0)
			i += 2
			start = i
		default:
			return "", 0, fmt.Errorf("%w: bad string escape 00 %02x", ErrBadValue, b[i+1])
		}
	}
}
