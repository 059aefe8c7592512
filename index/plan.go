package index

import (
	"errors"
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
//   - posting: equality, $is with a list, $includes of a value and $exists
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
	exec(x *execCtx, cand *roaring.Bitmap) (*roaring.Bitmap, error)
	format(b *strings.Builder, depth int)
}

// Plan is an executable filter.
type Plan struct {
	root planNode
}

// String prints the plan as an indented tree.
func (p *Plan) String() string {
	var b strings.Builder
	p.root.format(&b, 0)
	return b.String()
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

// execCtx carries one execution's source and caches.
type execCtx struct {
	src  Source
	live *roaring.Bitmap
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

// Execute returns the rows of src matching the plan.
func (p *Plan) Execute(src Source) (*roaring.Bitmap, error) {
	x := &execCtx{src: src}
	out, err := p.root.exec(x, nil)
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
		r, err := c.exec(x, acc)
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

func (a *andNode) format(b *strings.Builder, depth int) {
	line(b, depth, "and")
	for _, c := range a.children {
		c.format(b, depth+1)
	}
}

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
		r, err := c.exec(x, cand)
		if err != nil {
			return nil, err
		}
		acc.Or(r)
	}
	return acc, nil
}

func (o *orNode) format(b *strings.Builder, depth int) {
	line(b, depth, "or")
	for _, c := range o.children {
		c.format(b, depth+1)
	}
}

// notNode subtracts its child from the candidates.
type notNode struct{ child planNode }

func (n *notNode) cost() cost { return costNot }

func (n *notNode) exec(x *execCtx, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	c, err := x.candidates(cand)
	if err != nil {
		return nil, err
	}
	r, err := n.child.exec(x, c)
	if err != nil {
		return nil, err
	}
	return roaring.AndNot(c, r), nil
}

func (n *notNode) format(b *strings.Builder, depth int) {
	line(b, depth, "not")
	n.child.format(b, depth+1)
}

// postingNode reads postings: equality, lists of values, exists.
type postingNode struct{ pred *Pred }

func (p *postingNode) cost() cost { return costPosting }

func (p *postingNode) exec(x *execCtx, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
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
	if err != nil {
		return nil, err
	}
	if cand != nil {
		rows.And(cand)
	}
	return rows, nil
}

func (p *postingNode) format(b *strings.Builder, depth int) {
	line(b, depth, "posting "+formatPred(p.pred))
}

// rangeNode compares values of the candidates against one or two bounds
// of one column: in memory when the column has a value store, else by
// scanning the ordered index.
type rangeNode struct{ preds []*Pred }

// mergeRanges joins the range nodes of an and that compare the same column,
// so that a two-sided range is one pass.
func mergeRanges(children []planNode) []planNode {
	out := children[:0:0]
	byCol := map[*Column]*rangeNode{}
	for _, c := range children {
		r, ok := c.(*rangeNode)
		if !ok || r.preds[0].Op == OpStartsWith {
			out = append(out, c)
			continue
		}
		col := r.preds[0].Column
		if prev := byCol[col]; prev != nil {
			prev.preds = append(prev.preds, r.preds...)
			continue
		}
		merged := &rangeNode{preds: append([]*Pred(nil), r.preds...)}
		byCol[col] = merged
		out = append(out, merged)
	}
	return out
}

func (r *rangeNode) cost() cost { return costRange }

func (r *rangeNode) exec(x *execCtx, cand *roaring.Bitmap) (*roaring.Bitmap, error) {
	col := r.preds[0].Column
	vals, err := x.src.Values(col)
	if err != nil {
		return nil, err
	}
	if vals != nil {
		if out, ok := r.inOrder(vals, cand); ok {
			return out, nil
		}
	}
	c, err := x.candidates(cand)
	if err != nil {
		return nil, err
	}
	if vals != nil {
		if out, ok := r.typed(vals, c); ok {
			return out, nil
		}
		out := roaring.New()
		it := c.Iterator()
		for it.HasNext() {
			row := it.Next()
			v := vals.Get(row)
			if r.match(v) {
				out.Add(row)
			}
		}
		return out, nil
	}
	out := c.Clone()
	for _, p := range r.preds {
		rows := roaring.New()
		err = x.src.Scan(col, rangeBounds(p), false, func(_ codec.Value, found *roaring.Bitmap) bool {
			rows.Or(found)
			return true
		})
		if errors.Is(err, ErrNoOrderedIndex) {
			return r.scanRecords(x, c)
		}
		if err != nil {
			return nil, err
		}
		out.And(rows)
	}
	return out, nil
}

// scanRecords evaluates the range on the records of the candidates, for a
// column the source keeps in no ordered index.
func (r *rangeNode) scanRecords(x *execCtx, c *roaring.Bitmap) (*roaring.Bitmap, error) {
	out := roaring.New()
	var rec codec.Record
	it := c.Iterator()
	for it.HasNext() {
		row := it.Next()
		found, err := x.src.Record(row, &rec)
		if err != nil {
			return nil, err
		}
		if found && r.match(recordValue(&rec, r.preds[0].Column)) {
			out.Add(row)
		}
	}
	return out, nil
}

// inOrder answers the range from the column's in-memory order: a binary
// search and the rows of a slice of it. ok is false when the store keeps
// no order, the bounds do not suit it, or the candidates are so few that
// comparing their values is cheaper.
func (r *rangeNode) inOrder(vals ColumnValues, cand *roaring.Bitmap) (*roaring.Bitmap, bool) {
	if dv, ok := vals.(DenseValues); !ok || (cand != nil && cand.GetCardinality() < dv.Present().GetCardinality()/16) {
		return nil, false
	}
	fo, io, ok := ordered(vals, r.preds[0].Column.Type)
	switch {
	case !ok:
		return nil, false
	case fo.order != nil:
		b, ok := floatBounds(r.preds)
		if !ok {
			return nil, false
		}
		return fo.filter(cand, b), true
	}
	b, ok := intBounds(r.preds)
	if !ok {
		return nil, false
	}
	return io.filter(cand, b), true
}

// estimate returns how many rows the range holds, when the column keeps an
// in-memory order.
func (r *rangeNode) estimate(x *execCtx) (uint64, bool) {
	vals, err := x.src.Values(r.preds[0].Column)
	if err != nil || vals == nil {
		return 0, false
	}
	fo, io, ok := ordered(vals, r.preds[0].Column.Type)
	switch {
	case !ok:
		return 0, false
	case fo.order != nil:
		b, ok := floatBounds(r.preds)
		if !ok {
			return 0, false
		}
		i, j := fo.span(b)
		return uint64(j - i), true
	}
	b, ok := intBounds(r.preds)
	if !ok {
		return 0, false
	}
	i, j := io.span(b)
	return uint64(j - i), true
}

func (r *rangeNode) match(v codec.Value) bool {
	for _, p := range r.preds {
		if !matchScalar(p, v) {
			return false
		}
	}
	return true
}

// typed compares the array of a float, int or datetime column directly
// when its store exposes one; ok is false when it cannot.
func (r *rangeNode) typed(vals ColumnValues, c *roaring.Bitmap) (out *roaring.Bitmap, ok bool) {
	dv, dense := vals.(DenseValues)
	if !dense {
		return nil, false
	}
	switch r.preds[0].Column.Type {
	case "float":
		b, ok := floatBounds(r.preds)
		arr := dv.Floats()
		if !ok || arr == nil {
			return nil, false
		}
		return filterTyped(c, dv.Present(), arr, b), true
	case "int", "datetime":
		b, ok := intBounds(r.preds)
		arr := dv.Ints()
		if !ok || arr == nil {
			return nil, false
		}
		return filterTyped(c, dv.Present(), arr, b), true
	}
	return nil, false
}

// filterTyped keeps the rows of c ∩ present whose value in arr lies in b.
// When the candidates are a large part of the table it scans the whole
// array in one tight loop and intersects afterwards; otherwise it visits
// the candidates.
func filterTyped[T int64 | float64](c, present *roaring.Bitmap, arr []T, b bounds[T]) *roaring.Bitmap {
	if c.GetCardinality() > uint64(len(arr))/8 {
		hits := make([]uint32, 0, 1024)
		for i, v := range arr {
			if b.holds(v) {
				hits = append(hits, uint32(i))
			}
		}
		out := roaring.New()
		out.AddMany(hits)
		out.And(present)
		out.And(c)
		return out
	}
	out := roaring.New()
	var buf, keep [256]uint32
	it := roaring.And(c, present).ManyIterator()
	for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
		k := 0
		for _, row := range buf[:n] {
			if b.holds(arr[row]) {
				keep[k] = row
				k++
			}
		}
		out.AddMany(keep[:k])
	}
	return out
}

