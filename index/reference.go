package index

// This file is the reference reading of the filter language: it decides a
// filter, as decoded JSON, for one row, straight from the rules of spec
// §4.1.5 and compat-api §12. It shares nothing with the parser, the AST,
// the naive evaluator or the planner, so that a differential test catches
// a misreading of a form in the parser (which Eval, reading the parser's
// AST, shares) as well as a bug in the planner. It is written for
// obviousness rather than speed, and trusts that the parser accepted the
// filter: it checks no types.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/coppice-db/coppice/codec"
)

// Reference is the reference reading of one filter on table t, decoded
// from JSON with UseNumber, meta columns named under t.Meta as for
// ParseFilter. Match decides it for a row by these rules:
//
//   - The keys of a filter object are AND-ed. $any is an OR and $all an
//     AND over a list of filters, or over the keys of one object, each key
//     an operand of its own (so {"$any": {"a": 1, "b": 2}} is a or b; an
//     empty object is the empty filter, true). $none is the negation of
//     $any, $not of $all, over the same forms.
//   - A column key takes a value (equality), an object of one operator or
//     a range of two, or for object columns and links a filter on the
//     object or the linked record. Under $any, $all, $none and $not a
//     column takes a list of those, one of them, or an object of several
//     operators, each an operand of its own as above.
//   - The array operators decide a predicate, or a list of predicates
//     meaning any of them, on each element of a multiple column: some
//     element, every element of a non-empty list, or no element matches.
//     A plain value or $is on a multiple column means some element equals.
//   - Through a null or dangling link every predicate is false.
//   - A json path predicate is unknown on a record without the path, and
//     so is its negation; combinators follow three-valued logic and a
//     filter matches only when true. $exists is always true or false.
//
// A Reference is not safe for concurrent use.
type Reference struct {
	table  *Table
	filter any
	// regexps caches the compiled forms of patterns and $iContains.
	regexps map[string]*regexp.Regexp
}

// NewReference prepares the reference reading of a filter on table t.
func NewReference(t *Table, filter any) *Reference {
	return &Reference{table: t, filter: filter, regexps: map[string]*regexp.Regexp{}}
}

// Match reports whether row r matches the filter. An error means a form
// the reference does not know, which the parser should have rejected.
func (e *Reference) Match(r RowView) (bool, error) {
	if e.filter == nil {
		return true, nil
	}
	res, err := e.filterObject(refPlace{table: e.table, row: r}, e.filter)
	return res == refTrue, err
}

// refTruth is a truth value of three-valued logic.
type refTruth uint8

// The truth values.
const (
	refFalse refTruth = iota
	refTrue
	refUnknown
)

// refTruthOf is true or false.
func refTruthOf(b bool) refTruth {
	if b {
		return refTrue
	}
	return refFalse
}

// and is the conjunction: false wins over unknown.
func (a refTruth) and(b refTruth) refTruth {
	switch {
	case a == refFalse || b == refFalse:
		return refFalse
	case a == refUnknown || b == refUnknown:
		return refUnknown
	}
	return refTrue
}

// or is the disjunction: true wins over unknown.
func (a refTruth) or(b refTruth) refTruth {
	switch {
	case a == refTrue || b == refTrue:
		return refTrue
	case a == refUnknown || b == refUnknown:
		return refUnknown
	}
	return refFalse
}

// not is the negation; unknown stays unknown.
func (a refTruth) not() refTruth {
	switch a {
	case refTrue:
		return refFalse
	case refFalse:
		return refTrue
	}
	return refUnknown
}

// refPlace is where column names resolve: a table, the row of it that is
// read (nil when a link on the way is null or dangling), and inside an
// object column its path prefix.
type refPlace struct {
	table  *Table
	row    RowView
	prefix string
}

// refColumn is a resolved column name.
type refColumn struct {
	place refPlace // the table holding col, and its row
	col   *Column
	path  []string // the key path inside a json column
}

// value returns the column's value on the row; null when the row is
// missing.
func (c refColumn) value() codec.Value {
	if c.place.row == nil {
		return codec.Null()
	}
	return c.place.row.Value(c.col)
}

