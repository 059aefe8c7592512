package vector

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestDistances holds the unrolled loops to the plain formulas for every
// length around the unrolling.
func TestDistances(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }
	for n := range 13 {
		for range 50 {
			a, b := make([]float64, n), make([]float64, n)
			for i := range n {
				a[i], b[i] = rng.NormFloat64(), rng.NormFloat64()
			}
			var d, l1, l2 float64
			for i := range n {
				d += a[i] * b[i]
				l1 += math.Abs(a[i] - b[i])
				l2 += (a[i] - b[i]) * (a[i] - b[i])
			}
			if got := dot(a, b); !close(got, d) {
				t.Fatalf("dot %v %v = %v, want %v", a, b, got, d)
			}
			if got := l1Distance(a, b); !close(got, l1) {
				t.Fatalf("l1 %v %v = %v, want %v", a, b, got, l1)
			}
			if got := l2Squared(a, b); !close(got, l2) {
				t.Fatalf("l2² %v %v = %v, want %v", a, b, got, l2)
			}
		}
	}
}

// TestRankStore ranks random vectors with many equal ones (ties broken by
// id) through the store and the heap, against sorting them all.
func TestRankStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const dim, n = 3, 500
	pool := make([][]float64, 20) // few distinct vectors: many ties
	for i := range pool {
		pool[i] = []float64{float64(rng.IntN(5)), float64(rng.IntN(5)), float64(rng.IntN(5) - 2)}
	}
	s := NewStore(dim, 0)
	ids := map[uint32]string{}
	cands := roaring.New()
	vecs := map[uint32][]float64{}
	for range n {
		row := uint32(rng.IntN(2 * n))
		v := pool[rng.IntN(len(pool))]
		s.Set(row, v)
		vecs[row] = v
		ids[row] = "r" + strconv.Itoa(rng.IntN(1<<20))
		if rng.IntN(4) > 0 {
			cands.Add(row)
		}
	}
	s.Set(7, nil) // a removed vector
	delete(vecs, 7)
	cands.And(s.Present())
	id := func(row uint32) (string, error) { return ids[row], nil }
	for _, fn := range []string{Cosine, L1, L2} {
		for _, k := range []int{1, 5, 100} {
			q, err := NewQuery(Request{Vector: []float64{1, 2, -1}, Similarity: &fn, Size: &k})
			if err != nil {
				t.Fatal(err)
			}
			top := NewTop(k, id)
			if err := q.RankStore(context.Background(), s, cands, top); err != nil {
				t.Fatal(err)
			}
			got, err := top.Sorted()
			if err != nil {
				t.Fatal(err)
			}
			var all []Ranked
			for _, row := range cands.ToArray() {
				all = append(all, Ranked{q.Key(vecs[row], Norm(vecs[row])), row})
			}
			slices.SortFunc(all, func(a, b Ranked) int {
				if a.Key != b.Key {
					if a.Key < b.Key {
						return -1
					}
					return 1
				}
				return strings.Compare(ids[a.Row], ids[b.Row])
			})
			want := all[:min(k, len(all))]
			if !slices.Equal(got, want) {
				t.Fatalf("%s k=%d:\n got %v\nwant %v", fn, k, got, want)
			}
		}
	}
}

// TestScores checks the scores of each function at known distances.
func TestScores(t *testing.T) {
	f := func(fn string, vec, v []float64, want float64) {
		t.Helper()
		q, err := NewQuery(Request{Vector: vec, Similarity: &fn})
		if err != nil {
			t.Fatal(err)
		}
		if got := q.Score(q.Key(v, Norm(v))); math.Abs(got-want) > 1e-12 {
			t.Errorf("%s %v %v: score %v, want %v", fn, vec, v, got, want)
		}
	}
	f(Cosine, []float64{1, 0}, []float64{2, 0}, 1)
	f(Cosine, []float64{1, 0}, []float64{0, 3}, 0.5)
	f(Cosine, []float64{1, 0}, []float64{-1, 0}, 0)
	f(Cosine, []float64{1, 0}, []float64{0, 0}, 0.5) // a zero vector: cos 0
	f(L1, []float64{1, 0}, []float64{2, 1}, 1.0/3)
	f(L2, []float64{1, 0}, []float64{2, 1}, 1.0/3)
}

func TestNewQueryErrors(t *testing.T) {
	f := func(r Request, want string) {
		t.Helper()
		_, err := NewQuery(r)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %v, want %q", r, err, want)
		}
	}
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	f(Request{Vector: []float64{1}, Similarity: str("dot")}, "similarityFunction must be cosineSimilarity, l1 or l2, got [dot]")
	f(Request{Vector: []float64{1}, Size: num(0)}, "size must be between 1 and 100, got 0")
	f(Request{Vector: []float64{1}, Size: num(101)}, "size must be between 1 and 100")
	f(Request{Vector: []float64{1}, Size: num(1001), MaxSize: CompatSize}, "size must be between 1 and 1000")
	f(Request{Vector: []float64{math.NaN()}, Similarity: str(L2)}, "finite")
	f(Request{Vector: []float64{0, 0}}, "must not be all zeros")
}
