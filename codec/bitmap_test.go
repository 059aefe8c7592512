package codec_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/coppice-db/coppice/codec"
)

var deltaSeed = flag.Uint64("delta.seed", 0, "seed for TestDeltaRandom; 0 picks one from the clock")

// deltaParseSet reads a set written as space-separated rows and inclusive
// ranges, e.g. "1 5..9".
func deltaParseSet(t testing.TB, s string) *roaring.Bitmap {
	t.Helper()
	b := roaring.New()
	for _, tok := range strings.Fields(s) {
		lo, hi := deltaParseRange(t, tok)
		b.AddRange(lo, hi+1)
	}
	return b
}

func deltaParseRange(t testing.TB, tok string) (lo, hi uint64) {
	t.Helper()
	a, b, isRange := strings.Cut(tok, "..")
	lo, err := strconv.ParseUint(a, 10, 32)
	if err != nil {
		t.Fatalf("bad row %q", tok)
	}
	hi = lo
	if isRange {
		if hi, err = strconv.ParseUint(b, 10, 32); err != nil {
			t.Fatalf("bad row %q", tok)
		}
	}
	return lo, hi
}

// deltaParse reads a delta written as "+row", "-row" (rows or inclusive
// ranges) and an optional "full", e.g. "full +1 +5..9" or "+2 -3".
func deltaParse(t testing.TB, s string) codec.Delta {
	t.Helper()
	d := codec.NewDelta()
	for _, tok := range strings.Fields(s) {
		switch {
		case tok == "full":
			d.Full = true
		case strings.HasPrefix(tok, "+"):
			lo, hi := deltaParseRange(t, tok[1:])
			d.Adds.AddRange(lo, hi+1)
		case strings.HasPrefix(tok, "-"):
			lo, hi := deltaParseRange(t, tok[1:])
			d.Dels.AddRange(lo, hi+1)
		default:
			t.Fatalf("bad delta token %q", tok)
		}
	}
	return d
}

func deltaString(d codec.Delta) string {
	return fmt.Sprintf("{full=%v adds=%v dels=%v}", d.Full, d.Adds, d.Dels)
}

// deltaCopy returns d with cloned bitmaps, so composing into it leaves d alone.
func deltaCopy(d codec.Delta) codec.Delta {
	return codec.Delta{Adds: d.Adds.Clone(), Dels: d.Dels.Clone(), Full: d.Full}
}

func deltaSame(a, b codec.Delta) bool {
	return a.Full == b.Full && a.Adds.Equals(b.Adds) && a.Dels.Equals(b.Dels)
}

func TestDeltaThen(t *testing.T) {
	f := func(older, newer, want string) {
		t.Helper()
		d := deltaParse(t, older)
		n := deltaParse(t, newer)
		d.Then(n)
		w := deltaParse(t, want)
		if !deltaSame(d, w) {
			t.Errorf("(%s) then (%s) = %s, want (%s)", older, newer, deltaString(d), want)
		}
		if !deltaSame(n, deltaParse(t, newer)) {
			t.Errorf("(%s) then (%s) changed newer to %s", older, newer, deltaString(n))
		}
	}
	f("", "", "")
	f("+1", "", "+1")
	f("", "+1 -2", "+1 -2")
	f("+1", "-1", "-1")
	f("-1", "+1", "+1")
	f("+1 -2", "+2 -1", "+2 -1")
	f("+1 +2", "+3 -2", "+1 +3 -2")
	f("+1..100000", "-50..60", "+1..49 +61..100000 -50..60")
	f("-0..70000", "+65535..65537", "-0..65534 -65538..70000 +65535..65537")
	f("+4294967295", "-4294967295", "-4294967295")
	f("full", "+1", "full +1")
	f("full +1 +2", "+3 -2", "full +1 +3")
	f("full +1", "-5", "full +1") // a full value forgets deletes of absent rows
	f("+1 -2", "full +7", "full +7")
	f("full +1", "full", "full")

	// The zero Delta is a valid empty change on either side.
	var z codec.Delta
	z.Then(deltaParse(t, "+1 -2"))
	if !deltaSame(z, deltaParse(t, "+1 -2")) {
		t.Errorf("zero then (+1 -2) = %s", deltaString(z))
	}
	d := deltaParse(t, "+1")
	d.Then(codec.Delta{})
	if !deltaSame(d, deltaParse(t, "+1")) {
		t.Errorf("(+1) then zero = %s", deltaString(d))
	}
}

