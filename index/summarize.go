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
	"container/heap"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
)

// SummarizeInput is a summarize request as the client sent it (spec
// §4.1.2). The JSON fields are kept raw; empty or null means absent.
type SummarizeInput struct {
	Filter json.RawMessage
	// Columns are the group-by columns: absent groups the whole table into
	// one group when there are summaries; [] always does.
	Columns json.RawMessage
	// Summaries maps a summary name to {function: column}.
	Summaries       json.RawMessage
	Sort            json.RawMessage
	SummariesFilter json.RawMessage
	// PageSize is page.size: the most groups returned, 1..1000 (default 20).
	PageSize *int
	// Consistency is "strong", "eventual" or empty. One node is always
	// consistent, so it is only checked.
	Consistency string
}

// Limits of summarize (spec §8).
const (
	DefaultSummarizeSize = 20
	MaxSummarizeSize     = 1000
)

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

// isInternal reports whether a column name names id or the metadata key.
func isInternal(name, meta string) bool {
	if name == "id" {
		return true
	}
	return meta != "" && (name == meta || strings.HasPrefix(name, meta+"."))
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

// summarizeReq is a checked summarize request.
type summarizeReq struct {
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
}

// Summarize runs a summarize request on src: the output rows, in order.
// meta is the record metadata key ("svc" or "xata"). Invalid requests fail
// with *InputError.
func Summarize(src Source, in SummarizeInput, meta string) ([]map[string]any, error) {
	t := src.Table()
	q, err := parseSummarize(t, in, meta)
	if err != nil {
		return nil, err
	}
	cand, err := Compile(q.filter).Execute(src)
	if err != nil {
		return nil, err
	}
	x := newValueReaders(src)
	groups, err := q.groupRows(x, cand)
	if err != nil {
		return nil, err
	}
	if q.having != nil {
		kept := groups[:0]
		for _, g := range groups {
			if Eval(q.having, q.view(g)) {
				kept = append(kept, g)
			}
		}
		groups = kept
	}
	groups = q.first(groups)
	out := make([]map[string]any, len(groups))
	for i, g := range groups {
		out[i] = q.render(g)
	}
	return out, nil
}

// parseSummarize checks a request against table t.
func parseSummarize(t *Table, in SummarizeInput, meta string) (*summarizeReq, error) {
	q := &summarizeReq{size: DefaultSummarizeSize}
	switch in.Consistency {
	case "", "strong", "eventual":
	default:
		return nil, summarizeErrorf("consistency must be strong or eventual, got [%s]", in.Consistency)
	}
	if in.PageSize != nil {
		q.size = *in.PageSize
		if q.size < 1 {
			return nil, summarizeErrorf("page size must be at least 1")
		}
		if q.size > MaxSummarizeSize {
			return nil, summarizeErrorf("page size exceeds max limit of %d", MaxSummarizeSize)
		}
	}
	q.filter = &And{}
	if !IsNullJSON(in.Filter) {
		n, err := ParseFilter(t, in.Filter, meta)
		if err != nil {
			return nil, err
		}
		q.filter = n
	}
	if !IsNullJSON(in.Columns) {
		var names []any
		if err := json.Unmarshal(in.Columns, &names); err != nil {
			return nil, summarizeErrorf("columns must be an array of column names")
		}
		seen := map[string]bool{}
		for _, n := range names {
			name, ok := n.(string)
			if !ok {
				return nil, summarizeErrorf("columns must be an array of column names")
			}
			cols, err := groupColumns(t, name, meta)
			if err != nil {
				return nil, err
			}
			for _, c := range cols {
				if !seen[c.outPath()] {
					seen[c.outPath()] = true
					q.groups = append(q.groups, c)
				}
			}
		}
	}
	if err := q.parseSummaries(t, in.Summaries, meta); err != nil {
		return nil, err
	}
	if err := q.checkCollisions(); err != nil {
		return nil, err
	}
	if err := q.parseSort(in.Sort); err != nil {
		return nil, err
	}
	if err := q.parseHaving(in.SummariesFilter); err != nil {
		return nil, err
	}
	return q, nil
}

// groupColumns resolves one entry of columns: a column, an object (all
// its fields), "<object>.*", "<link>.*" (all columns of the linked table)
// or "*" (all columns).
func groupColumns(t *Table, name, meta string) ([]colPath, error) {
	switch {
	case name == "":
		return nil, summarizeErrorf("columns: empty column name")
	case name == "*":
		return expandColumns(t, "", nil, ""), nil
	case isInternal(name, meta) || isInternal(strings.TrimSuffix(name, ".*"), meta):
		return nil, summarizeErrorf("columns: column [%s]: internal columns cannot be grouped", name)
	}
	if base, ok := strings.CutSuffix(name, ".*"); ok {
		p, found := resolvePath(t, base)
		if !found {
			return nil, summarizeErrorf("columns: column [%s]: column not found", name)
		}
		switch p.col.Type {
		case TypeObject:
			return expandColumns(holder(t, p), p.col.Path+".", p.links, strings.TrimSuffix(p.path, p.col.Path)), nil
		case TypeLink:
			return expandColumns(p.col.Link, "", append(slices.Clip(p.links), p.col), p.path+"."), nil
		}
		return nil, summarizeErrorf("columns: column [%s]: %s is neither an object nor a link", name, base)
	}
	p, found := resolvePath(t, name)
	if !found {
		return nil, summarizeErrorf("columns: column [%s]: column not found", name)
	}
	if p.col.Type == TypeObject {
		return expandColumns(holder(t, p), p.col.Path+".", p.links, strings.TrimSuffix(p.path, p.col.Path)), nil
	}
	if !groupable(p.col.Type) {
		return nil, summarizeErrorf("columns: column [%s]: %s columns cannot be grouped", name, p.col.Type)
	}
	return []colPath{p}, nil
}

// holder is the table holding a resolved column: the last link's target,
// or t.
func holder(t *Table, p colPath) *Table {
	if len(p.links) > 0 {
		return p.links[len(p.links)-1].Link
	}
	return t
}

// expandColumns lists the groupable columns of tbl under prefix ("" for
// all), reached through links, with their paths written after outPrefix;
// in path order.
func expandColumns(tbl *Table, prefix string, links []*Column, outPrefix string) []colPath {
	var out []colPath
	if tbl == nil {
		return nil
	}
	for path, c := range tbl.Columns {
		if strings.HasPrefix(path, prefix) && groupable(c.Type) {
			out = append(out, colPath{path: outPrefix + path, links: links, col: c})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// parseSummaries reads the summaries object.
func (q *summarizeReq) parseSummaries(t *Table, raw json.RawMessage, meta string) error {
	if IsNullJSON(raw) {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return summarizeErrorf("summaries must be an object of summary names to {function: column}")
	}
	for _, name := range sortedKeys(m) {
		switch {
		case name == "":
			return summarizeErrorf("summaries: empty summary name")
		case strings.HasPrefix(name, "$") || strings.Contains(name, ".") || strings.Contains(name, "->"):
			return summarizeErrorf("summary [%s]: a summary name cannot start with $ or contain . or ->", name)
		}
		expr, ok := m[name].(map[string]any)
		if !ok || len(expr) != 1 {
			return summarizeErrorf("summary [%s]: a summary is an object with one function and its column, like {\"count\": \"*\"}", name)
		}
		var fnName string
		var arg any
		for fnName, arg = range expr {
		}
		fn, ok := summaryFns[fnName]
		if !ok {
			return summarizeErrorf("summary [%s]: unknown summary function [%s]; use count, min, max, sum or average", name, fnName)
		}
		colName, ok := arg.(string)
		if !ok {
			return summarizeErrorf("summary [%s]: %s takes a column name", name, fnName)
		}
		s := &summarySpec{name: name, fn: fn}
		if colName == "*" {
			if fn != fnCount {
				return summarizeErrorf("summary [%s]: only count takes [*]", name)
			}
			s.star, s.typ = true, TypeInt
			q.summaries = append(q.summaries, s)
			continue
		}
		if isInternal(colName, meta) {
			return summarizeErrorf("summary [%s]: column [%s]: internal columns cannot be summarized", name, colName)
		}
		p, found := resolvePath(t, colName)
		if !found {
			return summarizeErrorf("summary [%s]: column [%s]: column not found", name, colName)
		}
		if p.col.Type == TypeObject {
			return summarizeErrorf("summary [%s]: column [%s]: object columns cannot be summarized, only their fields", name, colName)
		}
		s.col = p
		ct := p.col.Type
		switch fn {
		case fnCount:
			s.typ = TypeInt
		case fnMin, fnMax:
			switch ct {
			case TypeString, TypeText, TypeEmail, TypeInt, TypeFloat, TypeDatetime:
				s.typ = ct
			case TypeMultiple:
				s.typ = TypeString
			default:
				return summarizeErrorf("summary [%s]: column [%s]: %s is not supported on %s columns", name, colName, fnName, ct)
			}
		case fnSum, fnAverage:
			if ct != TypeInt && ct != TypeFloat {
				return summarizeErrorf("summary [%s]: column [%s]: %s is not supported on %s columns", name, colName, fnName, ct)
			}
			s.typ = ct
			if fn == fnAverage {
				s.typ = TypeFloat
			}
		}
		q.summaries = append(q.summaries, s)
	}
	return nil
}

// checkCollisions rejects a summary named like a requested column: its
// output key would be the key of the column (or of its object or link).
func (q *summarizeReq) checkCollisions() error {
	for _, s := range q.summaries {
		for _, g := range q.groups {
			top, _, _ := strings.Cut(g.path, ".")
			if s.name == top {
				return summarizeErrorf("summary [%s]: the name collides with the requested column [%s]", s.name, g.path)
			}
		}
	}
	return nil
}

// parseSort reads the sort expression: group columns (as requested or at
// their output path) and summary names, asc or desc.
func (q *summarizeReq) parseSort(raw json.RawMessage) error {
	if IsNullJSON(raw) {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return summarizeErrorf("sort: %v", err)
	}
	add := func(name string, dir any) error {
		d, ok := dir.(string)
		if !ok {
			return summarizeErrorf("sort: sort order of [%s] must be a string", name)
		}
		k := sumSortKey{i: -1}
		for i, s := range q.summaries {
			if s.name == name {
				k.i = i
			}
		}
		if k.i < 0 {
			for i, g := range q.groups {
				if g.path == name || g.outPath() == name {
					k.group, k.i = true, i
					break
				}
			}
		}
		if k.i < 0 {
			if name == "*" {
				return summarizeErrorf("sort: random order is not supported by summarize")
			}
			return summarizeErrorf("sort: column [%s] is neither a group column nor a summary", name)
		}
		switch d {
		case "asc":
		case "desc":
			k.desc = true
		case "random":
			return summarizeErrorf("sort: random order is not supported by summarize")
		default:
			return summarizeErrorf("sort: sort order [%s] of column [%s] must be asc or desc", d, name)
		}
		q.order = append(q.order, k)
		return nil
	}
	addObject := func(m map[string]any) error {
		if len(m) == 0 {
			return summarizeErrorf("sort: empty sort object")
		}
		for _, k := range sortedKeys(m) {
			if err := add(k, m[k]); err != nil {
				return err
			}
		}
		return nil
	}
	switch s := v.(type) {
	case string:
		return add(s, "asc")
	case map[string]any:
		return addObject(s)
	case []any:
		for _, e := range s {
			switch e := e.(type) {
			case string:
				if err := add(e, "asc"); err != nil {
					return err
				}
			case map[string]any:
				if err := addObject(e); err != nil {
					return err
				}
			default:
				return summarizeErrorf("sort: a sort entry must be a column name or an object")
			}
		}
		return nil
	}
	return summarizeErrorf("sort must be an array or an object")
}

// parseHaving parses summariesFilter against the table of group values
// and summaries.
func (q *summarizeReq) parseHaving(raw json.RawMessage) error {
	vt := &Table{Name: "summaries", Columns: map[string]*Column{}}
	for _, g := range q.groups {
		out := g.outPath()
		segs := strings.Split(out, ".")
		for i := 1; i < len(segs); i++ {
			p := strings.Join(segs[:i], ".")
			if vt.Columns[p] == nil {
				vt.Columns[p] = &Column{Path: p, Type: TypeObject}
			}
		}
		typ := g.col.Type
		if typ == TypeLink {
			typ = TypeString
		}
		c := &Column{Path: out, Type: typ}
		vt.Columns[out] = c
		q.groupCols = append(q.groupCols, c)
	}
	for _, s := range q.summaries {
		c := &Column{Path: s.name, Type: s.typ}
		vt.Columns[s.name] = c
		q.sumCols = append(q.sumCols, c)
	}
	if IsNullJSON(raw) {
		return nil
	}
	n, err := ParseFilter(vt, raw, "")
	if err != nil {
		var fe *InputError
		if errors.As(err, &fe) {
			return summarizeErrorf("summariesFilter: %s", strings.TrimPrefix(fe.Message, "filter: "))
		}
		return err
	}
	if usesColumn(n, IDColumn) {
		return summarizeErrorf("summariesFilter: column [id]: column not found")
	}
	q.having = n
	return nil
}

// usesColumn reports whether a predicate of n is on column c.
func usesColumn(n Node, c *Column) bool {
	switch n := n.(type) {
	case *And:
		return slices.ContainsFunc(n.Children, func(m Node) bool { return usesColumn(m, c) })
	case *Or:
		return slices.ContainsFunc(n.Children, func(m Node) bool { return usesColumn(m, c) })
	case *Not:
		return usesColumn(n.Child, c)
	case *Pred:
		return n.Column == c
	case *Elements:
		return n.Column == c
	}
	return false
}

// sumGroup is one group: its values, its rows when grouped by bitmaps,
// its accumulators and then its results.
type sumGroup struct {
	vals []codec.Value
	rows *roaring.Bitmap
	accs []summaryAcc
	res  []codec.Value
}

// summaryAcc accumulates one summary of one group.
type summaryAcc struct {
	n    int64 // rows or values seen
	sumI int64 // the sum of int values
	sumF float64
	best codec.Value // the minimum or maximum so far
}

// add takes one non-null value into the accumulator of a summary function.
func (a *summaryAcc) add(fn summaryFn, v codec.Value) {
	switch fn {
	case fnCount:
		a.n++
	case fnSum, fnAverage:
		a.n++
		if v.Kind == codec.KindInt {
			a.sumI += v.Int
		} else {
			a.sumF += v.Float
		}
	case fnMin, fnMax:
		if v.Kind == codec.KindStrings {
			for _, e := range v.Strs {
				a.extreme(fn, codec.String(e))
			}
			return
		}
		a.extreme(fn, v)
	}
}

func (a *summaryAcc) extreme(fn summaryFn, v codec.Value) {
	a.n++
	if a.best.IsNull() || (fn == fnMin && compareValues(v, a.best) < 0) || (fn == fnMax && compareValues(v, a.best) > 0) {
		a.best = v
	}
}

// result is the value of a summary function over a column of type in:
// null for sums, averages, minimums and maximums of no values. Sums of
// ints are ints; averages are floats (of ints, the exact sum divided).
func (a *summaryAcc) result(fn summaryFn, in ColumnType) codec.Value {
	switch fn {
	case fnCount:
		return codec.Int(a.n)
	case fnSum:
		if a.n == 0 {
			return codec.Null()
		}
		if in == TypeInt {
			return codec.Int(a.sumI)
		}
		return codec.Float(a.sumF)
	case fnAverage:
		if a.n == 0 {
			return codec.Null()
		}
		if in == TypeInt {
			return codec.Float(float64(a.sumI) / float64(a.n))
		}
		return codec.Float(a.sumF / float64(a.n))
	case fnMin, fnMax:
		return a.best
	}
	return codec.Null()
}

// DenseValues is a ColumnValues that also hands out its values as arrays
// indexed by row, so that summaries over many rows scan memory instead of
// calling Get for each. Present holds the rows with a value; the array of
// the column's kind (Ints for int, datetime and bool columns, Floats for
// float columns, Strings for string, email and link columns) is longer
// than the largest of them. Both are read-only and valid while the Source
// is in use.
type DenseValues interface {
	ColumnValues
	Present() *roaring.Bitmap
	Ints() []int64
	Floats() []float64
	Strings() []string
}

// foldBatch is how many rows a dense fold takes from a bitmap at a time.
const foldBatch = 1024

// sumMinMax adds the values of the rows it yields to sum, in row order, and
// returns it with their minimum and maximum; it yields at least one row.
func sumMinMax[T int64 | float64](arr []T, it roaring.ManyIntIterable, buf []uint32, sum T) (T, T, T) {
	var lo, hi T
	first := true
	for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
		for _, row := range buf[:n] {
			v := arr[row]
			sum += v
			if first {
				lo, hi, first = v, v, false
				continue
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return sum, lo, hi
}

// foldDense takes the values of rows of a column of type t into a, for a
// sum, average, minimum or maximum, reading the arrays of a dense value
// store in row order. ok is false, with nothing done, when vals is not
// dense or the function and type have no dense loop.
func foldDense(vals ColumnValues, t ColumnType, fn summaryFn, rows *roaring.Bitmap, a *summaryAcc) bool {
	dv, ok := vals.(DenseValues)
	if !ok || fn == fnCount {
		return false
	}
	have := roaring.And(rows, dv.Present())
	if have.IsEmpty() {
		return true
	}
	last := int(have.Maximum())
	buf := make([]uint32, foldBatch)
	it := have.ManyIterator()
	switch t {
	case TypeInt, TypeDatetime:
		ints := dv.Ints()
		if last >= len(ints) || (t == TypeDatetime && (fn == fnSum || fn == fnAverage)) {
			return false
		}
		kind := codec.KindInt
		if t == TypeDatetime {
			kind = codec.KindDatetime
		}
		sum, lo, hi := sumMinMax(ints, it, buf, a.sumI)
		switch fn {
		case fnSum, fnAverage:
			a.n += int64(have.GetCardinality())
			a.sumI = sum
		case fnMin:
			a.extreme(fn, codec.Value{Kind: kind, Int: lo})
		case fnMax:
			a.extreme(fn, codec.Value{Kind: kind, Int: hi})
		}
		return true
	case TypeFloat:
		floats := dv.Floats()
		if last >= len(floats) {
			return false
		}
		sum, lo, hi := sumMinMax(floats, it, buf, a.sumF)
		switch fn {
		case fnSum, fnAverage:
			a.n += int64(have.GetCardinality())
			a.sumF = sum
		case fnMin:
			a.extreme(fn, codec.Float(lo))
		case fnMax:
			a.extreme(fn, codec.Float(hi))
		}
		return true
	case TypeString, TypeEmail:
		strs := dv.Strings()
		if last >= len(strs) || (fn != fnMin && fn != fnMax) {
			return false
		}
		first := true
		var best string
		for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
			for _, row := range buf[:n] {
				v := strs[row]
				if first || (fn == fnMin && v < best) || (fn == fnMax && v > best) {
					best, first = v, false
				}
			}
		}
		a.extreme(fn, codec.String(best))
		return true
	}
	return false
}

// summaryExec computes one summary on rows.
type summaryExec struct {
	spec *summarySpec
	// exists, for a count of a column of the table itself, holds the rows
	// where it is not null.
	exists *roaring.Bitmap
	rd     valueReader
}

func (q *summarizeReq) summaryExecs(x *valueReaders) ([]*summaryExec, error) {
	out := make([]*summaryExec, len(q.summaries))
	for i, s := range q.summaries {
		e := &summaryExec{spec: s}
		switch {
		case s.star:
		case s.fn == fnCount && len(s.col.links) == 0:
			ex, err := x.src.Exists(s.col.col)
			if err != nil {
				return nil, err
			}
			e.exists = ex
		default:
			rd, err := x.reader(s.col)
			if err != nil {
				return nil, err
			}
			e.rd = rd
		}
		out[i] = e
	}
	return out, nil
}

// result is the summary's value from its accumulator.
func (e *summaryExec) result(a *summaryAcc) codec.Value {
	if e.spec.star {
		return codec.Int(a.n)
	}
	return a.result(e.spec.fn, e.spec.col.col.Type)
}

// addRow takes one row into a group's accumulator.
func (e *summaryExec) addRow(a *summaryAcc, row uint32) error {
	switch {
	case e.spec.star:
		a.n++
	case e.exists != nil:
		if e.exists.Contains(row) {
			a.n++
		}
	default:
		v, err := e.rd.get(row)
		if err != nil {
			return err
		}
		if !v.IsNull() {
			a.add(e.spec.fn, v)
		}
	}
	return nil
}

// addRows takes a set of rows into a group's accumulator: counts are
// cardinalities, and dense value stores are scanned as arrays.
func (e *summaryExec) addRows(a *summaryAcc, rows *roaring.Bitmap) error {
	switch {
	case e.spec.star:
		a.n += int64(rows.GetCardinality())
		return nil
	case e.exists != nil:
		a.n += int64(rows.AndCardinality(e.exists))
		return nil
	}
	if sr, ok := e.rd.(storeReader); ok && foldDense(sr.vals, e.spec.col.col.Type, e.spec.fn, rows, a) {
		return nil
	}
	return eachRow(rows, func(row uint32) error { return e.addRow(a, row) })
}

// labelRows maps each row of cand to the index of its group (at most
// maxPostingGroups+1 groups, which partition cand).
func labelRows(groups []*sumGroup, cand *roaring.Bitmap) []uint16 {
	gid := make([]uint16, int(cand.Maximum())+1)
	buf := make([]uint32, foldBatch)
	for gi, g := range groups {
		it := g.rows.ManyIterator()
		for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
			for _, row := range buf[:n] {
				gid[row] = uint16(gi)
			}
		}
	}
	return gid
}

// groupFold holds, per group, the count, sum, minimum and maximum of a
// numeric column's values: one pass serves every summary of the column.
type groupFold[T int64 | float64] struct {
	counts      []int64
	sum, lo, hi []T
}

// foldAll folds arr over the rows next yields, by group (gid), values in
// ascending row order.
func foldAll[T int64 | float64](arr []T, gid []uint16, ng int, next func() []uint32) *groupFold[T] {
	f := &groupFold[T]{counts: make([]int64, ng), sum: make([]T, ng), lo: make([]T, ng), hi: make([]T, ng)}
	for rows := next(); len(rows) > 0; rows = next() {
		for _, row := range rows {
			g, v := gid[row], arr[row]
			switch {
			case f.counts[g] == 0:
				f.lo[g], f.hi[g] = v, v
			case v < f.lo[g]:
				f.lo[g] = v
			case v > f.hi[g]:
				f.hi[g] = v
			}
			f.sum[g] += v
			f.counts[g]++
		}
	}
	return f
}

// pick returns group g's accumulation for fn.
func (f *groupFold[T]) pick(fn summaryFn, g int) T {
	switch fn {
	case fnMin:
		return f.lo[g]
	case fnMax:
		return f.hi[g]
	}
	return f.sum[g]
}

// foldGroups computes summary i of every group in one pass over the rows
// of cand, labelled by gid, reading a dense value store; ok is false,
// with nothing done, when the summary has no such pass. Per group, values
// are taken in ascending row order, as addRows takes them.
func (e *summaryExec) foldGroups(groups []*sumGroup, i int, cand *roaring.Bitmap, gid []uint16, folds map[string]any) bool {
	sr, ok := e.rd.(storeReader)
	if !ok {
		return false
	}
	dv, ok := sr.vals.(DenseValues)
	fn, t := e.spec.fn, e.spec.col.col.Type
	if !ok || fn == fnCount {
		return false
	}
	datetimeSum := t == TypeDatetime && (fn == fnSum || fn == fnAverage)
	if f, done := folds[e.spec.col.path]; done && !datetimeSum {
		// Another summary of this column folded it already.
		assignFold(groups, i, f, fn, t)
		return true
	}
	have := roaring.And(cand, dv.Present())
	if have.IsEmpty() {
		return true
	}
	last := int(have.Maximum())
	ng := len(groups)
	counts := make([]int64, ng)
	buf := make([]uint32, foldBatch)
	it := have.ManyIterator()
	next := func() []uint32 { return buf[:it.NextMany(buf)] }
	switch t {
	case TypeInt, TypeDatetime:
		ints := dv.Ints()
		if last >= len(ints) || datetimeSum {
			return false
		}
		f := foldAll(ints, gid, ng, next)
		folds[e.spec.col.path] = f
		assignFold(groups, i, f, fn, t)
		return true
	case TypeFloat:
		floats := dv.Floats()
		if last >= len(floats) {
			return false
		}
		f := foldAll(floats, gid, ng, next)
		folds[e.spec.col.path] = f
		assignFold(groups, i, f, fn, t)
		return true
	case TypeString, TypeEmail:
		strs := dv.Strings()
		if last >= len(strs) || (fn != fnMin && fn != fnMax) {
			return false
		}
		acc := make([]string, ng)
		for rows := next(); len(rows) > 0; rows = next() {
			for _, row := range rows {
				g, v := gid[row], strs[row]
				if counts[g] == 0 || (fn == fnMin && v < acc[g]) || (fn == fnMax && v > acc[g]) {
					acc[g] = v
				}
				counts[g]++
			}
		}
		for g, grp := range groups {
			if counts[g] > 0 {
				grp.accs[i].extreme(fn, codec.String(acc[g]))
			}
		}
		return true
	}
	return false
}

// assignFold sets summary i of every group from a column's fold.
func assignFold(groups []*sumGroup, i int, fold any, fn summaryFn, t ColumnType) {
	for g, grp := range groups {
		a := &grp.accs[i]
		switch f := fold.(type) {
		case *groupFold[int64]:
			switch {
			case f.counts[g] == 0:
			case fn == fnSum || fn == fnAverage:
				a.n += f.counts[g]
				a.sumI += f.sum[g]
			case t == TypeDatetime:
				a.extreme(fn, codec.Value{Kind: codec.KindDatetime, Int: f.pick(fn, g)})
			default:
				a.extreme(fn, codec.Int(f.pick(fn, g)))
			}
		case *groupFold[float64]:
			switch {
			case f.counts[g] == 0:
			case fn == fnSum || fn == fnAverage:
				a.n += f.counts[g]
				a.sumF += f.sum[g]
			default:
				a.extreme(fn, codec.Float(f.pick(fn, g)))
			}
		}
	}
}

// eachRow calls fn for each row of rows in ascending order, stopping at
// the first error.
func eachRow(rows *roaring.Bitmap, fn func(row uint32) error) error {
	buf := make([]uint32, foldBatch)
	it := rows.ManyIterator()
	for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
		for _, row := range buf[:n] {
			if err := fn(row); err != nil {
				return err
			}
		}
	}
	return nil
}

// groupRows splits the candidates into groups and computes their
// summaries.
func (q *summarizeReq) groupRows(x *valueReaders, cand *roaring.Bitmap) ([]*sumGroup, error) {
	execs, err := q.summaryExecs(x)
	if err != nil {
		return nil, err
	}
	var groups []*sumGroup
	byBitmap := false
	switch {
	case len(q.groups) == 0:
		groups, byBitmap = []*sumGroup{{rows: cand}}, true
	case len(q.groups) == 1 && postingGroupable(q.groups[0]):
		c := q.groups[0].col
		vals, err := x.src.Values(c)
		if err != nil {
			return nil, err
		}
		if cv, ok := vals.(CodedValues); ok && cand.GetCardinality() >= postingMinRows {
			if codes, dict, ok := cv.Codes(); ok {
				return q.groupByCodes(cand, execs, codes, dict)
			}
		}
		if vals != nil && (cand.GetCardinality() < postingMinRows || !fewValues(vals, cand)) {
			break
		}
		parts, ok, err := partitionPostings(x.src, c, cand, maxPostingGroups)
		if err != nil {
			return nil, err
		}
		if ok {
			for _, p := range parts {
				groups = append(groups, &sumGroup{vals: []codec.Value{p.v}, rows: p.rows})
			}
			byBitmap = true
		}
	}
	if byBitmap {
		for _, g := range groups {
			g.accs = make([]summaryAcc, len(execs))
		}
		// Many groups of many rows: label each row with its group, so
		// that a dense column is read in one pass rather than once per
		// group.
		var gid []uint16
		if len(groups) > 1 && cand.GetCardinality() >= postingMinRows {
			gid = labelRows(groups, cand)
		}
		// Every numeric summary of one column comes from one fold.
		folds := map[string]any{}
		for i, e := range execs {
			if gid != nil && e.foldGroups(groups, i, cand, gid, folds) {
				continue
			}
			for _, g := range groups {
				if err := e.addRows(&g.accs[i], g.rows); err != nil {
					return nil, err
				}
			}
		}
	} else if groups, err = q.groupByValues(x, cand, execs); err != nil {
		return nil, err
	}
	finish(groups, execs)
	return groups, nil
}

// finish computes the results of groups from their accumulators.
func finish(groups []*sumGroup, execs []*summaryExec) {
	for _, g := range groups {
		g.res = make([]codec.Value, len(execs))
		for i, e := range execs {
			g.res[i] = e.result(&g.accs[i])
		}
	}
}

// groupByCodes groups the candidates by the codes of the one group
// column's value store: each summary is one pass over the candidates,
// adding each row to the accumulator of its code, in ascending row order.
// Codes without candidates make no group.
func (q *summarizeReq) groupByCodes(cand *roaring.Bitmap, execs []*summaryExec, codes []uint16, dict []codec.Value) ([]*sumGroup, error) {
	ng := len(dict) + 1
	groups := make([]*sumGroup, ng)
	accs := make([]summaryAcc, ng*len(execs))
	for g := range groups {
		v := codec.Null()
		if g > 0 {
			v = dict[g-1]
		}
		groups[g] = &sumGroup{vals: []codec.Value{v}, accs: accs[g*len(execs) : (g+1)*len(execs) : (g+1)*len(execs)]}
	}
	// Rows past the end of codes have no value: code 0.
	gid := codes
	if last := int(cand.Maximum()); last >= len(codes) {
		gid = make([]uint16, last+1)
		copy(gid, codes)
	}
	counts, folds := foldCodes(cand, gid, ng, execs)
	for i, e := range execs {
		switch {
		case e.spec.star:
			for g, n := range counts {
				groups[g].accs[i].n = n
			}
		case e.exists != nil:
			for g, n := range countCodes(roaring.And(cand, e.exists), gid, ng) {
				groups[g].accs[i].n = n
			}
		case e.foldGroups(groups, i, cand, gid, folds):
		default:
			err := eachRow(cand, func(row uint32) error { return e.addRow(&groups[gid[row]].accs[i], row) })
			if err != nil {
				return nil, err
			}
		}
	}
	kept := groups[:0]
	for g, grp := range groups {
		if counts[g] > 0 {
			kept = append(kept, grp)
		}
	}
	finish(kept, execs)
	return kept, nil
}

// foldCodes counts the candidates of each code and folds the numeric
// columns that dense value stores hold for every candidate: the sums,
// minimums and maximums their summaries need, by code. The folds are keyed
// by column path, as foldGroups keeps them.
//
// Many candidates are folded on every core without changing a result: the
// candidates' codes are labelled in slices of rows (counts are exact), then
// each column is folded whole by one goroutine, in ascending row order, so
// its float sums are those of every other path.
func foldCodes(cand *roaring.Bitmap, gid []uint16, ng int, execs []*summaryExec) ([]int64, map[string]any) {
	folds := map[string]any{}
	var folders []codeFolder
	byPath := map[string]codeFolder{}
	total := cand.GetCardinality()
	last := int(cand.Maximum())
	for _, e := range execs {
		sr, ok := e.rd.(storeReader)
		if !ok {
			continue
		}
		dv, ok := sr.vals.(DenseValues)
		fn, t := e.spec.fn, e.spec.col.col.Type
		if !ok || fn == fnCount || (t == TypeDatetime && (fn == fnSum || fn == fnAverage)) {
			continue
		}
		f := byPath[e.spec.col.path]
		if f == nil {
			switch t {
			case TypeInt, TypeDatetime:
				if arr := dv.Ints(); last < len(arr) {
					f = newCodeFold(arr, ng)
				}
			case TypeFloat:
				if arr := dv.Floats(); last < len(arr) {
					f = newCodeFold(arr, ng)
				}
			}
			// Only columns every candidate has a value in fold here: their
			// count is the group's.
			if f == nil || cand.AndCardinality(dv.Present()) != total {
				continue
			}
			byPath[e.spec.col.path] = f
			folders = append(folders, f)
			folds[e.spec.col.path] = f.fold()
		}
		f.need(fn)
	}
	workers := 1
	if total >= parallelFoldRows {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers == 1 || len(folders) == 0 {
		return foldCodeBatches(cand, gid, ng, folders), folds
	}
	lab := foldLabels.Get().(*foldLabel)
	defer foldLabels.Put(lab)
	lab.rows = slices.Grow(lab.rows[:0], int(total))[:total]
	lab.codes = slices.Grow(lab.codes[:0], int(total))[:total]
	rows, codes := lab.rows, lab.codes
	for it, n := cand.ManyIterator(), 0; ; {
		k := it.NextMany(rows[n:])
		if k == 0 {
			break
		}
		n += k
	}
	parts := make([][]int64, workers)
	inParallel(workers, func(w int) {
		lo, hi := len(rows)*w/workers, len(rows)*(w+1)/workers
		n := make([]int64, ng)
		for i, row := range rows[lo:hi] {
			g := gid[row]
			codes[lo+i] = g
			n[g]++
		}
		parts[w] = n
	})
	counts := parts[0]
	for _, n := range parts[1:] {
		for g, c := range n {
			counts[g] += c
		}
	}
	inParallel(min(workers, len(folders)), func(w int) {
		for i := w; i < len(folders); i += workers {
			folders[i].add(rows, codes)
		}
	})
	for _, f := range folders {
		f.setCounts(counts)
	}
	return counts, folds
}

// foldLabel is the candidates and their codes of a parallel foldCodes,
// kept between calls: millions of rows are megabytes the collector would
// otherwise reclaim after every request.
type foldLabel struct {
	rows  []uint32
	codes []uint16
}

var foldLabels = sync.Pool{New: func() any { return new(foldLabel) }}

// parallelFoldRows is the number of candidates from which foldCodes uses
// every core: below it, starting goroutines costs more than it saves.
const parallelFoldRows = 1 << 16

// foldCodeBatches is foldCodes in one goroutine: codes and folds in the
// same pass over the candidates, a batch at a time.
func foldCodeBatches(cand *roaring.Bitmap, gid []uint16, ng int, folders []codeFolder) []int64 {
	counts := make([]int64, ng)
	buf := make([]uint32, foldBatch)
	gb := make([]uint16, foldBatch)
	it := cand.ManyIterator()
	for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
		rows, codes := buf[:n], gb[:n]
		for i, row := range rows {
			g := gid[row]
			codes[i] = g
			counts[g]++
		}
		for _, f := range folders {
			f.add(rows, codes)
		}
	}
	for _, f := range folders {
		f.setCounts(counts)
	}
	return counts
}

// inParallel runs fn(0) … fn(n-1), each in its own goroutine but the first,
// and returns when all have.
func inParallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	fn(0)
	wg.Wait()
}

// codeFolder folds one numeric column by code, batch by batch.
type codeFolder interface {
	need(fn summaryFn)
	add(rows []uint32, codes []uint16)
	setCounts(counts []int64) // the codes' counts, once every row is added
	fold() any                // the *groupFold it fills
}

// codeFold fills a groupFold whose counts are the codes' counts. Minimums
// start above every value and maximums below, so a code's first value
// replaces them; a code without rows is never read.
type codeFold[T int64 | float64] struct {
	arr         []T
	f           *groupFold[T]
	sum, lo, hi bool
}

func newCodeFold[T int64 | float64](arr []T, ng int) codeFolder {
	f := &groupFold[T]{sum: make([]T, ng), lo: make([]T, ng), hi: make([]T, ng)}
	var top, bottom T
	switch any(top).(type) {
	case float64:
		top, bottom = T(math.Inf(1)), T(math.Inf(-1))
	case int64:
		var maxInt int64 = math.MaxInt64
		top, bottom = T(maxInt), T(-maxInt-1)
	}
	for g := range ng {
		f.lo[g], f.hi[g] = top, bottom
	}
	return &codeFold[T]{arr: arr, f: f}
}

func (c *codeFold[T]) fold() any { return c.f }

func (c *codeFold[T]) setCounts(counts []int64) { c.f.counts = counts }

func (c *codeFold[T]) need(fn summaryFn) {
	switch fn {
	case fnSum, fnAverage:
		c.sum = true
	case fnMin:
		c.lo = true
	case fnMax:
		c.hi = true
	}
}

// add folds a batch of rows whose codes are codes: one loop for the one
// function needed, or one loop for all three.
func (c *codeFold[T]) add(rows []uint32, codes []uint16) {
	arr, sum, lo, hi := c.arr, c.f.sum, c.f.lo, c.f.hi
	codes = codes[:len(rows)]
	switch {
	case c.sum && !c.lo && !c.hi:
		for i, row := range rows {
			sum[codes[i]] += arr[row]
		}
	case c.lo && !c.sum && !c.hi:
		for i, row := range rows {
			if g, v := codes[i], arr[row]; v < lo[g] {
				lo[g] = v
			}
		}
	case c.hi && !c.sum && !c.lo:
		for i, row := range rows {
			if g, v := codes[i], arr[row]; v > hi[g] {
				hi[g] = v
			}
		}
	default:
		for i, row := range rows {
			g, v := codes[i], arr[row]
			sum[g] += v
			if v < lo[g] {
				lo[g] = v
			}
			if v > hi[g] {
				hi[g] = v
			}
		}
	}
}

// countCodes counts the rows of each code.
func countCodes(rows *roaring.Bitmap, gid []uint16, ng int) []int64 {
	counts := make([]int64, ng)
	buf := make([]uint32, foldBatch)
	it := rows.ManyIterator()
	for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
		for _, row := range buf[:n] {
			counts[gid[row]]++
		}
	}
	return counts
}

// Sampling decides whether a column has few enough values among the
// candidates to walk its postings: sampleRows rows spread evenly over the
// candidates must show at most sampleValues distinct values.
const (
	sampleRows   = 1024
	sampleValues = 256
)

// fewValues samples the values of cand from a value store: the first
// candidates at or after sampleRows row ids spread evenly from the
// smallest to the largest.
func fewValues(vals ColumnValues, cand *roaring.Bitmap) bool {
	lo, hi := uint64(cand.Minimum()), uint64(cand.Maximum())
	seen := map[string]struct{}{}
	var key []byte
	it := cand.Iterator()
	for k := uint64(0); k < sampleRows && it.HasNext(); k++ {
		it.AdvanceIfNeeded(uint32(lo + k*(hi-lo+1)/sampleRows))
		if !it.HasNext() {
			break
		}
		key = appendValueKey(key[:0], vals.Get(it.Next()))
		seen[string(key)] = struct{}{}
		if len(seen) > sampleValues {
			return false
		}
	}
	return true
}

// postingGroupable reports whether a group column can be grouped by
// walking its postings.
func postingGroupable(p colPath) bool {
	return len(p.links) == 0 && indexed(p.col) && p.col.Type != TypeMultiple && p.col.ID < MetaUpdatedAtColumn
}

// groupByValues groups the candidates by their values, read row by row.
func (q *summarizeReq) groupByValues(x *valueReaders, cand *roaring.Bitmap, execs []*summaryExec) ([]*sumGroup, error) {
	readers := make([]valueReader, len(q.groups))
	for i, g := range q.groups {
		rd, err := x.reader(g)
		if err != nil {
			return nil, err
		}
		readers[i] = rd
	}
	var groups []*sumGroup
	byKey := map[string]*sumGroup{}
	alloc := groupAlloc{nvals: len(readers), naccs: len(execs)}
	vals := make([]codec.Value, len(readers))
	var key []byte
	it := cand.Iterator()
	for it.HasNext() {
		row := it.Next()
		key = key[:0]
		for i, rd := range readers {
			v, err := rd.get(row)
			if err != nil {
				return nil, err
			}
			vals[i] = v
			key = appendValueKey(key, v)
		}
		g := byKey[string(key)]
		if g == nil {
			g = alloc.group(vals)
			byKey[string(key)] = g
			groups = append(groups, g)
		}
		for i, e := range execs {
			if err := e.addRow(&g.accs[i], row); err != nil {
				return nil, err
			}
		}
	}
	return groups, nil
}

// groupAlloc allocates groups, their values and their accumulators in
// chunks: value grouping may make a group for every row.
type groupAlloc struct {
	nvals, naccs int
	groups       []sumGroup
	vals         []codec.Value
	accs         []summaryAcc
}

// groupChunk is how many groups one allocation holds.
const groupChunk = 256

// group returns a new group with a copy of vals and zero accumulators.
func (a *groupAlloc) group(vals []codec.Value) *sumGroup {
	if len(a.groups) == cap(a.groups) {
		a.groups = make([]sumGroup, 0, groupChunk)
		a.vals = make([]codec.Value, 0, groupChunk*a.nvals)
		a.accs = make([]summaryAcc, groupChunk*a.naccs)
	}
	a.groups = append(a.groups, sumGroup{})
	g := &a.groups[len(a.groups)-1]
	start := len(a.vals)
	a.vals = append(a.vals, vals...)
	g.vals = a.vals[start:len(a.vals):len(a.vals)]
	i := len(a.groups) - 1
	g.accs = a.accs[i*a.naccs : (i+1)*a.naccs : (i+1)*a.naccs]
	return g
}

// appendValueKey appends an encoding of v that equal values share and
// unequal ones do not.
func appendValueKey(dst []byte, v codec.Value) []byte {
	dst = append(dst, byte(v.Kind))
	switch v.Kind {
	case codec.KindBool, codec.KindInt, codec.KindDatetime:
		dst = binary.BigEndian.AppendUint64(dst, uint64(v.Int))
	case codec.KindFloat:
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(v.Float))
	case codec.KindString:
		dst = binary.AppendUvarint(dst, uint64(len(v.Str)))
		dst = append(dst, v.Str...)
	case codec.KindStrings:
		dst = binary.AppendUvarint(dst, uint64(len(v.Strs)))
		for _, s := range v.Strs {
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			dst = append(dst, s...)
		}
	case codec.KindVector:
		dst = binary.AppendUvarint(dst, uint64(len(v.Vec)))
		for _, f := range v.Vec {
			dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(f))
		}
	}
	return dst
}

