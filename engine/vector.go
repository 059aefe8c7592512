package engine

import (
	"context"
	"errors"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

// Vector search (compat-api §9) ranks the records of a table that match a
// filter by how close a vector column is to a query vector, keeping the
// best k in a bounded heap: the filter gives a candidate bitmap, which is
// intersected with the rows whose vector is not null, and only the k
// records returned are read from storage.
//
// The vectors of a column live in memory in a vector store, one per
// (branch, table, column): a flat array indexed by row and each row's
// Euclidean norm, so that ranking a candidate is one pass over its
// components and allocates nothing. A vector store follows the rules of a
// column store (colstore.go): it is built on first use from a snapshot
// under the writer lock, kept current by the branch's writes under
// database.storeMu, and dropped when its branch is deleted or its schema
// changes (the next search builds it again).

// Similarity functions of a vector search.
const (
	SimilarityCosine = "cosineSimilarity"
	SimilarityL1     = "l1"
	SimilarityL2     = "l2"
)

// Sizes of a vector search: the default, the largest the spec allows and
// the largest of the legacy service, whose clients ask for up to 1000
// records (VectorSearchInput.MaxSize selects it).
const (
	DefaultVectorSearchSize = 10
	MaxVectorSearchSize     = 100
	CompatVectorSearchSize  = 1000
)

// VectorSearchRequest is a vector search request.
type VectorSearchRequest struct {
	// Column is the path of a vector column.
	Column string
	// Query is the query vector; its length must be the column's
	// dimension. Nil means absent.
	Query []float64
	// Similarity is one of the Similarity constants; nil means cosine.
	Similarity *string
	// Size is the number of records wanted, 1..MaxSize; nil means
	// DefaultVectorSearchSize.
	Size *int
	// MaxSize is the largest Size allowed; 0 means MaxVectorSearchSize.
	MaxSize int
	// Filter is applied before ranking; the zero Filter matches every
	// record.
	Filter Filter
}

// VectorHit is one record found by a vector search, with its score in
// [0, 1], higher meaning closer.
type VectorHit struct {
	Doc   *Doc
	Score float64
}

// VectorSearchResult is the answer of a vector search.
type VectorSearchResult struct {
	// Hits are the closest records, closest first; equally close records
	// are in record id order.
	Hits []VectorHit
	// TotalCount is the number of records matching the filter whose vector
	// is not null, however many were asked for.
	TotalCount int
}

// VectorSearch ranks the records of a table of a branch that match
// in.Filter by the similarity of their vector column in.Column to
// in.Query, and returns the closest in.Size of them as whole records (links
// unexpanded). Records whose vector is null are never returned. The
// ordering is by similarity for cosineSimilarity (highest first) and by
// distance for l1 and l2 (smallest first), ties by record id; scores are
// (1+cos)/2, 1/(1+d) and 1/(1+d²). A stored zero vector has a cosine
// similarity of 0 to any query. meta is the record metadata key filters use
// ("svc" when empty).
//
// Bad input (an unknown or non-vector column, a query vector of the wrong
// length or, for cosine, all zeros, an unknown function, a size out of
// range, an invalid filter) is CodeInvalid; an unknown database, branch or
// table is CodeNotFound.
func (e *Engine) VectorSearch(ctx context.Context, ref Ref, tableName string, in VectorSearchRequest) (*VectorSearchResult, error) {
	return e.vectorSearch(ctx, ref, tableName, in, true)
}

// vectorSearch is VectorSearch; without useStore it reads every
// candidate's record instead of the vector store, as it also does when the
// store changed under it (tests compare the two).
func (e *Engine) vectorSearch(ctx context.Context, ref Ref, tableName string, in VectorSearchRequest, useStore bool) (*VectorSearchResult, error) {
	d, b, t, err := e.resolveTable(ref, tableName)
	if err != nil {
		return nil, err
	}
	// Check the request before building anything for it.
	if _, err := newVectorQuery(t, in); err != nil {
		return nil, err
	}
	if useStore {
		if err := e.ensureVectorStore(d, b, t, in.Column); err != nil {
			return nil, err
		}
	}
	src, release, err := e.openSource(ref, tableName, storeOptional)
	if err != nil {
		return nil, err
	}
	defer release()
	// The schema may have changed since: check again against the source's.
	q, err := newVectorQuery(src.t, in)
	if err != nil {
		return nil, err
	}
	var vs *vectorStore
	if useStore {
		// The source holds storeMu for reading: a store of the source's
		// schema shows exactly the source's snapshot.
		if cur := d.vectors[vectorKey{src.b.ID, src.t.ID, q.col.ID}]; cur != nil && cur.version == src.b.Version {
			vs = cur
		}
	}

	cands, err := index.Matching(src, in.Filter, e.opts.Meta)
	if err != nil {
		return nil, queryError(err)
	}
	if vs != nil {
		cands.And(&vs.present)
	} else {
		exists, err := src.Exists(src.it.Columns[q.col.path])
		if err != nil {
			return nil, err
		}
		cands.And(exists)
	}
	res := &VectorSearchResult{TotalCount: int(cands.GetCardinality())}

	top := topVectors{k: q.size, src: src}
	if vs != nil {
		rankStored(q, vs, cands, &top)
	} else if err := rankRecords(q, src, cands, &top); err != nil {
		return nil, err
	}
	hits, err := top.sorted()
	if err != nil {
		return nil, err
	}

	proj := index.AllColumns()
	res.Hits = make([]VectorHit, 0, len(hits))
	var rec codec.Record
	for _, h := range hits {
		ok, err := src.Record(h.row, &rec)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // cannot happen: the row is live in the snapshot
		}
		doc, err := src.doc(&rec, proj)
		if err != nil {
			return nil, err
		}
		res.Hits = append(res.Hits, VectorHit{Doc: doc, Score: q.score(h.key)})
	}
	return res, nil
}

