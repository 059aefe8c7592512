package codec

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"
)

func mustOrdered(t testing.TB, v Value) []byte {
	t.Helper()
	b, err := AppendOrdered(nil, v)
	if err != nil {
		t.Fatalf("AppendOrdered(%+v): %v", v, err)
	}
	return b
}

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

// TestOrderedLayout freezes the bytes documented on AppendOrdered: keys on
// disk depend on them.
func TestOrderedLayout(t *testing.T) {
	f := func(v Value, want string) {
		t.Helper()
		got := mustOrdered(t, v)
		if hex.EncodeToString(got) != strings.ReplaceAll(want, " ", "") {
			t.Errorf("AppendOrdered(%+v) = % x, want %s", v, got, want)
		}
	}
	f(Null(), "05")
	f(Bool(false), "10")
	f(Bool(true), "11")
	f(Value{Kind: KindBool, Int: 9}, "11")
	f(Int(0), "20 8000000000000000")
	f(Int(1), "20 8000000000000001")
	f(Int(-1), "20 7fffffffffffffff")
	f(Int(math.MinInt64), "20 0000000000000000")
	f(Int(math.MaxInt64), "20 ffffffffffffffff")
	f(Float(0), "30 8000000000000000")
	f(Value{Kind: KindFloat, Float: negZero}, "30 8000000000000000")
	f(Float(1), "30 bff0000000000000")
	f(Float(-1), "30 400fffffffffffff")
	f(Float(subnormal), "30 8000000000000001")
	f(Float(-subnormal), "30 7ffffffffffffffe")
	f(Float(math.Inf(1)), "30 fff0000000000000")
	f(Float(math.Inf(-1)), "30 000fffffffffffff")
	f(Float(math.NaN()), "30 fff8000000000000")
	f(Value{Kind: KindFloat, Float: negNaN}, "30 fff8000000000000")
	f(Value{Kind: KindFloat, Float: payloadNaN}, "30 fff8000000000000")
	f(String(""), "40 0001")
	f(String("a"), "40 61 0001")
	f(String("\x00"), "40 00ff 0001")
	f(String("a\x00\x00b"), "40 61 00ff 00ff 62 0001")
	f(String("\x01\xff"), "40 01ff 0001")
	f(Datetime(epoch), "50 8000000000000000")
	f(Datetime(epoch.Add(-1)), "50 7fffffffffffffff")
}

func TestOrderedRoundTrip(t *testing.T) {
	f := func(v Value) {
		t.Helper()
		enc := mustOrdered(t, v)
		for _, suffix := range [][]byte{nil, {0x00}, {0x00, 0x01}, enc} {
			in := append(bytes.Clone(enc), suffix...)
			got, rest, err := DecodeOrdered(in)
			if err != nil {
				t.Errorf("DecodeOrdered(% x): %v", in, err)
				continue
			}
			if !Equal(got, v) || got.Kind != v.Kind {
				t.Errorf("DecodeOrdered(% x) = %+v, want %+v", in, got, v)
			}
			if !bytes.Equal(rest, suffix) {
				t.Errorf("DecodeOrdered(% x) rest = % x, want % x", in, rest, suffix)
			}
			if re := mustOrdered(t, got); !bytes.Equal(re, enc) {
				t.Errorf("re-encoding %+v = % x, want % x", got, re, enc)
			}
		}
	}
	for _, v := range scalarEdges {
		f(v)
	}
	f(Value{Kind: KindFloat, Float: negZero})
	f(Value{Kind: KindFloat, Float: negNaN})
	f(Value{Kind: KindBool, Int: -3})
	f(String(strings.Repeat("\x00", 300)))
	f(String(strings.Repeat("x\x00\xff\x01", 1000)))
}

