package index

// This file turns filter JSON (spec §4.1.5, compat-api §12) into the AST of
// ast.go. The parser checks everything it can without data: columns exist,
// operators apply to the column's type, literals convert to it. What is left
// to the planner is only how to evaluate.
//
// Forms and what they become:
//
//	{}                                  And{} (everything)
//	{"a": 1, "b": 2}                    And{a = 1, b = 2}, keys in sorted order
//	{"$any": [f...]}, {"$all": [f...]}  Or{f...}, And{f...}; [] gives Or{} (nothing), And{}
//	{"$none": f}, {"$not": f}           Not{Or{f...}}, Not{And{f...}}
//	{"$any": {"a": 1, "b": 2}}          Or{a = 1, b = 2}: several keys are operands of their own
//	{"$exists": "col"}                  Pred exists; $existsNot/$notExists: Not{exists}
//	{"col": literal}                    Pred =, literal converted to the column type
//	{"col": {"$is": [v...]}}            Pred in (one value: =, none: Or{})
//	{"col": {"$isNot": v}}              Not{Pred =}
//	{"col": {"$gt": 1, "$le": 9}}       And{Pred >, Pred <=}
//	{"col": {"$any": [p...]}}           Or of the predicates; only values: Pred in
//	{"col": {"$any": {"$lt": 0, "$gt": 9}}}  Or{Pred <, Pred >}, operands as above
//	{"obj": {"sub": x}}, {"obj.sub": x} the same Pred on column obj.sub
//	{"link": {"col": x}}, {"link.col": x}  Pred with Links [link]
//	{"link": "rec_1"}                   Pred link = "rec_1" (the target id)
//	{"tags": "x"}                       Pred tags any = "x" (as $includes)
//	{"tags": {"$includesAll": p}}       Pred tags all p
//	{"tags": {"$includes": {"$all": [p, q]}}}  Elements{any, And{p, q}} (see quantify)
//	{"js->a->b": x}                     Pred on js with JSONPath [a b]
//
// $exists on an object column becomes an Or of $exists on its leaf columns.
//
// A json path predicate does not match a record lacking the path, not even
// under a negation (compat-api §12): the parser moves negations above json
// path predicates down to them and turns each negated one into
// And{Pred exists path, Not{Pred}}. So Not never applies to a json path
// predicate other than exists, and the planner needs no three-valued logic.

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/coppice-db/coppice/codec"
)

// maxFilterDepth bounds the nesting of a filter, so a hostile one cannot
// exhaust the stack of the parser or of anything that walks the AST.
const maxFilterDepth = 64

// ParseFilter parses the JSON text of a filter on table t:
// "<t.Meta>.version", "<t.Meta>.createdAt" and "<t.Meta>.updatedAt" name
// the meta columns, as "id" does. Empty input or null is no filter
// (And{}). Errors are *InputError.
func ParseFilter(t *Table, raw []byte) (Node, error) {
	f, err := ReadFilter(raw)
	if err != nil {
		return nil, err
	}
	return f.Bind(t)
}

// ParseFilterValue parses a filter already decoded from JSON: maps,
// []any, strings, bools, nil, and numbers as json.Number, float64 or Go
// integers; datetime literals may also be time.Time. nil is no filter.
// The AST shares no memory with v.
func ParseFilterValue(t *Table, v any) (Node, error) {
	if v == nil {
		return &And{}, nil
	}
	p := &filterParser{}
	n, err := p.filter(scope{table: t}, v, "the filter")
	if err != nil {
		return nil, err
	}
	if hasJSONPath(n) {
		n = lowerJSONPaths(n, false)
	}
	return n, nil
}

// filterErrorf makes an *InputError with the "filter: " prefix.
func filterErrorf(format string, args ...any) error {
	return &InputError{Message: "filter: " + fmt.Sprintf(format, args...)}
}

// filterParser holds the state of one parse.
type filterParser struct {
	depth int
}