// valuePart is the rows of cand holding one value of a column.
type valuePart struct {
	v    codec.Value
	rows *roaring.Bitmap
}

// partitionPostings splits cand by the value of an indexed column by
// walking its postings in value order; the rows without a value come last
// as a null part. ok is false, with nothing done, when the column has more
// than limit values.
func partitionPostings(src Source, c *Column, cand *roaring.Bitmap, limit int) ([]valuePart, bool, error) {
	var parts []valuePart
	walked, over := 0, false
	err := src.Scan(c, Bounds{}, false, func(v codec.Value, rows *roaring.Bitmap) bool {
		walked++
		if walked > limit {
			over = true
			return false
		}
		rows.And(cand)
		if !rows.IsEmpty() {
			parts = append(parts, valuePart{v: v, rows: rows})
		}
		return true
	})
	if errors.Is(err, ErrNoOrderedIndex) {
		return nil, false, nil
	}
	if err != nil || over {
		return nil, false, err
	}
	exists, err := src.Exists(c)
	if err != nil {
		return nil, false, err
	}
	if nulls := roaring.AndNot(cand, exists); !nulls.IsEmpty() {
		parts = append(parts, valuePart{v: codec.Null(), rows: nulls})
	}
	return parts, true, nil
}

// view shows a group to summariesFilter.
func (q *summarizeReq) view(g *sumGroup) RowView {
	r := groupRow{}
	for i, c := range q.groupCols {
		r[c] = g.vals[i]
	}
	for i, c := range q.sumCols {
		r[c] = g.res[i]
	}
	return r
}