// TestDecodeOrderedCanonical checks that decoding returns the canonical form:
// +0 for zero and the canonical NaN.
func TestDecodeOrderedCanonical(t *testing.T) {
	f := func(v Value, wantBits uint64) {
		t.Helper()
		got, _, err := DecodeOrdered(mustOrdered(t, v))
		if err != nil || math.Float64bits(got.Float) != wantBits {
			t.Errorf("round trip of %+v = %+v (bits %016x), %v; want bits %016x",
				v, got, math.Float64bits(got.Float), err, wantBits)
		}
	}
	f(Value{Kind: KindFloat, Float: negZero}, 0)
	f(Value{Kind: KindFloat, Float: negNaN}, canonicalNaN)
	f(Value{Kind: KindFloat, Float: payloadNaN}, canonicalNaN)
	f(Float(-subnormal), math.Float64bits(-subnormal))
}

func TestOrderedOrder(t *testing.T) {
	encs := make([][]byte, len(scalarEdges))
	for i, v := range scalarEdges {
		encs[i] = mustOrdered(t, v)
	}
	for i := range scalarEdges {
		for j := range scalarEdges {
			if got, want := bytes.Compare(encs[i], encs[j]), Compare(scalarEdges[i], scalarEdges[j]); got != want {
				t.Errorf("bytes.Compare(enc %+v, enc %+v) = %d, Compare = %d", scalarEdges[i], scalarEdges[j], got, want)
			}
		}
	}
}

// TestOrderedTuples checks that encodings are self-delimiting: concatenated
// pairs sort like the pairs compared element by element, as in index keys.
func TestOrderedTuples(t *testing.T) {
	tupleCompare := func(a, b [2]Value) int {
		if c := Compare(a[0], b[0]); c != 0 {
			return c
		}
		return Compare(a[1], b[1])
	}
	var tuples [][2]Value
	for _, a := range scalarEdges {
		for _, b := range scalarEdges {
			tuples = append(tuples, [2]Value{a, b})
		}
	}
	encs := make([][]byte, len(tuples))
	for i, tu := range tuples {
		encs[i], _ = AppendOrdered(mustOrdered(t, tu[0]), tu[1])
	}
	// All pairs of tuples would be n⁴; stride through them instead.
	for i := range tuples {
		for j := i % 7; j < len(tuples); j += 7 {
			if got, want := bytes.Compare(encs[i], encs[j]), tupleCompare(tuples[i], tuples[j]); got != want {
				t.Fatalf("tuples %+v vs %+v: bytes.Compare = %d, Compare = %d", tuples[i], tuples[j], got, want)
			}
		}
	}
}

func TestAppendOrderedNotScalar(t *testing.T) {
	f := func(v Value) {
		t.Helper()
		dst := []byte{0xAA}
		got, err := AppendOrdered(dst, v)
		if !errors.Is(err, ErrNotScalar) {
			t.Errorf("AppendOrdered(%+v) error = %v, want ErrNotScalar", v, err)
		}
		if !bytes.Equal(got, dst) {
			t.Errorf("AppendOrdered(%+v) changed dst to % x", v, got)
		}
	}
	f(Strings([]string{"a"}))
	f(Strings(nil))
	f(Vector([]float64{1}))
	f(Value{Kind: KindVector + 1})
	f(Value{Kind: 255})
}

