package index

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/coppice-db/coppice/codec"
)

// A plan evaluates a filter as set algebra over row bitmaps. Every node
// answers "which rows of cand match" (cand nil: every live row), so cheap
// nodes shrink the candidates the expensive ones look at:
//
//   - postings: equality, $is with a list, $includes of a value and $exists
//     read postings of the ordered index (one bitmap per value);
//   - range: $lt/$le/$gt/$ge and $startsWith compare in-memory column values
//     of the candidates (or scan the ordered index when the column has no
//     value store). When the store keeps the column's rows in value order
//     (OrderedValues), a range is a binary search and a slice of that
//     order, and ranges leading an and run narrowest first;
//   - scan: $contains, $endsWith, $pattern, array quantifiers other than
//     "any equals", conditions on several predicates of one element
//     (Elements), and columns without an index evaluate row by row on the
//     candidates left; $contains and $iContains first narrow them with the
//     store's substring index (SubstringValues) when it has one;
//   - link: a filter through a link evaluates on the linked table and maps
//     the matching targets back through the link column's postings;
//   - and: children cheapest first, stopping when nothing is left; negations
//     are subtracted last;
//   - or: union; not: candidates minus the child.
//
// A query whose sort order can be walked may instead test its filter row by
// row as the walk visits rows (postings probed, ranges compared on the value
// arrays), stopping once the page is full: when the filter matches a large
// share of the rows, the page is small and the filter holds only postings,
// ranges, $contains and $iContains narrowed by a substring index, and
// their and/or/not. The rule weighs the rows the walk is
// expected to visit, times the cost of testing one, against building the
// filter's bitmap; lazy.go writes it down.

// Cost classes order the children of an and.
type cost int

const (
	costPosting cost = iota
	costRange
	costLink
	costScan
	costNot
)

// planNode is one node of a plan.
type planNode interface {
	cost() cost
	// exec runs the node; composite nodes run their children with
	// x.run, so that an explained execution sees every step.
	exec(x *execCtx, cand *roaring.Bitmap) (*roaring.Bitmap, error)
	// step describes the node alone, as a step of the plan's tree.
	step() *ExplainNode
	// subnodes are the nodes it runs.
	subnodes() []planNode
}

// Plan is an executable filter.
type Plan struct {
	root planNode
	// fetched are postings already read for the plan's nodes, by a lazy
	// query that chose not to run lazily; each is used once.
	fetched map[planNode]*roaring.Bitmap
}

// String prints the plan as an indented tree of its steps (Tree's
// Outline).
func (p *Plan) String() string { return p.Tree().Outline() }

// Tree describes the plan as a tree of steps, none run.
func (p *Plan) Tree() *ExplainNode { return describeSteps(p.root, nil) }

// describeSteps returns the steps of n and its children, and records each in
// steps when steps is not nil.
func describeSteps(n planNode, steps map[planNode]*ExplainNode) *ExplainNode {
	e := n.step()
	if steps != nil {
		steps[n] = e
	}
	for _, c := range n.subnodes() {
		e.Children = append(e.Children, describeSteps(c, steps))
	}
	return e
}

// Compile turns a parsed filter into a plan for a table.
func Compile(n Node) *Plan {
	return &Plan{root: compile(n)}
}

func compile(n Node) planNode {
	switch n := n.(type) {
	case *And:
		a := &andNode{}
		for _, c := range n.Children {
			child := compile(c)
			if ca, ok := child.(*andNode); ok {
				a.children = append(a.children, ca.children...)
				continue
			}
			a.children = append(a.children, child)
		}
		a.children = mergeRanges(a.children)
		sort.SliceStable(a.children, func(i, j int) bool { return a.children[i].cost() < a.children[j].cost() })
		if len(a.children) == 1 {
			return a.children[0]
		}
		return a
	case *Or:
		o := &orNode{}
		for _, c := range n.Children {
			o.children = append(o.children, compile(c))
		}
		if len(o.children) == 1 {
			return o.children[0]
		}
		return o
	case *Not:
		return &notNode{child: compile(n.Child)}
	case *Pred:
		return compilePred(n)
	case *Elements:
		inner := *n
		inner.Links = nil
		return throughLinks(n.Links, &elementsNode{elems: &inner})
	}
	panic(fmt.Sprintf("index: unknown filter node %T", n))
}