// similarity is a parsed similarity function.
type similarity int

const (
	simCosine similarity = iota
	simL1
	simL2
)

// vectorQuery is a checked vector search request. Candidates are ranked by
// a key, smaller meaning closer: −dot(q, v)/|v| for cosine (|q| is the same
// for all and enters only the score), the l1 distance, and the squared l2
// distance, so that no square root is taken.
type vectorQuery struct {
	col   *column
	vec   []float64
	fn    similarity
	size  int
	qnorm float64
}

// newVectorQuery checks a request against a table.
func newVectorQuery(t *table, in VectorSearchRequest) (*vectorQuery, error) {
	if in.Column == "" {
		return nil, invalidf("column is required")
	}
	c := t.byPath[in.Column]
	if c == nil {
		return nil, invalidf("column [%s]: column not found", in.Column)
	}
	if c.Type != TypeVector {
		return nil, invalidf("column [%s]: not a vector column (type %s)", in.Column, c.Type)
	}
	if in.Query == nil {
		return nil, invalidf("queryVector is required")
	}
	if len(in.Query) != c.Dimension {
		return nil, invalidf("queryVector has %d dimensions, column [%s] has %d", len(in.Query), in.Column, c.Dimension)
	}
	q := &vectorQuery{col: c, vec: in.Query, size: DefaultVectorSearchSize}
	if in.Similarity != nil {
		switch *in.Similarity {
		case SimilarityCosine:
		case SimilarityL1:
			q.fn = simL1
		case SimilarityL2:
			q.fn = simL2
		default:
			return nil, invalidf("similarityFunction must be %s, %s or %s, got [%s]", SimilarityCosine, SimilarityL1, SimilarityL2, *in.Similarity)
		}
	}
	if in.Size != nil {
		q.size = *in.Size
		maxSize := in.MaxSize
		if maxSize == 0 {
			maxSize = MaxVectorSearchSize
		}
		if q.size < 1 || q.size > maxSize {
			return nil, invalidf("size must be between 1 and %d, got %d", maxSize, q.size)
		}
	}
	for _, x := range in.Query {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, invalidf("queryVector must hold finite numbers")
		}
	}
	q.qnorm = math.Sqrt(dot(in.Query, in.Query))
	if q.fn == simCosine && q.qnorm == 0 {
		return nil, invalidf("queryVector must not be all zeros with %s", SimilarityCosine)
	}
	return q, nil
}

