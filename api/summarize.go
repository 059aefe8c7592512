package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// summarizeBody is the body of POST T/summarize (spec §4.1.2).
type summarizeBody struct {
	Columns         json.RawMessage `json:"columns"`
	Filter          json.RawMessage `json:"filter"`
	Summaries       json.RawMessage `json:"summaries"`
	Sort            json.RawMessage `json:"sort"`
	SummariesFilter json.RawMessage `json:"summariesFilter"`
	Page            *struct {
		Size *int `json:"size"`
	} `json:"page"`
	Consistency *string `json:"consistency"`
}

// summarizeTable: POST T/summarize → {"summaries": [...]}. An empty body is
// {}.
func (s *Server) summarizeTable(r *request) error {
	ref, table, err := r.tableRef()
	if err != nil {
		return err
	}
	var body summarizeBody
	if err := r.decode(&body, true); err != nil {
		return err
	}
	in := engine.SummarizeInput{
		Filter: rawOrNil(body.Filter), Columns: rawOrNil(body.Columns), Summaries: rawOrNil(body.Summaries),
		Sort: rawOrNil(body.Sort), SummariesFilter: rawOrNil(body.SummariesFilter),
	}
	if body.Page != nil {
		in.PageSize = body.Page.Size
	}
	if body.Consistency != nil {
		in.Consistency = *body.Consistency
	}
	rows, err := s.eng.Summarize(r.context(), ref.Ref, table, in, s.meta)
	if err != nil {
		return err
	}
	out := make([]any, len(rows))
	for i, row := range rows {
		out[i] = renderPlain(row)
	}
	writeJSON(r.ctx, http.StatusOK, map[string]any{"summaries": out})
	return nil
}

// aggregateBody is the body of POST T/aggregate (compat-api.md §8).
type aggregateBody struct {
	Filter json.RawMessage `json:"filter"`
	Aggs   json.RawMessage `json:"aggs"`
}

// aggregateTable: POST T/aggregate → {"aggs": {...}}; an empty body counts
// the records.
func (s *Server) aggregateTable(r *request) error {
	ref, table, err := r.tableRef()
	if err != nil {
		return err
	}
	var body aggregateBody
	if err := r.decode(&body, true); err != nil {
		return err
	}
	res, err := s.eng.Aggregate(r.context(), ref.Ref, table, rawOrNil(body.Filter), rawOrNil(body.Aggs), s.meta)
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, renderPlain(res))
	return nil
}

// renderPlain renders summary and aggregation results: datetimes as RFC
// 3339 with milliseconds, links as {"id"}, json as text, and nulls kept
// (these results show them explicitly).
func renderPlain(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = renderPlain(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = renderPlain(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = renderPlain(e)
		}
		return out
	case time.Time:
		return formatTime(x)
	case engine.Link:
		return map[string]any{"id": x.ID}
	case engine.JSONText:
		return string(x)
	}
	return v
}