// groupRow is a group as a RowView: values by made-up column.
type groupRow map[*Column]codec.Value

func (r groupRow) Value(c *Column) codec.Value { return r[c] }
func (r groupRow) Linked(*Column) RowView      { return nil }

// first returns the first q.size groups in order. Groups differ in their
// values, so the order is total.
func (q *summarizeReq) first(groups []*sumGroup) []*sumGroup {
	if len(groups) <= q.size {
		slices.SortFunc(groups, q.compareGroups)
		return groups
	}
	// Keep the q.size first seen so far in a heap whose root is the last
	// of them.
	h := &groupHeap{cmp: q.compareGroups, groups: slices.Clone(groups[:q.size])}
	heap.Init(h)
	for _, g := range groups[q.size:] {
		if q.compareGroups(g, h.groups[0]) < 0 {
			h.groups[0] = g
			heap.Fix(h, 0)
		}
	}
	slices.SortFunc(h.groups, q.compareGroups)
	return h.groups
}

// groupHeap is a max-heap of groups.
type groupHeap struct {
	cmp    func(a, b *sumGroup) int
	groups []*sumGroup
}

func (h *groupHeap) Len() int           { return len(h.groups) }
func (h *groupHeap) Less(i, j int) bool { return h.cmp(h.groups[i], h.groups[j]) > 0 }
func (h *groupHeap) Swap(i, j int)      { h.groups[i], h.groups[j] = h.groups[j], h.groups[i] }
func (h *groupHeap) Push(x any)         { h.groups = append(h.groups, x.(*sumGroup)) }
func (h *groupHeap) Pop() any {
	x := h.groups[len(h.groups)-1]
	h.groups = h.groups[:len(h.groups)-1]
	return x
}

