package api

import (
	"encoding/json"
	"net/http"
	"runtime"
	"time"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
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
	ref, table, in, err := readSummarize(r)
	if err != nil {
		return err
	}
	in.SpareCores = s.spareCores()
	res, err := s.eng.Summarize(r.context(), ref.Ref, table, in)
	if err != nil {
		return err
	}
	r.setPlan(&res.Plan)
	writeJSON(r.ctx, http.StatusOK, map[string]any{"summaries": summariesJSON(res)})
	return nil
}

// spareCores is how many cores a summary may fold on besides its own: every
// other core while it is the only request in flight, none otherwise. A
// summary that comes alone uses cores that would idle; one that comes
// among others leaves them a core, as the fold workers' pool does
// (index.SummarizeRequest.SpareCores).
func (s *Server) spareCores() int {
	if s.active.Load() > 1 {
		return 0
	}
	return runtime.GOMAXPROCS(0) - 1
}

// readSummarize reads the table and the body of a summarize request (and
// of its explain).
func readSummarize(r *request) (dbRef, string, engine.SummarizeRequest, error) {
	var in engine.SummarizeRequest
	ref, table, err := r.tableRef()
	if err != nil {
		return ref, "", in, err
	}
	var body summarizeBody
	if err := r.decode(&body, true); err != nil {
		return ref, "", in, err
	}
	if in.Filter, err = index.ReadFilter(body.Filter); err != nil {
		return ref, "", in, err
	}
	if in.Columns, err = index.ReadGroupColumns(body.Columns); err != nil {
		return ref, "", in, err
	}
	if in.Summaries, err = index.ReadSummaries(body.Summaries); err != nil {
		return ref, "", in, err
	}
	if in.Sort, err = index.ReadSort(body.Sort); err != nil {
		return ref, "", in, err
	}
	if in.SummariesFilter, err = index.ReadSummariesFilter(body.SummariesFilter); err != nil {
		return ref, "", in, err
	}
	if body.Page != nil {
		in.PageSize = body.Page.Size
	}
	if body.Consistency != nil {
		in.Consistency = *body.Consistency
	}
	return ref, table, in, nil
}

// summariesJSON renders the groups of a summarize result: each an object
// of its group values, nested at their paths ({"owner":{"name":"x"}}), and
// its summaries by name, nulls kept.
func summariesJSON(res *engine.SummarizeResult) []any {
	out := make([]any, len(res.Rows))
	for i, row := range res.Rows {
		m := make(map[string]any, len(row.Groups)+len(row.Summaries))
		for j, v := range row.Groups {
			index.SetPath(m, res.Columns[j], plainJSON(v))
		}
		for j, v := range row.Summaries {
			m[res.Summaries[j]] = plainJSON(v)
		}
		out[i] = m
	}
	return out
}

// aggregateBody is the body of POST T/aggregate (compat-api.md §8).
type aggregateBody struct {
	Filter json.RawMessage `json:"filter"`
	Aggs   json.RawMessage `json:"aggs"`
	// Consistency is read by a cluster (cluster.go).
	Consistency *string `json:"consistency"`
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
	if err := checkConsistency(body.Consistency); err != nil {
		return err
	}
	var in engine.AggregateRequest
	if in.Filter, err = index.ReadFilter(body.Filter); err != nil {
		return err
	}
	if in.Aggs, err = index.ReadAggs(body.Aggs); err != nil {
		return err
	}
	res, err := s.eng.Aggregate(r.context(), ref.Ref, table, in)
	if err != nil {
		return err
	}
	r.setPlan(&res.Plan)
	writeJSON(r.ctx, http.StatusOK, map[string]any{"aggs": aggsJSON(res.Aggs)})
	return nil
}

// aggsJSON renders aggregation results by name (compat-api.md §8): a
// metric as its value, percentiles as {"values": {"50.0": v}}, buckets as
// {"values": [{"$key", "$count", sub-aggregations...}]}.
func aggsJSON(aggs []engine.AggResult) map[string]any {
	out := make(map[string]any, len(aggs))
	for _, a := range aggs {
		switch {
		case a.Kind == "percentiles":
			vals := make(map[string]any, len(a.Percentiles))
			for _, p := range a.Percentiles {
				vals[index.PercentileKey(p.Percent)] = p.Value
			}
			out[a.Name] = map[string]any{"values": vals}
		case a.Buckets != nil:
			buckets := make([]any, len(a.Buckets))
			for i, b := range a.Buckets {
				m := aggsJSON(b.Aggs)
				m["$key"], m["$count"] = b.Key, b.Count
				if t, ok := b.Key.(time.Time); ok {
					// In the requested timezone, not UTC.
					m["$key"] = t.Format(timeLayout)
				}
				buckets[i] = m
			}
			out[a.Name] = map[string]any{"values": buckets}
		default:
			out[a.Name] = plainJSON(a.Value)
		}
	}
	return out
}

// plainJSON renders one value of a summary or an aggregation: datetimes
// as RFC 3339 with milliseconds in UTC; everything else (nil included:
// these results show nulls) as it is.
func plainJSON(v any) any {
	if t, ok := v.(time.Time); ok {
		return formatTime(t)
	}
	return v
}