// TestDeltaBefore checks that composing an older change before a delta
// gives what Then gives composing it after the older one, on the cases of
// TestDeltaThen.
func TestDeltaBefore(t *testing.T) {
	cases := [][2]string{
		{"", ""}, {"+1", ""}, {"", "+1 -2"}, {"+1", "-1"}, {"-1", "+1"}, {"+1 -2", "+2 -1"},
		{"+1 +2", "+3 -2"}, {"+1..100000", "-50..60"}, {"-0..70000", "+65535..65537"},
		{"+4294967295", "-4294967295"}, {"full", "+1"}, {"full +1 +2", "+3 -2"}, {"full +1", "-5"},
		{"+1 -2", "full +7"}, {"full +1", "full"}, {"full +1 -9", "+2 -1"},
	}
	for _, c := range cases {
		want := deltaParse(t, c[0])
		want.Then(deltaParse(t, c[1]))
		got := deltaParse(t, c[1])
		got.Before(deltaParse(t, c[0]))
		if !deltaSame(got, want) {
			t.Errorf("(%s) before (%s) = %s, want %s", c[0], c[1], deltaString(got), deltaString(want))
		}
	}
	var z codec.Delta
	z.Before(deltaParse(t, "+1 -2"))
	if !deltaSame(z, deltaParse(t, "+1 -2")) {
		t.Errorf("(+1 -2) before zero = %s", deltaString(z))
	}
	d := deltaParse(t, "+1")
	d.Before(codec.Delta{})
	if !deltaSame(d, deltaParse(t, "+1")) {
		t.Errorf("zero before (+1) = %s", deltaString(d))
	}
}

func TestDeltaApplyTo(t *testing.T) {
	f := func(set, delta, want string) {
		t.Helper()
		s := deltaParseSet(t, set)
		deltaParse(t, delta).ApplyTo(s)
		if w := deltaParseSet(t, want); !s.Equals(w) {
			t.Errorf("(%s) on {%s} = %v, want {%s}", delta, set, s, want)
		}
	}
	f("", "", "")
	f("", "+1", "1")
	f("1 2", "-1", "2")
	f("1", "+1", "1")      // blind writes need not be exact
	f("1", "-9", "1")      //
	f("1", "+2 -1", "2")   //
	f("3", "full +5", "5") // a full value replaces the set
	f("3", "full", "")
	f("1..70000", "-2..69999", "1 70000")
	f("4294967295", "-4294967295 +0", "0")
	var z codec.Delta
	s := deltaParseSet(t, "1 2")
	z.ApplyTo(s)
	if !s.Equals(deltaParseSet(t, "1 2")) {
		t.Errorf("zero delta changed the set to %v", s)
	}
}

func TestDeltaUndoFrom(t *testing.T) {
	f := func(after, delta, before string) {
		t.Helper()
		s := deltaParseSet(t, after)
		deltaParse(t, delta).UndoFrom(s)
		if w := deltaParseSet(t, before); !s.Equals(w) {
			t.Errorf("undo (%s) from {%s} = %v, want {%s}", delta, after, s, before)
		}
	}
	f("", "", "")
	f("2 3", "+3 -1", "1 2")
	f("", "-1 -2", "1 2")
	f("1..10", "+1..10", "")
	f("1 70000", "-2..69999", "1..70000")
	f("5", "full +5", "") // a full value was written onto the empty set
}

