package index

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestDensify checks that a walk expected to test many rows tests them on
// dense postings, with the same answers as on the postings themselves,
// and that one expected to test few keeps the postings.
func TestDensify(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 19))
	sparse, dense, ranged := roaring.New(), roaring.New(), roaring.New()
	const rows = 200_000
	for row := range uint32(rows) {
		if r.IntN(100) == 0 {
			sparse.Add(row) // array containers
		}
		if r.IntN(3) > 0 {
			dense.Add(row) // bitmap containers
		}
	}
	ranged.AddRange(70_000, 140_000) // a run container
	ranged.RunOptimize()
	build := func() *rowTest {
		leaf := func(b *roaring.Bitmap) *rowTest {
			return &rowTest{kind: testBits, bits: b, share: float64(b.GetCardinality()) / rows, test: lazyPostingTest}
		}
		or := &rowTest{kind: testOr, children: []*rowTest{leaf(sparse), leaf(ranged)}}
		or.share = 1 - (1-or.children[0].share)*(1-or.children[1].share)
		return &rowTest{kind: testAnd, children: []*rowTest{or, leaf(dense)}, share: 1}
	}
	kinds := func(t *rowTest) []testKind {
		or, last := t.children[0], t.children[1]
		return []testKind{or.children[0].kind, or.children[1].kind, last.kind}
	}
	f := func(tests float64, want []testKind) {
		t.Helper()
		plain, test := build(), build()
		var held denseHeld
		defer held.release()
		held.densify(test, tests)
		if got := kinds(test); !slices.Equal(got, want) {
			t.Fatalf("%v tests: kinds %v, want %v", tests, got, want)
		}
		for row := range uint32(rows + 100) {
			if got, want := test.holds(row), plain.holds(row); got != want {
				t.Fatalf("%v tests: row %d holds %v, want %v", tests, row, got, want)
			}
		}
	}
	f(10, []testKind{testBits, testBits, testBits})
	f(1e6, []testKind{testDense, testDense, testDense})
	// The pool's words, written again, hold no bit of the last posting.
	f(1e6, []testKind{testDense, testDense, testDense})
}
