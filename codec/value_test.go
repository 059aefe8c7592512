package codec

import (
	"math"
	"strings"
	"testing"
	"time"
)

// Edge values shared by the tests of this package.
var (
	negZero     = math.Copysign(0, -1)
	negNaN      = math.Float64frombits(0xFFF8000000000000)
	payloadNaN  = math.Float64frombits(0x7FF0000000000001) // a signalling NaN
	subnormal   = math.SmallestNonzeroFloat64
	minNormal   = 0x1p-1022
	longString  = strings.Repeat("b", 1000)
	epoch       = time.Unix(0, 0).UTC()
	minDatetime = time.Unix(0, math.MinInt64).UTC() // 1677-09-21
	maxDatetime = time.Unix(0, math.MaxInt64).UTC() // 2262-04-11
)

// scalarEdges lists scalar edge values in strictly increasing Compare order.
// The ordered encoding and the record encoding are tested against all of them.
var scalarEdges = []Value{
	Null(),
	Bool(false),
	Bool(true),
	Int(math.MinInt64),
	Int(math.MinInt64 + 1),
	Int(-1 << 32),
	Int(-256),
	Int(-1),
	Int(0),
	Int(1),
	Int(255),
	Int(256),
	Int(1 << 32),
	Int(math.MaxInt64 - 1),
	Int(math.MaxInt64),
	Float(math.Inf(-1)),
	Float(-math.MaxFloat64),
	Float(-1.5),
	Float(-1),
	Float(-minNormal),
	Float(-2 * subnormal),
	Float(-subnormal),
	Float(0),
	Float(subnormal),
	Float(2 * subnormal),
	Float(minNormal),
	Float(1),
	Float(1.5),
	Float(math.MaxFloat64),
	Float(math.Inf(1)),
	Float(math.NaN()),
	String(""),
	String("\x00"),
	String("\x00\x00"),
	String("\x00\x01"),
	String("\x00\xff"),
	String("\x00\xff\xff"),
	String("\x01"),
	String("A"),
	String("a"),
	String("a\x00"),
	String("a\x00b"),
	String("ab"),
	String("b"),
	String(longString),
	String("z"),
	String("é"),
	String("日本語"),
	String("\xff"),
	String("\xff\xff"),
	Datetime(minDatetime),
	Datetime(time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)),
	Datetime(epoch.Add(-time.Nanosecond)),
	Datetime(epoch),
	Datetime(epoch.Add(time.Nanosecond)),
	Datetime(time.Date(2024, 2, 29, 12, 30, 0, 123456789, time.UTC)),
	Datetime(maxDatetime),
}

func TestCompare(t *testing.T) {
	f := func(a, b Value, want int) {
		t.Helper()
		if got := Compare(a, b); got != want {
			t.Errorf("Compare(%+v, %+v) = %d, want %d", a, b, got, want)
		}
		if got := Compare(b, a); got != -want {
			t.Errorf("Compare(%+v, %+v) = %d, want %d", b, a, got, -want)
		}
		if got := Equal(a, b); got != (want == 0) {
			t.Errorf("Equal(%+v, %+v) = %v, want %v", a, b, got, want == 0)
		}
	}
	// Kinds sort in declaration order, whatever their content.
	f(Null(), Bool(false), -1)
	f(Bool(true), Int(math.MinInt64), -1)
	f(Int(math.MaxInt64), Float(math.Inf(-1)), -1)
	f(Float(math.NaN()), String(""), -1)
	f(String("\xff"), Datetime(minDatetime), -1)
	f(Datetime(maxDatetime), Strings(nil), -1)
	f(Strings([]string{"\xff"}), Vector(nil), -1)
	f(Vector([]float64{math.NaN()}), Value{Kind: 200}, -1)

	f(Null(), Null(), 0)
	f(Value{Kind: 200, Int: 1}, Value{Kind: 200, Int: 2}, 0) // unknown kinds carry no data

	f(Bool(false), Bool(true), -1)
	f(Value{Kind: KindBool, Int: 7}, Bool(true), 0) // any non-zero Int is true
	f(Value{Kind: KindBool, Int: -1}, Bool(false), 1)

	f(Int(math.MinInt64), Int(math.MaxInt64), -1)
	f(Int(-1), Int(0), -1)
	f(Int(42), Int(42), 0)

	f(Float(0), Float(negZero), 0)
	f(Value{Kind: KindFloat, Float: negZero}, Float(0), 0)
	f(Float(-subnormal), Value{Kind: KindFloat, Float: negZero}, -1)
	f(Float(subnormal), Float(0), 1)
	f(Float(math.Inf(1)), Float(math.MaxFloat64), 1)
	f(Float(math.Inf(-1)), Float(-math.MaxFloat64), -1)
	f(Float(math.NaN()), Float(math.Inf(1)), 1)
	f(Value{Kind: KindFloat, Float: negNaN}, Float(math.Inf(1)), 1)
	f(Value{Kind: KindFloat, Float: negNaN}, Value{Kind: KindFloat, Float: payloadNaN}, 0)

	f(String(""), String("\x00"), -1)
	f(String("\x00"), String("\x00\xff"), -1)
	f(String("a"), String("a\x00"), -1)
	f(String("Z"), String("a"), -1)
	f(String("z"), String("é"), -1)
	f(String(longString), String(longString), 0)
	f(String(longString), String(longString+"\x00"), -1)

	f(Datetime(epoch), Datetime(epoch.Add(-time.Nanosecond)), 1)
	f(Datetime(epoch), Value{Kind: KindDatetime}, 0)

	f(Strings(nil), Strings([]string{}), 0)
	f(Strings(nil), Strings([]string{""}), -1)
	f(Strings([]string{"a", "b"}), Strings([]string{"a", "b"}), 0)
	f(Strings([]string{"a", "b"}), Strings([]string{"a", "c"}), -1)
	f(Strings([]string{"a", "b"}), Strings([]string{"a", "b", ""}), -1)
	f(Strings([]string{"b"}), Strings([]string{"a", "z"}), 1)

	f(Vector(nil), Vector([]float64{}), 0)
	f(Vector([]float64{1, 2}), Vector([]float64{1, 2}), 0)
	f(Vector([]float64{1, 2}), Vector([]float64{1, 3}), -1)
	f(Vector([]float64{1}), Vector([]float64{1, math.Inf(-1)}), -1)
	f(Vector([]float64{math.NaN()}), Vector([]float64{math.Inf(1), 0}), 1)
	f(Vector([]float64{negZero, math.NaN()}), Vector([]float64{0, negNaN}), 0)
}

