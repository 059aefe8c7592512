package index

// This file implements summarize (spec §4.1.2, compat-api §12): filter,
// group, summarize each group, filter the groups, sort them, cut a page.
//
// A request is checked completely before any data is read. Execution then
// takes the filter's bitmap and groups it one of two ways:
//
//   - by postings: with one group column that has an ordered index and is
//     reached without links (and is not a multiple, whose postings are per
//     element), each distinct value's posting is intersected with the
//     filter bitmap, and the rows without a value form the null group. This
//     is chosen when the candidates are many (or the column has no value
//     store) and a sample of them shows few distinct values; at most
//     maxPostingGroups values are walked before giving up. Counts are then
//     cardinalities.
//   - by codes: with one such column whose value store codes its few
//     values (CodedValues), each summary is one pass over the candidates
//     that adds every row to the accumulator of its code; the numeric
//     columns every candidate has a value in are folded together, in the
//     pass that counts the groups. Chosen over postings when the
//     candidates are many.
//   - by values: each candidate row's group values are read from the value
//     stores (from the stored record for columns without one, through the
//     linked records for link paths) and hashed into groups.
//
// Sums, averages, minimums and maximums read the summarized column's values
// of the group's rows. A value store that hands out its arrays
// (DenseValues) is scanned as arrays: with many groups of many rows, each
// row is first labelled with its group, so that the column is read in one
// pass. Values are always taken in ascending row order, so every path
// gives the same float sums.
//
// The output mirrors records: a group column reached through links or
// objects comes back nested ({"owner":{"name":"x"}}), a link column itself
// as {"link":{"id":"rec"}}, json as its text, and a null group value or
// summary as an explicit null. Sums of ints are ints; averages are floats,
// of ints the exact sum divided by the count; min and max of a multiple
// column compare its elements. The sum, average, min or max of no values
// is null; a count is 0. Groups are ordered by the sort keys, then by their
// values ascending, nulls last in both directions.
//
// summariesFilter is parsed by the filter parser against a table made up
// for the request, whose columns are the group values at their output
// paths (objects for the nesting, so {"owner":{"name":"x"}} and
// {"owner.id":"rec"} both work) and the summaries by name with their
// result types, and is decided group by group with Eval.

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
)

// SummarizeRequest is a summarize request (spec §4.1.2). Filter, Sort
// and SummariesFilter are read from JSON (ReadFilter, ReadSort,
// ReadSummariesFilter) or built from Go values; Columns and Summaries
// from ReadGroupColumns and ReadSummaries, or written directly.
type SummarizeRequest struct {
	Filter Filter
	// Columns are the group-by columns: a column, an object (its fields),
	// "<object>.*", "<link>.*" or "*". Without any, the candidates form
	// one group.
	Columns   []string
	Summaries []Summary
	// Sort orders the groups by group columns and summary names.
	Sort            Sort
	SummariesFilter Filter
	// PageSize is page.size: the most groups returned, 1..1000 (default 20).
	PageSize *int
	// Consistency is "strong", "eventual" or empty. One node is always
	// consistent, so it is only checked.
	Consistency string
	// Explain asks for the steps of the summary as they ran, with their
	// rows and times, in SummarizeResult.Plan. Without it no step is timed
	// or counted.
	Explain bool
	// SpareCores is how many cores beyond its own, and beyond those the
	// shared fold workers lend it, a large summary may fold on: a caller
	// that knows nothing else runs grants them (0: none).
	SpareCores int
}

// SummarizeResult is the answer of a summarize request: the groups in
// order, each a row of group values and summary values.
type SummarizeResult struct {
	// Columns are the output paths of the group values, in the order of
	// each row's Groups: a column reached through objects or links is a
	// dotted path ("owner.name"), a link column itself "<path>.id".
	Columns []string
	// Summaries are the names of the summaries, in the order of each
	// row's Summaries.
	Summaries []string
	Rows      []SummaryRow
	// Plan is how the groups were found.
	Plan SummarizePlan
}

// SummaryRow is one group: its values and summaries, each nil (null),
// bool, int64, float64, time.Time (UTC), string (json columns as their
// text, links as the target id), []string or []float64. Sums of ints are
// int64; averages are float64.
type SummaryRow struct {
	Groups    []any
	Summaries []any
}

// Limits of summarize (spec §8).
const (
	DefaultSummarizeSize = 20
	MaxSummarizeSize     = 1000
)

// ctxCheckRows is how many rows a loop over rows takes between looks at
// its context.
const ctxCheckRows = 4096

// maxPostingGroups is the most distinct values walked in a column's
// postings before grouping switches to reading values.
const maxPostingGroups = 1024

// postingMinRows is the candidate count from which walking postings beats
// reading the group value of every candidate from a value store.
const postingMinRows = 2048

// summarizeErrorf makes an *InputError about a summarize request.
func summarizeErrorf(format string, args ...any) error { return inputErrorf(format, args...) }

// colPath is a column reached from a table, directly, inside objects or
// through links.
type colPath struct {
	// path is the column's dotted path from the table as requested (or
	// expanded from <object>.* / <link>.*).
	path  string
	links []*Column // the links crossed, outermost first
	col   *Column   // the column, in the last link's table
}

