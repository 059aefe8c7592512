package index

// This file converts the literals of a filter to values of a column's type
// and holds the helpers the parser shares: JSON value checks, AST
// builders and the lowering of negations to json path predicates.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/coppice-db/coppice/codec"
)

// literal converts a filter literal to a value of r's type. op names the
// operator for messages.
func (p *filterParser) literal(r *colRef, op string, v any) (codec.Value, error) {
	bad := func(want string) (codec.Value, error) {
		return codec.Value{}, r.errorf("%s needs %s, got %s", op, want, describe(v))
	}
	switch r.target() {
	case tgElem, tgMultiple:
		if s, ok := v.(string); ok {
			return codec.String(s), nil
		}
		return bad("a string")
	case tgJSONPath:
		switch x := v.(type) {
		case string:
			return codec.String(x), nil
		case bool:
			return codec.Bool(x), nil
		}
		if n, ok := numberOf(v); ok {
			return codec.Float(n.float()), nil
		}
		return bad("a string, number or bool")
	case tgJSON:
		s, ok := v.(string)
		if !ok {
			return bad("JSON text")
		}
		text, err := canonicalJSONText(s)
		if err != nil {
			return bad("JSON text")
		}
		return codec.String(text), nil
	}
	switch r.col.Type {
	case TypeBool:
		if b, ok := v.(bool); ok {
			return codec.Bool(b), nil
		}
		return bad("a bool")
	case TypeInt:
		if n, ok := numberOf(v); ok {
			if i, ok := n.int(); ok {
				return codec.Int(i), nil
			}
		}
		return bad("an integer")
	case TypeFloat:
		if n, ok := numberOf(v); ok {
			return codec.Float(n.float()), nil
		}
		return bad("a number")
	case TypeDatetime:
		switch x := v.(type) {
		case string:
			t, err := time.Parse(time.RFC3339Nano, x)
			if err == nil && inDatetimeRange(t) {
				return codec.Datetime(t), nil
			}
			if err == nil {
				return bad("an RFC 3339 datetime between the years 1678 and 2262")
			}
		case time.Time:
			if inDatetimeRange(x) {
				return codec.Datetime(x), nil
			}
		}
		return bad("an RFC 3339 datetime")
	case TypeString, TypeText, TypeEmail, TypeLink:
		if s, ok := v.(string); ok {
			return codec.String(s), nil
		}
		if r.col.Type == TypeLink {
			return bad("a record id")
		}
		return bad("a string")
	}
	return bad("nothing: only $exists applies")
}

// The instants a datetime value can hold: int64 nanoseconds since 1970.
var (
	minDatetime = time.Unix(0, math.MinInt64)
	maxDatetime = time.Unix(0, math.MaxInt64)
)

// inDatetimeRange reports whether t fits a datetime value.
func inDatetimeRange(t time.Time) bool {
	return !t.Before(minDatetime) && !t.After(maxDatetime)
}

// canonicalJSONText re-encodes JSON text compactly with sorted object keys,
// as json columns store it, so that equality compares meaning.
func canonicalJSONText(s string) (string, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", err
	}
	if _, err := d.Token(); err != io.EOF {
		return "", errors.New("data after the JSON value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimRight(buf.String(), "\n"), nil
}

// filterNumber is a numeric literal: an int64 when it is one exactly.
type filterNumber struct {
	i     int64
	f     float64
	isInt bool
}

// float returns the number as a float64, rounding large integers.
func (n filterNumber) float() float64 {
	if n.isInt {
		return float64(n.i)
	}
	return n.f
}

// int returns the number as an int64 if it is integral and in range.
func (n filterNumber) int() (int64, bool) {
	if n.isInt {
		return n.i, true
	}
	if n.f != math.Trunc(n.f) || n.f < -(1<<63) || n.f >= 1<<63 {
		return 0, false
	}
	return int64(n.f), true
}

// numberOf reads a finite numeric literal.
func numberOf(v any) (filterNumber, bool) {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return filterNumber{i: i, isInt: true}, true
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return filterNumber{}, false
		}
		return filterNumber{f: f}, true
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return filterNumber{}, false
		}
		return filterNumber{f: x}, true
	case float32:
		return numberOf(float64(x))
	case int:
		return filterNumber{i: int64(x), isInt: true}, true
	case int32:
		return filterNumber{i: int64(x), isInt: true}, true
	case int64:
		return filterNumber{i: x, isInt: true}, true
	}
	return filterNumber{}, false
}

