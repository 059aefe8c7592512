package transfer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coppice-db/coppice/engine"
)

// Kinds of sampled values, as bits of guess.seen.
const (
	kindBool = 1 << iota
	kindInt
	kindFloat
	kindDatetime
	kindString
	kindList   // an array of strings
	kindObject // a JSON object
	kindOther  // any other array
)

// longString is the length from which a string column is inferred as text.
const longString = 255

// guess accumulates what one column's sampled values look like.
type guess struct {
	path string
	seen int
	long bool // some string is longer than longString characters or has a newline
}

// noteString records one string value.
func (g *guess) noteString(s string) {
	if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
		g.seen |= kindDatetime
		return
	}
	g.seen |= kindString
	if strings.ContainsRune(s, '\n') || utf8.RuneCountInString(s) > longString {
		g.long = true
	}
}

// noteJSON records one value of a JSON input, as encoding/json decodes it
// with UseNumber.
func (g *guess) noteJSON(v any) {
	switch x := v.(type) {
	case nil:
	case bool:
		g.seen |= kindBool
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			g.seen |= kindInt
		} else {
			g.seen |= kindFloat
		}
	case string:
		g.noteString(x)
	case []any:
		for _, e := range x {
			if _, ok := e.(string); !ok {
				g.seen |= kindOther
				return
			}
		}
		g.seen |= kindList
	case map[string]any:
		g.seen |= kindObject
	default:
		g.seen |= kindOther
	}
}

// noteCell records one CSV field; empty fields are nulls.
func (g *guess) noteCell(s string) {
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return
	case strings.EqualFold(t, "true") || strings.EqualFold(t, "false"):
		g.seen |= kindBool
		return
	}
	if _, err := strconv.ParseInt(t, 10, 64); err == nil {
		g.seen |= kindInt
		return
	}
	if _, ok := parseFloat(t); ok {
		g.seen |= kindFloat
		return
	}
	if t[0] == '[' && isStringList(t) {
		g.seen |= kindList
		return
	}
	if t[0] == '{' && json.Valid([]byte(t)) {
		g.seen |= kindObject
		return
	}
	g.noteString(s)
}

// columnType is the inferred type. A column of CSV always fits string,
// so CSV falls back to it; JSON falls back to json, which takes any value.
func (g *guess) columnType(csv bool) engine.ColumnType {
	switch g.seen {
	case 0:
		return engine.TypeString
	case kindBool:
		return engine.TypeBool
	case kindInt:
		return engine.TypeInt
	case kindFloat, kindInt | kindFloat:
		return engine.TypeFloat
	case kindDatetime:
		return engine.TypeDatetime
	case kindList:
		return engine.TypeMultiple
	case kindObject:
		return engine.TypeJSON
	case kindString, kindString | kindDatetime:
	default:
		if !csv {
			return engine.TypeJSON
		}
	}
	if g.long {
		return engine.TypeText
	}
	return engine.TypeString
}

// parseFloat parses a finite decimal number as a JSON input would write
// it (no hexadecimal, infinities or NaN).
func parseFloat(s string) (float64, bool) {
	if strings.ContainsAny(s, "xXnN_") {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil && !math.IsInf(f, 0)
}

// isStringList reports whether s is a JSON array of strings.
func isStringList(s string) bool {
	var l []string
	return json.Unmarshal([]byte(s), &l) == nil && l != nil
}

// inferrer infers a table's columns from sampled records.
type inferrer struct {
	csv     bool
	guesses []*guess
	byPath  map[string]*guess
}

// newInferrer infers for CSV (csv) or JSON input.
func newInferrer(csv bool) *inferrer {
	return &inferrer{csv: csv, byPath: map[string]*guess{}}
}

// column returns the guess of path, adding it in order of first sight.
func (in *inferrer) column(path string) *guess {
	g := in.byPath[path]
	if g == nil {
		g = &guess{path: path}
		in.byPath[path] = g
		in.guesses = append(in.guesses, g)
	}
	return g
}

// addHeader notes the CSV header, so every CSV column becomes a column.
func (in *inferrer) addHeader(header []string) {
	for _, h := range header {
		if h != "id" {
			in.column(h)
		}
	}
}

// add notes one sampled record; bad records are left out.
func (in *inferrer) add(rec *record, header []string) {
	switch {
	case rec.cells != nil:
		for i, c := range rec.cells {
			if header[i] != "id" {
				in.column(header[i]).noteCell(c)
			}
		}
	case rec.raw != nil:
		// Keys in input order, so columns come in the order a reader sees.
		d := json.NewDecoder(bytes.NewReader(rec.raw))
		d.UseNumber()
		if _, err := d.Token(); err != nil {
			return
		}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return
			}
			var v any
			if d.Decode(&v) != nil {
				return
			}
			if k != "id" {
				in.column(k.(string)).noteJSON(v)
			}
		}
	}
}