// key ranks one stored vector v with norm |v| (used by cosine only).
func (q *vectorQuery) key(v []float64, norm float64) float64 {
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

// score turns a key into the score of the response.
func (q *vectorQuery) score(key float64) float64 {
	if q.fn != simCosine {
		return 1 / (1 + key)
	}
	cos := max(-1, min(1, -key/q.qnorm))
	return (1 + cos) / 2
}

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

// rankStored offers every candidate to top from the vector store.
func rankStored(q *vectorQuery, vs *vectorStore, cands *roaring.Bitmap, top *topVectors) {
	dim := vs.dim
	var buf [256]uint32
	it := cands.ManyIterator()
	for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
		for _, row := range buf[:n] {
			off := int(row) * dim
			top.offer(q.key(vs.vals[off:off+dim], vs.norms[row]), row)
		}
	}
}

// rankRecords offers every candidate to top, reading its record.
func rankRecords(q *vectorQuery, src *source, cands *roaring.Bitmap, top *topVectors) error {
	var rec codec.Record
	it := cands.Iterator()
	for it.HasNext() {
		row := it.Next()
		ok, err := src.Record(row, &rec)
		if err != nil {
			return err
		}
		v, found := rec.Get(q.col.ID)
		if !ok || !found || v.Kind != codec.KindVector || len(v.Vec) != len(q.vec) {
			continue
		}
		top.offer(q.key(v.Vec, math.Sqrt(dot(v.Vec, v.Vec))), row)
	}
	return nil
}

// ranked is a candidate row and its key.
type ranked struct {
	key float64
	row uint32
}

// topVectors keeps the k closest candidates offered: a max-heap on (key,
// record id), its root the farthest kept. Ids are read only to break ties
// of equal keys.
type topVectors struct {
	k   int
	h   []ranked
	src *source
	ids map[uint32]string // ids read from records
	rec codec.Record      // scratch for reading ids
	err error             // the first failed id read
}

// offer keeps a candidate if it is among the k closest so far.
func (t *topVectors) offer(key float64, row uint32) {
	if key != key {
		key = math.Inf(1) // NaN components: rank last, keep the heap ordered
	}
	if len(t.h) < t.k {
		t.h = append(t.h, ranked{key, row})
		t.up(len(t.h) - 1)
		return
	}
	if root := t.h[0]; key > root.key || key == root.key && !t.idLess(row, root.row) {
		return
	}
	t.h[0] = ranked{key, row}
	t.down(0)
}

// farther reports whether a ranks after b.
func (t *topVectors) farther(a, b ranked) bool {
	if a.key != b.key {
		return a.key > b.key
	}
	return t.idLess(b.row, a.row)
}

func (t *topVectors) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.farther(t.h[i], t.h[p]) {
			return
		}
		t.h[i], t.h[p] = t.h[p], t.h[i]
		i = p
	}
}