// compareGroups orders groups: by the sort keys, then by the group values
// ascending, nulls last in both directions.
func (q *summarizeReq) compareGroups(a, b *sumGroup) int {
	for _, k := range q.order {
		var x, y codec.Value
		if k.group {
			x, y = a.vals[k.i], b.vals[k.i]
		} else {
			x, y = a.res[k.i], b.res[k.i]
		}
		if c := compareNullsLast(x, y, k.desc); c != 0 {
			return c
		}
	}
	for i := range a.vals {
		if c := compareNullsLast(a.vals[i], b.vals[i], false); c != 0 {
			return c
		}
	}
	return 0
}

// compareNullsLast compares two values in a direction, nulls after every
// value either way.
func compareNullsLast(x, y codec.Value, desc bool) int {
	switch {
	case x.IsNull() && y.IsNull():
		return 0
	case x.IsNull():
		return 1
	case y.IsNull():
		return -1
	}
	c := compareValues(x, y)
	if desc {
		c = -c
	}
	return c
}

// render builds a group's output row.
func (q *summarizeReq) render(g *sumGroup) map[string]any {
	out := make(map[string]any, len(q.groups)+len(q.summaries))
	for i, gc := range q.groups {
		SetPath(out, gc.outPath(), outputValue(gc.col.Type, g.vals[i]))
	}
	for i, s := range q.summaries {
		out[s.name] = outputValue(s.typ, g.res[i])
	}
	return out
}

