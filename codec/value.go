package codec

import (
	"cmp"
	"math"
	"strconv"
	"strings"
	"time"
)

// Kind is the type of a Value. The numeric order of the kinds is the order in
// which Compare sorts values of different kinds.
type Kind uint8

// The kinds of Value. The schema, not the Kind, says what a string means.
const (
	// KindNull is the absent value; Null columns are not stored in records.
	KindNull Kind = iota
	// KindBool holds 0 (false) or 1 (true) in Value.Int.
	KindBool
	// KindInt holds a signed 64-bit integer in Value.Int.
	KindInt
	// KindFloat holds a float64 in Value.Float.
	KindFloat
	// KindString holds string, text, email, link target id, JSON text and
	// file JSON columns in Value.Str.
	KindString
	// KindDatetime holds UTC unix nanoseconds in Value.Int.
	KindDatetime
	// KindStrings holds the elements of a `multiple` column in Value.Strs.
	KindStrings
	// KindVector holds the components of a `vector` column in Value.Vec.
	KindVector
)

var kindNames = [...]string{
	KindNull:     "null",
	KindBool:     "bool",
	KindInt:      "int",
	KindFloat:    "float",
	KindString:   "string",
	KindDatetime: "datetime",
	KindStrings:  "strings",
	KindVector:   "vector",
}

// String returns the lower-case name of the kind, or "kind(N)" for a value
// outside the defined set.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one column value. Only the fields of its Kind are meaningful; the
// others are ignored by Compare, Equal and every encoder. A Value is a small
// struct passed by value, but Strs and Vec are shared with whoever built it.
type Value struct {
	Kind  Kind
	Int   int64     // KindInt; KindDatetime (unix nanos UTC); KindBool (0 or 1)
	Float float64   // KindFloat
	Str   string    // KindString
	Strs  []string  // KindStrings
	Vec   []float64 // KindVector
}

// canonicalNaN is the one NaN bit pattern Float produces and the ordered
// encoding stores: the quiet NaN with a clear sign bit.
const canonicalNaN = 0x7FF8000000000000

// Null returns the null value, which sorts before every other value.
func Null() Value { return Value{} }

// Bool returns a KindBool value holding 1 for true and 0 for false.
func Bool(b bool) Value {
	v := Value{Kind: KindBool}
	if b {
		v.Int = 1
	}
	return v
}

// Int returns a KindInt value.
func Int(i int64) Value { return Value{Kind: KindInt, Int: i} }

// Float returns a KindFloat value with -0 folded to +0 and every NaN replaced
// by the canonical NaN, so that equal values have one representation.
func Float(f float64) Value { return Value{Kind: KindFloat, Float: canonFloat(f)} }

func canonFloat(f float64) float64 {
	switch {
	case f == 0:
		return 0 // folds -0
	case f != f:
		return math.Float64frombits(canonicalNaN)
	}
	return f
}

// String returns a KindString value holding s.
func String(s string) Value { return Value{Kind: KindString, Str: s} }

// Datetime returns a KindDatetime value holding t as UTC unix nanoseconds.
// Times outside the years 1678–2262 do not fit: the result is undefined, so
// callers validate the range first.
func Datetime(t time.Time) Value { return Value{Kind: KindDatetime, Int: t.UnixNano()} }

// Strings returns a KindStrings value. It keeps s, it does not copy it.
func Strings(s []string) Value { return Value{Kind: KindStrings, Strs: s} }

// Vector returns a KindVector value. It keeps v, it does not copy it.
func Vector(v []float64) Value { return Value{Kind: KindVector, Vec: v} }

// Time returns the instant of a KindDatetime value in UTC. For other kinds
// it interprets Int as nanoseconds, which is meaningless but harmless.
func (v Value) Time() time.Time { return time.Unix(0, v.Int).UTC() }

// IsNull reports whether v is the null value (of KindNull).
func (v Value) IsNull() bool { return v.Kind == KindNull }

// Compare returns -1, 0 or +1 as a sorts before, with or after b. Values of
// different kinds sort by Kind. Within a kind: false < true (any non-zero Int
// is true); ints and datetimes numerically; floats numerically with -0 == +0
// and every NaN equal to every other NaN and after +Inf; strings bytewise;
// string lists and vectors element by element, then shorter first. For the
// scalar kinds this is exactly the order of AppendOrdered's bytes.
func Compare(a, b Value) int {
	if a.Kind != b.Kind {
		return cmp.Compare(a.Kind, b.Kind)
	}
	switch a.Kind {
	case KindBool:
		return cmp.Compare(boolBit(a.Int), boolBit(b.Int))
	case KindInt, KindDatetime:
		return cmp.Compare(a.Int, b.Int)
	case KindFloat:
		return compareFloat(a.Float, b.Float)
	case KindString:
		return strings.Compare(a.Str, b.Str)
	case KindStrings:
		for i := range min(len(a.Strs), len(b.Strs)) {
			if c := strings.Compare(a.Strs[i], b.Strs[i]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(a.Strs), len(b.Strs))
	case KindVector:
		for i := range min(len(a.Vec), len(b.Vec)) {
			if c := compareFloat(a.Vec[i], b.Vec[i]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(a.Vec), len(b.Vec))
	}
	return 0 // KindNull, and kinds outside the defined set carry no data
}

// Equal reports whether Compare(a, b) == 0. In particular -0 equals +0, NaN
// equals NaN, and a nil list equals an empty one.
func Equal(a, b Value) bool { return Compare(a, b) == 0 }

func boolBit(i int64) int {
	if i != 0 {
		return 1
	}
	return 0
}

// compareFloat is cmp.Compare with NaN moved from first to last place, which
// is where the ordered encoding puts it.
func compareFloat(a, b float64) int {
	aNaN, bNaN := a != a, b != b
	switch {
	case aNaN && bNaN:
		return 0
	case aNaN:
		return 1
	case bNaN:
		return -1
	}
	return cmp.Compare(a, b)
}
