package engine

import (
	"context"
	"sort"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/fts"
	"github.com/coppice-db/coppice/index"
)

// SearchRequest is a search request (spec §4.1.3, §4.1.4). Nil pointers
// take the defaults; Target, Filter and Boosters are bound to each table
// searched.
type SearchRequest struct {
	// Query is the text searched for; nil finds nothing (an empty body).
	Query *string
	// Fuzziness is the edit distance allowed per word, 0..2 (default 1).
	Fuzziness *float64
	// Prefix is "phrase" or "disabled" (default).
	Prefix *string
	// Target lists the columns searched (fts.ReadTarget); nil searches
	// every text column.
	Target []fts.Target
	Filter Filter
	// Boosters (fts.ReadBoosters) add to the scores.
	Boosters []fts.Booster
	// Highlight and EncodeHTML default to true.
	Highlight  *bool
	EncodeHTML *bool
	// Size (default 25, 1..200) and Offset (default 0, 0..800) page the
	// ranked hits.
	Size, Offset *int
	// Tables selects the tables of a branch search; nil searches them all.
	// A table search ignores it.
	Tables []SearchTable
	// Explain asks for the steps of the search as they ran, with their
	// rows and times, in SearchResult.Plan. Without it no step is timed
	// or counted.
	Explain bool
}

// SearchTable is one table of a branch search, with its own filter, target
// and boosters.
type SearchTable struct {
	Table    string
	Filter   Filter
	Target   []fts.Target
	Boosters []fts.Booster
}

// SearchOptions are the server settings of a search.
type SearchOptions struct {
	// Now is the origin of date boosters without one; zero means the
	// current time.
	Now time.Time
	// Exhaustive scores every matching record (fts.Settings.Exhaustive):
	// the same answer, for tests and benchmarks to compare with.
	Exhaustive bool
}

// SearchResult is a page of ranked records.
type SearchResult struct {
	Records    []*SearchHit
	TotalCount int
	Warning    string
	// Plan holds the steps of the search: with their times and the
	// filter's own steps when it was asked to Explain, with their rows
	// only otherwise (for the slow-request log). They are
	//
	//	search <settings>; size N[, offset M]   the page
	//	  highlight <table>                     the hits read, highlighted
	//	    top-k <k>                           the k best by score
	//	      scoring <words, terms, columns>   the candidates holding the
	//	                                        words, scored
	//	        candidates                      what the filter leaves
	//	          <the filter's steps>
	//
	// once per table searched, each step taking the rows of the one below.
	// The root's actual rows are the records of the page; scoring's are
	// the records that matched, which TotalCount adds up.
	Plan *ExplainNode
}

// SearchHit is one found record: the whole record (links unexpanded), its
// table, score and highlights. Highlight maps column paths, nested by
// object, to snippets; nil when highlighting is off.
type SearchHit struct {
	Doc       *Doc
	Table     string
	Score     float64
	Highlight map[string]any
}

// Search runs in the fts package: scoring, phrase checks, boosters and the
// best k of a table. The engine hands it a searchSource, resolves tables,
// reads the records found and merges the tables' rankings.

// searchQuery checks the settings of a search.
func searchQuery(in *SearchRequest, opts SearchOptions) (*fts.Query, error) {
	q, err := fts.NewQuery(fts.Settings{
		Query: in.Query, Fuzziness: in.Fuzziness, Prefix: in.Prefix,
		Highlight: in.Highlight, EncodeHTML: in.EncodeHTML, Size: in.Size, Offset: in.Offset, Now: opts.Now,
		Exhaustive: opts.Exhaustive,
	})
	return q, queryError(err)
}

// SearchTable runs a full-text search on one table of a branch. It stops
// with ctx's error when ctx ends.
func (e *Engine) SearchTable(ctx context.Context, ref Ref, tableName string, in SearchRequest, opts SearchOptions) (*SearchResult, error) {
	q, err := searchQuery(&in, opts)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	spec := SearchTable{Table: tableName, Filter: in.Filter, Target: in.Target, Boosters: in.Boosters}
	th, err := e.searchOne(ctx, ref, spec, q, in.Explain)
	if err != nil {
		return nil, err
	}
	res := pageHits([]*tableHits{th}, q)
	res.Plan = searchTree(q, res, start, th)
	return res, nil
}

