package engine

import (
	"context"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/index"
	"github.com/coppice-db/coppice/index/vector"
)

// Vector search (compat-api §9) ranks the records of a table that match a
// filter by how close a vector column is to a query vector, keeping the
// best k in a bounded heap (package index/vector): the filter gives a
// candidate bitmap, which is intersected with the rows whose vector is not
// null, and only the k records returned are read from storage.
//
// The vectors of a column live in memory in a vector store, one per
// (branch, table, column): a vector.Store, a flat array indexed by row and
// each row's Euclidean norm. A vector store follows the rules of a
// column store (internal/memstore): it is built on first use, shared with
// the forks that see the same rows, kept current by the branch's writes,
// held by a search without holding back writes, under the memory budget,
// and dropped when its branch is deleted, its column changes or the
// budget evicts it (the next search builds it again).

// Similarity functions and sizes of a vector search (index/vector's).
const (
	SimilarityCosine = vector.Cosine
	SimilarityL1     = vector.L1
	SimilarityL2     = vector.L2

	DefaultVectorSearchSize = vector.DefaultSize
	MaxVectorSearchSize     = vector.MaxSize
	CompatVectorSearchSize  = vector.CompatSize
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
// similarity of 0 to any query. The filter names the meta columns under
// Options.Meta.
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
	_, _, t, err := e.resolveTable(ref, tableName)
	if err != nil {
		return nil, err
	}
	// Check the request before building anything for it.
	col, _, err := newVectorQuery(t, in)
	if err != nil {
		return nil, err
	}
	need := memstore.Need{}
	if useStore {
		need.Vector = col.ID
	}
	src, release, err := e.openSource(ctx, ref, tableName, need)
	if err != nil {
		return nil, err
	}
	defer release()
	// The schema may have changed since: check again against the source's.
	col, q, err := newVectorQuery(src.t, in)
	if err != nil {
		return nil, err
	}
	// A vector store the source holds shows exactly its snapshot.
	vs := src.view.Vector
	if vs != nil && col.ID != need.Vector {
		vs = nil
	}

	cands, err := index.Matching(ctx, src, in.Filter)
	if err != nil {
		return nil, queryError(err)
	}
	if vs != nil {
		cands.And(vs.Present())
	} else {
		exists, err := src.Exists(src.it.Columns[col.Path])
		if err != nil {
			return nil, err
		}
		cands.And(exists)
	}
	res := &VectorSearchResult{TotalCount: int(cands.GetCardinality())}

	top := vector.NewTop(q.K, recordIDs(src))
	if vs != nil {
		err = q.RankStore(ctx, vs.Store, cands, top)
	} else {
		err = rankRecords(ctx, q, col, src, cands, top)
	}
	if err != nil {
		return nil, err
	}
	hits, err := top.Sorted()
	if err != nil {
		return nil, err
	}

	proj := index.AllColumns()
	res.Hits = make([]VectorHit, 0, len(hits))
	var rec codec.Record
	for _, h := range hits {
		ok, err := src.Record(h.Row, &rec)
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
		res.Hits = append(res.Hits, VectorHit{Doc: doc, Score: q.Score(h.Key)})
	}
	return res, nil
}

// newVectorQuery checks a request against a table: the column and the
// query vector's length here, the rest in vector.NewQuery.
func newVectorQuery(t *model.Table, in VectorSearchRequest) (*model.Column, *vector.Query, error) {
	if in.Column == "" {
		return nil, nil, model.Invalidf("column is required")
	}
	c := t.ByPath[in.Column]
	if c == nil {
		return nil, nil, model.Invalidf("column [%s]: column not found", in.Column)
	}
	if c.Type != TypeVector {
		return nil, nil, model.Invalidf("column [%s]: not a vector column (type %s)", in.Column, c.Type)
	}
	if in.Query == nil {
		return nil, nil, model.Invalidf("queryVector is required")
	}
	if len(in.Query) != c.Dimension {
		return nil, nil, model.Invalidf("queryVector has %d dimensions, column [%s] has %d", len(in.Query), in.Column, c.Dimension)
	}
	q, err := vector.NewQuery(vector.Request{Vector: in.Query, Similarity: in.Similarity, Size: in.Size, MaxSize: in.MaxSize})
	if err != nil {
		return nil, nil, queryError(err)
	}
	return c, q, nil
}

// rankRecords offers every candidate to top, reading its record.
func rankRecords(ctx context.Context, q *vector.Query, col *model.Column, src *source, cands *roaring.Bitmap, top *vector.Top) error {
	var rec codec.Record
	it := cands.Iterator()
	for n := 0; it.HasNext(); n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		row := it.Next()
		ok, err := src.Record(row, &rec)
		if err != nil {
			return err
		}
		v, found := rec.Get(col.ID)
		if !ok || !found || v.Kind != codec.KindVector || len(v.Vec) != col.Dimension {
			continue
		}
		top.Offer(q.Key(v.Vec, vector.Norm(v.Vec)), row)
	}
	return nil
}

// recordIDs reads the record ids the heap breaks ties by: from the column
// store when the source has one, else from the record, remembered (only
// ties need them).
func recordIDs(src *source) func(row uint32) (string, error) {
	var ids map[uint32]string
	var rec codec.Record
	return func(row uint32) (string, error) {
		if src.store != nil {
			if col := src.store.Column(index.MetaIDColumn); col != nil {
				if v := col.Get(row); v.Kind == codec.KindString {
					return v.Str, nil
				}
			}
		}
		if id, ok := ids[row]; ok {
			return id, nil
		}
		ok, err := src.Record(row, &rec)
		id := ""
		if ok {
			id = rec.ID
		}
		if ids == nil {
			ids = map[uint32]string{}
		}
		ids[row] = id
		return id, err
	}
}