// TestDeltaEncoding pins the byte layout documented in codec/KEYS.md.
func TestDeltaEncoding(t *testing.T) {
	f := func(delta, wantHex string) {
		t.Helper()
		got := codec.AppendDelta([]byte{0xAA}, deltaParse(t, delta))
		want, err := hex.DecodeString("aa" + strings.ReplaceAll(wantHex, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("AppendDelta(%s) = % x, want % x", delta, got, want)
		}
	}
	f("", "01 00 00")
	f("full", "02 00")
	// {1}: cookie 12346, one container (key 0, cardinality-1 0), its offset
	// 16, then the array container holding 1.
	f("+1", "01 12 3a300000 01000000 0000 0000 10000000 0100 00")
	f("-1", "01 00 12 3a300000 01000000 0000 0000 10000000 0100")
	f("full +1", "02 12 3a300000 01000000 0000 0000 10000000 0100")
	f("full +1 -1", "02 12 3a300000 01000000 0000 0000 10000000 0100")
	// A run: cookie 12347 with the container count-1 in the high half, the
	// is-run bitmap, key and cardinality-1, then 1 run starting at 0 of
	// length-1 9999.
	f("+0..9999", "01 0f 3b300000 01 0000 0f27 0100 0000 0f27 00")
	// A row in both adds and dels is an add.
	f("+1 -1 -2", "01 12 3a300000 01000000 0000 0000 10000000 0100 12 3a300000 01000000 0000 0000 10000000 0200")
}

func TestDecodeDeltaErrors(t *testing.T) {
	f := func(inHex string) {
		t.Helper()
		in, err := hex.DecodeString(strings.ReplaceAll(inHex, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		if d, err := codec.DecodeDelta(in); err == nil {
			t.Errorf("DecodeDelta(% x) = %s, want an error", in, deltaString(d))
		}
		if _, err := codec.DecodeBitmap(in); err == nil {
			t.Errorf("DecodeBitmap(% x) succeeded, want an error", in)
		}
	}
	f("")
	f("00 00 00")
	f("03 00")
	f("01")
	f("01 00")       // dels missing
	f("01 00 00 00") // trailing byte
	f("02 00 00")    // a full value has no dels
	f("02 05 00")    // length beyond the input
	f("02 ff")       // truncated uvarint
	f("02 ffffffffffffffffffff01")
	f("02 08 3a300000 00000000")                                                                      // empty set written as roaring
	f("02 12 3b300000 01000000 0000 0000 10000000 0100")                                              // bad cookie
	f("02 12 3a300000 01000000 0000 0000 10000000 01")                                                // truncated container
	f("02 14 3a300000 01000000 0000 0100 10000000 0200 0100")                                         // unsorted array
	f("02 14 3a300000 01000000 0000 0100 10000000 0100 0100")                                         // duplicate row
	f("02 13 3a300000 01000000 0000 0000 10000000 0100 00")                                           // roaring leaves a byte
	f("01 12 3a300000 01000000 0000 0000 10000000 0100 12 3a300000 01000000 0000 0000 10000000 0100") // add and delete 1
}

func TestDecodeBitmap(t *testing.T) {
	f := func(delta, want string) {
		t.Helper()
		b, err := codec.DecodeBitmap(codec.AppendDelta(nil, deltaParse(t, delta)))
		if err != nil {
			t.Fatalf("DecodeBitmap(%s): %v", delta, err)
		}
		if w := deltaParseSet(t, want); !b.Equals(w) {
			t.Errorf("DecodeBitmap(%s) = %v, want {%s}", delta, b, want)
		}
	}
	f("full", "")
	f("full +1..3", "1 2 3")
	f("+1 -2", "1") // a delta at the bottom of history applies to the empty set
	f("-2", "")
}

// deltaGen draws rows and sets for the randomized tests: rows cluster in a
// few places, including both ends of the uint32 range and across 2^16
// boundaries, so sets mix array, bitmap and run containers.
type deltaGen struct{ rng *rand.Rand }

func (g deltaGen) row() uint32 {
	bases := [...]uint64{0, 1<<16 - 500, 7 << 16, math.MaxUint32 - 3000}
	r := bases[g.rng.IntN(len(bases))] + uint64(g.rng.IntN(80000))
	return uint32(min(r, math.MaxUint32))
}

// span returns a random half-open range of rows, sometimes long.
func (g deltaGen) span() (lo, hi uint64) {
	lo = uint64(g.row())
	n := uint64(g.rng.IntN(64))
	if g.rng.IntN(4) == 0 {
		n = uint64(g.rng.IntN(20000))
	}
	return lo, min(lo+n+1, math.MaxUint32+1)
}

func (g deltaGen) set() *roaring.Bitmap {
	b := roaring.New()
	for range g.rng.IntN(5) {
		b.AddRange(g.span())
	}
	for range g.rng.IntN(50) {
		b.Add(g.row())
	}
	return b
}

// exact returns a delta that is exact for set (its adds are absent from set,
// its dels present) and set with the delta applied.
func (g deltaGen) exact(set *roaring.Bitmap) (codec.Delta, *roaring.Bitmap) {
	d := codec.NewDelta()
	for range g.rng.IntN(3) {
		d.Adds.AddRange(g.span())
	}
	for range g.rng.IntN(20) {
		d.Adds.Add(g.row())
	}
	d.Adds.AndNot(set)
	if card := set.GetCardinality(); card > 0 {
		for range g.rng.IntN(20) {
			r, err := set.Select(uint32(g.rng.Uint64N(card)))
			if err != nil {
				panic(err) // the rank is below the cardinality
			}
			d.Dels.Add(r)
		}
		if g.rng.IntN(3) == 0 {
			lo, hi := g.span()
			r := roaring.New()
			r.AddRange(lo, hi)
			d.Dels.Or(roaring.And(r, set))
		}
	}
	next := set.Clone()
	d.ApplyTo(next)
	return d, next
}

// deltaTree composes log[lo:hi] along a random binary tree.
func deltaTree(rng *rand.Rand, log []codec.Delta) codec.Delta {
	if len(log) == 1 {
		return deltaCopy(log[0])
	}
	mid := 1 + rng.IntN(len(log)-1)
	l := deltaTree(rng, log[:mid])
	l.Then(deltaTree(rng, log[mid:]))
	return l
}

// deltaModel composes log row by row: each row's fate is that of the newest
// delta that mentions it. It builds fresh bitmaps from sorted slices, so
// comparing its encoding with a composed delta's tests canonical encoding.
func deltaModel(log []codec.Delta) codec.Delta {
	last := map[uint32]bool{}
	for _, d := range log {
		for it := d.Dels.Iterator(); it.HasNext(); {
			last[it.Next()] = false
		}
		for it := d.Adds.Iterator(); it.HasNext(); {
			last[it.Next()] = true
		}
	}
	var adds, dels []uint32
	for r, add := range last {
		if add {
			adds = append(adds, r)
		} else {
			dels = append(dels, r)
		}
	}
	slices.Sort(adds)
	slices.Sort(dels)
	return codec.Delta{Adds: roaring.BitmapOf(adds...), Dels: roaring.BitmapOf(dels...)}
}

// TestDeltaRandom composes random histories of exact deltas in several
// equivalent ways and checks that they agree: applied to the start set, in
// encoded bytes, and when undone step by step from the final set.
func TestDeltaRandom(t *testing.T) {
	seed := *deltaSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce with: go test ./codec/ -run TestDeltaRandom -delta.seed=%d", seed)
		}
	})
	rng := rand.New(rand.NewPCG(seed, 0))
	g := deltaGen{rng}
	histories := 100
	if testing.Short() {
		histories = 20
	}
	for h := range histories {
		start := g.set()
		sets := []*roaring.Bitmap{start}
		var log []codec.Delta
		for range 1 + rng.IntN(30) {
			d, next := g.exact(sets[len(sets)-1])
			if rng.IntN(2) == 0 {
				// Half the operands arrive the way Pebble hands them over.
				var err error
				if d, err = codec.DecodeDelta(codec.AppendDelta(nil, d)); err != nil {
					t.Fatalf("history %d: round trip: %v", h, err)
				}
			}
			log = append(log, d)
			sets = append(sets, next)
		}
		final := sets[len(sets)-1]

		left := codec.NewDelta()
		for _, d := range log {
			left.Then(d)
		}
		right := deltaCopy(log[len(log)-1])
		for i := len(log) - 2; i >= 0; i-- {
			older := deltaCopy(log[i])
			older.Then(right)
			right = older
		}
		// Newest first into one accumulator, as Pebble's merges fold.
		before := deltaCopy(log[len(log)-1])
		for i := len(log) - 2; i >= 0; i-- {
			before.Before(deltaCopy(log[i]))
		}
		tree := deltaTree(rng, log)
		// Through the codec at every step, as a merge operator would.
		enc := codec.AppendDelta(nil, codec.Delta{})
		for _, d := range log {
			acc, err := codec.DecodeDelta(enc)
			if err != nil {
				t.Fatalf("history %d: %v", h, err)
			}
			acc.Then(d)
			enc = codec.AppendDelta(nil, acc)
		}
		want := codec.AppendDelta(nil, deltaModel(log))
		for _, c := range []struct {
			name string
			d    codec.Delta
		}{{"left fold", left}, {"right fold", right}, {"newest first", before}, {"tree", tree}} {
			got := start.Clone()
			c.d.ApplyTo(got)
			if !got.Equals(final) {
				t.Fatalf("history %d: %s applied gives %d rows, want %d", h, c.name, got.GetCardinality(), final.GetCardinality())
			}
			if b := codec.AppendDelta(nil, c.d); !bytes.Equal(b, want) {
				t.Fatalf("history %d: %s encodes differently from the model:\n got % x\nwant % x", h, c.name, b, want)
			}
		}
		if !bytes.Equal(enc, want) {
			t.Fatalf("history %d: fold through the codec encodes differently from the model", h)
		}

		// A full start stays full and ends as the final set.
		full := codec.Delta{Adds: start.Clone(), Full: true}
		for _, d := range log {
			full.Then(d)
		}
		fresh := codec.Delta{Adds: roaring.BitmapOf(final.ToArray()...), Full: true}
		if !bytes.Equal(codec.AppendDelta(nil, full), codec.AppendDelta(nil, fresh)) {
			t.Fatalf("history %d: full fold does not encode as the final set", h)
		}
		if b, err := codec.DecodeBitmap(codec.AppendDelta(nil, full)); err != nil || !b.Equals(final) {
			t.Fatalf("history %d: DecodeBitmap of the full fold: %v", h, err)
		}

		// Undoing the log newest first walks back through every set.
		set := final.Clone()
		for i := len(log) - 1; i >= 0; i-- {
			log[i].UndoFrom(set)
			if !set.Equals(sets[i]) {
				t.Fatalf("history %d: undoing delta %d gives %d rows, want %d", h, i, set.GetCardinality(), sets[i].GetCardinality())
			}
		}
	}
}

