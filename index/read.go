package index

// This file reads the JSON of a request's languages (filters, sorts,
// column lists, summaries, aggregations) into Go values, before any table
// is known. Reading checks the JSON only; binding the values to a table's
// schema (ParseFilterValue, ParseSort, ParseColumns, and the entry points
// Query, Summarize and Aggregate) checks everything else. The API reads a
// request's body with these and hands the values to the engine; a Go
// program may build the same values from Go maps and slices (FilterOf,
// SortOf, ColumnNames, ColumnsOf, AggsOf).

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
)

// decodeJSON decodes one JSON value, numbers as json.Number, and rejects
// anything after it.
func decodeJSON(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errAfterValue
	}
	return v, nil
}

// errAfterValue is JSON text that goes on after its value.
var errAfterValue = &InputError{Message: "data after the value"}

// Filter is a filter expression (spec §4.1.5) read but not yet checked
// against a table. The zero Filter is no filter: every record matches.
// A Filter is immutable and may be shared.
type Filter struct {
	// raw is the JSON text as sent, which cursors carry; nil when the
	// filter was built from a value.
	raw []byte
	// v is the filter decoded, numbers as json.Number; nil: no filter.
	v any
}

// ReadFilter reads the JSON text of a filter. Absent (empty) or null is no
// filter. Invalid JSON is an *InputError. The Filter keeps raw, which the
// caller must not change afterwards.
func ReadFilter(raw []byte) (Filter, error) {
	if IsNullJSON(raw) {
		return Filter{}, nil
	}
	v, err := decodeJSON(raw)
	if err == errAfterValue {
		return Filter{}, filterErrorf("invalid JSON: data after the filter object")
	}
	if err != nil {
		return Filter{}, filterErrorf("invalid JSON: %v", err)
	}
	return Filter{raw: raw, v: v}, nil
}

// ReadFilterValue is ReadFilter for a caller that has decoded raw already,
// such as a scan of a whole request body: v must be raw's value as
// encoding/json decodes it into an any with UseNumber (nil for null), and
// raw valid JSON text. The Filter keeps raw.
func ReadFilterValue(raw []byte, v any) Filter {
	if v == nil {
		return Filter{}
	}
	return Filter{raw: raw, v: v}
}

// FilterOf makes a Filter of a value decoded from JSON or built in Go:
// maps, []any, strings, bools, nil, and numbers as json.Number, float64
// or Go integers; datetime literals may also be time.Time. nil is no
// filter.
func FilterOf(v any) Filter { return Filter{v: v} }

// IsZero reports whether f is no filter.
func (f Filter) IsZero() bool { return f.v == nil }

// JSON returns the filter as JSON text: as it was read, or encoded from
// its value; nil for no filter.
func (f Filter) JSON() []byte {
	if f.raw != nil || f.v == nil {
		return f.raw
	}
	b, err := json.Marshal(f.v)
	if err != nil {
		return nil // Bind reports what cannot be encoded
	}
	return b
}

// Bind parses the filter against table t, as ParseFilter does. Errors are
// *InputError.
func (f Filter) Bind(t *Table) (Node, error) {
	return ParseFilterValue(t, f.v)
}

// ReadSummariesFilter reads a summarize request's summariesFilter, as
// ReadFilter reads a filter, with messages naming it.
func ReadSummariesFilter(raw []byte) (Filter, error) {
	f, err := ReadFilter(raw)
	if err != nil {
		return Filter{}, havingError(err)
	}
	return f, nil
}

// Sort is a sort expression (spec §4.1.6) read but not yet checked
// against a table. The zero Sort is no sort: ascending id.
type Sort struct {
	raw []byte
	v   any
}

// ReadSort reads the JSON text of a sort expression. Absent or null is no
// sort. Invalid JSON is an *InputError. The Sort keeps raw.
func ReadSort(raw []byte) (Sort, error) {
	if IsNullJSON(raw) {
		return Sort{}, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return Sort{}, sortErrorf("%v", err)
	}
	return Sort{raw: raw, v: v}, nil
}

// ReadSortValue is ReadSort for raw decoded already into v, as
// ReadFilterValue is for filters.
func ReadSortValue(raw []byte, v any) Sort {
	if v == nil {
		return Sort{}
	}
	return Sort{raw: raw, v: v}
}

// SortOf makes a Sort of a value such as "name", map[string]any{"price":
// "desc"} or []any of those; nil is no sort.
func SortOf(v any) Sort { return Sort{v: v} }

// IsZero reports whether s is no sort.
func (s Sort) IsZero() bool { return s.v == nil }

// JSON returns the sort as JSON text; nil for no sort.
func (s Sort) JSON() []byte {
	if s.raw != nil || s.v == nil {
		return s.raw
	}
	b, err := json.Marshal(s.v)
	if err != nil {
		return nil
	}
	return b
}

// Columns is a column selection (spec §4.1.1): column names, dotted
// paths, "*", "link.*" and projection objects, read but not yet checked
// against a table. The zero Columns selects every column.
type Columns struct {
	raw  []byte
	list []any
	set  bool // a list was given (possibly empty)
}

