package index

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// filterTestTables returns the fixture tables of the filter tests: items,
// with a column of every type (an object holding an object and a link, a
// multiple, a json and a vector), linking to users, which link to teams and
// to users again (a cycle). Their meta columns are named under meta.
func filterTestTables(meta string) (items, users, teams *Table) {
	teams = &Table{ID: 3, Name: "teams", Columns: map[string]*Column{}, Meta: meta}
	users = &Table{ID: 2, Name: "users", Columns: map[string]*Column{}, Meta: meta}
	items = &Table{ID: 1, Name: "items", Columns: map[string]*Column{}, Meta: meta}
	add := func(t *Table, path string, id uint32, typ ColumnType, link *Table) {
		c := &Column{Path: path, ID: id, Type: typ, Link: link}
		if typ == "vector" {
			c.Dimension = 3
		}
		t.Columns[path] = c
	}
	add(teams, "name", 1, "string", nil)
	add(teams, "labels", 2, "multiple", nil)

	add(users, "name", 1, "string", nil)
	add(users, "age", 2, "int", nil)
	add(users, "team", 3, "link", teams)
	add(users, "settings", 4, "json", nil)
	add(users, "boss", 5, "link", users)

	add(items, "name", 1, "string", nil)
	add(items, "title", 2, "text", nil)
	add(items, "email", 3, "email", nil)
	add(items, "price", 4, "float", nil)
	add(items, "count", 5, "int", nil)
	add(items, "active", 6, "bool", nil)
	add(items, "born", 7, "datetime", nil)
	add(items, "tags", 8, "multiple", nil)
	add(items, "owner", 9, "link", users)
	add(items, "config", 10, "json", nil)
	add(items, "embedding", 11, "vector", nil)
	add(items, "photo", 12, "file", nil)
	add(items, "gallery", 13, "file[]", nil)
	add(items, "address", 0, "object", nil)
	add(items, "address.city", 14, "string", nil)
	add(items, "address.zip", 15, "int", nil)
	add(items, "address.geo", 0, "object", nil)
	add(items, "address.geo.lat", 16, "float", nil)
	add(items, "address.geo.lon", 17, "float", nil)
	add(items, "address.tenant", 18, "link", users)
	return items, users, teams
}

// parseForTest parses a filter on the items fixture and prints the AST or
// the error.
func parseForTest(input, meta string) string {
	items, _, _ := filterTestTables(meta)
	n, err := ParseFilter(items, []byte(input))
	if err != nil {
		var fe *InputError
		if !errors.As(err, &fe) {
			return "error (not an InputError): " + err.Error()
		}
		return "error: " + err.Error()
	}
	return Format(n)
}

// TestParseFilter runs testdata/filters: "parse [meta=xata]" with a filter
// as input and the printed AST, or the error, as output. Regenerate with
// go test ./index -run TestParseFilter -rewrite.
func TestParseFilter(t *testing.T) {
	datadriven.RunTest(t, "testdata/filters", func(t *testing.T, td *datadriven.TestData) string {
		switch td.Cmd {
		case "parse":
			meta := "svc"
			td.MaybeScanArgs(t, "meta", &meta)
			out := parseForTest(td.Input, meta)
			// Formatting is a function of the AST: parse again and compare.
			if again := parseForTest(td.Input, meta); again != out {
				t.Fatalf("parse is not deterministic:\n%s\nthen\n%s", out, again)
			}
			return out + "\n"
		}
		t.Fatalf("unknown command %q", td.Cmd)
		return ""
	})
}

func TestParseFilterValue(t *testing.T) {
	items, _, _ := filterTestTables("svc")
	f := func(v any, want string) {
		t.Helper()
		n, err := ParseFilterValue(items, v)
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			got = Format(n)
		}
		if got != want {
			t.Errorf("ParseFilterValue(%#v):\n got %s\nwant %s", v, got, want)
		}
	}
	f(nil, "and")
	f(map[string]any{"count": 3}, "count = 3")
	f(map[string]any{"count": int64(-3)}, "count = -3")
	f(map[string]any{"count": 3.0}, "count = 3")
	f(map[string]any{"count": 3.5}, "error: filter: column [count]: $is needs an integer, got 3.5")
	f(map[string]any{"price": 3}, "price = 3.0")
	f(map[string]any{"price": float32(0.5)}, "price = 0.5")
	f(map[string]any{"tags": map[string]any{"$includesAll": []string{"a", "b"}}}, `tags all in ["a", "b"]`)
	f(map[string]any{"id": map[string]any{"$any": []string{"a", "b"}}}, `id in ["a", "b"]`)
	f([]any{}, "error: filter: the filter must be an object, got a list")
	f("x", `error: filter: the filter must be an object, got the string "x"`)
}