// jsonValue returns the decoded value at the column's json path: a
// json.Number, string, bool, map or list. ok is false when the path is
// missing or JSON null.
func (c refColumn) jsonValue() (any, bool) {
	v := c.value()
	if v.Kind != codec.KindString {
		return nil, false
	}
	d := json.NewDecoder(strings.NewReader(v.Str))
	d.UseNumber()
	var doc any
	if d.Decode(&doc) != nil {
		return nil, false
	}
	for _, k := range c.path {
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil, false
		}
		if doc, ok = obj[k]; !ok {
			return nil, false
		}
	}
	return doc, doc != nil
}

// filterObject decides a filter object.
func (e *Reference) filterObject(at refPlace, v any) (refTruth, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return 0, fmt.Errorf("reference: a filter must be an object, got %T", v)
	}
	res := refTrue
	for k, x := range obj {
		t, err := e.key(at, k, x)
		if err != nil {
			return 0, err
		}
		res = res.and(t)
	}
	return res, nil
}

// key decides one key of a filter object.
func (e *Reference) key(at refPlace, k string, v any) (refTruth, error) {
	switch k {
	case "$any", "$none":
		t, err := e.anyFilter(at, v)
		if k == "$none" {
			t = t.not()
		}
		return t, err
	case "$all", "$not":
		t, err := e.allFilter(at, v)
		if k == "$not" {
			t = t.not()
		}
		return t, err
	case "$exists", "$existsNot", "$notExists":
		name, _ := v.(string)
		c, err := e.resolve(at, name)
		if err != nil {
			return 0, err
		}
		t := refTruthOf(c.exists())
		if k != "$exists" {
			t = t.not()
		}
		return t, nil
	}
	c, err := e.resolve(at, k)
	if err != nil {
		return 0, err
	}
	return e.condition(c, v)
}

// anyFilter decides $any over its operand's filters (see refItems).
func (e *Reference) anyFilter(at refPlace, v any) (refTruth, error) {
	res := refFalse
	for _, item := range refItems(v) {
		t, err := e.filterObject(at, item)
		if err != nil {
			return 0, err
		}
		res = res.or(t)
	}
	return res, nil
}

// allFilter decides $all over its operand's filters (see refItems).
func (e *Reference) allFilter(at refPlace, v any) (refTruth, error) {
	res := refTrue
	for _, item := range refItems(v) {
		t, err := e.filterObject(at, item)
		if err != nil {
			return 0, err
		}
		res = res.and(t)
	}
	return res, nil
}

// refItems returns what a combinator applies to: the items of a list, the
// keys of an object of several keys each as an object of its own, or the
// value alone.
func refItems(v any) []any {
	if items, ok := v.([]any); ok {
		return items
	}
	if obj, ok := v.(map[string]any); ok && len(obj) > 1 {
		var items []any
		for k, x := range obj {
			items = append(items, map[string]any{k: x})
		}
		return items
	}
	return []any{v}
}

// resolve finds a dotted column name, possibly through links and objects
// and with a json path, from at.
func (e *Reference) resolve(at refPlace, name string) (refColumn, error) {
	colName, jsonPart, hasJSON := strings.Cut(name, "->")
	segs := strings.Split(colName, ".")
	for i := 0; i < len(segs); i++ {
		c := at.table.Columns[at.prefix+segs[i]]
		if c == nil && at.prefix == "" {
			switch {
			case segs[i] == "id":
				c = IDColumn
			case segs[i] == e.table.Meta && i+1 < len(segs):
				i++
				c = map[string]*Column{"version": VersionColumn, "createdAt": CreatedAtColumn, "updatedAt": UpdatedAtColumn}[segs[i]]
			}
		}
		if c == nil {
			return refColumn{}, fmt.Errorf("reference: no column %q", name)
		}
		if i == len(segs)-1 {
			rc := refColumn{place: at, col: c}
			if hasJSON {
				rc.path = strings.Split(jsonPart, "->")
			}
			return rc, nil
		}
		switch c.Type {
		case TypeObject:
			at.prefix = c.Path + "."
		case TypeLink:
			if at.row != nil {
				at.row = at.row.Linked(c)
			}
			at = refPlace{table: c.Link, row: at.row}
		default:
			return refColumn{}, fmt.Errorf("reference: no column %q", name)
		}
	}
	return refColumn{}, fmt.Errorf("reference: no column %q", name)
}

