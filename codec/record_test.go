package codec

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// sameValue is Equal plus identical kinds and float bits: the record format
// stores floats exactly, so a round trip must not even fold -0.
func sameValue(a, b Value) bool {
	if a.Kind != b.Kind || !Equal(a, b) {
		return false
	}
	if a.Kind == KindFloat && math.Float64bits(a.Float) != math.Float64bits(b.Float) {
		return false
	}
	if a.Kind == KindVector {
		for i := range a.Vec {
			if math.Float64bits(a.Vec[i]) != math.Float64bits(b.Vec[i]) {
				return false
			}
		}
	}
	return true
}

func sameRecord(a, b *Record) bool {
	if a.ID != b.ID || a.Version != b.Version || a.CreatedAt != b.CreatedAt ||
		a.UpdatedAt != b.UpdatedAt || a.Seq != b.Seq || a.Deleted != b.Deleted ||
		len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Fields {
		if a.Fields[i].Col != b.Fields[i].Col || !sameValue(a.Fields[i].Val, b.Fields[i].Val) {
			return false
		}
	}
	return true
}

// edgeRecord holds every non-null edge value and every kind in one record.
func edgeRecord() *Record {
	r := &Record{
		ID:        "rec_2Xk9\x00日本",
		Version:   math.MaxUint64,
		CreatedAt: math.MinInt64,
		UpdatedAt: math.MaxInt64,
		Seq:       1 << 40,
		Fields:    nil,
	}
	col := uint32(0)
	for _, v := range scalarEdges {
		if !v.IsNull() {
			r.Fields = append(r.Fields, Field{Col: col, Val: v})
			col += 3
		}
	}
	r.Fields = append(r.Fields,
		Field{Col: col, Val: Value{Kind: KindFloat, Float: negZero}},
		Field{Col: col + 1, Val: Value{Kind: KindFloat, Float: payloadNaN}},
		Field{Col: col + 2, Val: Strings([]string{"", "a", "\x00", longString, "日本語"})},
		Field{Col: col + 3, Val: Strings([]string{""})},
		Field{Col: col + 4, Val: Vector([]float64{0, negZero, 1.5, math.Inf(-1), math.NaN(), payloadNaN, subnormal})},
		Field{Col: col + 5, Val: Vector(nil)},
		Field{Col: col + 6, Val: Strings(nil)},
		Field{Col: math.MaxUint32, Val: String("last")},
	)
	return r
}

func TestRecordRoundTrip(t *testing.T) {
	f := func(r *Record) {
		t.Helper()
		enc := AppendRecord([]byte("prefix"), r)
		if !bytes.HasPrefix(enc, []byte("prefix")) {
			t.Fatalf("AppendRecord did not append to dst")
		}
		enc = enc[len("prefix"):]
		var got Record
		if err := DecodeRecord(enc, &got); err != nil {
			t.Fatalf("DecodeRecord(% x): %v", enc, err)
		}
		if !sameRecord(&got, r) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, *r)
		}
		if re := AppendRecord(nil, &got); !bytes.Equal(re, enc) {
			t.Errorf("re-encoding differs:\n got % x\nwant % x", re, enc)
		}
	}
	f(&Record{})
	f(&Record{ID: "a", Version: 1, CreatedAt: 1, UpdatedAt: 1, Seq: 1})
	f(&Record{ID: "gone", Version: 7, CreatedAt: -1, UpdatedAt: 5, Seq: 99, Deleted: true})
	f(&Record{ID: "one", Fields: []Field{{Col: 0, Val: Bool(false)}}})
	f(&Record{ID: "pre-1970", CreatedAt: -86400e9, UpdatedAt: -1, Fields: []Field{{Col: 5, Val: Value{Kind: KindDatetime, Int: -1}}}})
	f(edgeRecord())
}

