package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
)

// Workload and system labels of the report.
const (
	sysCoppice = "coppice"
	sysInProc  = "coppice in-process"
	sysPG      = "postgresql"
	sysBleve   = "bleve"
	sysCeiling = "ceiling"
)

// pageSize is the page of every query and search.
const pageSize = 20

// cursorPages is the page the cursor walk of W3 times against page 1.
const cursorPages = 50

// cursorQuery is a sorted query with enough matches to page 50 at any N
// the suite runs, walked page by page.
type cursorQuery struct {
	name    string
	filter  map[string]any
	sortCol string
	desc    bool
}

// cursorQueries are the cursor walks of W3: the largest category, newest
// first; and the most frequent tag, cheapest first.
var cursorQueries = []cursorQuery{
	{"eq-sort", map[string]any{"category": gen.Categories[0], "active": true}, "created_at", true},
	{"includes-sort", map[string]any{"tags": map[string]any{"$includes": gen.Tag(0)}}, "price", false},
}

// sortJSON is the sort object of q.
func (q cursorQuery) sortJSON() map[string]any {
	dir := "asc"
	if q.desc {
		dir = "desc"
	}
	return map[string]any{q.sortCol: dir}
}

// summarizeFilter is the filter of W4: the cheapest 80% of docs.
func summarizeFilter() map[string]any {
	return map[string]any{"price": map[string]any{"$lt": gen.PriceQuantile(0.8)}}
}

// summarizeBody is the W4 request: group by category with count, sum,
// average, min and max.
func summarizeBody() map[string]any {
	return map[string]any{
		"filter":  summarizeFilter(),
		"columns": []string{"category"},
		"summaries": map[string]any{
			"n":           map[string]any{"count": "*"},
			"views":       map[string]any{"sum": "views"},
			"avg_price":   map[string]any{"average": "price"},
			"min_price":   map[string]any{"min": "price"},
			"max_created": map[string]any{"max": "created_at"},
		},
		"page": map[string]any{"size": len(gen.Categories)},
	}
}

// summarizeSQL is W4 in SQL; $1 is the price bound.
const summarizeSQL = `SELECT category, count(*), sum(views), avg(price), min(price), max(created_at)
FROM docs WHERE price < $1 GROUP BY category`

// searchClass is one class of W5 queries and how each system is asked.
type searchClass struct {
	name      string
	queries   []string
	fuzziness int
	prefix    bool
}

// searchClasses returns the W5 classes from the query files. "words" are
// 2 to 4 consecutive words of a body (the generator's phrase file), any
// of which matches: a multi-word query, not a phrase search.
func (d *dataset) searchClasses() []searchClass {
	typos := func(t []gen.Typo) []string {
		out := make([]string, len(t))
		for i, x := range t {
			out[i] = x.Query
		}
		return out
	}
	return []searchClass{
		{name: "exact", queries: d.q.Exact},
		{name: "typo1", queries: typos(d.q.Typo1), fuzziness: 1},
		{name: "typo2", queries: typos(d.q.Typo2), fuzziness: 2},
		{name: "prefix", queries: d.q.Prefix, prefix: true},
		{name: "words", queries: d.q.Phrase},
	}
}

// searchBody is the Coppice search request of one query of a class.
func (c searchClass) searchBody(q string) map[string]any {
	prefix := "disabled"
	if c.prefix {
		prefix = "phrase"
	}
	return map[string]any{
		"query":     q,
		"fuzziness": c.fuzziness,
		"prefix":    prefix,
		"highlight": map[string]any{"enabled": true},
		"page":      map[string]any{"size": pageSize},
	}
}

// tsquery is the PostgreSQL text query of one query of a class: the words
// ORed, a prefix as a prefix match. PostgreSQL has no typo tolerance, so a
// misspelt word is searched as written.
func (c searchClass) tsquery(q string) string {
	words := strings.Fields(q)
	if c.prefix {
		return strings.Join(words, " & ") + ":*"
	}
	return strings.Join(words, " | ")
}

// sqlColumn is the type of a docs column in SQL, for arguments.
var sqlColumn = map[string]string{
	"title": "text", "body": "text", "category": "text", "tags": "text[]",
	"price": "float", "rating": "float", "views": "int", "created_at": "time",
	"active": "bool", "owner": "text",
}

// sqlQuery translates a filter and sort of the query mix into a SELECT of
// page 1 with positional arguments. Equality, ranges, $contains (ILIKE),
// $includes (array containment), $any and $all are what the mix uses.
func sqlQuery(columns string, filter, sort json.RawMessage) (string, []any, error) {
	var args []any
	where, err := sqlFilter(filter, &args)
	if err != nil {
		return "", nil, err
	}
	order, err := sqlOrder(sort)
	if err != nil {
		return "", nil, err
	}
	q := "SELECT " + columns + " FROM docs"
	if where != "" {
		q += " WHERE " + where
	}
	return q + " ORDER BY " + order + fmt.Sprintf(" LIMIT %d", pageSize), args, nil
}