func compilePred(p *Pred) planNode {
	if len(p.Links) > 0 {
		inner := *p
		inner.Links = nil
		return throughLinks(p.Links, compilePred(&inner))
	}
	c := p.Column
	if len(p.JSONPath) == 0 {
		switch {
		case p.Op == OpExists && p.Quant == QuantNone:
			return &postingNode{pred: p}
		case indexed(c) && (p.Quant == QuantNone || p.Quant == QuantAny) && (p.Op == OpEq || p.Op == OpIn):
			return &postingNode{pred: p}
		case p.Quant == QuantNoElement && (p.Op == OpEq || p.Op == OpIn) && indexed(c):
			// No element equals v: every row but those whose list holds v.
			q := *p
			q.Quant = QuantAny
			return &notNode{child: &postingNode{pred: &q}}
		case p.Quant == QuantNone && isRange(p.Op) && storable(c):
			return &rangeNode{preds: []*Pred{p}}
		case p.Quant == QuantNone && p.Op == OpStartsWith && storable(c):
			return &rangeNode{preds: []*Pred{p}}
		}
	}
	return &scanNode{pred: p}
}

// throughLinks wraps the plan of a condition on the table a chain of
// links reaches, outermost link first, so that it runs on the table the
// chain starts from.
func throughLinks(links []*Column, inner planNode) planNode {
	// Innermost link first: wrap from the last link outwards.
	for i := len(links) - 1; i >= 0; i-- {
		inner = &linkNode{link: links[i], inner: inner}
	}
	return inner
}

// indexed reports whether a column has an ordered posting index.
func indexed(c *Column) bool {
	if c.ID == MetaIDColumn {
		return true
	}
	return c.Type.Indexed() && c.ID < MetaUpdatedAtColumn
}

// storable reports whether a column's values live in a value store: those
// of the indexed types.
func storable(c *Column) bool { return c.Type.Indexed() }

func isRange(op Op) bool { return op == OpLt || op == OpLe || op == OpGt || op == OpGe }

// execCtx carries one execution's context, source and caches.
type execCtx struct {
	ctx  context.Context
	src  Source
	live *roaring.Bitmap
	// tr notes the steps of an explained execution; nil otherwise.
	tr *tracer
	// fetched are postings read before the execution (Plan.fetched).
	fetched map[planNode]*roaring.Bitmap
}

// run executes a node: directly, or as a step of an explained execution.
func (x *execCtx) run(n planNode, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	if x.tr == nil {
		return n.exec(x, cand)
	}
	return x.tr.run(x, n, cand)
}

func (x *execCtx) universe() (*roaring.Bitmap, error) {
	if x.live == nil {
		l, err := x.src.Live()
		if err != nil {
			return nil, err
		}
		x.live = l
	}
	return x.live, nil
}

// Execute returns the rows of src matching the plan. Its row-by-row
// nodes stop with ctx's error once ctx ends.
func (p *Plan) Execute(ctx context.Context, src Source) (*roaring.Bitmap, error) {
	return p.execute(&execCtx{ctx: ctx, src: src, fetched: p.fetched})
}

// Explain is Execute that also returns the plan's steps as they ran: how
// each reached its rows, how many it was expected to produce and produced,
// and how long it took.
func (p *Plan) Explain(ctx context.Context, src Source) (*roaring.Bitmap, *ExplainNode, error) {
	tr := &tracer{steps: map[planNode]*ExplainNode{}, order: map[*ExplainNode]int{}}
	tree := describeSteps(p.root, tr.steps)
	rows, err := p.execute(&execCtx{ctx: ctx, src: src, tr: tr, fetched: p.fetched})
	tr.finish(tree)
	return rows, tree, err
}

func (p *Plan) execute(x *execCtx) (*roaring.Bitmap, error) {
	out, err := x.run(p.root, nil)
	if err != nil {
		return nil, err
	}
	if out == nil {
		u, err := x.universe()
		if err != nil {
			return nil, err
		}
		return u.Clone(), nil
	}
	return out, nil
}

// candidates returns cand, or the universe when cand is nil.
func (x *execCtx) candidates(cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	if cand != nil {
		return cand, nil
	}
	return x.universe()
}

// andNode intersects its children, cheapest first.
type andNode struct{ children []planNode }