// FuzzDecodeDelta checks that no input makes DecodeDelta panic, and that
// whatever it accepts re-encodes canonically to the same sets.
func FuzzDecodeDelta(f *testing.F) {
	seeds := []string{
		"", "full", "+1", "-1", "+1 -2", "full +1..3", "+0..9999 -20000..20005",
		"+0..5000", "-65530..65545", "full +4294967295", "+1..70000 -70001",
	}
	for _, s := range seeds {
		f.Add(codec.AppendDelta(nil, deltaParse(f, s)))
	}
	var dense codec.Delta = codec.NewDelta()
	for i := uint32(0); i < 10000; i += 2 {
		dense.Adds.Add(i) // a bitmap container
	}
	f.Add(codec.AppendDelta(nil, dense))
	f.Add([]byte{})
	f.Add([]byte{0x03, 0x00})
	f.Add([]byte{0x02, 0x08, 0x3a, 0x30, 0, 0, 0, 0, 0, 0})

	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		d, err := codec.DecodeDelta(in)
		if err != nil {
			return
		}
		for i := range in {
			in[i] ^= 0xFF // the result must not alias its input
		}
		again, err := codec.DecodeDelta(data)
		if err != nil || !deltaSame(d, again) {
			t.Fatalf("decoding % x changed after its input was overwritten (%v)", data, err)
		}
		if d.Adds.Intersects(d.Dels) || (d.Full && !d.Dels.IsEmpty()) {
			t.Fatalf("decoded % x to a non-normal delta %s", data, deltaString(d))
		}
		enc := codec.AppendDelta(nil, d)
		d2, err := codec.DecodeDelta(enc)
		if err != nil {
			t.Fatalf("re-encoding of % x does not decode: %v", data, err)
		}
		if !deltaSame(d, d2) {
			t.Fatalf("% x decodes to %s, its re-encoding to %s", data, deltaString(d), deltaString(d2))
		}
		if enc2 := codec.AppendDelta(nil, d2); !bytes.Equal(enc, enc2) {
			t.Fatalf("re-encoding is not a fixed point: % x then % x", enc, enc2)
		}
		if b, err := codec.DecodeBitmap(data); err != nil || !b.Equals(d.Adds) {
			t.Fatalf("DecodeBitmap(% x) disagrees with DecodeDelta (%v)", data, err)
		}
	})
}