// SearchBranch runs a full-text search over the tables of a branch (all,
// or in.Tables) and merges their rankings. It stops with ctx's error when
// ctx ends.
func (e *Engine) SearchBranch(ctx context.Context, ref Ref, in SearchRequest, opts SearchOptions) (*SearchResult, error) {
	start := time.Now()
	q, err := searchQuery(&in, opts)
	if err != nil {
		return nil, err
	}
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return nil, err
	}
	b, err := d.State().Branch(ref.Branch)
	if err != nil {
		return nil, err
	}
	specs := in.Tables
	if specs == nil {
		for _, t := range b.Schema.Tables {
			specs = append(specs, SearchTable{Table: t.Name})
		}
	}
	seen := map[string]bool{}
	for _, s := range specs {
		if s.Table == "" {
			return nil, model.Invalidf("tables: a table name must not be empty")
		}
		if b.Schema.TableByName(s.Table) == nil {
			return nil, model.Invalidf("tables: table [%s] not found", s.Table)
		}
		if seen[s.Table] {
			return nil, model.Invalidf("tables: table [%s] is listed twice", s.Table)
		}
		seen[s.Table] = true
	}
	var all []*tableHits
	for _, s := range specs {
		th, err := e.searchOne(ctx, ref, s, q, in.Explain)
		if err != nil {
			return nil, err
		}
		all = append(all, th)
	}
	res := pageHits(all, q)
	res.Plan = searchTree(q, res, start, all...)
	return res, nil
}

// tableHits are the best hits of one table, ranked, with the table's
// count of matches.
type tableHits struct {
	hits    []*SearchHit
	total   int
	warning string
	// plan is the table's steps.
	plan *ExplainNode
}

// pageHits merges the tables' rankings (fts.Ranked's order) and cuts the
// page.
func pageHits(all []*tableHits, q *fts.Query) *SearchResult {
	res := &SearchResult{Records: []*SearchHit{}}
	var hits []*SearchHit
	for _, th := range all {
		hits = append(hits, th.hits...)
		res.TotalCount += th.total
		if res.Warning == "" {
			res.Warning = th.warning
		}
	}
	res.TotalCount = min(res.TotalCount, fts.MaxTotalCount)
	sort.SliceStable(hits, func(i, j int) bool { return rankOf(hits[i]).Before(rankOf(hits[j])) })
	if q.Offset < len(hits) {
		res.Records = hits[q.Offset:min(len(hits), q.Offset+q.Size)]
	}
	return res
}

// rankOf is how a hit takes part in the merge of tables.
func rankOf(h *SearchHit) fts.Ranked { return fts.Ranked{Score: h.Score, Table: h.Table, ID: h.Doc.ID} }

// searchOne searches one table and returns its best offset+size hits,
// read and highlighted.
func (e *Engine) searchOne(ctx context.Context, ref Ref, spec SearchTable, q *fts.Query, explain bool) (*tableHits, error) {
	src, release, err := e.openSource(ctx, ref, spec.Table, memstore.Need{Search: true})
	if err != nil {
		return nil, err
	}
	defer release()
	t, ss := src.t, src.view.Search
	lex := ss.Lexicon()
	req := fts.TableRequest{Target: spec.Target, Filter: spec.Filter, Boosters: spec.Boosters,
		Stats: &fts.Stats{Untraced: !explain}}
	ssrc := &searchSource{source: src, store: ss, lex: lex}
	r, err := fts.Search(ctx, ssrc, q, req, q.Offset+q.Size)
	if cerr := ssrc.close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, queryError(err)
	}
	out := &tableHits{total: r.Total, warning: r.Warning}
	read := time.Now()
	proj := index.AllColumns()
	rows := make([]uint32, len(r.Hits))
	for i, h := range r.Hits {
		rows[i] = h.Row
	}
	// The hits are read in one pass forward over their records, and kept
	// in rank order.
	byRank := make([]*SearchHit, len(rows))
	err = src.readRows(rows, func(i int, rec *codec.Record) error {
		doc, err := src.doc(rec, proj)
		if err != nil {
			return err
		}
		byRank[i] = &SearchHit{Doc: doc, Table: t.Name, Score: r.Hits[i].Score, Highlight: r.Highlight(rec)}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, h := range byRank {
		if h != nil {
			out.hits = append(out.hits, h)
		}
	}
	out.plan = tableSearchTree(t.Name, req.Stats, q, len(r.Hits), len(out.hits), time.Since(read))
	return out, nil
}
