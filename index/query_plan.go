package index

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
)

// QueryPlan is how a query found its page: the filter's plan and the step
// that ordered the candidates. Its steps are
//
//	query size N[, offset M]      the page: at most N rows
//	  walk|heap <order>; limit L  the first L rows of the order (offset,
//	                              page and one more, to tell whether more
//	                              rows follow)
//	    <the filter's steps>      the candidates
//
// each step taking the rows of the one below it; the engine puts the
// reading of the page's records between the query and the order. A "lazy
// walk" instead of walk or heap tests each row of the order it visits
// against the filter's steps, which then count the rows they tested and
// passed rather than compute their rows; the cost rule that picks it is
// in lazy.go. A plan
// costs nothing to keep: Tree describes it when asked, and times and
// counts are there only when the query ran with Explain.
type QueryPlan struct {
	// filter is kept by value: a query not explained allocates nothing
	// more for its plan.
	filter       Plan
	order        Order
	size, offset int
	// limit and reverse are the window the order took the page from,
	// and sel how it ordered it.
	limit   int
	reverse bool
	sel     orderNote
	// gaveUp is the rows a lazy walk tested before it gave up for the
	// eager plan (0: none did).
	gaveUp uint64
	// explained is set while an explained query runs: its steps so far.
	explained *queryTrace
	// tree is the tree Tree described, of a query not explained.
	tree *ExplainNode
}

// queryTrace is what an explained query noted: when it started, and the
// steps of its filter.
type queryTrace struct {
	start  time.Time
	root   *ExplainNode
	filter *ExplainNode
	cand   uint64
}

// explain runs the filter as an explained query does.
func (p *QueryPlan) explain(ctx context.Context, src Source) (*roaring.Bitmap, error) {
	t := &queryTrace{start: time.Now()}
	p.explained = t
	cand, tree, err := p.filter.Explain(ctx, src)
	if err != nil {
		return nil, err
	}
	t.filter, t.cand = tree, cand.GetCardinality()
	return cand, nil
}

// selectPage orders the candidates in the window of the page.
func (p *QueryPlan) selectPage(ctx context.Context, src Source, cand *roaring.Bitmap, w Window) ([]uint32, []Key, error) {
	p.limit, p.reverse = w.Limit, w.Reverse
	rows, keys, err := selectOrder(ctx, src, cand, p.order, w, &p.sel)
	if t := p.explained; t != nil && err == nil {
		t.root = p.outline(t.filter)
		sel := t.root.Children[0]
		sel.Ran = true
		sel.Time = time.Since(t.start)
		sel.Estimated = min(uint64(w.Limit), t.cand)
		sel.Actual = uint64(len(rows))
	}
	return rows, keys, err
}

// ran notes the rows of the page, when the query is explained.
func (p *QueryPlan) ran(rows int) {
	if t := p.explained; t != nil && t.root != nil {
		t.root.Ran = true
		t.root.Time = time.Since(t.start)
		t.root.Estimated = uint64(p.size)
		t.root.Actual = uint64(rows)
	}
}

// Tree returns the steps of the query: as they ran, with rows and times,
// when it ran with Explain; else the steps alone, described on the first
// call. The tree is the caller's to extend.
func (p *QueryPlan) Tree() *ExplainNode {
	switch {
	case p.explained != nil && p.explained.root != nil:
		return p.explained.root
	case p.tree != nil:
	case p.filter.root == nil:
		p.tree = step("query", "")
	default:
		p.tree = p.outline(p.filter.Tree())
	}
	return p.tree
}

// String is the one-line summary of Tree, for logs.
func (p *QueryPlan) String() string { return p.Tree().Summary() }

// outline describes the query's steps around the steps of its filter.
func (p *QueryPlan) outline(filter *ExplainNode) *ExplainNode {
	detail := "size " + strconv.Itoa(p.size)
	if p.offset > 0 {
		detail += ", offset " + strconv.Itoa(p.offset)
	}
	root := step("query", detail)
	kind := p.sel.kind
	if kind == "" {
		kind = "order" // not reached: the query stopped before ordering
	}
	order := orderDetail(p.order, p.limit, p.reverse)
	if p.gaveUp > 0 {
		order += "; after a lazy walk gave up at " + strconv.FormatUint(p.gaveUp, 10) + " rows"
	}
	sel := step(kind, order)
	sel.Via = p.sel.via
	sel.Children = []*ExplainNode{filter}
	root.Children = []*ExplainNode{sel}
	return root
}

// orderDetail describes an order and a window: the sort keys, ending with
// id, and how many rows are taken from which end.
func orderDetail(o Order, limit int, reverse bool) string {
	var b strings.Builder
	for _, k := range o.Keys {
		formatColumn(&b, nil, k.Column)
		if k.Desc {
			b.WriteString(" desc")
		}
		b.WriteString(", ")
	}
	if o.Random {
		b.WriteString("random, ")
	}
	b.WriteString("id; limit " + strconv.Itoa(limit))
	if reverse {
		b.WriteString(" from the end")
	}
	return b.String()
}