// decodeJSON decodes with numbers kept as json.Number.
func decodeJSON(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// sqlFilter translates a filter object into a condition ("" for none),
// appending its arguments.
func sqlFilter(raw json.RawMessage, args *[]any) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var f map[string]any
	if err := decodeJSON(raw, &f); err != nil {
		return "", err
	}
	return sqlObject(f, args)
}

// sqlObject ANDs the conditions of a filter object, in key order.
func sqlObject(f map[string]any, args *[]any) (string, error) {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var conds []string
	for _, k := range keys {
		var c string
		var err error
		switch k {
		case "$any", "$all":
			c, err = sqlList(k, f[k], args)
		default:
			c, err = sqlColumnCond(k, f[k], args)
		}
		if err != nil {
			return "", err
		}
		conds = append(conds, c)
	}
	return strings.Join(conds, " AND "), nil
}

// sqlList ORs ($any) or ANDs ($all) a list of filter objects.
func sqlList(op string, v any, args *[]any) (string, error) {
	list, ok := v.([]any)
	if !ok {
		return "", fmt.Errorf("%s: want a list", op)
	}
	join := " OR "
	if op == "$all" {
		join = " AND "
	}
	var parts []string
	for _, e := range list {
		obj, ok := e.(map[string]any)
		if !ok {
			return "", fmt.Errorf("%s: want objects", op)
		}
		c, err := sqlObject(obj, args)
		if err != nil {
			return "", err
		}
		parts = append(parts, "("+c+")")
	}
	return "(" + strings.Join(parts, join) + ")", nil
}

// sqlColumnCond translates the condition on one column: a value means
// equality, an object of operators ANDs them.
func sqlColumnCond(col string, v any, args *[]any) (string, error) {
	typ, ok := sqlColumn[col]
	if !ok {
		return "", fmt.Errorf("unknown column %q", col)
	}
	arg := func(x any) (string, error) {
		a, err := sqlArg(typ, x)
		if err != nil {
			return "", fmt.Errorf("column %s: %w", col, err)
		}
		*args = append(*args, a)
		return fmt.Sprintf("$%d", len(*args)), nil
	}
	ops, isObj := v.(map[string]any)
	if !isObj {
		p, err := arg(v)
		return col + " = " + p, err
	}
	names := make([]string, 0, len(ops))
	for k := range ops {
		names = append(names, k)
	}
	slices.Sort(names)
	var conds []string
	for _, op := range names {
		x := ops[op]
		var c string
		switch op {
		case "$ge", "$gt", "$le", "$lt":
			p, err := arg(x)
			if err != nil {
				return "", err
			}
			c = col + map[string]string{"$ge": " >= ", "$gt": " > ", "$le": " <= ", "$lt": " < "}[op] + p
		case "$contains":
			s, ok := x.(string)
			if !ok {
				return "", fmt.Errorf("column %s: $contains wants a string", col)
			}
			*args = append(*args, "%"+likeEscape(s)+"%")
			c = fmt.Sprintf("%s ILIKE $%d", col, len(*args))
		case "$includes":
			*args = append(*args, []string{fmt.Sprint(x)})
			c = fmt.Sprintf("%s @> $%d", col, len(*args))
		default:
			return "", fmt.Errorf("column %s: operator %s not translated", col, op)
		}
		conds = append(conds, c)
	}
	return strings.Join(conds, " AND "), nil
}

// sqlArg converts a JSON value to the Go value of a column type.
func sqlArg(typ string, x any) (any, error) {
	switch typ {
	case "float":
		n, ok := x.(json.Number)
		if !ok {
			return nil, fmt.Errorf("want a number, got %v", x)
		}
		return n.Float64()
	case "int":
		n, ok := x.(json.Number)
		if !ok {
			return nil, fmt.Errorf("want a number, got %v", x)
		}
		return n.Int64()
	case "time":
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("want a datetime, got %v", x)
		}
		return time.Parse(time.RFC3339, s)
	case "bool":
		b, ok := x.(bool)
		if !ok {
			return nil, fmt.Errorf("want a bool, got %v", x)
		}
		return b, nil
	default:
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, got %v", x)
		}
		return s, nil
	}
}

// likeEscape escapes the wildcards of a LIKE pattern.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// sqlOrder translates a sort (an object or a list of one-key objects) into
// an ORDER BY list ending with id, the default order.
func sqlOrder(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "id", nil
	}
	var list []map[string]string
	if raw[0] == '{' {
		var one map[string]string
		if err := json.Unmarshal(raw, &one); err != nil {
			return "", err
		}
		list = append(list, one)
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return "", err
	}
	var parts []string
	for _, o := range list {
		if len(o) != 1 {
			return "", fmt.Errorf("sort: want one column per object, got %v", o)
		}
		for col, dir := range o {
			if _, ok := sqlColumn[col]; !ok {
				return "", fmt.Errorf("sort: unknown column %q", col)
			}
			parts = append(parts, col+" "+strings.ToUpper(dir))
		}
	}
	return strings.Join(append(parts, "id"), ", "), nil
}