func TestCompareEdgesSorted(t *testing.T) {
	for i, a := range scalarEdges {
		for j, b := range scalarEdges {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := Compare(a, b); got != want {
				t.Errorf("Compare(edge %d %+v, edge %d %+v) = %d, want %d", i, a, j, b, got, want)
			}
		}
	}
}

func TestConstructors(t *testing.T) {
	f := func(got, want Value) {
		t.Helper()
		if got.Kind != want.Kind || got.Int != want.Int || got.Str != want.Str ||
			math.Float64bits(got.Float) != math.Float64bits(want.Float) {
			t.Errorf("got %+v, want %+v", got, want)
		}
	}
	f(Null(), Value{})
	f(Bool(false), Value{Kind: KindBool})
	f(Bool(true), Value{Kind: KindBool, Int: 1})
	f(Int(math.MinInt64), Value{Kind: KindInt, Int: math.MinInt64})
	f(Float(1.5), Value{Kind: KindFloat, Float: 1.5})
	f(Float(negZero), Value{Kind: KindFloat, Float: 0}) // sign bit cleared
	f(Float(-subnormal), Value{Kind: KindFloat, Float: -subnormal})
	nan := math.Float64frombits(canonicalNaN)
	f(Float(math.NaN()), Value{Kind: KindFloat, Float: nan})
	f(Float(negNaN), Value{Kind: KindFloat, Float: nan})
	f(Float(payloadNaN), Value{Kind: KindFloat, Float: nan})
	f(String("\x00"), Value{Kind: KindString, Str: "\x00"})
	f(Datetime(epoch), Value{Kind: KindDatetime, Int: 0})
	f(Datetime(time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)), Value{Kind: KindDatetime, Int: -1e9})
	// Another zone names the same instant.
	f(Datetime(time.Date(1970, 1, 1, 1, 0, 0, 0, time.FixedZone("CET", 3600))), Value{Kind: KindDatetime, Int: 0})

	if v := Strings([]string{"x"}); v.Kind != KindStrings || len(v.Strs) != 1 || v.Strs[0] != "x" {
		t.Errorf("Strings: got %+v", v)
	}
	if v := Vector([]float64{0.5}); v.Kind != KindVector || len(v.Vec) != 1 || v.Vec[0] != 0.5 {
		t.Errorf("Vector: got %+v", v)
	}
	if !Null().IsNull() || Bool(false).IsNull() || String("").IsNull() || Int(0).IsNull() {
		t.Error("IsNull is true exactly for KindNull")
	}
}

func TestTime(t *testing.T) {
	f := func(in time.Time) {
		t.Helper()
		got := Datetime(in).Time()
		if !got.Equal(in) || got.Location() != time.UTC {
			t.Errorf("Datetime(%v).Time() = %v, want the same instant in UTC", in, got)
		}
	}
	f(epoch)
	f(epoch.Add(-time.Nanosecond))
	f(time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC))
	f(time.Date(2024, 2, 29, 12, 30, 0, 123456789, time.UTC))
	f(time.Date(2024, 2, 29, 12, 30, 0, 1, time.FixedZone("X", -7*3600)))
	f(minDatetime)
	f(maxDatetime)
}

func TestKindString(t *testing.T) {
	f := func(k Kind, want string) {
		t.Helper()
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
	f(KindNull, "null")
	f(KindDatetime, "datetime")
	f(KindVector, "vector")
	f(Kind(42), "kind(42)")
}
