package index

// This file checks a summarize request against a table: the group
// columns, the summaries, the sort and summariesFilter.

import (
	"errors"
	"slices"
	"sort"
	"strings"
)

// parseSummarize checks a request against table t.
func parseSummarize(t *Table, in SummarizeRequest) (*summarizeReq, error) {
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
	var err error
	if q.filter, err = in.Filter.Bind(t); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, name := range in.Columns {
		cols, err := groupColumns(t, name)
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
	if err := q.parseSummaries(t, in.Summaries); err != nil {
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
func groupColumns(t *Table, name string) ([]colPath, error) {
	switch {
	case name == "":
		return nil, summarizeErrorf("columns: empty column name")
	case name == "*":
		return expandColumns(t, "", nil, ""), nil
	case isInternal(t, name) || isInternal(t, strings.TrimSuffix(name, ".*")):
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

// parseSummaries checks the summaries against t.
func (q *summarizeReq) parseSummaries(t *Table, in []Summary) error {
	names := map[string]bool{}
	for _, sum := range in {
		name, fnName, colName := sum.Name, sum.Function, sum.Column
		if err := checkSummaryName(name); err != nil {
			return err
		}
		if names[name] {
			return summarizeErrorf("summary [%s]: the name is given twice", name)
		}
		names[name] = true
		fn, ok := summaryFns[fnName]
		if !ok {
			return unknownSummaryFunction(name, fnName)
		}
		if err := sum.checkStar(); err != nil {
			return err
		}
		s := &summarySpec{name: name, fn: fn}
		if colName == "*" {
			s.star, s.typ = true, TypeInt
			q.summaries = append(q.summaries, s)
			continue
		}
		if isInternal(t, colName) {
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
func (q *summarizeReq) parseSort(sort Sort) error {
	v := sort.v
	if v == nil {
		return nil
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
func (q *summarizeReq) parseHaving(f Filter) error {
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
	if f.IsZero() {
		return nil
	}
	n, err := f.Bind(vt)
	if err != nil {
		return havingError(err)
	}
	if usesColumn(n, IDColumn) {
		return summarizeErrorf("summariesFilter: column [id]: column not found")
	}
	q.having = n
	return nil
}

// havingError names summariesFilter in a filter's input error.
func havingError(err error) error {
	var fe *InputError
	if errors.As(err, &fe) {
		return summarizeErrorf("summariesFilter: %s", strings.TrimPrefix(fe.Message, "filter: "))
	}
	return err
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