// enter counts one level of nesting; leave with p.depth--.
func (p *filterParser) enter() error {
	p.depth++
	if p.depth > maxFilterDepth {
		return filterErrorf("nested deeper than %d levels", maxFilterDepth)
	}
	return nil
}

// scope is where column names of a filter object resolve: a table reached
// through links, and inside it an object column's prefix.
type scope struct {
	table  *Table
	links  []*Column
	prefix string // "address." inside the object column address
	name   string // the same place as written from the root, for messages
}

// colRef is a resolved column name: the target of a predicate.
type colRef struct {
	name     string // as written from the filter root, for messages
	table    *Table // the table holding col
	links    []*Column
	col      *Column
	jsonPath []string
	// elem is set for the element predicates of $includes*.
	elem bool
}

// errorf makes an *InputError naming the column.
func (r *colRef) errorf(format string, args ...any) error {
	return filterErrorf("column [%s]: "+format, append([]any{r.name}, args...)...)
}

// pred starts a predicate on the target.
func (r *colRef) pred(op Op) *Pred {
	p := &Pred{Links: r.links, Column: r.col, Op: op, JSONPath: r.jsonPath}
	if !r.elem && r.col.Type == TypeMultiple && r.jsonPath == nil && op != OpExists {
		p.Quant = QuantAny
	}
	return p
}

// target classes decide which operators and literals apply.
type target uint8

// The targets.
const (
	tgScalar   target = iota // a column of a scalar type, or a link id
	tgMultiple               // a multiple column as a whole
	tgElem                   // an element of a multiple column
	tgJSONPath               // a key path inside a json column
	tgJSON                   // a json column as a whole
	tgNone                   // vector, file, file[], object: only $exists
)

// target classifies r for the operator and literal checks.
func (r *colRef) target() target {
	switch {
	case r.elem:
		return tgElem
	case r.jsonPath != nil:
		return tgJSONPath
	}
	switch r.col.Type {
	case TypeBool, TypeInt, TypeFloat, TypeString, TypeText, TypeEmail, TypeDatetime, TypeLink:
		return tgScalar
	case TypeMultiple:
		return tgMultiple
	case TypeJSON:
		return tgJSON
	}
	return tgNone
}

// filter parses a filter object: several keys are AND-ed.
func (p *filterParser) filter(s scope, v any, what string) (Node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, filterErrorf("%s must be an object, got %s", what, describe(v))
	}
	var children []Node
	for _, k := range sortedKeys(obj) {
		n, err := p.filterKey(s, k, obj[k])
		if err != nil {
			return nil, err
		}
		children = append(children, n)
	}
	return andOf(children), nil
}

// filterKey parses one key of a filter object: a combinator, an exists
// operator or a column.
func (p *filterParser) filterKey(s scope, k string, v any) (Node, error) {
	switch k {
	case "$any", "$all", "$none", "$not":
		children, err := p.operands(s, k, v)
		if err != nil {
			return nil, err
		}
		return combine(k, children), nil
	case "$exists", "$existsNot", "$notExists":
		name, ok := v.(string)
		if !ok {
			return nil, filterErrorf("%s needs a column name, got %s", k, describe(v))
		}
		r, err := p.resolve(s, name)
		if err != nil {
			return nil, err
		}
		n := existsNode(r)
		if k != "$exists" {
			return &Not{Child: n}, nil
		}
		return n, nil
	}
	if strings.HasPrefix(k, "$") {
		if s.name != "" {
			return nil, filterErrorf("column [%s]: unknown operator [%s]", strings.TrimSuffix(s.name, "."), k)
		}
		return nil, filterErrorf("unknown operator [%s]", k)
	}
	r, err := p.resolve(s, k)
	if err != nil {
		return nil, err
	}
	return p.column(r, v)
}

