package index

import "strings"

// AggregatePlan is how an aggregate request found its rows and what it
// computed on them. Its steps are
//
//	aggregate <aggregations>    each as name = kind(column), a count's own
//	                            filter after "where", sub-aggregations in
//	                            braces
//	  <the filter's steps>      the rows aggregated
//
// Like SummarizePlan it costs nothing to keep: Tree describes it when
// asked.
type AggregatePlan struct {
	filter *Plan
	nodes  []*aggNode
	// tree is the tree Tree described.
	tree *ExplainNode
}

// Tree returns the steps of the request, none with rows or times. It
// describes them on the first call; the tree is the caller's to extend.
func (p *AggregatePlan) Tree() *ExplainNode {
	if p.tree == nil {
		p.tree = p.describe()
	}
	return p.tree
}

// String is the one-line summary of Tree, for logs: the values of the
// count filters are written as "?".
func (p *AggregatePlan) String() string { return p.Tree().Summary() }

// describe builds the tree of Tree.
func (p *AggregatePlan) describe() *ExplainNode {
	root := valueStep("aggregate", func(hide bool) string {
		if len(p.nodes) == 0 {
			return "count = count(*)"
		}
		var b strings.Builder
		formatAggs(&b, p.nodes, hide)
		return b.String()
	})
	if p.filter != nil {
		root.Children = []*ExplainNode{p.filter.Tree()}
	}
	return root
}

// formatAggs writes aggregations as name = kind(column), separated by
// ", ", with their sub-aggregations in braces.
func formatAggs(b *strings.Builder, nodes []*aggNode, hide bool) {
	for i, n := range nodes {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n.key + " = " + n.kind + "(")
		switch {
		case n.col != nil:
			b.WriteString(n.col.Path)
		case n.filter != nil:
			b.WriteString("* where ")
			formatCondition(b, n.filter, false, false, hide)
		default:
			b.WriteByte('*')
		}
		b.WriteByte(')')
		if len(n.sub) > 0 {
			b.WriteString("{")
			formatAggs(b, n.sub, hide)
			b.WriteString("}")
		}
	}
}