// TestRecordLayout freezes the bytes documented on AppendRecord.
func TestRecordLayout(t *testing.T) {
	f := func(r *Record, want string) {
		t.Helper()
		got := AppendRecord(nil, r)
		if hex.EncodeToString(got) != strings.ReplaceAll(want, " ", "") {
			t.Errorf("AppendRecord(%+v) =\n% x\nwant %s", *r, got, want)
		}
	}
	f(&Record{}, "01 00 00 00 00 00 00 00")
	f(&Record{ID: "ab", Version: 300, CreatedAt: -1, UpdatedAt: 1, Seq: 2, Deleted: true},
		"01 01 02 6162 ac02 01 02 02 00")
	f(&Record{ID: "x", Version: 1, Fields: []Field{
		{Col: 1, Val: Bool(true)},
		{Col: 2, Val: Int(-2)},
		{Col: 3, Val: Float(1)},
		{Col: 4, Val: String("hi")},
		{Col: 5, Val: Value{Kind: KindDatetime, Int: 64}},
		{Col: 200, Val: Strings([]string{"a", ""})},
		{Col: 201, Val: Vector([]float64{-2})},
	}}, "01 00 01 78 01 00 00 00 07"+
		" 01 01 01"+
		" 02 02 03"+
		" 03 03 000000000000f03f"+
		" 04 04 02 6869"+
		" 05 05 8001"+
		" c801 06 02 01 61 00"+
		" c901 07 01 00000000000000c0")
}

