package api

import (
	"net/http"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// Explain endpoints: POST T/query/explain, T/summarize/explain,
// T/search/explain and DB/search/explain take the body of the request they explain, read and
// check it as that request does (the same 4xx errors), run it, and answer
// its plan as it ran instead of its records:
//
//	{"plan": step, "text": "...", "totalTimeMs": 1.25}
//
// A step is {kind, detail?, via?, estimatedRows, actualRows, timeMs,
// skipped?, children?} (index.ExplainNode names the kinds); text is the
// same tree, one step a line; totalTimeMs is the time of the whole request
// as the handler saw it, reading the body included.

// explainStep is a step of an explain response.
type explainStep struct {
	Kind          string         `json:"kind"`
	Detail        string         `json:"detail,omitempty"`
	Via           string         `json:"via,omitempty"`
	EstimatedRows uint64         `json:"estimatedRows"`
	ActualRows    uint64         `json:"actualRows"`
	TimeMs        float64        `json:"timeMs"`
	Skipped       bool           `json:"skipped,omitempty"`
	Children      []*explainStep `json:"children,omitempty"`
}

// explainJSON converts a tree of steps.
func explainJSON(n *engine.ExplainNode) *explainStep {
	out := &explainStep{Kind: n.Kind, Detail: n.Detail, Via: n.Via, EstimatedRows: n.Estimated,
		ActualRows: n.Actual, TimeMs: milliseconds(n.Time), Skipped: !n.Ran}
	for _, c := range n.Children {
		out.Children = append(out.Children, explainJSON(c))
	}
	return out
}

// milliseconds is d in milliseconds, to the microsecond.
func milliseconds(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// writeExplain answers the plan of a request that started at start.
func writeExplain(r *request, plan *engine.ExplainNode, start time.Time) {
	writeJSON(r.ctx, http.StatusOK, map[string]any{
		"plan": explainJSON(plan), "text": plan.String(), "totalTimeMs": milliseconds(time.Since(start)),
	})
}

// planSummary hands a tree of steps to the slow-request log: its one-line
// summary, without the request's values.
type planSummary struct{ n *engine.ExplainNode }

func (p planSummary) String() string { return p.n.Summary() }

// explainQuery: POST T/query/explain.
func (s *Server) explainQuery(r *request) error {
	start := time.Now()
	ref, table, in, err := readQuery(r)
	if err != nil {
		return err
	}
	in.Explain = true
	res, err := s.eng.Query(r.context(), ref.Ref, table, in, s.queryOptions())
	if err != nil {
		return err
	}
	r.setPlan(res.Plan)
	writeExplain(r, res.Plan.Tree(), start)
	return nil
}

// explainSummarize: POST T/summarize/explain.
func (s *Server) explainSummarize(r *request) error {
	start := time.Now()
	ref, table, in, err := readSummarize(r)
	if err != nil {
		return err
	}
	in.Explain = true
	res, err := s.eng.Summarize(r.context(), ref.Ref, table, in)
	if err != nil {
		return err
	}
	r.setPlan(&res.Plan)
	writeExplain(r, res.Plan.Tree(), start)
	return nil
}

// explainSearch: POST T/search/explain.
func (s *Server) explainSearch(r *request) error {
	start := time.Now()
	ref, table, in, err := readTableSearchRequest(r)
	if err != nil {
		return err
	}
	in.Explain = true
	res, err := s.eng.SearchTable(r.context(), ref.Ref, table, in, engine.SearchOptions{})
	if err != nil {
		return err
	}
	r.setPlan(planSummary{res.Plan})
	writeExplain(r, res.Plan, start)
	return nil
}

// explainBranchSearch: POST DB/search/explain.
func (s *Server) explainBranchSearch(r *request) error {
	start := time.Now()
	ref, in, err := readBranchSearchRequest(r)
	if err != nil {
		return err
	}
	in.Explain = true
	res, err := s.eng.SearchBranch(r.context(), ref.Ref, in, engine.SearchOptions{})
	if err != nil {
		return err
	}
	r.setPlan(planSummary{res.Plan})
	writeExplain(r, res.Plan, start)
	return nil
}