// BenchmarkDeltaFoldNewestFirst folds 10,000 one-row additions newest
// first, as a merge operator meets the operands single inserts leave on a
// posting: into the accumulator with Before, against the older operand
// with Then (which copies the accumulated sets at every step).
func BenchmarkDeltaFoldNewestFirst(b *testing.B) {
	const n = 10000
	ops := make([][]byte, n)
	for i := range ops {
		ops[i] = codec.AppendDelta(nil, codec.Delta{Adds: roaring.BitmapOf(uint32(3 * i))})
	}
	decode := func(i int) codec.Delta {
		d, err := codec.DecodeDelta(ops[i])
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	b.Run("before", func(b *testing.B) {
		for b.Loop() {
			acc := decode(n - 1)
			for i := n - 2; i >= 0; i-- {
				acc.Before(decode(i))
			}
		}
	})
	b.Run("then", func(b *testing.B) {
		for b.Loop() {
			acc := decode(n - 1)
			for i := n - 2; i >= 0; i-- {
				older := decode(i)
				older.Then(acc)
				acc = older
			}
		}
	})
}

// AppendAddsDelta writes the bytes AppendDelta writes for the delta
// adding the same rows: single and many rows, runs and scattered rows,
// in any chunk, up to and past the most an array container holds, and
// across chunks.
func TestAppendAddsDeltaMatchesAppendDelta(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 18))
	for n := range 3000 {
		size := 1 + rng.IntN(64)
		switch n % 10 {
		case 0:
			size = 1 + rng.IntN(5000)
		case 1:
			size = 4090 + rng.IntN(12)
		}
		chunk := uint32(rng.IntN(4)) << 16
		gap := 1 + rng.IntN(3) // 1: every row, a run
		set := map[uint32]bool{}
		row := chunk + uint32(rng.IntN(1000))
		for len(set) < size {
			set[row] = true
			if rng.IntN(8) == 0 {
				row += uint32(1 + rng.IntN(50))
			} else {
				row += uint32(gap)
			}
			if n%17 == 0 && row < chunk+1<<16 {
				continue // runs over into the next chunk
			}
			if row >= chunk+1<<16 {
				row = chunk + uint32(rng.IntN(1<<16))
			}
		}
		rows := slices.Sorted(maps.Keys(set))
		want := codec.AppendDelta(nil, codec.Delta{Adds: roaring.BitmapOf(rows...)})
		got := codec.AppendAddsDelta([]byte{9}, rows)
		if !bytes.Equal(got[1:], want) {
			t.Fatalf("%d rows from %d: got %x, want %x", len(rows), rows[0], got[1:], want)
		}
		d, err := codec.DecodeDelta(got[1:])
		if err != nil || d.Adds.GetCardinality() != uint64(len(rows)) {
			t.Fatalf("decode: %v", err)
		}
	}
}