func (a *andNode) cost() cost {
	if len(a.children) == 0 {
		return costPosting
	}
	return a.children[0].cost()
}

func (a *andNode) exec(x *execCtx, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	if len(a.children) == 0 {
		c, err := x.candidates(cand)
		if err != nil {
			return nil, err
		}
		return c.Clone(), nil
	}
	acc := cand
	children := a.children
	if cand == nil {
		children = x.narrowestFirst(children)
	}
	for _, c := range children {
		r, err := x.run(c, acc)
		if err != nil {
			return nil, err
		}
		acc = r
		if acc.IsEmpty() {
			return acc, nil
		}
	}
	return acc, nil
}

// narrowestFirst reorders the range nodes that lead an and's children by
// how many rows each holds, when their columns keep in-memory orders that
// count them, so that the narrowest range makes the candidates the others
// filter.
func (x *execCtx) narrowestFirst(children []planNode) []planNode {
	n := 0
	for n < len(children) {
		if _, ok := children[n].(*rangeNode); !ok {
			break
		}
		n++
	}
	if n < 2 {
		return children
	}
	est := make(map[planNode]uint64, n)
	for _, c := range children[:n] {
		e, ok := c.(*rangeNode).estimate(x)
		if !ok {
			e = math.MaxUint64
		}
		est[c] = e
	}
	out := slices.Clone(children)
	slices.SortStableFunc(out[:n], func(p, q planNode) int {
		switch {
		case est[p] < est[q]:
			return -1
		case est[p] > est[q]:
			return 1
		}
		return 0
	})
	return out
}

// step is "and", or "live" for an and of nothing: the plan of no filter.
func (a *andNode) step() *ExplainNode {
	if len(a.children) == 0 {
		return step("live", "")
	}
	return step("and", "")
}

func (a *andNode) subnodes() []planNode { return a.children }

// orNode unions its children; an empty or matches nothing.
type orNode struct{ children []planNode }

func (o *orNode) cost() cost {
	worst := costPosting
	for _, c := range o.children {
		if c.cost() > worst {
			worst = c.cost()
		}
	}
	return worst
}

func (o *orNode) exec(x *execCtx, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	acc := roaring.New()
	for _, c := range o.children {
		r, err := x.run(c, cand)
		if err != nil {
			return nil, err
		}
		acc.Or(r)
	}
	return acc, nil
}

func (o *orNode) step() *ExplainNode { return step("or", "") }

func (o *orNode) subnodes() []planNode { return o.children }

// notNode subtracts its child from the candidates.
type notNode struct{ child planNode }

func (n *notNode) cost() cost { return costNot }

func (n *notNode) exec(x *execCtx, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	c, err := x.candidates(cand)
	if err != nil {
		return nil, err
	}
	r, err := x.run(n.child, c)
	if err != nil {
		return nil, err
	}
	return roaring.AndNot(c, r), nil
}

func (n *notNode) step() *ExplainNode { return step("not", "") }

func (n *notNode) subnodes() []planNode { return []planNode{n.child} }

// postingNode reads postings: equality, lists of values, exists.
type postingNode struct{ pred *Pred }

func (p *postingNode) cost() cost { return costPosting }

func (p *postingNode) exec(x *execCtx, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	rows, err := p.read(x)
	if err != nil {
		return nil, err
	}
	x.estimateRows(rows)
	if cand != nil {
		rows.And(cand)
	}
	return rows, nil
}

// read returns the rows of the postings, the caller's to modify: read
// before the execution when they were, else from the source.
func (p *postingNode) read(x *execCtx) (*roaring.Bitmap, error) {
	if rows := x.fetched[p]; rows != nil {
		delete(x.fetched, p)
		return rows, nil
	}
	var rows *roaring.Bitmap
	var err error
	switch p.pred.Op {
	case OpExists:
		rows, err = x.src.Exists(p.pred.Column)
	case OpEq:
		rows, err = x.src.Posting(p.pred.Column, p.pred.Value)
	case OpIn:
		rows = roaring.New()
		for _, v := range p.pred.Values {
			r, err := x.src.Posting(p.pred.Column, v)
			if err != nil {
				return nil, err
			}
			rows.Or(r)
		}
	}
	return rows, err
}

