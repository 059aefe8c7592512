// Package vector ranks records by the distance of a vector column to a
// query vector (compat-api §9): the similarity functions, a flat in-memory
// store of a column's vectors by row, and a bounded heap of the k closest.
// It reads no storage; the engine keeps the stores current and hands them
// in, or offers vectors it read itself.
//
// Candidates are ranked by a key, smaller meaning closer: −dot(q, v)/|v|
// for cosine (|q| is the same for all and enters only the score), the l1
// distance, and the squared l2 distance, so that no square root is taken.
// Scores are (1+cos)/2, 1/(1+d) and 1/(1+d²); a stored zero vector has a
// cosine similarity of 0 to any query. Equal keys rank by record id.
package vector

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/index"
)

// Similarity functions of a vector search, named as on the wire.
const (
	Cosine = "cosineSimilarity"
	L1     = "l1"
	L2     = "l2"
)

// Sizes of a vector search: the default, the largest the spec allows and
// the largest of the legacy service, whose clients ask for up to 1000
// records.
const (
	DefaultSize = 10
	MaxSize     = 100
	CompatSize  = 1000
)

// similarity is a parsed similarity function.
type similarity int

const (
	simCosine similarity = iota
	simL1
	simL2
)

// Request is the part of a vector search the column does not decide.
type Request struct {
	// Vector is the query vector; the caller has checked its length
	// against the column's dimension.
	Vector []float64
	// Similarity is one of Cosine, L1 and L2; nil means Cosine.
	Similarity *string
	// Size is the number of records wanted, 1..MaxSize; nil means
	// DefaultSize.
	Size *int
	// MaxSize is the largest Size allowed; 0 means MaxSize.
	MaxSize int
}

// Query is a checked vector search.
type Query struct {
	vec   []float64
	fn    similarity
	qnorm float64
	// K is how many records are wanted.
	K int
}

// NewQuery checks a request. Errors are *index.InputError.
func NewQuery(r Request) (*Query, error) {
	q := &Query{vec: r.Vector, K: DefaultSize}
	if r.Similarity != nil {
		switch *r.Similarity {
		case Cosine:
		case L1:
			q.fn = simL1
		case L2:
			q.fn = simL2
		default:
			return nil, invalidf("similarityFunction must be %s, %s or %s, got [%s]", Cosine, L1, L2, *r.Similarity)
		}
	}
	if r.Size != nil {
		q.K = *r.Size
		maxSize := r.MaxSize
		if maxSize == 0 {
			maxSize = MaxSize
		}
		if q.K < 1 || q.K > maxSize {
			return nil, invalidf("size must be between 1 and %d, got %d", maxSize, q.K)
		}
	}
	for _, x := range r.Vector {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, invalidf("queryVector must hold finite numbers")
		}
	}
	q.qnorm = Norm(r.Vector)
	if q.fn == simCosine && q.qnorm == 0 {
		return nil, invalidf("queryVector must not be all zeros with %s", Cosine)
	}
	return q, nil
}

// invalidf makes an *index.InputError.
func invalidf(format string, args ...any) error {
	return &index.InputError{Message: fmt.Sprintf(format, args...)}
}

// Key ranks one stored vector v with norm |v| (used by cosine only):
// smaller is closer.
func (q *Query) Key(v []float64, norm float64) float64 {
	switch q.fn {
	case simL1:
		return l1Distance(q.vec, v)
	case simL2:
		return l2Squared(q.vec, v)
	}
	if norm == 0 {
		return 0
	}
	return -dot(q.vec, v) / norm
}

// Score turns a key into the score of the response, in [0, 1], higher
// meaning closer.
func (q *Query) Score(key float64) float64 {
	if q.fn != simCosine {
		return 1 / (1 + key)
	}
	cos := max(-1, min(1, -key/q.qnorm))
	return (1 + cos) / 2
}

// Norm is the Euclidean norm of v.
func Norm(v []float64) float64 { return math.Sqrt(dot(v, v)) }