func TestParseFilterJSON(t *testing.T) {
	f := func(raw, want string) {
		t.Helper()
		if got := parseForTest(raw, "svc"); got != want {
			t.Errorf("ParseFilter(%s):\n got %s\nwant %s", raw, got, want)
		}
	}
	f(``, "and")
	f(` null `, "and")
	f(`{} {}`, "error: filter: invalid JSON: data after the filter object")
	f(`{"name":`, "error: filter: invalid JSON: unexpected EOF")
	f(`[1]`, "error: filter: the filter must be an object, got a list")
}

func TestParseFilterDepth(t *testing.T) {
	// Far deeper than the limit: the parser must refuse, not overflow.
	for _, c := range []struct{ head, open, inner, close, tail string }{
		{``, `{"$not":`, `{}`, `}`, ``},
		{``, `{"$any":[`, `{}`, `]}`, ``},
		{`{"count":`, `{"$not":`, `1`, `}`, `}`},
		{`{"owner":`, `{"boss":`, `{}`, `}`, `}`},
		{`{"address":`, `{"$all":`, `{}`, `}`, `}`},
		{`{"owner":`, `{"$not":`, `{}`, `}`, `}`},
		{`{"tags":`, `{"$none":[`, `"x"`, `]}`, `}`},
	} {
		raw := c.head + strings.Repeat(c.open, 2000) + c.inner + strings.Repeat(c.close, 2000) + c.tail
		got := parseForTest(raw, "svc")
		if !strings.HasPrefix(got, "error: filter: nested deeper than 64 levels") {
			t.Errorf("%s%s...: got %.200s", c.head, c.open, got)
		}
	}
	// Within the limit it parses: each $not is one level, the innermost
	// filter object one more and its column condition one more.
	deep := func(n int) string {
		return parseForTest(strings.Repeat(`{"$not":`, n)+`{"count":1}`+strings.Repeat(`}`, n), "svc")
	}
	if got := deep(maxFilterDepth - 2); strings.HasPrefix(got, "error") {
		t.Errorf("%d levels: %s", maxFilterDepth, got)
	}
	if got := deep(maxFilterDepth - 1); !strings.HasPrefix(got, "error: filter: nested deeper") {
		t.Errorf("%d levels: %s", maxFilterDepth+1, got)
	}
}

// FuzzParseFilter parses arbitrary filters: the parser must not panic, an
// accepted filter must print the same way twice and every time it is
// parsed, and the naive evaluator of its AST must agree with the reference
// reading of its JSON on the rows of TestEval. Seeds are the inputs of
// testdata/filters.
func FuzzParseFilter(f *testing.F) {
	datadriven.RunTestAny(f, "testdata/filters", func(_ testing.TB, td *datadriven.TestData) string {
		f.Add(td.Input)
		return td.Expected
	})
	full, null, empty, odd := evalTestRows(f)
	rows := []*testRow{full, null, empty, odd}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, meta := range []string{"svc", "xata"} {
			items, _, _ := filterTestTables(meta)
			n, err := ParseFilter(items, []byte(raw))
			if err != nil {
				var fe *InputError
				if !errors.As(err, &fe) {
					t.Fatalf("error is not an *InputError: %T %v", err, err)
				}
				if n != nil {
					t.Fatalf("node returned with an error")
				}
				continue
			}
			out := Format(n)
			if again := Format(n); again != out {
				t.Fatalf("Format is not deterministic:\n%s\nthen\n%s", out, again)
			}
			n2, err := ParseFilter(items, []byte(raw))
			if err != nil {
				t.Fatalf("second parse failed: %v", err)
			}
			if again := Format(n2); again != out {
				t.Fatalf("parse is not deterministic:\n%s\nthen\n%s", out, again)
			}
			checkAST(t, n, 0)
			var decoded any
			if len(bytes.TrimSpace([]byte(raw))) > 0 {
				decoded = decodeFilter(t, raw)
			}
			ref := NewReference(items, decoded)
			for _, r := range rows {
				want, err := ref.Match(r)
				if err != nil {
					t.Fatalf("reference: %v", err)
				}
				if got := Eval(n, r); got != want {
					t.Fatalf("on %s: naive %v, reference %v\n%s", r.vals[MetaIDColumn].Str, got, want, out)
				}
			}
		}
	})
}