// operands parses the operand of a combinator in a filter: a list of
// filters, or one filter (see operandItems).
func (p *filterParser) operands(s scope, k string, v any) ([]Node, error) {
	items := operandItems(v)
	children := make([]Node, 0, len(items))
	for _, item := range items {
		n, err := p.filter(s, item, "each filter of "+k)
		if err != nil {
			return nil, err
		}
		children = append(children, n)
	}
	return children, nil
}

// operandItems returns the items a combinator ($any, $all, $none, $not)
// applies to: those of a list; for an object of several keys, each key as
// an object of its own, as the legacy service read {"$any": {"a": 1, "b":
// 2}} (a or b), so that $any and $none OR the keys and $all and $not AND
// them, in filters, on columns and on elements alike; anything else alone.
func operandItems(v any) []any {
	if obj, ok := v.(map[string]any); ok && len(obj) > 1 {
		items := make([]any, 0, len(obj))
		for _, k := range sortedKeys(obj) {
			items = append(items, map[string]any{k: obj[k]})
		}
		return items
	}
	return listOrOne(v)
}

// combine joins the parsed operands of combinator k: $any is their Or,
// $all their And, $none the negation of their Or, $not the negation of
// their And.
func combine(k string, children []Node) Node {
	switch k {
	case "$any":
		return orOf(children)
	case "$all":
		return andOf(children)
	case "$none":
		return &Not{Child: orOf(children)}
	}
	return &Not{Child: andOf(children)}
}

// existsNode is $exists on a column; on an object column, on any of its
// leaf columns.
func existsNode(r *colRef) Node {
	if r.col.Type != TypeObject || r.jsonPath != nil {
		return r.pred(OpExists)
	}
	prefix := r.col.Path + "."
	var leaves []string
	for path, c := range r.table.Columns {
		if strings.HasPrefix(path, prefix) && c.Type != TypeObject {
			leaves = append(leaves, path)
		}
	}
	sort.Strings(leaves)
	children := make([]Node, 0, len(leaves))
	for _, path := range leaves {
		children = append(children, &Pred{Links: r.links, Column: r.table.Columns[path], Op: OpExists})
	}
	return orOf(children)
}

// resolve finds a column name, dotted and possibly through links and with
// a json path, in scope s.
func (p *filterParser) resolve(s scope, name string) (*colRef, error) {
	full := s.name + name
	colName, jsonPart, hasJSON := strings.Cut(name, "->")
	var jsonPath []string
	if hasJSON {
		jsonPath = strings.Split(jsonPart, "->")
		if slices.Contains(jsonPath, "") {
			return nil, filterErrorf("column [%s]: empty key in json path", full)
		}
	}
	notFound := func() error {
		return filterErrorf("column [%s]: column not found", full)
	}
	tbl, links, prefix := s.table, s.links, s.prefix
	segs := strings.Split(colName, ".")
	for i := 0; i < len(segs); i++ {
		if segs[i] == "" || tbl == nil {
			return nil, notFound()
		}
		c := tbl.Columns[prefix+segs[i]]
		if c == nil && prefix == "" {
			var n int
			c, n = metaColumn(tbl, segs[i:])
			i += n - 1
		}
		if c == nil {
			return nil, notFound()
		}
		if i == len(segs)-1 {
			r := &colRef{name: full, table: tbl, links: links, col: c, jsonPath: jsonPath}
			if hasJSON && c.Type != TypeJSON {
				return nil, r.errorf("-> paths need a json column, not %s", c.Type)
			}
			return r, nil
		}
		switch c.Type {
		case TypeObject:
			prefix = c.Path + "."
		case TypeLink:
			links = append(slices.Clip(links), c)
			tbl, prefix = c.Link, ""
		default:
			return nil, notFound()
		}
	}
	return nil, notFound()
}