func (t *topVectors) down(i int) {
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

// idLess compares the record ids of two rows.
func (t *topVectors) idLess(a, b uint32) bool {
	return t.id(a) < t.id(b)
}

// id returns the record id of a row, from the column store when the source
// has one, else from the record (remembered: only ties need it). A failed
// read is kept in t.err.
func (t *topVectors) id(row uint32) string {
	if t.src.store != nil {
		if ids := t.src.store.cols[index.MetaIDColumn]; ids != nil {
			if v := ids.Get(row); v.Kind == codec.KindString {
				return v.Str
			}
		}
	}
	if id, ok := t.ids[row]; ok {
		return id
	}
	ok, err := t.src.Record(row, &t.rec)
	if err != nil && t.err == nil {
		t.err = err
	}
	id := ""
	if ok {
		id = t.rec.ID
	}
	if t.ids == nil {
		t.ids = map[uint32]string{}
	}
	t.ids[row] = id
	return id
}

// sorted returns the kept candidates, closest first.
func (t *topVectors) sorted() ([]ranked, error) {
	out := slices.Clone(t.h)
	slices.SortFunc(out, func(a, b ranked) int {
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

// vectorKey names the vector store of one vector column of one table of
// one branch.
type vectorKey struct {
	branch, table, column uint32
}

// vectorStore holds the non-null vectors of one column of one table of one
// branch, by row.
type vectorStore struct {
	version uint64 // branch schema version it was built for
	col     uint32
	dim     int
	vals    []float64 // row r's vector is vals[r*dim : (r+1)*dim]
	norms   []float64 // Euclidean norm by row
	present roaring.Bitmap
}

// apply records a row's new version (nil: deleted).
func (vs *vectorStore) apply(row uint32, rec *codec.Record) {
	var v codec.Value
	found := false
	if rec != nil && !rec.Deleted {
		v, found = rec.Get(vs.col)
	}
	if !found || v.Kind != codec.KindVector || len(v.Vec) != vs.dim {
		vs.present.Remove(row)
		return
	}
	off := int(row) * vs.dim
	vs.vals = grow(vs.vals, off+vs.dim)
	vs.norms = grow(vs.norms, int(row)+1)
	copy(vs.vals[off:off+vs.dim], v.Vec)
	vs.norms[row] = math.Sqrt(dot(v.Vec, v.Vec))
	vs.present.Add(row)
}

// ensureVectorStore builds the vector store of a column of a table of a
// branch unless a current one exists. A path that names no vector column
// (any more) builds nothing: the caller checks its request again.
func (e *Engine) ensureVectorStore(d *database, b *branch, t *table, path string) error {
	c := t.byPath[path]
	if c == nil || c.Type != TypeVector {
		return nil
	}
	_, err := ensureBuilt(e, d, b, t, &d.vectors, vectorKey{b.ID, t.ID, c.ID}, func(r pebble.Reader, b *branch, t *table) (*vectorStore, error) {
		c := t.byID[c.ID]
		if c == nil || c.Type != TypeVector {
			return nil, errNoVectorColumn
		}
		return buildVectorStore(r, d, b, t, c)
	})
	if errors.Is(err, errNoVectorColumn) {
		return nil
	}
	return err
}

// errNoVectorColumn stops building a vector store whose column a schema
// change removed meanwhile.
var errNoVectorColumn = errors.New("engine: not a vector column")

func (s *vectorStore) schemaVersion() uint64 { return s.version }

// buildVectorStore reads the vector of every row of a branch's table
// whose column is not null.
func buildVectorStore(r pebble.Reader, d *database, b *branch, t *table, c *column) (*vectorStore, error) {
	vs := &vectorStore{version: b.Version, col: c.ID, dim: c.Dimension}
	rows, err := readBitmap(r, d.id, b.Lineage, t.ID, codec.ExistsBitmapID(c.ID), nil)
	if err != nil {
		return nil, err
	}
	if rows.IsEmpty() {
		return vs, nil
	}
	n := int(rows.Maximum()) + 1
	vs.vals = make([]float64, n*vs.dim)
	vs.norms = make([]float64, n)
	lin := d.filled.prune(r, d.id, b.Lineage, t.ID, codec.KindRecordCur)
	var rec codec.Record
	it := rows.Iterator()
	for it.HasNext() {
		row := it.Next()
		_, ok, err := readRow(r, d.id, lin, t.ID, row, &rec)
		if err != nil {
			return nil, err
		}
		if ok {
			vs.apply(row, &rec)
		}
	}
	return vs, nil
}

// updateVectorStores does for the vector stores what updateStores does for
// the column stores: drops those of removed branches and changed schemas,
// and applies a command's row changes to the others. The caller holds
// storeMu.
func (d *database) updateVectorStores(tx *dbTx) {
	if len(d.vectors) == 0 {
		return
	}
	st := d.state.Load()
	for k, vs := range d.vectors {
		if b := st.byID[k.branch]; b == nil || b.Version != vs.version {
			delete(d.vectors, k)
		}
	}
	for _, c := range tx.changes {
		for k, vs := range d.vectors {
			if k.branch == c.branch && k.table == c.table {
				vs.apply(c.row, c.rec)
			}
		}
	}
}