// bounds is an interval of an ordered type, each side open or closed.
type bounds[T int64 | float64] struct {
	lo, hi         T
	hasLo, hasHi   bool
	loIncl, hiIncl bool
}

func (b *bounds[T]) add(op Op, v T) bool {
	switch op {
	case OpGt, OpGe:
		if !b.hasLo || v > b.lo || (v == b.lo && op == OpGt) {
			b.lo, b.loIncl, b.hasLo = v, op == OpGe, true
		}
	case OpLt, OpLe:
		if !b.hasHi || v < b.hi || (v == b.hi && op == OpLt) {
			b.hi, b.hiIncl, b.hasHi = v, op == OpLe, true
		}
	default:
		return false
	}
	return true
}

func (b *bounds[T]) holds(v T) bool {
	if b.hasLo && (v < b.lo || (v == b.lo && !b.loIncl)) {
		return false
	}
	return !b.hasHi || v < b.hi || (v == b.hi && b.hiIncl)
}

func floatBounds(preds []*Pred) (bounds[float64], bool) {
	var b bounds[float64]
	for _, p := range preds {
		var v float64
		switch p.Value.Kind {
		case codec.KindFloat:
			v = p.Value.Float
		case codec.KindInt:
			v = float64(p.Value.Int)
		default:
			return b, false
		}
		if math.IsNaN(v) || !b.add(p.Op, v) {
			return b, false
		}
	}
	return b, true
}

