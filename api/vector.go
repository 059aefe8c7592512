package api

import (
	"encoding/json"
	"net/http"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// vectorSearchBody is the body of POST T/vectorSearch (compat-api.md §9).
// Unknown keys are invalid; null is the same as absent.
type vectorSearchBody struct {
	QueryVector        []float64       `json:"queryVector"`
	Column             string          `json:"column"`
	SimilarityFunction *string         `json:"similarityFunction"`
	Size               *int            `json:"size"`
	Filter             json.RawMessage `json:"filter"`
}

// vectorSearch: POST T/vectorSearch → {"records": [...], "totalCount": n}.
// Records are whole (links as {id}), their metadata object carrying the
// score; the engine checks the request. size is at most 100, or 1000 in
// compat mode.
func (s *Server) vectorSearch(r *request) error {
	ref, table, err := r.tableRef()
	if err != nil {
		return err
	}
	var body vectorSearchBody
	if err := r.decode(&body, false); err != nil {
		return err
	}
	in := engine.VectorSearchRequest{
		Column: body.Column, Query: body.QueryVector, Similarity: body.SimilarityFunction, Size: body.Size,
	}
	if in.Filter, err = index.ReadFilter(body.Filter); err != nil {
		return err
	}
	if s.opts.Compat == CompatXata {
		// The legacy service accepted sizes up to 1000; its SDKs' own
		// tests ask for that many. The default mode keeps the 100 of
		// compat-api.md §9.
		in.MaxSize = engine.CompatVectorSearchSize
	}
	res, err := s.eng.VectorSearch(r.context(), ref.Ref, table, in)
	if err != nil {
		return err
	}
	recs := make([]any, len(res.Hits))
	for i, h := range res.Hits {
		rec := s.renderDoc(h.Doc)
		rec[s.meta].(map[string]any)["score"] = h.Score
		recs[i] = rec
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"records": recs, "totalCount": res.TotalCount})
	return nil
}