// randomAddRows returns sorted rows as a bulk write adds them to a
// posting: mostly a few dozen rows of one chunk, close together, now and
// then thousands, and now and then one row perhaps in another chunk.
func randomAddRows(rng *rand.Rand) []uint32 {
	set := map[uint32]bool{}
	chunk := uint32(rng.IntN(3)) << 16
	size := 1 + rng.IntN(40)
	if rng.IntN(10) == 0 {
		size = 1 + rng.IntN(5000)
	}
	row := chunk + uint32(rng.IntN(100))
	for len(set) < size && row < chunk+1<<16 {
		set[row] = true
		row += uint32(1 + rng.IntN(3)*rng.IntN(3))
	}
	if rng.IntN(10) == 0 {
		set[uint32(rng.IntN(1<<18))] = true
	}
	rows := slices.Collect(maps.Keys(set))
	slices.Sort(rows)
	return rows
}

// AppendAddsDeltaRows reads back exactly the rows AppendAddsDelta wrote
// when they fit one array or run container, and declines every other
// value, valid or not, leaving dst as it was.
func TestAppendAddsDeltaRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	prefix := []uint32{42}
	for range 3000 {
		rows := randomAddRows(rng)
		enc := codec.AppendAddsDelta(nil, rows)
		got, ok := codec.AppendAddsDeltaRows(slices.Clone(prefix), enc)
		// One chunk of up to 4096 rows is an array or runs; more rows may
		// be runs too, or a bitmap container, which is declined.
		oneChunk := rows[0]>>16 == rows[len(rows)-1]>>16
		if ok != oneChunk && (ok || len(rows) <= 4096) {
			t.Fatalf("%d rows in chunks %d..%d: ok=%v", len(rows), rows[0]>>16, rows[len(rows)-1]>>16, ok)
		}
		if ok && !slices.Equal(got, append(slices.Clone(prefix), rows...)) {
			t.Fatalf("rows %v read back as %v", rows, got[1:])
		}
		if !ok && !slices.Equal(got, prefix) {
			t.Fatalf("declined but changed dst to %v", got)
		}
	}
	f := func(d codec.Delta, what string) {
		t.Helper()
		enc := codec.AppendDelta(nil, d)
		for i := 0; i <= len(enc); i++ {
			if got, ok := codec.AppendAddsDeltaRows(slices.Clone(prefix), enc[:i]); ok || !slices.Equal(got, prefix) {
				t.Errorf("%s cut to %d bytes: accepted %v", what, i, got)
			}
		}
	}
	f(codec.DelDelta(3), "a removal")
	f(codec.Delta{Adds: roaring.BitmapOf(1, 2), Dels: roaring.BitmapOf(7)}, "adds and a removal")
	f(codec.Delta{Adds: roaring.BitmapOf(1, 2), Full: true}, "a full value")
	f(codec.Delta{Adds: roaring.BitmapOf(1, 1<<16)}, "adds in two chunks")
	// Values AppendAddsDelta would never write: rows out of order, runs
	// that overlap, a wrong cardinality.
	unsorted := codec.AppendAddsDelta(nil, []uint32{1, 5, 9})
	unsorted[len(unsorted)-3] = 2 // 9 becomes 2
	runs := codec.AppendAddsDelta(nil, []uint32{1, 2, 3, 4, 10, 11, 12, 13})
	runs[len(runs)-5] = 3 // the second run starts inside the first
	card := codec.AppendAddsDelta(nil, []uint32{1, 2, 3, 4, 5, 6})
	card[10]++
	for _, v := range [][]byte{unsorted, runs, card} {
		if got, ok := codec.AppendAddsDeltaRows(slices.Clone(prefix), v); ok || !slices.Equal(got, prefix) {
			t.Errorf("% x: accepted %v", v, got)
		}
	}
}