func TestDecodeRecordErrors(t *testing.T) {
	// head is a valid header up to the field count: id "x", version 1,
	// created 1, updated 2, seq 5.
	const head = "01 00 01 78 01 02 04 05"
	f := func(in string) {
		t.Helper()
		b, err := hex.DecodeString(strings.ReplaceAll(in, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		r := Record{ID: "old", Fields: []Field{{Col: 1, Val: Int(1)}}}
		if err := DecodeRecord(b, &r); !errors.Is(err, ErrBadRecord) {
			t.Errorf("DecodeRecord(%s) = %v, want ErrBadRecord; record %+v", in, err, r)
		}
	}
	// A valid record for reference: it must decode.
	var ok Record
	if err := DecodeRecord(must(hex.DecodeString(strings.ReplaceAll(head+" 01 03 02 02", " ", ""))), &ok); err != nil {
		t.Fatalf("reference record: %v", err)
	}

	f("")
	f("01")
	f("02 00 00 00 00 00 00 00")       // unknown format
	f("00 00 00 00 00 00 00 00")       // unknown format
	f("01 02 00 00 00 00 00 00")       // unknown flag
	f("01 80 00 00 00 00 00 00")       // unknown flag
	f("01 00 05 61")                   // ID longer than the input
	f("01 00 ffffffffffffffffff01")    // absurd ID length
	f("01 00 01 78 01 02 04")          // no field count
	f("01 00 01 78 01 02 04 05 00 00") // trailing byte
	f(head + " 00 ff")                 // trailing byte
	// Non-minimal and overflowing varints.
	f("01 00 8000 00 00 00 00 00")
	f("01 00 01 78 8100 02 04 05 00")
	f("01 00 01 78 01 02 04 ffffffffffffffffff02 00")
	f("01 00 01 78 01 02 04 ffffffffffffffffffff01 00")
	f(head + " 8000")
	// Field counts the input cannot hold.
	f(head + " 01")
	f(head + " 02 01 02 00")
	f(head + " ffffffff0f")
	// Columns: unsorted, duplicate, too large.
	f(head + " 02 03 02 02 01 02 02")
	f(head + " 02 03 02 02 03 02 02")
	f(head + " 01 8080808010 02 02")
	f(head + " 01 ffffffffffffffffff01 02 02")
	// Kinds: null, unknown, bad payloads.
	f(head + " 01 03 00 00")
	f(head + " 01 03 08 00")
	f(head + " 01 03 ff 00")
	f(head + " 01 03 01 02")
	f(head + " 01 03 01 ff")
	f(head + " 01 03 02 80")
	f(head + " 01 03 02 8000")
	f(head + " 01 03 03 00000000000000")
	f(head + " 01 03 04 05 6162")
	f(head + " 01 03 06 02 01 61")
	f(head + " 01 03 06 ffffffff0f 00")
	f(head + " 01 03 07 01 00000000000000")
	f(head + " 01 03 07 02 0000000000000000 00")
	f(head + " 01 03 07 ffffffffffffffff01 00")
	// A tombstone with fields.
	f("01 01 01 78 01 02 04 05 01 03 02 02")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestDecodeRecordReuseAndAliasing(t *testing.T) {
	src := edgeRecord()
	enc := AppendRecord(nil, src)

	r := Record{Fields: make([]Field, 1, 1000)}
	r.Fields[0] = Field{Col: 9, Val: Strings([]string{"kept"})}
	held := r.Fields[0].Val
	backing := &r.Fields[:1][0]
	if err := DecodeRecord(enc, &r); err != nil {
		t.Fatal(err)
	}
	if &r.Fields[0] != backing {
		t.Error("DecodeRecord did not reuse the backing array of Fields")
	}
	if len(held.Strs) != 1 || held.Strs[0] != "kept" {
		t.Errorf("a value copied out before decoding changed: %+v", held)
	}

	for i := range enc {
		enc[i] = 0xEE
	}
	if !sameRecord(&r, src) {
		t.Errorf("decoded record changed with its source:\n got %+v\nwant %+v", r, *src)
	}

	// Decoding a smaller record into a used one leaves nothing behind.
	if err := DecodeRecord(AppendRecord(nil, &Record{ID: "b", Deleted: true}), &r); err != nil {
		t.Fatal(err)
	}
	if !sameRecord(&r, &Record{ID: "b", Deleted: true}) {
		t.Errorf("got %+v, want the tombstone alone", r)
	}
}

func TestRecordGetSet(t *testing.T) {
	var r Record
	check := func(want ...Field) {
		t.Helper()
		if len(r.Fields) != len(want) {
			t.Fatalf("fields = %+v, want %+v", r.Fields, want)
		}
		for i := range want {
			if r.Fields[i].Col != want[i].Col || !sameValue(r.Fields[i].Val, want[i].Val) {
				t.Fatalf("fields = %+v, want %+v", r.Fields, want)
			}
			if v, ok := r.Get(want[i].Col); !ok || !sameValue(v, want[i].Val) {
				t.Fatalf("Get(%d) = %+v, %v; want %+v", want[i].Col, v, ok, want[i].Val)
			}
		}
	}
	absent := func(col uint32) {
		t.Helper()
		if v, ok := r.Get(col); ok || !v.IsNull() {
			t.Errorf("Get(%d) = %+v, %v; want null, false", col, v, ok)
		}
	}

	absent(0)
	r.Set(5, Int(50))
	check(Field{5, Int(50)})
	r.Set(1, String("one"))
	r.Set(math.MaxUint32, Bool(true))
	r.Set(3, Float(3))
	check(Field{1, String("one")}, Field{3, Float(3)}, Field{5, Int(50)}, Field{math.MaxUint32, Bool(true)})
	absent(0)
	absent(2)
	absent(4)
	absent(math.MaxUint32 - 1)

	r.Set(3, Strings([]string{"x"})) // replaces, kind may change
	check(Field{1, String("one")}, Field{3, Strings([]string{"x"})}, Field{5, Int(50)}, Field{math.MaxUint32, Bool(true)})

	r.Set(2, Null()) // removing an absent column is a no-op
	check(Field{1, String("one")}, Field{3, Strings([]string{"x"})}, Field{5, Int(50)}, Field{math.MaxUint32, Bool(true)})

	r.Set(1, Null())
	r.Set(math.MaxUint32, Null())
	check(Field{3, Strings([]string{"x"})}, Field{5, Int(50)})
	absent(1)
	absent(math.MaxUint32)

	r.Set(0, Vector([]float64{1}))
	check(Field{0, Vector([]float64{1})}, Field{3, Strings([]string{"x"})}, Field{5, Int(50)})

	r.Set(3, Null())
	r.Set(0, Null())
	r.Set(5, Null())
	check()
}

func TestRecordClone(t *testing.T) {
	if (*Record)(nil).Clone() != nil {
		t.Error("Clone of nil is not nil")
	}
	orig := edgeRecord()
	want := edgeRecord()
	c := orig.Clone()
	if !sameRecord(c, orig) {
		t.Fatalf("clone differs:\n got %+v\nwant %+v", *c, *orig)
	}
	for i := range c.Fields {
		v := &c.Fields[i].Val
		for j := range v.Strs {
			v.Strs[j] = "changed"
		}
		for j := range v.Vec {
			v.Vec[j] = 42
		}
	}
	c.Set(1, String("new"))
	c.Fields[0].Val = Int(-1)
	c.ID = "other"
	if !sameRecord(orig, want) {
		t.Errorf("changing the clone changed the original:\n got %+v\nwant %+v", *orig, *want)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(AppendRecord(nil, edgeRecord()))
	f.Add(AppendRecord(nil, &Record{}))
	f.Add(AppendRecord(nil, &Record{ID: "t", Deleted: true, Seq: 3}))
	for _, v := range scalarEdges {
		if !v.IsNull() {
			f.Add(AppendRecord(nil, &Record{ID: "r", Version: 2, Fields: []Field{{Col: 7, Val: v}}}))
		}
	}
	f.Add(AppendRecord(nil, &Record{Fields: []Field{{Col: 1, Val: Strings([]string{"a", "b"})}, {Col: 2, Val: Vector([]float64{1, 2})}}}))
	for _, s := range []string{"", "01", "01 00 00 00 00 00 00 00 01 03 00 00", "01 00 00 00 00 00 00 00 02 03 02 02 03 02 02"} {
		f.Add(must(hex.DecodeString(strings.ReplaceAll(s, " ", ""))))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var r, shared, borrowed Record
		err := DecodeRecord(in, &r)
		// The shared and borrowing decoders accept and reject what
		// DecodeRecord does, with the same message, and decode the same
		// record.
		if sharedErr := DecodeRecordShared(in, &shared); fmt.Sprint(sharedErr) != fmt.Sprint(err) {
			t.Fatalf("shared decoder: error %v, DecodeRecord's %v", sharedErr, err)
		}
		if borrowedErr := DecodeRecordBorrowed(in, &borrowed); fmt.Sprint(borrowedErr) != fmt.Sprint(err) {
			t.Fatalf("borrowing decoder: error %v, DecodeRecord's %v", borrowedErr, err)
		}
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		if re := AppendRecord(nil, &r); !bytes.Equal(re, in) {
			t.Fatalf("decoded %+v from % x, re-encodes to % x", r, in, re)
		}
		if r.Deleted && len(r.Fields) > 0 {
			t.Fatalf("tombstone with fields: %+v", r)
		}
		for i, fl := range r.Fields {
			if fl.Val.IsNull() || (i > 0 && fl.Col <= r.Fields[i-1].Col) {
				t.Fatalf("fields break the invariant: %+v", r.Fields)
			}
		}
		if !sameRecord(&shared, &r) {
			t.Fatalf("shared decoder: %+v, DecodeRecord: %+v", shared, r)
		}
		if !sameRecord(&borrowed, &r) {
			t.Fatalf("borrowing decoder: %+v, DecodeRecord: %+v", borrowed, r)
		}
		// The decoded records own their memory.
		snapshot := r.Clone()
		for i := range in {
			in[i] ^= 0xFF
		}
		if !sameRecord(&r, snapshot) {
			t.Fatalf("decoded record changed with its source")
		}
		if !sameRecord(&shared, snapshot) {
			t.Fatalf("shared decoded record changed with its source")
		}
	})
}

func FuzzRecordRoundTrip(f *testing.F) {
	f.Add("rec_1", uint64(1), int64(0), int64(0), uint64(1), false, []byte{0x0b, 0x12, 0x23, 0x34, 0x45, 0x56, 0x67, 0x70}, int64(-7), 2.5, "a,b,,c")
	f.Add("", uint64(0), int64(math.MinInt64), int64(math.MaxInt64), uint64(math.MaxUint64), true, []byte{1, 2, 3}, int64(0), 0.0, "")
	f.Add("x\x00y", uint64(1<<63), int64(-1), int64(1), uint64(0), false, []byte{0x11, 0x10, 0x11, 0xff, 0xfe}, int64(math.MaxInt64), negZero, "日本\x00")
	f.Add("n", uint64(5), int64(1), int64(2), uint64(3), false, []byte{0x2b, 0x2e, 0x2f}, int64(1), math.NaN(), longString)
	f.Fuzz(func(t *testing.T, id string, version uint64, created, updated int64, seq uint64, deleted bool, ops []byte, i int64, fl float64, s string) {
		r := Record{ID: id, Version: version, CreatedAt: created, UpdatedAt: updated, Seq: seq, Deleted: deleted}
		// Each op byte sets one of 32 columns to one of eight kinds of value
		// (null removes it); a map is the model of the result.
		model := map[uint32]Value{}
		for n, op := range ops {
			col, k := uint32(op>>3), op&7
			var v Value
			switch k {
			case 0:
				v = Null()
			case 1:
				v = Bool((i>>n)&1 == 1)
			case 2:
				v = Int(i + int64(n))
			case 3:
				v = Value{Kind: KindFloat, Float: fl}
			case 4:
				v = String(s)
			case 5:
				v = Value{Kind: KindDatetime, Int: i - int64(n)}
			case 6:
				v = Strings(strings.Split(s, ","))
			case 7:
				v = Vector([]float64{fl, float64(i), float64(n)})
			}
			r.Set(col, v)
			if v.IsNull() {
				delete(model, col)
			} else {
				model[col] = v
			}
		}
		for col := range uint32(33) {
			got, ok := r.Get(col)
			want, inModel := model[col]
			if ok != inModel || (ok && !sameValue(got, want)) {
				t.Fatalf("Get(%d) = %+v, %v; want %+v, %v", col, got, ok, want, inModel)
			}
		}
		if !slices.IsSortedFunc(r.Fields, func(a, b Field) int { return cmp.Compare(a.Col, b.Col) }) || len(r.Fields) != len(model) {
			t.Fatalf("fields %+v do not match the model %+v", r.Fields, model)
		}
		if deleted {
			r.Fields = nil
		}

		enc := AppendRecord(nil, &r)
		var got Record
		if err := DecodeRecord(enc, &got); err != nil {
			t.Fatalf("DecodeRecord(AppendRecord(%+v)): %v", r, err)
		}
		if !sameRecord(&got, &r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
		}
		if re := AppendRecord(nil, &got); !bytes.Equal(re, enc) {
			t.Fatalf("re-encoding differs:\n got % x\nwant % x", re, enc)
		}
		if c := r.Clone(); !sameRecord(c, &r) || !bytes.Equal(AppendRecord(nil, c), enc) {
			t.Fatalf("clone %+v differs from %+v", *c, r)
		}
	})
}

func TestRecordSeq(t *testing.T) {
	r := &Record{ID: "rec_1", Version: 3, CreatedAt: -5, UpdatedAt: 7, Seq: 1 << 40, Fields: []Field{{Col: 1, Val: String("x")}}}
	b := AppendRecord(nil, r)
	if s, err := RecordSeq(b); err != nil || s != r.Seq {
		t.Fatalf("RecordSeq = %d, %v", s, err)
	}
	for i := 0; i < len(b); i++ {
		// Every truncation of the header either fails or reads the seq.
		if s, err := RecordSeq(b[:i]); err == nil && s != r.Seq {
			t.Fatalf("truncated at %d: seq %d", i, s)
		}
	}
}