func TestDecodeOrderedErrors(t *testing.T) {
	f := func(in string) {
		t.Helper()
		b, err := hex.DecodeString(strings.ReplaceAll(in, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		v, rest, err := DecodeOrdered(b)
		if !errors.Is(err, ErrBadValue) {
			t.Errorf("DecodeOrdered(%s) = %+v, rest % x, err %v; want ErrBadValue", in, v, rest, err)
		}
	}
	f("")
	// Unknown tags, including the gaps and both ends.
	f("00")
	f("04")
	f("06")
	f("12")
	f("21")
	f("60")
	f("ff")
	// Truncated payloads.
	f("20")
	f("20 80000000000000")
	f("30 bff00000000000")
	f("50 00")
	// Floats the encoder never writes: -0 and NaNs other than the canonical one.
	f("30 7fffffffffffffff")
	f("30 fff8000000000001")
	f("30 fff0000000000001")
	f("30 ffffffffffffffff")
	f("30 0007ffffffffffff") // the negative quiet NaN
	f("30 0000000000000000") // a negative NaN with every payload bit set
	// Strings: missing terminator, truncated or bad escapes.
	f("40")
	f("40 61")
	f("40 61 00")
	f("40 00 00")
	f("40 00 02")
	f("40 00 fe 00 01")
	f("40 00 ff")
	f("40 00 ff 00")
}

func TestDecodeOrderedDoesNotAlias(t *testing.T) {
	for _, s := range []string{"plain", "with\x00nul", longString} {
		enc := mustOrdered(t, String(s))
		v, _, err := DecodeOrdered(enc)
		if err != nil {
			t.Fatal(err)
		}
		for i := range enc {
			enc[i] = 'X'
		}
		if v.Str != s {
			t.Errorf("decoded string changed with its source: %q, want %q", v.Str, s)
		}
	}
}

func TestOrderedStringPrefix(t *testing.T) {
	f := func(p, want string) {
		t.Helper()
		if got := OrderedStringPrefix(nil, p); hex.EncodeToString(got) != strings.ReplaceAll(want, " ", "") {
			t.Errorf("OrderedStringPrefix(%q) = % x, want %s", p, got, want)
		}
	}
	f("", "40")
	f("ab", "40 6162")
	f("a\x00", "40 61 00ff")

	if got := OrderedStringPrefix([]byte{0x07}, "x"); !bytes.Equal(got, []byte{0x07, 0x40, 'x'}) {
		t.Errorf("OrderedStringPrefix appended to dst = % x", got)
	}

	// The prefix of p begins an encoding exactly when the string starts with p.
	var strs []string
	for _, v := range scalarEdges {
		if v.Kind == KindString {
			strs = append(strs, v.Str)
		}
	}
	strs = append(strs, "a\x00\x00", "a\x00\x01", "ab\x00", "abc", "a\xff")
	for _, p := range strs {
		pre := OrderedStringPrefix(nil, p)
		for _, s := range strs {
			enc := mustOrdered(t, String(s))
			if got, want := bytes.HasPrefix(enc, pre), strings.HasPrefix(s, p); got != want {
				t.Errorf("encoding of %q has prefix of %q: %v, want %v", s, p, got, want)
			}
		}
		// Non-string values never fall in a string prefix range.
		for _, v := range scalarEdges {
			if v.Kind != KindString && bytes.HasPrefix(mustOrdered(t, v), pre) {
				t.Errorf("encoding of %+v has the string prefix of %q", v, p)
			}
		}
	}
}

// fuzzValue builds a scalar Value from fuzz arguments. Selectors 6 and 7 build
// raw values the constructors would have normalized (-0, NaN payloads, bools
// holding any Int), which must encode like their canonical forms.
func fuzzValue(k byte, i int64, fl float64, s string) Value {
	switch k % 8 {
	case 0:
		return Null()
	case 1:
		return Bool(i&1 == 1)
	case 2:
		return Int(i)
	case 3:
		return Float(fl)
	case 4:
		return String(s)
	case 5:
		return Value{Kind: KindDatetime, Int: i}
	case 6:
		return Value{Kind: KindFloat, Float: fl}
	default:
		return Value{Kind: KindBool, Int: i}
	}
}

// fuzzArgs is the inverse of fuzzValue for canonical values.
func fuzzArgs(v Value) (byte, int64, float64, string) {
	switch v.Kind {
	case KindBool:
		return 1, v.Int, 0, ""
	case KindInt:
		return 2, v.Int, 0, ""
	case KindFloat:
		return 3, 0, v.Float, ""
	case KindString:
		return 4, 0, 0, v.Str
	case KindDatetime:
		return 5, v.Int, 0, ""
	}
	return 0, 0, 0, ""
}

func FuzzOrderedRoundTrip(f *testing.F) {
	for i, a := range scalarEdges {
		b := scalarEdges[(i*7+3)%len(scalarEdges)]
		k1, i1, f1, s1 := fuzzArgs(a)
		k2, i2, f2, s2 := fuzzArgs(b)
		f.Add(k1, i1, f1, s1, k2, i2, f2, s2)
	}
	f.Add(byte(6), int64(0), negZero, "", byte(3), int64(0), 0.0, "")
	f.Add(byte(6), int64(0), negNaN, "", byte(6), int64(0), payloadNaN, "")
	f.Add(byte(7), int64(-5), 0.0, "", byte(1), int64(1), 0.0, "")
	f.Add(byte(4), int64(0), 0.0, "a\x00", byte(4), int64(0), 0.0, "a\x00\xff")
	f.Add(byte(4), int64(0), 0.0, "日本\x00語", byte(4), int64(0), 0.0, "日本")

	edgeEncs := make([][]byte, len(scalarEdges))
	for i, v := range scalarEdges {
		edgeEncs[i] = mustOrdered(f, v)
	}
	f.Fuzz(func(t *testing.T, k1 byte, i1 int64, f1 float64, s1 string, k2 byte, i2 int64, f2 float64, s2 string) {
		a, b := fuzzValue(k1, i1, f1, s1), fuzzValue(k2, i2, f2, s2)
		encA, encB := mustOrdered(t, a), mustOrdered(t, b)

		got, rest, err := DecodeOrdered(encA)
		if err != nil {
			t.Fatalf("DecodeOrdered(encoding of %+v): %v", a, err)
		}
		if len(rest) != 0 || got.Kind != a.Kind || !Equal(got, a) {
			t.Fatalf("round trip of %+v = %+v, rest % x", a, got, rest)
		}
		if re := mustOrdered(t, got); !bytes.Equal(re, encA) {
			t.Fatalf("re-encoding of %+v = % x, want % x", got, re, encA)
		}

		if got, want := sign(bytes.Compare(encA, encB)), Compare(a, b); got != want {
			t.Fatalf("%+v vs %+v: bytes.Compare = %d, Compare = %d", a, b, got, want)
		}
		for i, e := range scalarEdges {
			if got, want := sign(bytes.Compare(encA, edgeEncs[i])), Compare(a, e); got != want {
				t.Fatalf("%+v vs %+v: bytes.Compare = %d, Compare = %d", a, e, got, want)
			}
		}

		// Self-delimiting: a pair decodes back into its two parts.
		pair := append(bytes.Clone(encA), encB...)
		first, rest, err := DecodeOrdered(pair)
		if err != nil || !Equal(first, a) {
			t.Fatalf("first of pair: %+v, %v; want %+v", first, err, a)
		}
		second, rest, err := DecodeOrdered(rest)
		if err != nil || !Equal(second, b) || len(rest) != 0 {
			t.Fatalf("second of pair: %+v, rest % x, %v; want %+v", second, rest, err, b)
		}

		if a.Kind == KindString && b.Kind == KindString {
			pre := OrderedStringPrefix(nil, a.Str)
			if got, want := bytes.HasPrefix(encB, pre), strings.HasPrefix(b.Str, a.Str); got != want {
				t.Fatalf("encoding of %q has prefix of %q: %v, want %v", b.Str, a.Str, got, want)
			}
		}
	})
}

func FuzzDecodeOrdered(f *testing.F) {
	for _, v := range scalarEdges {
		enc := mustOrdered(f, v)
		f.Add(enc)
		f.Add(enc[:len(enc)-1])
		f.Add(append(enc, 0x40, 0x00, 0x01))
	}
	for _, s := range []string{"", "00", "ff", "30 7fffffffffffffff", "30 fff8000000000001", "40 00", "40 00 02", "40 00 ff 00 ff 00 01 05"} {
		b, _ := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, rest, err := DecodeOrdered(in)
		if err != nil {
			if !errors.Is(err, ErrBadValue) {
				t.Fatalf("error %v does not wrap ErrBadValue", err)
			}
			return
		}
		if len(rest) > len(in) || !bytes.Equal(rest, in[len(in)-len(rest):]) {
			t.Fatalf("rest % x is not a suffix of % x", rest, in)
		}
		consumed := in[:len(in)-len(rest)]
		re, err := AppendOrdered(nil, v)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", v, err)
		}
		if !bytes.Equal(re, consumed) {
			t.Fatalf("decoded %+v from % x, re-encodes to % x", v, consumed, re)
		}
	})
}
