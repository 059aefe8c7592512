package index

import (
	"strconv"
	"strings"
	"time"
)

// SummarizePlan is how a summarize request found its groups. Its steps are
//
//	summarize size N                  the groups returned: at most N
//	  sort <keys>; first N            the first N groups in order
//	    having <summariesFilter>      the groups it keeps, when given
//	      group by <columns>: <summaries>
//	                                  the groups and their summaries,
//	                                  via postings, codes or values
//	                                  (summarize.go); "group all" without
//	                                  group columns
//	        <the filter's steps>      the candidates
//
// A plan costs nothing to keep: Tree describes it when asked, and times
// and counts are there only when the request ran with Explain.
type SummarizePlan struct {
	// filter is kept by value, q by its pointer: a request not explained
	// allocates nothing more for its plan.
	filter Plan
	q      *summarizeReq
	// explained is what an explained request noted; nil otherwise.
	explained *summarizeTrace
	// tree is the tree Tree described.
	tree *ExplainNode
}

// summarizeTrace is what an explained summarize request noted: its start,
// the steps of its filter, and how each later step ended.
type summarizeTrace struct {
	start               time.Time
	filter              *ExplainNode
	group, having, sort stepEnd
}

// stepEnd is how a step of a request ended: its time since the request
// started, and its rows.
type stepEnd struct {
	ran         bool
	time        time.Duration
	est, actual uint64
}

// ran ends a step now, with its rows.
func (t *summarizeTrace) ran(est uint64, actual int) stepEnd {
	return stepEnd{ran: true, time: time.Since(t.start), est: est, actual: uint64(actual)}
}

// fill sets the rows and time of a step that ended.
func (s stepEnd) fill(e *ExplainNode) {
	e.Ran, e.Time, e.Estimated, e.Actual = s.ran, s.time, s.est, s.actual
}

// Tree returns the steps of the request: as they ran, with rows and times,
// when it ran with Explain; else the steps alone. It describes them on the
// first call; the tree is the caller's to extend.
func (p *SummarizePlan) Tree() *ExplainNode {
	if p.tree == nil {
		p.tree = p.describe()
	}
	return p.tree
}

// describe builds the tree of Tree.
func (p *SummarizePlan) describe() *ExplainNode {
	q := p.q
	if q == nil {
		return step("summarize", "")
	}
	root := step("summarize", "size "+strconv.Itoa(q.size))
	sort := step("sort", p.sortDetail())
	group := step("group", p.groupDetail())
	group.Via = q.grouped
	t := p.explained
	if t != nil {
		group.Children = []*ExplainNode{t.filter}
		t.group.fill(group)
		t.sort.fill(sort)
		root.Ran, root.Time, root.Estimated, root.Actual = true, t.sort.time, uint64(q.size), t.sort.actual
	} else {
		group.Children = []*ExplainNode{p.filter.Tree()}
	}
	under := group
	if q.having != nil {
		having := valueStep("having", func(hide bool) string {
			var b strings.Builder
			formatCondition(&b, q.having, false, false, hide)
			return b.String()
		})
		having.Children = []*ExplainNode{group}
		if t != nil {
			t.having.fill(having)
		}
		under = having
	}
	sort.Children = []*ExplainNode{under}
	root.Children = []*ExplainNode{sort}
	return root
}

// String is the one-line summary of Tree, for logs.
func (p *SummarizePlan) String() string { return p.Tree().Summary() }

// groupDetail names the group columns and the summaries.
func (p *SummarizePlan) groupDetail() string {
	var b strings.Builder
	if len(p.q.groups) == 0 {
		b.WriteString("all")
	} else {
		b.WriteString("by ")
		for i, g := range p.q.groups {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(g.path)
		}
	}
	for i, s := range p.q.summaries {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		col := "*"
		if !s.star {
			col = s.col.path
		}
		b.WriteString(s.name + " = " + summaryFnNames[s.fn] + "(" + col + ")")
	}
	return b.String()
}

// summaryFnNames spell the summary functions.
var summaryFnNames = [...]string{fnCount: "count", fnMin: "min", fnMax: "max", fnSum: "sum", fnAverage: "average"}

// sortDetail names the sort keys, then the group values that break ties,
// and the page.
func (p *SummarizePlan) sortDetail() string {
	var b strings.Builder
	for _, k := range p.q.order {
		if k.group {
			b.WriteString(p.q.groups[k.i].outPath())
		} else {
			b.WriteString(p.q.summaries[k.i].name)
		}
		if k.desc {
			b.WriteString(" desc")
		}
		b.WriteString(", ")
	}
	b.WriteString("group values; first " + strconv.Itoa(p.q.size))
	return b.String()
}