func intBounds(preds []*Pred) (bounds[int64], bool) {
	var b bounds[int64]
	kind := preds[0].Column.Type
	for _, p := range preds {
		want := codec.KindInt
		if kind == "datetime" {
			want = codec.KindDatetime
		}
		if p.Value.Kind != want || !b.add(p.Op, p.Value.Int) {
			return b, false
		}
	}
	return b, true
}

func (r *rangeNode) format(b *strings.Builder, depth int) {
	parts := make([]string, len(r.preds))
	for i, p := range r.preds {
		parts[i] = formatPred(p)
	}
	line(b, depth, "range "+strings.Join(parts, " and "))
}

// rangeBounds turns a comparison or prefix into scan bounds.
func rangeBounds(p *Pred) Bounds {
	v := p.Value
	switch p.Op {
	case OpLt:
		return Bounds{Hi: &v}
	case OpLe:
		return Bounds{Hi: &v, HiIncl: true}
	case OpGt:
		return Bounds{Lo: &v}
	case OpGe:
		return Bounds{Lo: &v, LoIncl: true}
	case OpStartsWith:
		s := v.Str
		return Bounds{Prefix: &s}
	}
	return Bounds{}
}

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
		if out, ok := s.inStrings(vals, c); ok {
			return out, nil
		}
	}
	return x.scanRows(c, s.pred.Column, vals, func(v codec.Value) bool { return matchValue(s.pred, v) })
}

// scanRows keeps the rows of c whose value of col matches: from vals, the
// column's value store, or from the records when vals is nil.
func (x *execCtx) scanRows(c *roaring.Bitmap, col *Column, vals ColumnValues, match func(codec.Value) bool) (*roaring.Bitmap, error) {
	out := roaring.New()
	it := c.Iterator()
	var rec codec.Record
	for it.HasNext() {
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
	return out, nil
}

// inStrings evaluates a string operator on the values array of a string
// column: for $contains and $iContains only on the rows the store's
// substring index leaves, and only on rows with a value (a null matches
// no string operator). ok is false when the store hands out no array.
func (s *scanNode) inStrings(vals ColumnValues, c *roaring.Bitmap) (*roaring.Bitmap, bool) {
	dv, ok := vals.(DenseValues)
	if !ok {
		return nil, false
	}
	strs := dv.Strings()
	if strs == nil {
		return nil, false
	}
	p := s.pred
	rows := roaring.And(c, dv.Present())
	if sv, ok := vals.(SubstringValues); ok && (p.Op == OpContains || p.Op == OpIContains) {
		if narrowed, ok := sv.SubstringCandidates(p.Value.Str, p.Op == OpIContains); ok {
			rows.And(narrowed)
		}
	}
	out := roaring.New()
	var buf, keep [256]uint32
	it := rows.ManyIterator()
	for n := it.NextMany(buf[:]); n > 0; n = it.NextMany(buf[:]) {
		k := 0
		for _, row := range buf[:n] {
			if int(row) < len(strs) && matchScalar(p, codec.String(strs[row])) {
				keep[k] = row
				k++
			}
		}
		out.AddMany(keep[:k])
	}
	return out, true
}

func (s *scanNode) format(b *strings.Builder, depth int) {
	line(b, depth, "scan "+formatPred(s.pred))
}

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
	return x.scanRows(c, e.elems.Column, vals, func(v codec.Value) bool { return matchElements(e.elems, v) })
}

// format prints "scan", the Elements head, and its condition below.
func (e *elementsNode) format(b *strings.Builder, depth int) {
	b.WriteString(strings.Repeat("  ", depth))
	b.WriteString("scan ")
	formatElementsHead(b, e.elems)
	b.WriteByte('\n')
	formatFilterNode(b, e.elems.Cond, depth+1, true)
}

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
	tx := &execCtx{src: target}
	matches, err := l.inner.exec(tx, nil)
	if err != nil {
		return nil, err
	}
	ids, err := recordIDs(target, matches)
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
	if cand != nil {
		out.And(cand)
	}
	return out, nil
}

func (l *linkNode) format(b *strings.Builder, depth int) {
	line(b, depth, "link "+l.link.Path)
	l.inner.format(b, depth+1)
}

// recordIDs returns the public ids of rows, from the id value store when
// there is one.
func recordIDs(src Source, rows *roaring.Bitmap) ([]string, error) {
	ids := make([]string, 0, rows.GetCardinality())
	vals, err := src.Values(IDColumn)
	if err != nil {
		return nil, err
	}
	var rec codec.Record
	it := rows.Iterator()
	for it.HasNext() {
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

func line(b *strings.Builder, depth int, s string) {
	b.WriteString(strings.Repeat("  ", depth))
	b.WriteString(s)
	b.WriteByte('\n')
}