// exists decides $exists: the value is not null; on an object column some
// column inside it is not null; on a json path the path is there.
func (c refColumn) exists() bool {
	switch {
	case c.place.row == nil:
		return false
	case c.path != nil:
		_, ok := c.jsonValue()
		return ok
	case c.col.Type == TypeObject:
		for path, sub := range c.place.table.Columns {
			if strings.HasPrefix(path, c.col.Path+".") && sub.Type != TypeObject && !c.place.row.Value(sub).IsNull() {
				return true
			}
		}
		return false
	}
	return !c.value().IsNull()
}

// condition decides what a column key holds: a filter on an object column
// or on the record a link points at, a value, or an operator object.
func (e *Reference) condition(c refColumn, v any) (refTruth, error) {
	obj, isObj := v.(map[string]any)
	if c.path == nil {
		switch {
		case c.col.Type == TypeObject:
			return e.filterObject(refPlace{table: c.place.table, row: c.place.row, prefix: c.col.Path + "."}, v)
		case c.col.Type == TypeLink && isObj && filtersLinked(obj):
			var row RowView
			if c.place.row != nil {
				row = c.place.row.Linked(c.col)
			}
			return e.filterObject(refPlace{table: c.col.Link, row: row}, obj)
		}
	}
	if !isObj {
		return e.is(c, v), nil
	}
	return e.operators(c, obj)
}

// filtersLinked reports whether an object on a link column is a filter on
// the linked record: it is, unless all its keys are operators on the link
// itself.
func filtersLinked(obj map[string]any) bool {
	if len(obj) == 0 {
		return true
	}
	for k := range obj {
		switch k {
		case "$is", "$isNot", "$any", "$all", "$none", "$not":
		default:
			return true
		}
	}
	return false
}

// operators decides an operator object on a column.
func (e *Reference) operators(c refColumn, obj map[string]any) (refTruth, error) {
	if len(obj) == 2 {
		res := refTrue
		for k, x := range obj {
			res = res.and(e.compare(c, k, x))
		}
		return res, nil
	}
	if len(obj) != 1 {
		return 0, fmt.Errorf("reference: an operator object with %d keys", len(obj))
	}
	var k string
	var x any
	for k, x = range obj {
	}
	switch k {
	case "$is":
		return e.is(c, x), nil
	case "$isNot":
		return e.is(c, x).not(), nil
	case "$any", "$none":
		t, err := e.anyCondition(c, x)
		if k == "$none" {
			t = t.not()
		}
		return t, err
	case "$all", "$not":
		t, err := e.allCondition(c, x)
		if k == "$not" {
			t = t.not()
		}
		return t, err
	case "$lt", "$le", "$gt", "$ge":
		return e.compare(c, k, x), nil
	case "$contains", "$iContains", "$startsWith", "$endsWith", "$pattern", "$iPattern":
		return e.text(c, k, x), nil
	case "$includes", "$includesAny", "$includesAll", "$includesNone":
		return e.includes(c, k, x)
	}
	return 0, fmt.Errorf("reference: unknown operator %s", k)
}

// anyCondition decides $any over its operand's conditions (see refItems).
func (e *Reference) anyCondition(c refColumn, v any) (refTruth, error) {
	res := refFalse
	for _, item := range refItems(v) {
		t, err := e.condition(c, item)
		if err != nil {
			return 0, err
		}
		res = res.or(t)
	}
	return res, nil
}

// allCondition decides $all over its operand's conditions (see refItems).
func (e *Reference) allCondition(c refColumn, v any) (refTruth, error) {
	res := refTrue
	for _, item := range refItems(v) {
		t, err := e.condition(c, item)
		if err != nil {
			return 0, err
		}
		res = res.and(t)
	}
	return res, nil
}

// leaf decides a predicate with fn: false when the row is missing, and
// unknown when a json path is missing.
func (c refColumn) leaf(fn func(v codec.Value) bool, onJSON func(x any) bool) refTruth {
	if c.path != nil {
		x, ok := c.jsonValue()
		if !ok {
			return refUnknown
		}
		return refTruthOf(onJSON(x))
	}
	if c.place.row == nil {
		return refFalse
	}
	return refTruthOf(fn(c.value()))
}