// ReadColumns reads the JSON text of a columns list. Absent or null
// selects every column. Anything but an array is an *InputError. The
// Columns keeps raw.
func ReadColumns(raw []byte) (Columns, error) {
	if IsNullJSON(raw) {
		return Columns{}, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return Columns{}, errColumnsNotArray()
	}
	return ReadColumnsValue(raw, v)
}

// ReadColumnsValue is ReadColumns for raw decoded already into v, as
// ReadFilterValue is for filters.
func ReadColumnsValue(raw []byte, v any) (Columns, error) {
	if v == nil {
		return Columns{}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return Columns{}, errColumnsNotArray()
	}
	return Columns{raw: raw, list: list, set: true}, nil
}

// errColumnsNotArray is a columns list that is not one.
func errColumnsNotArray() error {
	return projErrorf("columns must be an array of column names or projection objects")
}

// ColumnNames makes a Columns of column names (as a query parameter lists
// them); nil selects every column.
func ColumnNames(names []string) Columns {
	if names == nil {
		return Columns{}
	}
	list := make([]any, len(names))
	for i, n := range names {
		list[i] = n
	}
	return Columns{list: list, set: true}
}

// ColumnsOf makes a Columns of column names and projection objects
// (map[string]any, as JSON decodes them); nil selects every column.
func ColumnsOf(list []any) Columns {
	if list == nil {
		return Columns{}
	}
	return Columns{list: list, set: true}
}

// IsZero reports whether c selects every column by default (no list).
func (c Columns) IsZero() bool { return !c.set }

// JSON returns the list as JSON text; nil when there is none.
func (c Columns) JSON() []byte {
	if c.raw != nil || !c.set {
		return c.raw
	}
	b, err := json.Marshal(c.list)
	if err != nil {
		return nil
	}
	return b
}

// ReadGroupColumns reads the columns of a summarize request: an array of
// column names. Absent or null is nil; [] is an empty, non-nil list.
func ReadGroupColumns(raw []byte) ([]string, error) {
	if IsNullJSON(raw) {
		return nil, nil
	}
	var names []any
	if err := json.Unmarshal(raw, &names); err != nil {
		return nil, summarizeErrorf("columns must be an array of column names")
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		name, ok := n.(string)
		if !ok {
			return nil, summarizeErrorf("columns must be an array of column names")
		}
		out = append(out, name)
	}
	return out, nil
}

// Summary is one summary of a summarize request: its name in the output,
// its function (count, min, max, sum or average) and the column it
// summarizes ("*" for count of records).
type Summary struct {
	Name     string
	Function string
	Column   string
}

// ReadSummaries reads the summaries object of a summarize request: names
// mapped to {function: column}. The summaries come in name order; absent
// or null is none. A name or function that cannot be right for any table
// is an *InputError.
func ReadSummaries(raw []byte) ([]Summary, error) {
	if IsNullJSON(raw) {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, summarizeErrorf("summaries must be an object of summary names to {function: column}")
	}
	out := make([]Summary, 0, len(m))
	for _, name := range sortedKeys(m) {
		if err := checkSummaryName(name); err != nil {
			return nil, err
		}
		expr, ok := m[name].(map[string]any)
		if !ok || len(expr) != 1 {
			return nil, summarizeErrorf("summary [%s]: a summary is an object with one function and its column, like {\"count\": \"*\"}", name)
		}
		for fn, arg := range expr {
			if _, ok := summaryFns[fn]; !ok {
				return nil, unknownSummaryFunction(name, fn)
			}
			col, ok := arg.(string)
			if !ok {
				return nil, summarizeErrorf("summary [%s]: %s takes a column name", name, fn)
			}
			s := Summary{Name: name, Function: fn, Column: col}
			if err := s.checkStar(); err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// checkSummaryName rejects a summary name that could not be an output key
// of its own.
func checkSummaryName(name string) error {
	switch {
	case name == "":
		return summarizeErrorf("summaries: empty summary name")
	case strings.HasPrefix(name, "$") || strings.Contains(name, ".") || strings.Contains(name, "->"):
		return summarizeErrorf("summary [%s]: a summary name cannot start with $ or contain . or ->", name)
	}
	return nil
}

// unknownSummaryFunction is the error of a function summarize lacks.
func unknownSummaryFunction(name, fn string) error {
	return summarizeErrorf("summary [%s]: unknown summary function [%s]; use count, min, max, sum or average", name, fn)
}

// checkStar rejects [*] as the column of a function other than count.
func (s Summary) checkStar() error {
	if s.Column == "*" && s.Function != "count" {
		return summarizeErrorf("summary [%s]: only count takes [*]", s.Name)
	}
	return nil
}

// Aggs is the aggs object of an aggregate request (compat-api §8), read
// but not yet checked against a table. The zero Aggs asks for the count of
// records.
type Aggs struct{ v any }

// ReadAggs reads the JSON text of an aggs object. Absent or null is the
// zero Aggs. Invalid JSON is an *InputError.
func ReadAggs(raw []byte) (Aggs, error) {
	if IsNullJSON(raw) {
		return Aggs{}, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return Aggs{}, aggErrorf("aggs must be an object of aggregation names to aggregations")
	}
	return Aggs{v: v}, nil
}

// AggsOf makes an Aggs of a value such as map[string]any{"n":
// map[string]any{"count": "*"}}; nil is the zero Aggs.
func AggsOf(v any) Aggs { return Aggs{v: v} }