func (p *postingNode) step() *ExplainNode {
	return valueStep("postings", func(hide bool) string { return formatPred(p.pred, hide) })
}

func (p *postingNode) subnodes() []planNode { return nil }

// scanNode evaluates a predicate row by row on the candidates.
type scanNode struct{ pred *Pred }

func (s *scanNode) cost() cost { return costScan }

func (s *scanNode) exec(x *execCtx, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	c, err := x.candidates(cand)
	if err != nil {
		return nil, err
	}
	var vals ColumnValues
	if len(s.pred.JSONPath) == 0 && storable(s.pred.Column) {
		if vals, err = x.src.Values(s.pred.Column); err != nil {
			return nil, err
		}
	}
	if vals != nil && s.pred.Quant == QuantNone && len(s.pred.JSONPath) == 0 {
		if out, ok, err := s.inStrings(x, vals, c); ok || err != nil {
			return out, err
		}
	}
	return x.scanRows(c, s.pred.Column, vals, func(v codec.Value) bool { return matchValue(x.ctx, s.pred, v) })
}

// scanRows keeps the rows of c whose value of col matches: from vals, the
// column's value store, or from the records when vals is nil.
func (x *execCtx) scanRows(c *roaring.Bitmap, col *Column, vals ColumnValues, match func(codec.Value) bool) (*roaring.Bitmap, error) {
	if vals != nil {
		x.via("column store")
	} else {
		x.via("records")
	}
	out := roaring.New()
	it := c.Iterator()
	var rec codec.Record
	for n := 1; it.HasNext(); n++ {
		if err := checkContext(x.ctx, n); err != nil {
			return nil, err
		}
		row := it.Next()
		var ok bool
		if vals != nil {
			ok = match(vals.Get(row))
		} else {
			found, err := x.src.Record(row, &rec)
			if err != nil {
				return nil, err
			}
			if !found {
				continue
			}
			ok = match(recordValue(&rec, col))
		}
		if ok {
			out.Add(row)
		}
	}
	// A match the context cut short said no: the result is incomplete.
	return out, x.ctx.Err()
}

// inStrings evaluates a string operator on the values array of a string
// column: for $contains and $iContains only on the rows the store's
// substring index leaves, and only on rows with a value (a null matches
// no string operator). ok is false when the store hands out no array.
func (s *scanNode) inStrings(x *execCtx, vals ColumnValues, c *roaring.Bitmap) (*roaring.Bitmap, bool, error) {
	dv, ok := vals.(DenseValues)
	if !ok {
		return nil, false, nil
	}
	strs := dv.Strings()
	if strs.Len() == 0 {
		return nil, false, nil
	}
	x.via("column store")
	ctx, p := x.ctx, s.pred
	present := dv.Present()
	var rows, sure *roaring.Bitmap
	match := func(s string) bool { return matchScalar(ctx, p, codec.String(s)) }
	if p.Op == OpContains || p.Op == OpIContains {
		match = substringMatch(p.Value.Str, p.Op == OpIContains)
		if sv, ok := vals.(SubstringValues); ok {
			var in *roaring.Bitmap
			if x.tr != nil {
				in = roaring.And(c, present)
			}
			sub := x.begin("trigram", p.Value, in)
			narrowed, known, ok := sv.SubstringCandidates(p.Value.Str, p.Op == OpIContains)
			if ok {
				// The candidates are few next to c and the present rows:
				// narrow them, not those.
				rows = narrowed
				rows.And(c)
				rows.And(present)
				if known != nil {
					sure = known
					sure.And(rows)
				}
			}
			sub.end(x, rows, ok)
		}
	}
	if rows == nil {
		rows = roaring.And(c, present)
	}
	out := roaring.New()
	if sure != nil && !sure.IsEmpty() {
		out.Or(sure)
		rows.AndNot(sure)
	}
	var buf, keep [256]uint32
	it := rows.ManyIterator()
	for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		k := 0
		for _, row := range buf[:n] {
			if int(row) < strs.Len() && match(strs.At(row)) {
				keep[k] = row
				k++
			}
		}
		out.AddMany(keep[:k])
	}
	// A match the context cut short said no: the result is incomplete.
	return out, true, ctx.Err()
}

func (s *scanNode) step() *ExplainNode {
	return valueStep("scan", func(hide bool) string { return formatPred(s.pred, hide) })
}