// columns returns the inferred columns in order of first sight. A dotted
// CSV header (address.city) becomes a sub-column of an object column.
func (in *inferrer) columns() []engine.ColumnDef {
	var out []engine.ColumnDef
	for _, g := range in.guesses {
		def := engine.ColumnDef{Type: g.columnType(in.csv)}
		parts := strings.Split(g.path, ".")
		if !in.csv {
			parts = []string{g.path}
		}
		level := &out
		for i, p := range parts {
			if i == len(parts)-1 {
				def.Name = p
				*level = append(*level, def)
				break
			}
			j := indexOfColumn(*level, p)
			if j < 0 {
				*level = append(*level, engine.ColumnDef{Name: p, Type: engine.TypeObject})
				j = len(*level) - 1
			}
			level = &(*level)[j].Columns
		}
	}
	return out
}

// indexOfColumn returns the position of the column named name, or -1.
func indexOfColumn(cols []engine.ColumnDef, name string) int {
	for i := range cols {
		if cols[i].Name == name {
			return i
		}
	}
	return -1
}

// lookupColumn finds the column at a dotted path through object columns.
func lookupColumn(cols []engine.ColumnDef, path string) *engine.ColumnDef {
	parts := strings.Split(path, ".")
	for i, p := range parts {
		j := indexOfColumn(cols, p)
		if j < 0 {
			return nil
		}
		if i == len(parts)-1 {
			return &cols[j]
		}
		if cols[j].Type != engine.TypeObject {
			return nil
		}
		cols = cols[j].Columns
	}
	return nil
}

// describeColumns lists columns as "name type" for the operator, sub-columns
// of objects in braces.
func describeColumns(cols []engine.ColumnDef) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.Name + " " + string(c.Type)
		if c.Type == engine.TypeObject {
			parts[i] += " {" + describeColumns(c.Columns) + "}"
		}
	}
	return strings.Join(parts, ", ")
}

// csvConverter turns CSV fields into JSON records of a table's columns.
type csvConverter struct {
	header []string
	paths  [][]string          // header names split at dots
	cols   []*engine.ColumnDef // nil for the id column
}

// newCSVConverter checks that every header name is a column of the table
// (a dotted name reaches into an object column) or "id".
func newCSVConverter(header []string, table string, cols []engine.ColumnDef) (*csvConverter, error) {
	c := &csvConverter{header: header, paths: make([][]string, len(header)), cols: make([]*engine.ColumnDef, len(header))}
	for i, h := range header {
		c.paths[i] = strings.Split(h, ".")
		if h == "id" {
			continue
		}
		if c.cols[i] = lookupColumn(cols, h); c.cols[i] == nil {
			return nil, fmt.Errorf("CSV column [%s] is not a column of table [%s]", h, table)
		}
	}
	return c, nil
}

// convert returns the record of one CSV row as a JSON object, or why the
// row cannot be one. Empty fields are nulls and left out.
func (c *csvConverter) convert(cells []string) ([]byte, string) {
	rec := make(map[string]any, len(cells))
	for i, cell := range cells {
		if cell == "" {
			continue
		}
		var v any = cell
		if col := c.cols[i]; col != nil {
			var err error
			if v, err = cellValue(col.Type, cell); err != nil {
				return nil, fmt.Sprintf("column [%s]: %v", c.header[i], err)
			}
		}
		setPath(rec, c.paths[i], v)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err.Error()
	}
	return b, ""
}

// cellValue converts one CSV field to the JSON value of a column type:
// bool (strconv.ParseBool), int, float, a JSON array for multiple and
// vector, a JSON object for object; every other type takes the text as it
// is (a json column reads it as JSON text).
func cellValue(t engine.ColumnType, cell string) (any, error) {
	s := strings.TrimSpace(cell)
	switch t {
	case engine.TypeBool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a bool", cell)
		}
		return b, nil
	case engine.TypeInt:
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", cell)
		}
		return json.Number(strconv.FormatInt(i, 10)), nil
	case engine.TypeFloat:
		f, ok := parseFloat(s)
		if !ok {
			return nil, fmt.Errorf("%q is not a number", cell)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	case engine.TypeMultiple:
		if !isStringList(s) {
			return nil, fmt.Errorf("%q is not a JSON array of strings", cell)
		}
		return json.RawMessage(s), nil
	case engine.TypeVector:
		if !strings.HasPrefix(s, "[") || !json.Valid([]byte(s)) {
			return nil, fmt.Errorf("%q is not a JSON array of numbers", cell)
		}
		return json.RawMessage(s), nil
	case engine.TypeObject:
		if !strings.HasPrefix(s, "{") || !json.Valid([]byte(s)) {
			return nil, fmt.Errorf("%q is not a JSON object", cell)
		}
		return json.RawMessage(s), nil
	}
	return cell, nil
}

// setPath sets a value at a path of nested objects.
func setPath(m map[string]any, path []string, v any) {
	for _, p := range path[:len(path)-1] {
		sub, ok := m[p].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[p] = sub
		}
		m = sub
	}
	m[path[len(path)-1]] = v
}