// describe names the JSON type of v for messages, showing short numbers.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a bool"
	case string:
		if len(x) > 40 {
			return "a string"
		}
		return "the string " + strconv.Quote(x)
	case map[string]any:
		return "an object"
	case time.Time:
		return "a time"
	}
	if isList(v) {
		return "a list"
	}
	if n, ok := numberOf(v); ok {
		if n.isInt {
			return strconv.FormatInt(n.i, 10)
		}
		return strconv.FormatFloat(n.f, 'g', -1, 64)
	}
	if n, ok := v.(json.Number); ok {
		if len(n) <= 40 {
			return "the out-of-range number " + string(n)
		}
		return "an out-of-range number"
	}
	return fmt.Sprintf("a %T", v)
}

// asList returns the items of a list value.
func asList(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case []string:
		items := make([]any, len(x))
		for i, s := range x {
			items[i] = s
		}
		return items, true
	}
	return nil, false
}

// isList reports whether v is a list value.
func isList(v any) bool { _, ok := asList(v); return ok }

// isObject reports whether v is an object value.
func isObject(v any) bool { _, ok := v.(map[string]any); return ok }

// listOrOne returns the items of a list, or v alone.
func listOrOne(v any) []any {
	if items, ok := asList(v); ok {
		return items
	}
	return []any{v}
}

// allLiterals reports whether items are all plain values.
func allLiterals(items []any) bool {
	for _, item := range items {
		if item == nil || isObject(item) || isList(item) {
			return false
		}
	}
	return true
}

// sortedKeys returns the keys of m in order, so that the AST and the
// first error reported do not depend on map order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// andOf is the conjunction of children, without a wrapper for one child.
func andOf(children []Node) Node {
	if len(children) == 1 {
		return children[0]
	}
	return &And{Children: children}
}

// orOf is the disjunction of children, without a wrapper for one child.
func orOf(children []Node) Node {
	if len(children) == 1 {
		return children[0]
	}
	return &Or{Children: children}
}

// hasJSONPath reports whether n holds a json path predicate.
func hasJSONPath(n Node) bool {
	switch n := n.(type) {
	case *And:
		return slices.ContainsFunc(n.Children, hasJSONPath)
	case *Or:
		return slices.ContainsFunc(n.Children, hasJSONPath)
	case *Not:
		return hasJSONPath(n.Child)
	case *Pred:
		return n.JSONPath != nil
	}
	return false
}

// lowerJSONPaths returns n (negated when neg) with negations moved down to
// json path predicates, each negated one guarded by an exists on its path,
// so that records without the path match neither the predicate nor its
// negation. Subtrees without json paths are kept as they are.
func lowerJSONPaths(n Node, neg bool) Node {
	if !hasJSONPath(n) {
		if neg {
			return &Not{Child: n}
		}
		return n
	}
	switch n := n.(type) {
	case *Not:
		return lowerJSONPaths(n.Child, !neg)
	case *And:
		children := make([]Node, len(n.Children))
		for i, c := range n.Children {
			children[i] = lowerJSONPaths(c, neg)
		}
		if neg {
			return &Or{Children: children}
		}
		return &And{Children: children}
	case *Or:
		children := make([]Node, len(n.Children))
		for i, c := range n.Children {
			children[i] = lowerJSONPaths(c, neg)
		}
		if neg {
			return &And{Children: children}
		}
		return &Or{Children: children}
	case *Pred:
		if !neg {
			return n
		}
		if n.Op == OpExists {
			return &Not{Child: n}
		}
		exists := &Pred{Links: n.Links, Column: n.Column, Op: OpExists, JSONPath: n.JSONPath}
		return &And{Children: []Node{exists, &Not{Child: n}}}
	}
	return n
}