// is decides equality with a value or with one of a list of values.
func (e *Reference) is(c refColumn, v any) refTruth {
	if items, ok := v.([]any); ok {
		res := refFalse
		for _, item := range items {
			res = res.or(e.is(c, item))
		}
		return res
	}
	if c.path == nil && c.col.Type == TypeMultiple {
		return c.leaf(func(val codec.Value) bool {
			for _, s := range val.Strs {
				if s == v {
					return true
				}
			}
			return false
		}, nil)
	}
	if c.path == nil && c.col.Type == TypeJSON {
		text, _ := v.(string)
		return c.leaf(func(val codec.Value) bool { return val.Kind == codec.KindString && sameJSON(val.Str, text) }, nil)
	}
	return c.leaf(func(val codec.Value) bool {
		cmp, ok := compareLiteral(c.col, val, v)
		return ok && cmp == 0
	}, func(x any) bool {
		cmp, ok := compareJSON(x, v)
		return ok && cmp == 0
	})
}

// compare decides $lt, $le, $gt and $ge.
func (e *Reference) compare(c refColumn, op string, v any) refTruth {
	holds := func(cmp int) bool {
		switch op {
		case "$lt":
			return cmp < 0
		case "$le":
			return cmp <= 0
		case "$gt":
			return cmp > 0
		case "$ge":
			return cmp >= 0
		}
		return false
	}
	return c.leaf(func(val codec.Value) bool {
		cmp, ok := compareLiteral(c.col, val, v)
		return ok && holds(cmp)
	}, func(x any) bool {
		if _, isNum := x.(json.Number); !isNum {
			return false
		}
		cmp, ok := compareJSON(x, v)
		return ok && holds(cmp)
	})
}

// text decides the string operators.
func (e *Reference) text(c refColumn, op string, v any) refTruth {
	arg, _ := v.(string)
	return c.leaf(func(val codec.Value) bool {
		return val.Kind == codec.KindString && e.textHolds(op, val.Str, arg)
	}, func(x any) bool {
		switch x.(type) {
		case json.Number, bool:
			return false
		}
		return e.textHolds(op, jsonText(x), arg)
	})
}

// includes decides an array operator: an element predicate quantified over
// the elements of a multiple column.
func (e *Reference) includes(c refColumn, op string, v any) (refTruth, error) {
	if c.place.row == nil {
		return refFalse, nil
	}
	elems := c.value().Strs
	matched := 0
	for _, s := range elems {
		ok, err := e.element(s, v)
		if err != nil {
			return 0, err
		}
		if ok {
			matched++
		}
	}
	switch op {
	case "$includesAll":
		return refTruthOf(len(elems) > 0 && matched == len(elems)), nil
	case "$includesNone":
		return refTruthOf(matched == 0), nil
	}
	return refTruthOf(matched > 0), nil
}