// metaColumn resolves a meta column of t at the start of segs and says
// how many segments it took.
func metaColumn(t *Table, segs []string) (*Column, int) {
	if segs[0] == "id" {
		return IDColumn, 1
	}
	if len(segs) < 2 || t.Meta == "" || segs[0] != t.Meta {
		return nil, 0
	}
	switch segs[1] {
	case "version":
		return VersionColumn, 2
	case "createdAt":
		return CreatedAtColumn, 2
	case "updatedAt":
		return UpdatedAtColumn, 2
	}
	return nil, 0
}

// column parses the condition on a column key of a filter object.
func (p *filterParser) column(r *colRef, v any) (Node, error) {
	switch {
	case r.jsonPath == nil && r.col.Type == TypeObject:
		return p.filter(p.inside(r), v, "the filter of object column ["+r.name+"]")
	case r.target() == tgNone:
		return nil, r.errorf("%s columns can only be filtered with $exists", r.col.Type)
	}
	return p.predicate(r, v)
}

// inside is the scope of a nested filter on an object or link column.
func (p *filterParser) inside(r *colRef) scope {
	if r.col.Type == TypeLink {
		return scope{table: r.col.Link, links: append(slices.Clip(r.links), r.col), name: r.name + "."}
	}
	return scope{table: r.table, links: r.links, prefix: r.col.Path + ".", name: r.name + "."}
}

// isLinkFilter reports whether obj, on a link column, filters the linked
// record rather than the link's target id.
func isLinkFilter(obj map[string]any) bool {
	if len(obj) == 0 {
		return true
	}
	for k := range obj {
		if !strings.HasPrefix(k, "$") || k == "$exists" || k == "$existsNot" || k == "$notExists" {
			return true
		}
	}
	return false
}

// predicate parses a literal or a predicate object on r.
func (p *filterParser) predicate(r *colRef, v any) (Node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	switch x := v.(type) {
	case map[string]any:
		if r.target() == tgScalar && r.col.Type == TypeLink && isLinkFilter(x) {
			if r.col.Link == nil {
				return nil, r.errorf("link column has no target table")
			}
			return p.filter(p.inside(r), x, "the filter of link column ["+r.name+"]")
		}
		return p.predicateObject(r, x)
	case []any, []string, nil:
		return nil, r.errorf("a condition must be a value or an operator object, got %s (use $any or $is for a list)", describe(v))
	}
	return p.is(r, v, "$is")
}

// predicateObject parses an operator object on r: one operator, or a
// range of two.
func (p *filterParser) predicateObject(r *colRef, obj map[string]any) (Node, error) {
	keys := sortedKeys(obj)
	switch len(keys) {
	case 0:
		return nil, r.errorf("empty operator object")
	case 1:
	case 2:
		if isRangeOp(keys[0]) || isRangeOp(keys[1]) {
			preds, err := p.rangePair(r, obj, keys)
			if err != nil {
				return nil, err
			}
			return &And{Children: []Node{preds[0], preds[1]}}, nil
		}
		fallthrough
	default:
		return nil, r.errorf("an operator object takes one operator, or two of $lt/$le/$gt/$ge, got [%s]", strings.Join(keys, " "))
	}
	k, v := keys[0], obj[keys[0]]
	switch k {
	case "$is":
		return p.is(r, v, k)
	case "$isNot":
		n, err := p.is(r, v, k)
		if err != nil {
			return nil, err
		}
		return &Not{Child: n}, nil
	case "$any", "$all", "$none", "$not":
		// As in filters, the operators of one object with several are
		// operands of their own: {"$any": {"$lt": 0, "$gt": 9}} is an Or,
		// {"$not": {"$gt": 0, "$lt": 9}} negates a range.
		items := operandItems(v)
		if k == "$any" && allLiterals(items) && len(items) > 0 {
			return p.is(r, items, k)
		}
		children := make([]Node, 0, len(items))
		for _, item := range items {
			n, err := p.predicate(r, item)
			if err != nil {
				return nil, err
			}
			children = append(children, n)
		}
		return combine(k, children), nil
	case "$lt", "$le", "$gt", "$ge":
		return p.compare(r, k, v)
	case "$contains", "$iContains", "$startsWith", "$endsWith", "$pattern", "$iPattern":
		return p.stringOp(r, k, v)
	case "$includes", "$includesAny", "$includesAll", "$includesNone":
		return p.includes(r, k, v)
	}
	if strings.HasPrefix(k, "$") {
		return nil, r.errorf("unknown operator [%s]", k)
	}
	return nil, r.errorf("[%s] is not an operator, and %s columns have no sub-columns", k, r.col.Type)
}

