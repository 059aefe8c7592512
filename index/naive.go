package index

// This file is the naive evaluator: it decides a filter for one row at a
// time, written for obviousness rather than speed, as the oracle that the
// planner's results are checked against. It shares no matching code with
// the planner, so that a differential test can catch a bug in either.

import (
	"cmp"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/coppice-db/coppice/codec"
)

// RowView is one record as the naive evaluator reads it.
type RowView interface {
	// Value returns the value of a column of the record, meta columns
	// included: KindNull when null, KindStrings for a multiple column, JSON
	// text (KindString) for a json column.
	Value(c *Column) codec.Value
	// Linked returns the record a link column points at, or nil when the
	// link is null or dangling.
	Linked(c *Column) RowView
}

// Eval reports whether row r matches filter n. Semantics:
//
//   - And, Or, Not are the Boolean operations; an empty And is true, an
//     empty Or false, and Not is the plain complement (so {"$isNot": x}
//     matches nulls).
//   - A predicate through links is false when any link on the way is null
//     or dangling (so its negation is true, as on a null column).
//   - exists is true when the value is not null (an empty multiple exists);
//     on a json path, when every key is present and the value is not JSON
//     null.
//   - Every other operator is false on null. Equality and order compare
//     values of one kind with codec.Compare (strings bytewise), ints with
//     floats numerically, and nothing else: different kinds never match.
//   - contains, startsWith, endsWith are bytewise; iContains compares under
//     Unicode simple case folding; pattern and iPattern use Pattern.Match.
//   - On a multiple column, any is true when some element matches, all when
//     the list is non-empty and every element matches, none when no element
//     does (so none is true on null and on an empty list, any and all false).
//     An Elements node quantifies its condition the same way, deciding the
//     condition on each element with these rules.
//   - On a json path, numbers compare as floats, strings and bools as
//     themselves, and objects and arrays as their JSON text. A missing path
//     makes every operator but exists false.
func Eval(n Node, r RowView) bool {
	switch n := n.(type) {
	case *And:
		for _, c := range n.Children {
			if !Eval(c, r) {
				return false
			}
		}
		return true
	case *Or:
		for _, c := range n.Children {
			if Eval(c, r) {
				return true
			}
		}
		return false
	case *Not:
		return !Eval(n.Child, r)
	case *Pred:
		for _, l := range n.Links {
			if r = r.Linked(l); r == nil {
				return false
			}
		}
		return naiveMatch(n, r.Value(n.Column))
	case *Elements:
		for _, l := range n.Links {
			if r = r.Linked(l); r == nil {
				return false
			}
		}
		return naiveQuantified(n.Quant, r.Value(n.Column), func(e codec.Value) bool {
			return naiveElement(n.Cond, e)
		})
	}
	return false
}

// naiveElement decides the condition of an Elements node on one element.
func naiveElement(n Node, e codec.Value) bool {
	switch n := n.(type) {
	case *And:
		for _, c := range n.Children {
			if !naiveElement(c, e) {
				return false
			}
		}
		return true
	case *Or:
		for _, c := range n.Children {
			if naiveElement(c, e) {
				return true
			}
		}
		return false
	case *Not:
		return !naiveElement(n.Child, e)
	case *Pred:
		return naiveScalar(n, e)
	}
	return false
}

// naiveQuantified decides a quantifier over the elements of a multiple
// column's value, with match deciding one element.
func naiveQuantified(q Quantifier, v codec.Value, match func(codec.Value) bool) bool {
	var elems []string
	if v.Kind == codec.KindStrings {
		elems = v.Strs
	}
	matched := 0
	for _, e := range elems {
		if match(codec.String(e)) {
			matched++
		}
	}
	switch q {
	case QuantAny:
		return matched > 0
	case QuantAll:
		return len(elems) > 0 && matched == len(elems)
	case QuantNoElement:
		return matched == 0
	}
	return false
}