// outputValue converts a value of a column type to its output form: nil,
// bool, int64, float64, time.Time, string (json columns as JSON text, links
// as the target id) or []string.
func outputValue(t ColumnType, v codec.Value) any {
	if v.IsNull() {
		return nil
	}
	switch v.Kind {
	case codec.KindBool:
		return v.Int != 0
	case codec.KindInt:
		if t == TypeFloat {
			return float64(v.Int)
		}
		return v.Int
	case codec.KindFloat:
		return v.Float
	case codec.KindDatetime:
		return v.Time()
	case codec.KindStrings:
		return append([]string{}, v.Strs...) // an empty list is [], not null
	case codec.KindVector:
		return append([]float64{}, v.Vec...)
	}
	return v.Str
}

// valueReader reads one column's value of rows of a source.
type valueReader interface {
	get(row uint32) (codec.Value, error)
}

// valueReaders makes readers for columns of one source, sharing the stored
// record of the row being read among the columns without a value store.
type valueReaders struct {
	src  Source
	recs map[Source]*recordCache
}

func newValueReaders(src Source) *valueReaders {
	return &valueReaders{src: src, recs: map[Source]*recordCache{}}
}

// reader returns a reader of a column path of the source.
func (x *valueReaders) reader(p colPath) (valueReader, error) {
	return x.readerOn(x.src, p.links, p.col)
}