// IsCanonicalAddsDelta accepts exactly the values AppendAddsDelta writes
// for one container of up to 4096 rows, each of which reads back and
// encodes again to the same bytes, and declines the same sets written in
// the other container form, corrupted values and other deltas.
func TestIsCanonicalAddsDelta(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 3))
	for range 3000 {
		rows := randomAddRows(rng)
		enc := codec.AppendAddsDelta(nil, rows)
		want := rows[0]>>16 == rows[len(rows)-1]>>16 && len(rows) <= 4096
		if got := codec.IsCanonicalAddsDelta(enc); got != want {
			t.Fatalf("%d rows in chunks %d..%d: %v, want %v", len(rows), rows[0]>>16, rows[len(rows)-1]>>16, got, want)
		}
		if !want {
			continue
		}
		back, _ := codec.AppendAddsDeltaRows(nil, enc)
		if again := codec.AppendAddsDelta(nil, back); !bytes.Equal(again, enc) {
			t.Fatalf("% x encodes again as % x", enc, again)
		}
		for i := range len(enc) {
			if codec.IsCanonicalAddsDelta(enc[:i]) {
				t.Fatalf("% x cut to %d bytes accepted", enc, i)
			}
		}
	}
	f := func(v []byte, what string) {
		t.Helper()
		if codec.IsCanonicalAddsDelta(v) {
			t.Errorf("%s (% x) accepted", what, v)
		}
	}
	f(codec.AppendDelta(nil, codec.DelDelta(3)), "a removal")
	f(codec.AppendDelta(nil, codec.Delta{Adds: roaring.BitmapOf(1, 2), Full: true}), "a full value")
	f(codec.AppendDelta(nil, codec.Delta{Adds: roaring.BitmapOf(1, 1<<16)}), "adds in two chunks")
	// The same sets in the container form AppendAddsDelta does not pick:
	// ten consecutive rows as an array, three scattered ones as runs.
	// roaring keeps an array container until RunOptimize, which AppendDelta
	// calls: the delta frame around its bytes is the array form.
	raw, err := roaring.BitmapOf(0, 1, 2, 3, 4, 5, 6, 7, 8, 9).ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	array := append(append(binary.AppendUvarint([]byte{1}, uint64(len(raw))), raw...), 0)
	runs := []byte{1, 23, 0x3b, 0x30, 0, 0, 1, 0, 0, 2, 0, 3, 0}
	for _, r := range []uint16{1, 5, 9} {
		runs = binary.LittleEndian.AppendUint16(runs, r)
		runs = binary.LittleEndian.AppendUint16(runs, 0)
	}
	runs = append(runs, 0)
	for _, v := range [][]byte{array, runs} {
		if rows, ok := codec.AppendAddsDeltaRows(nil, v); !ok {
			t.Fatalf("% x: not a delta of one container", v)
		} else if bytes.Equal(codec.AppendAddsDelta(nil, rows), v) {
			t.Fatalf("% x: the form AppendAddsDelta writes", v)
		}
		f(v, "the other container form")
	}
	unsorted := codec.AppendAddsDelta(nil, []uint32{1, 5, 9})
	unsorted[len(unsorted)-3] = 2
	f(unsorted, "rows out of order")
	overlap := codec.AppendAddsDelta(nil, []uint32{1, 2, 3, 4, 10, 11, 12, 13})
	overlap[len(overlap)-5] = 3
	f(overlap, "overlapping runs")
}
