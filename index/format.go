package index

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/coppice-db/coppice/codec"
)

// Format prints a filter AST as an indented tree, one node a line, children
// indented by two spaces under "and", "or" and "not". A predicate reads
//
//	[link→...]column[->"key"...] [any|all|none] op value
//
// where the quantifier appears on array predicates, meta columns other than
// id are written {meta}.version and so on, and values show their kind:
// strings quoted, floats always with a decimal point or exponent, datetimes
// in RFC 3339. An Elements node reads "[link→...]column any|all|none
// element", its condition indented below it with "element" in place of the
// column. The output depends only on the AST, so equal filters print
// equally; it ends without a newline.
func Format(n Node) string {
	var b strings.Builder
	formatFilterNode(&b, n, 0, false)
	return strings.TrimSuffix(b.String(), "\n")
}

// formatFilterNode writes n and its children, one line each. elem is set
// inside the condition of an Elements node, whose predicates test one
// element.
func formatFilterNode(b *strings.Builder, n Node, depth int, elem bool) {
	b.WriteString(strings.Repeat("  ", depth))
	switch n := n.(type) {
	case *And:
		b.WriteString("and\n")
		for _, c := range n.Children {
			formatFilterNode(b, c, depth+1, elem)
		}
	case *Or:
		b.WriteString("or\n")
		for _, c := range n.Children {
			formatFilterNode(b, c, depth+1, elem)
		}
	case *Not:
		b.WriteString("not\n")
		formatFilterNode(b, n.Child, depth+1, elem)
	case *Pred:
		if elem {
			b.WriteString("element ")
			formatQuant(b, n.Quant)
			formatOp(b, n, false)
		} else {
			formatFilterPred(b, n, false)
		}
		b.WriteByte('\n')
	case *Elements:
		formatElementsHead(b, n)
		b.WriteByte('\n')
		formatFilterNode(b, n.Cond, depth+1, true)
	case nil:
		b.WriteString("<nil>\n")
	default:
		b.WriteString("<unknown node>\n")
	}
}

// filterOpNames spell the operators in Format.
var filterOpNames = [...]string{
	OpEq: "=", OpIn: "in", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=",
	OpContains: "contains", OpIContains: "iContains",
	OpStartsWith: "startsWith", OpEndsWith: "endsWith",
	OpPattern: "pattern", OpIPattern: "iPattern", OpExists: "exists",
}

// filterQuantNames spell the quantifiers in Format, with a trailing space.
var filterQuantNames = [...]string{QuantNone: "", QuantAny: "any ", QuantAll: "all ", QuantNoElement: "none "}

// formatElementsHead writes the first line of an Elements node without its
// newline.
func formatElementsHead(b *strings.Builder, e *Elements) {
	formatColumn(b, e.Links, e.Column)
	b.WriteByte(' ')
	formatQuant(b, e.Quant)
	b.WriteString("element")
}

// formatFilterPred writes one predicate line without its newline; hide
// writes its values as "?".
func formatFilterPred(b *strings.Builder, p *Pred, hide bool) {
	formatColumn(b, p.Links, p.Column)
	for _, k := range p.JSONPath {
		b.WriteString("->")
		b.WriteString(strconv.Quote(k))
	}
	b.WriteByte(' ')
	formatQuant(b, p.Quant)
	formatOp(b, p, hide)
}

// formatColumn writes a column reached through links.
func formatColumn(b *strings.Builder, links []*Column, c *Column) {
	for _, l := range links {
		b.WriteString(l.Path)
		b.WriteString("→")
	}
	switch {
	case c == nil:
		b.WriteString("<nil>")
	case c.ID == MetaVersionColumn || c.ID == MetaCreatedAtColumn || c.ID == MetaUpdatedAtColumn:
		b.WriteString("{meta}." + c.Path)
	default:
		b.WriteString(c.Path)
	}
}

// formatQuant writes a quantifier with a trailing space, or nothing for
// QuantNone.
func formatQuant(b *strings.Builder, q Quantifier) {
	if int(q) < len(filterQuantNames) {
		b.WriteString(filterQuantNames[q])
	} else {
		b.WriteString("quant(" + strconv.Itoa(int(q)) + ") ")
	}
}

// formatOp writes a predicate's operator and value, or "?" for the value
// when hide is set.
func formatOp(b *strings.Builder, p *Pred, hide bool) {
	if int(p.Op) < len(filterOpNames) && filterOpNames[p.Op] != "" {
		b.WriteString(filterOpNames[p.Op])
	} else {
		b.WriteString("op(" + strconv.Itoa(int(p.Op)) + ")")
	}
	switch {
	case p.Op == OpExists:
	case hide:
		b.WriteString(" ?")
	case p.Op == OpIn:
		b.WriteString(" [")
		for i, v := range p.Values {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(formatFilterValue(v))
		}
		b.WriteString("]")
	default:
		b.WriteString(" " + formatFilterValue(p.Value))
	}
}

// formatFilterValue prints a value so that its kind shows.
func formatFilterValue(v codec.Value) string {
	switch v.Kind {
	case codec.KindNull:
		return "null"
	case codec.KindBool:
		return strconv.FormatBool(v.Int != 0)
	case codec.KindInt:
		return strconv.FormatInt(v.Int, 10)
	case codec.KindFloat:
		s := strconv.FormatFloat(v.Float, 'g', -1, 64)
		if !math.IsInf(v.Float, 0) && !math.IsNaN(v.Float) && !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return s
	case codec.KindString:
		return strconv.Quote(v.Str)
	case codec.KindDatetime:
		return v.Time().Format(time.RFC3339Nano)
	case codec.KindStrings:
		parts := make([]string, len(v.Strs))
		for i, s := range v.Strs {
			parts[i] = strconv.Quote(s)
		}
		return "strings[" + strings.Join(parts, ", ") + "]"
	}
	return v.Kind.String()
}

// formatCondition writes a filter on one line: and, or and not in words,
// with parentheses around an and or an or inside another node. elem is set
// for the condition of an Elements node, whose predicates test one element
// and are written as their operator and value; hide writes values as "?".
func formatCondition(b *strings.Builder, n Node, nested, elem, hide bool) {
	list := func(children []Node, sep string) {
		if nested {
			b.WriteByte('(')
		}
		for i, c := range children {
			if i > 0 {
				b.WriteString(sep)
			}
			formatCondition(b, c, true, elem, hide)
		}
		if nested {
			b.WriteByte(')')
		}
	}
	switch n := n.(type) {
	case *And:
		list(n.Children, " and ")
	case *Or:
		list(n.Children, " or ")
	case *Not:
		b.WriteString("not ")
		formatCondition(b, n.Child, true, elem, hide)
	case *Pred:
		if elem {
			formatQuant(b, n.Quant)
			formatOp(b, n, hide)
		} else {
			formatFilterPred(b, n, hide)
		}
	case *Elements:
		b.WriteByte('(')
		formatElementsHead(b, n)
		b.WriteString(": ")
		formatCondition(b, n.Cond, false, true, hide)
		b.WriteByte(')')
	default:
		b.WriteString("<unknown node>")
	}
}