// dot is the dot product of two vectors of the same length. Four
// accumulators keep the additions from waiting on each other; the loops
// reslice so that the compiler drops the bounds checks.
func dot(a, b []float64) float64 {
	var s0, s1, s2, s3 float64
	for len(a) >= 4 && len(b) >= 4 {
		s0 += a[0] * b[0]
		s1 += a[1] * b[1]
		s2 += a[2] * b[2]
		s3 += a[3] * b[3]
		a, b = a[4:], b[4:]
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// l1Distance is the sum of the absolute differences of two vectors of the
// same length.
func l1Distance(a, b []float64) float64 {
	var s0, s1, s2, s3 float64
	for len(a) >= 4 && len(b) >= 4 {
		s0 += math.Abs(a[0] - b[0])
		s1 += math.Abs(a[1] - b[1])
		s2 += math.Abs(a[2] - b[2])
		s3 += math.Abs(a[3] - b[3])
		a, b = a[4:], b[4:]
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		s0 += math.Abs(a[i] - b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// l2Squared is the squared Euclidean distance of two vectors of the same
// length.
func l2Squared(a, b []float64) float64 {
	var s0, s1, s2, s3 float64
	for len(a) >= 4 && len(b) >= 4 {
		d0, d1, d2, d3 := a[0]-b[0], a[1]-b[1], a[2]-b[2], a[3]-b[3]
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
		a, b = a[4:], b[4:]
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		d := a[i] - b[i]
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}

// Store holds the vectors of one column of a table by row, with their
// norms, so that ranking a candidate is one pass over its components and
// allocates nothing. It is not safe for concurrent use; the engine's locks
// order its writers and readers.
type Store struct {
	dim     int
	vals    []float64 // row r's vector is vals[r*dim : (r+1)*dim]
	norms   []float64 // Euclidean norm by row
	present roaring.Bitmap
}

// NewStore returns an empty store of vectors of dim components, with room
// for rows below capRows.
func NewStore(dim, capRows int) *Store {
	return &Store{dim: dim, vals: make([]float64, 0, capRows*dim), norms: make([]float64, 0, capRows)}
}

// Set stores row's vector; nil or a vector of another length removes it.
func (s *Store) Set(row uint32, v []float64) {
	if v == nil || len(v) != s.dim {
		s.present.Remove(row)
		return
	}
	off := int(row) * s.dim
	s.vals = grow(s.vals, off+s.dim)
	s.norms = grow(s.norms, int(row)+1)
	copy(s.vals[off:off+s.dim], v)
	s.norms[row] = Norm(v)
	s.present.Add(row)
}

// Present returns the rows holding a vector; the caller must not change
// it.
func (s *Store) Present() *roaring.Bitmap { return &s.present }

// grow extends s to length n, keeping its contents.
func grow(s []float64, n int) []float64 {
	if n <= len(s) {
		return s
	}
	if n <= cap(s) {
		return s[:n]
	}
	ns := make([]float64, n, n+n/4+1024)
	copy(ns, s)
	return ns
}

// ctxCheckRows is how many candidates a ranking takes between looks at its
// context.
const ctxCheckRows = 4096

// RankStore offers every candidate of cands to top from the store. It
// stops with ctx's error when ctx ends.
func (q *Query) RankStore(ctx context.Context, s *Store, cands *roaring.Bitmap, top *Top) error {
	dim := s.dim
	var buf [256]uint32
	it := cands.ManyIterator()
	seen := 0
	for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
		if seen += n; seen >= ctxCheckRows {
			if err := ctx.Err(); err != nil {
				return err
			}
			seen = 0
		}
		for _, row := range buf[:n] {
			off := int(row) * dim
			top.Offer(q.Key(s.vals[off:off+dim], s.norms[row]), row)
		}
	}
	return nil
}

// Ranked is a candidate row and its key.
type Ranked struct {
	Key float64
	Row uint32
}

// Top keeps the k closest candidates offered: a max-heap on (key, record
// id), its root the farthest kept. Ids are read only to break ties of
// equal keys.
type Top struct {
	k   int
	h   []Ranked
	id  func(row uint32) (string, error)
	err error // the first failed id read
}

// NewTop returns a heap of the k closest rows; id reads a row's record id.
func NewTop(k int, id func(row uint32) (string, error)) *Top {
	return &Top{k: k, id: id}
}

// Offer keeps a candidate if it is among the k closest so far.
func (t *Top) Offer(key float64, row uint32) {
	if key != key {
		key = math.Inf(1) // NaN components: rank last, keep the heap ordered
	}
	if len(t.h) < t.k {
		t.h = append(t.h, Ranked{key, row})
		t.up(len(t.h) - 1)
		return
	}
	if root := t.h[0]; key > root.Key || key == root.Key && !t.idLess(row, root.Row) {
		return
	}
	t.h[0] = Ranked{key, row}
	t.down(0)
}

// farther reports whether a ranks after b.
func (t *Top) farther(a, b Ranked) bool {
	if a.Key != b.Key {
		return a.Key > b.Key
	}
	return t.idLess(b.Row, a.Row)
}

func (t *Top) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.farther(t.h[i], t.h[p]) {
			return
		}
		t.h[i], t.h[p] = t.h[p], t.h[i]
		i = p
	}
}

func (t *Top) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(t.h) {
			return
		}
		c := l
		if r := l + 1; r < len(t.h) && t.farther(t.h[r], t.h[l]) {
			c = r
		}
		if !t.farther(t.h[c], t.h[i]) {
			return
		}
		t.h[i], t.h[c] = t.h[c], t.h[i]
		i = c
	}
}

// idLess compares the record ids of two rows, keeping the first failed
// read.
func (t *Top) idLess(a, b uint32) bool {
	ia, err := t.id(a)
	if err != nil && t.err == nil {
		t.err = err
	}
	ib, err := t.id(b)
	if err != nil && t.err == nil {
		t.err = err
	}
	return ia < ib
}

// Sorted returns the kept candidates, closest first, or the first id read
// that failed.
func (t *Top) Sorted() ([]Ranked, error) {
	out := slices.Clone(t.h)
	slices.SortFunc(out, func(a, b Ranked) int {
		switch {
		case t.farther(b, a):
			return -1
		case t.farther(a, b):
			return 1
		}
		return 0
	})
	return out, t.err
}