// is parses $is (and literals): a value is an equality, a list of values
// an OpIn.
func (p *filterParser) is(r *colRef, v any, op string) (Node, error) {
	switch r.target() {
	case tgScalar, tgMultiple, tgElem, tgJSONPath, tgJSON:
	default:
		return nil, r.errorf("%s columns can only be filtered with $exists", r.col.Type)
	}
	items, isList := asList(v)
	if !isList {
		val, err := p.literal(r, op, v)
		if err != nil {
			return nil, err
		}
		pr := r.pred(OpEq)
		pr.Value = val
		return pr, nil
	}
	vals := make([]codec.Value, 0, len(items))
	for _, item := range items {
		val, err := p.literal(r, op, item)
		if err != nil {
			return nil, err
		}
		vals = append(vals, val)
	}
	switch len(vals) {
	case 0:
		return &Or{}, nil
	case 1:
		pr := r.pred(OpEq)
		pr.Value = vals[0]
		return pr, nil
	}
	pr := r.pred(OpIn)
	pr.Values = vals
	return pr, nil
}

// rangeOps are the comparison operators of ranges.
var rangeOps = map[string]Op{"$lt": OpLt, "$le": OpLe, "$gt": OpGt, "$ge": OpGe}

// isRangeOp reports whether k is one of $lt, $le, $gt, $ge.
func isRangeOp(k string) bool { _, ok := rangeOps[k]; return ok }

// rangePair parses a range object: one lower and one upper bound.
func (p *filterParser) rangePair(r *colRef, obj map[string]any, keys []string) ([2]*Pred, error) {
	lower := func(k string) bool { return k == "$gt" || k == "$ge" }
	upper := func(k string) bool { return k == "$lt" || k == "$le" }
	a, b := keys[0], keys[1]
	if !(lower(a) && upper(b) || upper(a) && lower(b)) {
		return [2]*Pred{}, r.errorf("a range takes one of $gt/$ge and one of $lt/$le, got [%s %s]", a, b)
	}
	if upper(a) {
		a, b = b, a
	}
	lo, err := p.compare(r, a, obj[a])
	if err != nil {
		return [2]*Pred{}, err
	}
	hi, err := p.compare(r, b, obj[b])
	if err != nil {
		return [2]*Pred{}, err
	}
	return [2]*Pred{lo, hi}, nil
}

// compare parses $lt, $le, $gt, $ge.
func (p *filterParser) compare(r *colRef, k string, v any) (*Pred, error) {
	switch r.target() {
	case tgScalar:
		switch r.col.Type {
		case TypeInt, TypeFloat, TypeDatetime, TypeString, TypeEmail:
		default:
			return nil, r.errorf("%s is not supported on %s columns", k, r.col.Type)
		}
	case tgElem:
	case tgJSONPath:
		if _, ok := numberOf(v); !ok {
			return nil, r.errorf("%s on a json path needs a number, got %s", k, describe(v))
		}
	case tgMultiple:
		return nil, r.errorf("%s on a multiple column needs $includes, $includesAll or $includesNone", k)
	case tgJSON:
		return nil, r.errorf("%s on a json column needs a path (%s->key)", k, r.name)
	default:
		return nil, r.errorf("%s columns can only be filtered with $exists", r.col.Type)
	}
	if _, isList := asList(v); isList || isObject(v) || v == nil {
		return nil, r.errorf("%s needs a single value, got %s", k, describe(v))
	}
	val, err := p.literal(r, k, v)
	if err != nil {
		return nil, err
	}
	pr := r.pred(rangeOps[k])
	pr.Value = val
	return pr, nil
}