func (s *scanNode) subnodes() []planNode { return nil }

// elementsNode evaluates a condition on the elements of a multiple column
// row by row on the candidates.
type elementsNode struct{ elems *Elements }

// cost is that of a row-by-row scan.
func (e *elementsNode) cost() cost { return costScan }

// exec keeps the candidates whose elements match the condition.
func (e *elementsNode) exec(x *execCtx, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	c, err := x.candidates(cand)
	if err != nil {
		return nil, err
	}
	vals, err := x.src.Values(e.elems.Column)
	if err != nil {
		return nil, err
	}
	return x.scanRows(c, e.elems.Column, vals, func(v codec.Value) bool { return matchElements(x.ctx, e.elems, v) })
}

// step is "scan" with the Elements head and its condition on one line.
func (e *elementsNode) step() *ExplainNode {
	return valueStep("scan", func(hide bool) string {
		var b strings.Builder
		formatElementsHead(&b, e.elems)
		b.WriteString(": ")
		formatCondition(&b, e.elems.Cond, false, true, hide)
		return b.String()
	})
}

// subnodes are none: the condition is tested on the elements of each row.
func (e *elementsNode) subnodes() []planNode { return nil }

// linkNode evaluates its inner plan on a link's target table and keeps the
// rows whose link points at a match.
type linkNode struct {
	link  *Column
	inner planNode
}

func (l *linkNode) cost() cost { return costLink }

func (l *linkNode) exec(x *execCtx, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	target, err := x.src.Linked(l.link)
	if err != nil {
		return nil, err
	}
	tx := &execCtx{ctx: x.ctx, src: target, tr: x.tr}
	matches, err := tx.run(l.inner, nil)
	if err != nil {
		return nil, err
	}
	ids, err := recordIDs(x.ctx, target, matches)
	if err != nil {
		return nil, err
	}
	out := roaring.New()
	for _, id := range ids {
		r, err := x.src.Posting(l.link, codec.String(id))
		if err != nil {
			return nil, err
		}
		out.Or(r)
	}
	x.estimateRows(out)
	if cand != nil {
		out.And(cand)
	}
	return out, nil
}

func (l *linkNode) step() *ExplainNode { return step("link", l.link.Path) }

func (l *linkNode) subnodes() []planNode { return []planNode{l.inner} }

// recordIDs returns the public ids of rows, from the id value store when
// there is one.
func recordIDs(ctx context.Context, src Source, rows *roaring.Bitmap) ([]string, error) {
	ids := make([]string, 0, rows.GetCardinality())
	vals, err := src.Values(IDColumn)
	if err != nil {
		return nil, err
	}
	var rec codec.Record
	it := rows.Iterator()
	for n := 1; it.HasNext(); n++ {
		if err := checkContext(ctx, n); err != nil {
			return nil, err
		}
		row := it.Next()
		if vals != nil {
			if v := vals.Get(row); !v.IsNull() {
				ids = append(ids, v.Str)
			}
			continue
		}
		ok, err := src.Record(row, &rec)
		if err != nil {
			return nil, err
		}
		if ok {
			ids = append(ids, rec.ID)
		}
	}
	return ids, nil
}

// recordValue returns a column's value in a stored record, meta columns
// included.
func recordValue(rec *codec.Record, c *Column) codec.Value {
	switch c.ID {
	case MetaIDColumn:
		return codec.String(rec.ID)
	case MetaVersionColumn:
		return codec.Int(int64(rec.Version))
	case MetaCreatedAtColumn:
		return codec.Value{Kind: codec.KindDatetime, Int: rec.CreatedAt}
	case MetaUpdatedAtColumn:
		return codec.Value{Kind: codec.KindDatetime, Int: rec.UpdatedAt}
	}
	v, ok := rec.Get(c.ID)
	if !ok {
		return codec.Null()
	}
	return v
}

// checkEvery is how many rows a loop visits between two looks at its
// context: a look costs about as much as visiting a row of memory.
const checkEvery = 1024

// checkContext returns ctx's error on every checkEvery-th call of a loop
// counting n from 1, else nil.
func checkContext(ctx context.Context, n int) error {
	if n%checkEvery != 0 {
		return nil
	}
	return ctx.Err()
}
