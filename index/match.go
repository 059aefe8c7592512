package index

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/coppice-db/coppice/codec"
)

// matchValue evaluates a predicate (without links) on one row's value of its
// column: what each operator means on a value for the plan's row-by-row
// nodes. The naive evaluator defines the same semantics independently, so
// the differential test checks one against the other. A pattern match cut
// short by the end of ctx says no; the caller reports ctx's error.
func matchValue(ctx context.Context, p *Pred, v codec.Value) bool {
	if len(p.JSONPath) > 0 {
		jv, ok := jsonAt(v, p.JSONPath)
		if !ok {
			return false
		}
		return matchScalar(ctx, p, jv)
	}
	if p.Op == OpExists {
		return !v.IsNull()
	}
	if v.IsNull() && p.Quant == QuantNoElement {
		return true // no element of a null list matches
	}
	if v.Kind != codec.KindStrings {
		return matchScalar(ctx, p, v)
	}
	switch p.Quant {
	case QuantAll:
		if len(v.Strs) == 0 {
			return false
		}
		for _, s := range v.Strs {
			if !matchScalar(ctx, p, codec.String(s)) {
				return false
			}
		}
		return true
	case QuantNoElement:
		for _, s := range v.Strs {
			if matchScalar(ctx, p, codec.String(s)) {
				return false
			}
		}
		return true
	default:
		for _, s := range v.Strs {
			if matchScalar(ctx, p, codec.String(s)) {
				return true
			}
		}
		return false
	}
}

// matchElements evaluates an Elements node (without links) on one row's
// value of its column.
func matchElements(ctx context.Context, e *Elements, v codec.Value) bool {
	var elems []string
	if v.Kind == codec.KindStrings {
		elems = v.Strs
	}
	switch e.Quant {
	case QuantAll:
		if len(elems) == 0 {
			return false
		}
		for _, s := range elems {
			if !matchElement(ctx, e.Cond, codec.String(s)) {
				return false
			}
		}
		return true
	case QuantNoElement:
		for _, s := range elems {
			if matchElement(ctx, e.Cond, codec.String(s)) {
				return false
			}
		}
		return true
	}
	for _, s := range elems {
		if matchElement(ctx, e.Cond, codec.String(s)) {
			return true
		}
	}
	return false
}

// matchElement evaluates the condition of an Elements node on one element.
func matchElement(ctx context.Context, n Node, v codec.Value) bool {
	switch n := n.(type) {
	case *And:
		for _, c := range n.Children {
			if !matchElement(ctx, c, v) {
				return false
			}
		}
		return true
	case *Or:
		for _, c := range n.Children {
			if matchElement(ctx, c, v) {
				return true
			}
		}
		return false
	case *Not:
		return !matchElement(ctx, n.Child, v)
	case *Pred:
		return matchScalar(ctx, n, v)
	}
	return false
}

// matchScalar evaluates a comparison or string operator on a scalar value;
// null matches nothing.
func matchScalar(ctx context.Context, p *Pred, v codec.Value) bool {
	if v.IsNull() {
		return false
	}
	switch p.Op {
	case OpExists:
		return true
	case OpEq:
		return compareValues(v, p.Value) == 0
	case OpIn:
		for _, w := range p.Values {
			if compareValues(v, w) == 0 {
				return true
			}
		}
		return false
	case OpLt:
		return comparable(v, p.Value) && compareValues(v, p.Value) < 0
	case OpLe:
		return comparable(v, p.Value) && compareValues(v, p.Value) <= 0
	case OpGt:
		return comparable(v, p.Value) && compareValues(v, p.Value) > 0
	case OpGe:
		return comparable(v, p.Value) && compareValues(v, p.Value) >= 0
	}
	if v.Kind != codec.KindString {
		return false
	}
	s, arg := v.Str, p.Value.Str
	switch p.Op {
	case OpContains:
		return strings.Contains(s, arg)
	case OpIContains:
		return containsFold(s, arg)
	case OpStartsWith:
		return strings.HasPrefix(s, arg)
	case OpEndsWith:
		return strings.HasSuffix(s, arg)
	case OpPattern, OpIPattern:
		if p.Pattern == nil {
			return false
		}
		ok, _ := p.Pattern.MatchContext(ctx, s)
		return ok
	}
	return false
}

// comparable reports whether two values order against each other: same
// kind, or numbers of either kind.
func comparable(a, b codec.Value) bool {
	if a.Kind == b.Kind {
		return true
	}
	return isNumber(a) && isNumber(b)
}

func isNumber(v codec.Value) bool { return v.Kind == codec.KindInt || v.Kind == codec.KindFloat }

// compareValues compares numbers numerically across int and float, and
// everything else as codec.Compare does.
func compareValues(a, b codec.Value) int {
	if a.Kind != b.Kind && isNumber(a) && isNumber(b) {
		x, y := asFloat(a), asFloat(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return codec.Compare(a, b)
}

func asFloat(v codec.Value) float64 {
	if v.Kind == codec.KindInt {
		return float64(v.Int)
	}
	return v.Float
}

// jsonAt reads the value at a key path of a json column's text. Objects
// give their compact text, numbers floats, booleans bools, strings strings.
func jsonAt(v codec.Value, path []string) (codec.Value, bool) {
	if v.Kind != codec.KindString {
		return codec.Value{}, false
	}
	var doc any
	d := json.NewDecoder(strings.NewReader(v.Str))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		return codec.Value{}, false
	}
	for _, k := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			return codec.Value{}, false
		}
		if doc, ok = m[k]; !ok {
			return codec.Value{}, false
		}
	}
	switch x := doc.(type) {
	case nil:
		return codec.Value{}, false
	case string:
		return codec.String(x), true
	case bool:
		return codec.Bool(x), true
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return codec.Value{}, false
		}
		return codec.Float(f), true
	default:
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // stored JSON text is not escaped either
		if err := enc.Encode(x); err != nil {
			return codec.Value{}, false
		}
		return codec.String(strings.TrimSuffix(buf.String(), "\n")), true
	}
}

// formatPred prints a predicate for plans, as the filter printer does;
// hide writes its values as "?".
func formatPred(p *Pred, hide bool) string {
	var b strings.Builder
	formatFilterPred(&b, p, hide)
	return b.String()
}