// naiveMatch decides a predicate on the value of its column.
func naiveMatch(p *Pred, v codec.Value) bool {
	if p.JSONPath != nil {
		var ok bool
		if v, ok = naiveJSONAt(v, p.JSONPath); !ok {
			return false
		}
		if p.Op == OpExists {
			return true
		}
		return naiveScalar(p, v)
	}
	if p.Op == OpExists {
		return !v.IsNull()
	}
	if p.Quant == QuantNone {
		return naiveScalar(p, v)
	}
	return naiveQuantified(p.Quant, v, func(e codec.Value) bool { return naiveScalar(p, e) })
}

// naiveScalar decides a predicate on one scalar value.
func naiveScalar(p *Pred, v codec.Value) bool {
	if v.IsNull() {
		return false
	}
	switch p.Op {
	case OpEq:
		c, ok := naiveCompare(v, p.Value)
		return ok && c == 0
	case OpIn:
		for _, w := range p.Values {
			if c, ok := naiveCompare(v, w); ok && c == 0 {
				return true
			}
		}
		return false
	case OpLt, OpLe, OpGt, OpGe:
		c, ok := naiveCompare(v, p.Value)
		if !ok {
			return false
		}
		switch p.Op {
		case OpLt:
			return c < 0
		case OpLe:
			return c <= 0
		case OpGt:
			return c > 0
		}
		return c >= 0
	}
	if v.Kind != codec.KindString {
		return false
	}
	switch p.Op {
	case OpContains:
		return strings.Contains(v.Str, p.Value.Str)
	case OpIContains:
		return containsFold(v.Str, p.Value.Str)
	case OpStartsWith:
		return strings.HasPrefix(v.Str, p.Value.Str)
	case OpEndsWith:
		return strings.HasSuffix(v.Str, p.Value.Str)
	case OpPattern, OpIPattern:
		return p.Pattern != nil && p.Pattern.Match(v.Str)
	}
	return false
}

// naiveCompare orders two values when they are comparable: of one kind, or
// an int and a float (compared exactly, not through a lossy conversion).
func naiveCompare(a, b codec.Value) (int, bool) {
	switch {
	case a.Kind == b.Kind:
		return codec.Compare(a, b), true
	case a.Kind == codec.KindInt && b.Kind == codec.KindFloat:
		return compareIntFloat(a.Int, b.Float), true
	case a.Kind == codec.KindFloat && b.Kind == codec.KindInt:
		return -compareIntFloat(b.Int, a.Float), true
	}
	return 0, false
}

// compareIntFloat compares i with f exactly; NaN sorts after every number,
// as codec.Compare has it.
func compareIntFloat(i int64, f float64) int {
	switch {
	case math.IsNaN(f):
		return -1
	case f < -(1 << 63):
		return 1
	case f >= 1<<63:
		return -1
	}
	t := math.Trunc(f)
	if c := cmp.Compare(i, int64(t)); c != 0 {
		return c
	}
	return cmp.Compare(0, f-t) // i == trunc(f): the fraction decides
}

// naiveJSONAt returns the value at a key path of a json column's text: a
// float, string or bool, or the compact text of an object or array. ok is
// false when a key is missing, the value is JSON null, or the text is not
// JSON.
func naiveJSONAt(v codec.Value, path []string) (codec.Value, bool) {
	if v.Kind != codec.KindString {
		return codec.Value{}, false
	}
	var doc any
	d := json.NewDecoder(strings.NewReader(v.Str))
	d.UseNumber()
	if d.Decode(&doc) != nil {
		return codec.Value{}, false
	}
	for _, k := range path {
		obj, isObj := doc.(map[string]any)
		if !isObj {
			return codec.Value{}, false
		}
		if doc, isObj = obj[k]; !isObj {
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
	}
	var text strings.Builder
	enc := json.NewEncoder(&text)
	enc.SetEscapeHTML(false) // as json columns store their text
	if enc.Encode(doc) != nil {
		return codec.Value{}, false
	}
	return codec.String(strings.TrimSuffix(text.String(), "\n")), true
}
