package engine

import (
	"strconv"
	"time"

	"github.com/coppice-db/coppice/fts"
)

// searchTree is the plan of an explained search (SearchResult.Plan): the
// steps of each table searched under the search's own.
func searchTree(q *fts.Query, res *SearchResult, start time.Time, tables ...*tableHits) *ExplainNode {
	root := &ExplainNode{Kind: "search", Detail: q.String(), Ran: true,
		Estimated: uint64(q.Size), Actual: uint64(len(res.Records))}
	for _, th := range tables {
		root.Children = append(root.Children, th.plan)
	}
	root.Time = time.Since(start)
	return root
}

// tableSearchTree is the steps of the search of one table, from what the
// search noted in st: hits were kept of the k best, records read of them,
// which took read.
func tableSearchTree(table string, st *fts.Stats, q *fts.Query, hits, records int, read time.Duration) *ExplainNode {
	k := q.Offset + q.Size
	cands := &ExplainNode{Kind: "candidates", Ran: true, Actual: st.Candidates, Time: st.CandidatesAt}
	if st.Filter != nil {
		cands.Estimated = st.Filter.Estimated
		cands.Children = []*ExplainNode{st.Filter}
	}
	scoring := &ExplainNode{Kind: "scoring", Children: []*ExplainNode{cands},
		Detail: plural(st.Terms, "term") + " in " + plural(st.Columns, "column")}
	top := &ExplainNode{Kind: "top-k", Detail: "k = " + strconv.Itoa(k), Children: []*ExplainNode{scoring}}
	ranked := st.CandidatesAt
	if st.ScoredAt > 0 {
		// Without words or candidates the search stops before scoring.
		scoring.Ran, scoring.Time = true, st.ScoredAt
		scoring.Estimated, scoring.Actual = st.Candidates, st.Matched
		scoring.Detail += ", " + strconv.FormatUint(st.Scored, 10) + " scored"
		top.Ran, top.Time = true, st.RankedAt
		top.Estimated, top.Actual = min(uint64(k), st.Matched), uint64(st.Hits)
		ranked = st.RankedAt
	}
	return &ExplainNode{Kind: "highlight", Detail: table, Ran: true, Time: ranked + read,
		Estimated: uint64(hits), Actual: uint64(records), Children: []*ExplainNode{top}}
}

// plural is n things, the noun in the plural but for one.
func plural(n int, noun string) string {
	if n != 1 {
		noun += "s"
	}
	return strconv.Itoa(n) + " " + noun
}