func (x *valueReaders) readerOn(src Source, links []*Column, c *Column) (valueReader, error) {
	if len(links) > 0 {
		idr, err := x.readerOn(src, nil, links[0])
		if err != nil {
			return nil, err
		}
		target, err := src.Linked(links[0])
		if err != nil {
			return nil, err
		}
		inner, err := x.readerOn(target, links[1:], c)
		if err != nil {
			return nil, err
		}
		return &linkReader{ids: idr, target: target, inner: inner, cache: map[string]codec.Value{}}, nil
	}
	vals, err := src.Values(c)
	if err != nil {
		return nil, err
	}
	if vals != nil {
		return storeReader{vals}, nil
	}
	rc := x.recs[src]
	if rc == nil {
		rc = &recordCache{src: src}
		x.recs[src] = rc
	}
	return &recordReader{rc: rc, col: c}, nil
}

// storeReader reads a value store.
type storeReader struct{ vals ColumnValues }

func (r storeReader) get(row uint32) (codec.Value, error) { return r.vals.Get(row), nil }

// recordCache holds the last stored record read from a source.
type recordCache struct {
	src  Source
	row  uint32
	have bool
	ok   bool
	rec  codec.Record
}

func (c *recordCache) load(row uint32) (bool, error) {
	if c.have && c.row == row {
		return c.ok, nil
	}
	ok, err := c.src.Record(row, &c.rec)
	if err != nil {
		c.have = false
		return false, err
	}
	c.row, c.have, c.ok = row, true, ok
	return ok, nil
}

// recordReader reads a column from stored records.
type recordReader struct {
	rc  *recordCache
	col *Column
}

func (r *recordReader) get(row uint32) (codec.Value, error) {
	ok, err := r.rc.load(row)
	if err != nil || !ok {
		return codec.Null(), err
	}
	return recordValue(&r.rc.rec, r.col), nil
}

// linkReader reads a column of the record a link points at, caching by
// target id. A null or dangling link reads as null.
type linkReader struct {
	ids    valueReader
	target Source
	inner  valueReader
	cache  map[string]codec.Value
}

func (r *linkReader) get(row uint32) (codec.Value, error) {
	id, err := r.ids.get(row)
	if err != nil || id.Kind != codec.KindString {
		return codec.Null(), err
	}
	if v, ok := r.cache[id.Str]; ok {
		return v, nil
	}
	rows, err := r.target.Rows([]string{id.Str})
	if err != nil {
		return codec.Null(), err
	}
	v := codec.Null()
	if !rows.IsEmpty() {
		if v, err = r.inner.get(rows.Minimum()); err != nil {
			return codec.Null(), err
		}
	}
	r.cache[id.Str] = v
	return v, nil
}