// checkAST checks the invariants the planner relies on: no nil nodes or
// columns, values where the operator needs them, compiled patterns, and no
// negation above a json path predicate other than exists, except in the
// guard form And{Pred exists path, Not{Pred on path}}.
func checkAST(t *testing.T, n Node, depth int) {
	t.Helper()
	if depth > 3*maxFilterDepth {
		t.Fatalf("AST deeper than %d", 3*maxFilterDepth)
	}
	switch n := n.(type) {
	case *And:
		if len(n.Children) == 2 {
			ex, ok1 := n.Children[0].(*Pred)
			not, ok2 := n.Children[1].(*Not)
			if ok1 && ok2 && ex.Op == OpExists && ex.JSONPath != nil {
				if p, ok := not.Child.(*Pred); ok && p.Column == ex.Column &&
					strings.Join(p.JSONPath, "->") == strings.Join(ex.JSONPath, "->") {
					checkAST(t, p, depth+2)
					return
				}
			}
		}
		for _, c := range n.Children {
			checkAST(t, c, depth+1)
		}
	case *Or:
		for _, c := range n.Children {
			checkAST(t, c, depth+1)
		}
	case *Not:
		if negatesJSONPath(n.Child) {
			t.Fatalf("negated json path predicate: %s", Format(n))
		}
		checkAST(t, n.Child, depth+1)
	case *Pred:
		if n.Column == nil {
			t.Fatalf("predicate without a column")
		}
		switch n.Op {
		case OpIn:
			if len(n.Values) < 2 {
				t.Fatalf("OpIn with %d values: %s", len(n.Values), Format(n))
			}
		case OpPattern, OpIPattern:
			if n.Pattern == nil {
				t.Fatalf("pattern not compiled: %s", Format(n))
			}
		case OpExists:
		default:
			if n.Value.IsNull() {
				t.Fatalf("no value: %s", Format(n))
			}
		}
	case *Elements:
		if n.Column == nil || n.Column.Type != TypeMultiple || n.Quant == QuantNone {
			t.Fatalf("bad elements node: %s", Format(n))
		}
		checkElementCond(t, n, n.Cond, depth+1)
	default:
		t.Fatalf("unexpected node %T", n)
	}
}

// checkElementCond checks the condition of an Elements node: a tree of
// And, Or, Not and unquantified predicates on its column without links.
func checkElementCond(t *testing.T, e *Elements, n Node, depth int) {
	t.Helper()
	switch n := n.(type) {
	case *And:
		for _, c := range n.Children {
			checkElementCond(t, e, c, depth+1)
		}
	case *Or:
		for _, c := range n.Children {
			checkElementCond(t, e, c, depth+1)
		}
	case *Not:
		checkElementCond(t, e, n.Child, depth+1)
	case *Pred:
		if n.Column != e.Column || n.Quant != QuantNone || n.Links != nil || n.JSONPath != nil || n.Op == OpExists {
			t.Fatalf("bad element predicate in %s", Format(e))
		}
		checkAST(t, n, depth)
	default:
		t.Fatalf("unexpected node %T in %s", n, Format(e))
	}
}

// negatesJSONPath reports whether n holds a json path predicate other than
// exists.
func negatesJSONPath(n Node) bool {
	switch n := n.(type) {
	case *And:
		for _, c := range n.Children {
			if negatesJSONPath(c) {
				return true
			}
		}
	case *Or:
		for _, c := range n.Children {
			if negatesJSONPath(c) {
				return true
			}
		}
	case *Not:
		return negatesJSONPath(n.Child)
	case *Pred:
		return n.JSONPath != nil && n.Op != OpExists
	}
	return false
}