// stringOps are the operators on strings.
var stringOps = map[string]Op{
	"$contains": OpContains, "$iContains": OpIContains,
	"$startsWith": OpStartsWith, "$endsWith": OpEndsWith,
	"$pattern": OpPattern, "$iPattern": OpIPattern,
}

// stringOp parses $contains, $iContains, $startsWith, $endsWith, $pattern
// and $iPattern.
func (p *filterParser) stringOp(r *colRef, k string, v any) (*Pred, error) {
	switch r.target() {
	case tgScalar:
		switch r.col.Type {
		case TypeString, TypeText, TypeEmail:
		default:
			return nil, r.errorf("%s is not supported on %s columns", k, r.col.Type)
		}
	case tgElem, tgJSONPath:
	case tgMultiple:
		return nil, r.errorf("%s on a multiple column needs $includes, $includesAll or $includesNone", k)
	case tgJSON:
		return nil, r.errorf("%s on a json column needs a path (%s->key)", k, r.name)
	default:
		return nil, r.errorf("%s columns can only be filtered with $exists", r.col.Type)
	}
	s, ok := v.(string)
	if !ok {
		return nil, r.errorf("%s needs a string, got %s", k, describe(v))
	}
	op := stringOps[k]
	pr := r.pred(op)
	pr.Value = codec.String(s)
	if op == OpPattern || op == OpIPattern {
		pat, err := CompilePattern(s, op == OpIPattern)
		if err != nil {
			return nil, r.errorf("%s: %v", k, err)
		}
		pr.Pattern = pat
	}
	return pr, nil
}

// includesQuant maps the array operators to their quantifiers.
var includesQuant = map[string]Quantifier{
	"$includes": QuantAny, "$includesAny": QuantAny,
	"$includesAll": QuantAll, "$includesNone": QuantNoElement,
}

// includes parses the array operators. Their value is an element
// predicate (see element), or a list of them meaning any of them; the
// condition they make on one element is quantified by quantify.
func (p *filterParser) includes(r *colRef, k string, v any) (Node, error) {
	if r.target() != tgMultiple {
		return nil, r.errorf("%s needs a multiple column, not %s", k, r.col.Type)
	}
	er := *r
	er.elem, er.links = true, nil
	cond, err := p.elementAny(&er, k, listOrOne(v))
	if err != nil {
		return nil, err
	}
	return quantify(r, includesQuant[k], cond), nil
}

// quantify applies an array operator's quantifier to a condition on one
// element. Where quantified Preds express it, it becomes them, so that
// the planner can read postings: some element matching any of several
// conditions is an Or of them, every element matching all of them an And
// (of at least one), no element matching any of them an And of Nones.
// Any other condition ("some element starts with a and ends with z") is
// an Elements node. r is the multiple column; cond's Preds carry no Links.
func quantify(r *colRef, q Quantifier, cond Node) Node {
	switch c := cond.(type) {
	case *Pred:
		c.Links, c.Quant = r.links, q
		return c
	case *Or:
		switch {
		case q == QuantAll && len(c.Children) == 0:
			return &Or{} // every element of a non-empty list matches nothing
		case q == QuantAny || q == QuantNoElement:
			children := make([]Node, len(c.Children))
			for i, child := range c.Children {
				children[i] = quantify(r, q, child)
			}
			if q == QuantAny {
				return orOf(children)
			}
			return andOf(children)
		}
	case *And:
		if q == QuantAll && len(c.Children) > 0 {
			children := make([]Node, len(c.Children))
			for i, child := range c.Children {
				children[i] = quantify(r, q, child)
			}
			return andOf(children)
		}
	}
	return &Elements{Links: r.links, Column: r.col, Quant: q, Cond: cond}
}