// element decides an element predicate on one element: a value, a list of
// predicates (any of them), or an operator object whose combinators nest
// element predicates as they nest conditions on a column.
func (e *Reference) element(s string, v any) (bool, error) {
	switch x := v.(type) {
	case string:
		return s == x, nil
	case []any:
		for _, item := range x {
			ok, err := e.element(s, item)
			if ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	case map[string]any:
		return e.elementOperators(s, x)
	}
	return false, fmt.Errorf("reference: element predicate %T", v)
}

// elementOperators decides an operator object on one element.
func (e *Reference) elementOperators(s string, obj map[string]any) (bool, error) {
	all := func(items []any) (bool, error) {
		for _, item := range items {
			ok, err := e.element(s, item)
			if !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}
	if len(obj) == 2 {
		return all(refItems(obj)) // a range
	}
	for k, x := range obj {
		switch k {
		case "$is":
			return e.element(s, x)
		case "$isNot":
			ok, err := e.element(s, x)
			return !ok, err
		case "$any", "$none":
			ok, err := e.element(s, refItems(x))
			return ok != (k == "$none"), err
		case "$all", "$not":
			ok, err := all(refItems(x))
			return ok != (k == "$not"), err
		case "$lt", "$le", "$gt", "$ge":
			arg, _ := x.(string)
			cmp := strings.Compare(s, arg)
			return map[string]bool{"$lt": cmp < 0, "$le": cmp <= 0, "$gt": cmp > 0, "$ge": cmp >= 0}[k], nil
		case "$contains", "$iContains", "$startsWith", "$endsWith", "$pattern", "$iPattern":
			arg, _ := x.(string)
			return e.textHolds(k, s, arg), nil
		}
		return false, fmt.Errorf("reference: unknown element operator %s", k)
	}
	return false, fmt.Errorf("reference: an element operator object with %d keys", len(obj))
}

// compareLiteral orders a column's value against a filter literal, read
// as the column's type: numbers numerically, datetimes by instant, strings
// bytewise, false before true. ok is false when the value is null.
func compareLiteral(c *Column, val codec.Value, lit any) (int, bool) {
	if val.IsNull() {
		return 0, false
	}
	switch c.Type {
	case "int":
		n, ok := literalFloat(lit)
		if !ok {
			return 0, false
		}
		return compareFloats(float64(val.Int), n), true
	case "float":
		n, ok := literalFloat(lit)
		if !ok {
			return 0, false
		}
		return compareFloats(val.Float, n), true
	case "bool":
		b, ok := lit.(bool)
		if !ok {
			return 0, false
		}
		x, y := 0, 0
		if val.Int != 0 {
			x = 1
		}
		if b {
			y = 1
		}
		return x - y, true
	case "datetime":
		s, _ := lit.(string)
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, false
		}
		return val.Time().Compare(t), true
	}
	s, ok := lit.(string)
	if !ok || val.Kind != codec.KindString {
		return 0, false
	}
	return strings.Compare(val.Str, s), true
}

// compareJSON orders a value found at a json path against a literal:
// numbers numerically, strings bytewise, bools by equality only, objects
// and lists as their compact text against a string. ok is false when they
// do not compare.
func compareJSON(x, lit any) (int, bool) {
	switch x := x.(type) {
	case json.Number:
		a, err := strconv.ParseFloat(string(x), 64)
		b, ok := literalFloat(lit)
		if err != nil || !ok {
			return 0, false
		}
		return compareFloats(a, b), true
	case bool:
		b, ok := lit.(bool)
		if !ok || b != x {
			return 1, ok
		}
		return 0, true
	}
	s, ok := lit.(string)
	if !ok {
		return 0, false
	}
	return strings.Compare(jsonText(x), s), true
}

// literalFloat reads a numeric literal.
func literalFloat(lit any) (float64, bool) {
	switch x := lit.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// compareFloats orders two numbers.
func compareFloats(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	if math.IsNaN(a) {
		return 1
	}
	return -1
}

// jsonText is a json value as text: a string itself, anything else its
// compact JSON without HTML escapes.
func jsonText(x any) string {
	if s, ok := x.(string); ok {
		return s
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(x) != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// sameJSON reports whether two JSON texts mean the same value.
func sameJSON(a, b string) bool {
	decode := func(s string) (any, bool) {
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil
	}
	x, ok1 := decode(a)
	y, ok2 := decode(b)
	return ok1 && ok2 && reflect.DeepEqual(x, y)
}

// textHolds decides a string operator on s.
func (e *Reference) textHolds(op, s, arg string) bool {
	switch op {
	case "$contains":
		return strings.Contains(s, arg)
	case "$iContains":
		return e.regexp("(?i)" + regexp.QuoteMeta(arg)).MatchString(s)
	case "$startsWith":
		return strings.HasPrefix(s, arg)
	case "$endsWith":
		return strings.HasSuffix(s, arg)
	case "$pattern", "$iPattern":
		return e.regexp(patternRegexp(arg, op == "$iPattern")).MatchString(s)
	}
	return false
}

// regexp returns the compiled form of a regular expression, from the
// cache when it is there.
func (e *Reference) regexp(expr string) *regexp.Regexp {
	re := e.regexps[expr]
	if re == nil {
		re = regexp.MustCompile(expr)
		e.regexps[expr] = re
	}
	return re
}

// patternRegexp translates a wildcard pattern to a regular expression
// matching whole strings: * any run, ? one character, a backslash escapes.
func patternRegexp(p string, fold bool) string {
	var b strings.Builder
	b.WriteString("(?s)")
	if fold {
		b.WriteString("(?i)")
	}
	b.WriteString("^")
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '\\':
			i++
			if i < len(rs) {
				b.WriteString(regexp.QuoteMeta(string(rs[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		}
	}
	b.WriteString("$")
	return b.String()
}