// outPath is where a group value sits in the output: a link column's id
// is nested under it.
func (p colPath) outPath() string {
	if p.col.Type == TypeLink {
		return p.path + ".id"
	}
	return p.path
}

// resolvePath finds a dotted column path of t, through objects and links;
// ok is false when there is no such column. Meta columns are not resolved.
func resolvePath(t *Table, name string) (colPath, bool) {
	tbl, prefix := t, ""
	var links []*Column
	segs := strings.Split(name, ".")
	for i, seg := range segs {
		if seg == "" || tbl == nil {
			return colPath{}, false
		}
		c := tbl.Columns[prefix+seg]
		if c == nil {
			return colPath{}, false
		}
		if i == len(segs)-1 {
			return colPath{path: name, links: links, col: c}, true
		}
		switch c.Type {
		case TypeObject:
			prefix = c.Path + "."
		case TypeLink:
			links = append(slices.Clip(links), c)
			tbl, prefix = c.Link, ""
		default:
			return colPath{}, false
		}
	}
	return colPath{}, false
}

// isInternal reports whether a column name of t names id or its metadata
// key.
func isInternal(t *Table, name string) bool {
	if name == "id" {
		return true
	}
	return t.Meta != "" && (name == t.Meta || strings.HasPrefix(name, t.Meta+"."))
}

// groupable reports whether values of a column type can form groups.
func groupable(t ColumnType) bool {
	switch t {
	case TypeBool, TypeInt, TypeFloat, TypeString, TypeText, TypeEmail, TypeMultiple, TypeLink, TypeDatetime, TypeJSON:
		return true
	}
	return false
}

// summaryFn is a summary function.
type summaryFn uint8

// The summary functions.
const (
	fnCount summaryFn = iota + 1
	fnMin
	fnMax
	fnSum
	fnAverage
)

var summaryFns = map[string]summaryFn{"count": fnCount, "min": fnMin, "max": fnMax, "sum": fnSum, "average": fnAverage}

// summarySpec is one requested summary.
type summarySpec struct {
	name string
	fn   summaryFn
	star bool // count("*")
	col  colPath
	// typ is the type of the result.
	typ ColumnType
}

// sumSortKey is one key of a summarize sort: a group column or a summary.
type sumSortKey struct {
	group bool // a group column, else a summary
	i     int  // its index
	desc  bool
}

// summarizeReq is a checked summarize request, and the context of its
// execution.
type summarizeReq struct {
	ctx       context.Context
	filter    Node
	groups    []colPath
	summaries []*summarySpec
	order     []sumSortKey
	size      int
	// having is the parsed summariesFilter (nil: none); its predicates name
	// the columns of view.
	having Node
	// groupCols and sumCols are the columns of the made-up table for
	// summariesFilter, by group and by summary.
	groupCols []*Column
	sumCols   []*Column
	// grouped is how groupRows grouped: "postings", "codes", "values", or
	// "" for the one group of a request without group columns.
	grouped string
	// spare is SummarizeRequest.SpareCores.
	spare int
}

// Summarize runs a summarize request on src. Invalid requests fail with
// *InputError; it stops with ctx's error when ctx ends.
func Summarize(ctx context.Context, src Source, in SummarizeRequest) (*SummarizeResult, error) {
	t := src.Table()
	q, err := parseSummarize(t, in)
	if err != nil {
		return nil, err
	}
	q.ctx, q.spare = ctx, in.SpareCores
	plan := SummarizePlan{filter: Plan{root: compile(q.filter)}, q: q}
	var tr *summarizeTrace
	var cand *roaring.Bitmap
	if in.Explain {
		tr = &summarizeTrace{start: time.Now()}
		cand, tr.filter, err = plan.filter.Explain(ctx, src)
	} else {
		cand, err = plan.filter.Execute(ctx, src)
	}
	if err != nil {
		return nil, err
	}
	x := newValueReaders(ctx, src)
	groups, err := q.groupRows(x, cand)
	if err != nil {
		return nil, err
	}
	if tr != nil {
		est := cand.GetCardinality()
		if len(q.groups) == 0 {
			est = 1 // one group, even of no rows
		}
		tr.group = tr.ran(est, len(groups))
	}
	if q.having != nil {
		kept := groups[:0]
		for _, g := range groups {
			if Eval(q.having, q.view(g)) {
				kept = append(kept, g)
			}
		}
		if tr != nil {
			tr.having = tr.ran(uint64(len(groups)), len(kept))
		}
		groups = kept
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := len(groups)
	groups = q.first(groups)
	if tr != nil {
		tr.sort = tr.ran(uint64(min(n, q.size)), len(groups))
	}
	plan.explained = tr
	res := &SummarizeResult{Columns: make([]string, len(q.groups)), Summaries: make([]string, len(q.summaries)), Rows: make([]SummaryRow, len(groups)), Plan: plan}
	for i, g := range q.groups {
		res.Columns[i] = g.outPath()
	}
	for i, s := range q.summaries {
		res.Summaries[i] = s.name
	}
	for i, g := range groups {
		res.Rows[i] = q.row(g)
	}
	return res, nil
}