// elementAny parses element predicates meaning any of them: an Or, with
// the equalities first and joined in one Pred "in".
func (p *filterParser) elementAny(r *colRef, k string, items []any) (Node, error) {
	var eqs []codec.Value
	var others []Node
	var add func(n Node)
	add = func(n Node) {
		switch n := n.(type) {
		case *Pred:
			switch n.Op {
			case OpEq:
				eqs = append(eqs, n.Value)
				return
			case OpIn:
				eqs = append(eqs, n.Values...)
				return
			}
		case *Or:
			for _, c := range n.Children {
				add(c)
			}
			return
		}
		others = append(others, n)
	}
	for _, item := range items {
		if isList(item) {
			return nil, r.errorf("%s takes values or predicates, not nested lists", k)
		}
		n, err := p.element(r, k, item)
		if err != nil {
			return nil, err
		}
		add(n)
	}
	var children []Node
	switch len(eqs) {
	case 0:
	case 1:
		pr := r.pred(OpEq)
		pr.Value = eqs[0]
		children = append(children, pr)
	default:
		pr := r.pred(OpIn)
		pr.Values = eqs
		children = append(children, pr)
	}
	return orOf(append(children, others...)), nil
}

// element parses one element predicate of an array operator k: a value,
// or an object of one predicate operator (or a range of two) on the
// element. $any, $all, $none and $not combine element predicates as they
// combine predicates on a column, $isNot negates $is; the array operators
// do not apply to an element.
func (p *filterParser) element(r *colRef, k string, v any) (Node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	obj, ok := v.(map[string]any)
	if !ok {
		if isList(v) {
			return nil, r.errorf("%s takes values or predicates, not nested lists", k)
		}
		return p.is(r, v, k)
	}
	keys := sortedKeys(obj)
	if len(keys) == 2 && (isRangeOp(keys[0]) || isRangeOp(keys[1])) {
		preds, err := p.rangePair(r, obj, keys)
		if err != nil {
			return nil, err
		}
		return &And{Children: []Node{preds[0], preds[1]}}, nil
	}
	if len(keys) != 1 {
		return nil, r.errorf("an operator object in %s takes one operator, or two of $lt/$le/$gt/$ge, got [%s]", k, strings.Join(keys, " "))
	}
	op, val := keys[0], obj[keys[0]]
	switch op {
	case "$is":
		return p.is(r, val, op)
	case "$isNot":
		n, err := p.is(r, val, op)
		if err != nil {
			return nil, err
		}
		return &Not{Child: n}, nil
	case "$lt", "$le", "$gt", "$ge":
		pr, err := p.compare(r, op, val)
		if err != nil {
			return nil, err
		}
		return pr, nil
	case "$contains", "$iContains", "$startsWith", "$endsWith", "$pattern", "$iPattern":
		pr, err := p.stringOp(r, op, val)
		if err != nil {
			return nil, err
		}
		return pr, nil
	case "$any", "$none":
		n, err := p.elementAny(r, k, operandItems(val))
		if err != nil {
			return nil, err
		}
		if op == "$none" {
			return &Not{Child: n}, nil
		}
		return n, nil
	case "$all", "$not":
		items := operandItems(val)
		children := make([]Node, 0, len(items))
		for _, item := range items {
			n, err := p.element(r, k, item)
			if err != nil {
				return nil, err
			}
			children = append(children, n)
		}
		return combine(op, children), nil
	case "$includes", "$includesAny", "$includesAll", "$includesNone":
		return nil, r.errorf("%s is not supported inside %s: the elements are strings", op, k)
	}
	if strings.HasPrefix(op, "$") {
		return nil, r.errorf("unknown operator [%s]", op)
	}
	return nil, r.errorf("[%s] is not an operator", op)
}
