package index

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/codec"
)

// testRow is a RowView over values by column id.
type testRow struct {
	vals  map[uint32]codec.Value
	links map[uint32]*testRow
}

func (r *testRow) Value(c *Column) codec.Value { return r.vals[c.ID] }

func (r *testRow) Linked(c *Column) RowView {
	if l := r.links[c.ID]; l != nil {
		return l
	}
	return nil
}

// mkRow builds a row of table t from values by column path: Go strings,
// ints, floats, bools, []string for multiple columns, RFC 3339 strings for
// datetimes, JSON text for json columns, and for links either the linked
// *testRow or a string id that points nowhere. "id", "version",
// "createdAt" and "updatedAt" set the meta columns.
func mkRow(t testing.TB, tbl *Table, kv map[string]any) *testRow {
	t.Helper()
	r := &testRow{vals: map[uint32]codec.Value{}, links: map[uint32]*testRow{}}
	meta := map[string]*Column{"id": IDColumn, "version": VersionColumn, "createdAt": CreatedAtColumn, "updatedAt": UpdatedAtColumn}
	for path, v := range kv {
		c := tbl.Columns[path]
		if c == nil {
			c = meta[path]
		}
		if c == nil {
			t.Fatalf("mkRow: no column %q in %s", path, tbl.Name)
		}
		var val codec.Value
		switch x := v.(type) {
		case string:
			switch c.Type {
			case "datetime":
				tm, err := time.Parse(time.RFC3339Nano, x)
				if err != nil {
					t.Fatal(err)
				}
				val = codec.Datetime(tm)
			default:
				val = codec.String(x)
			}
		case int:
			val = codec.Int(int64(x))
		case float64:
			val = codec.Float(x)
		case bool:
			val = codec.Bool(x)
		case []string:
			val = codec.Strings(x)
		case *testRow:
			val = x.vals[MetaIDColumn]
			r.links[c.ID] = x
		default:
			t.Fatalf("mkRow: %s: unsupported %T", path, v)
		}
		r.vals[c.ID] = val
	}
	return r
}

// evalTestRows returns records of the items fixture with every kind of
// value: full holds a value in nearly every column and links through
// users to a team, null holds nothing, empty holds zero values, empty
// lists and a dangling link, and odd holds unusual strings and repeats.
func evalTestRows(t testing.TB) (full, null, empty, odd *testRow) {
	items, users, teams := filterTestTables("svc")
	red := mkRow(t, teams, map[string]any{"id": "team_red", "name": "red", "labels": []string{"l1"}})
	bob := mkRow(t, users, map[string]any{
		"id": "user_bob", "name": "bob", "age": 30, "team": red,
		"settings": `{"theme":"dark"}`,
	})
	carol := mkRow(t, users, map[string]any{"id": "user_carol", "name": "carol", "boss": bob, "team": "team_gone"})
	full = mkRow(t, items, map[string]any{
		"id":              "rec_full",
		"version":         2,
		"createdAt":       "2024-01-01T00:00:00Z",
		"updatedAt":       "2024-06-01T00:00:00Z",
		"name":            "Hello",
		"title":           "Some Text",
		"email":           "a@example.com",
		"price":           2.5,
		"count":           3,
		"active":          true,
		"born":            "2000-02-29T12:00:00Z",
		"tags":            []string{"x", "y", "Zed"},
		"owner":           bob,
		"config":          `{"a":1,"arr":[1,2],"b":{"c":"x<y"},"big":1e300,"n":null,"s":"Straße","t":true}`,
		"address.city":    "Berlin",
		"address.geo.lat": 52.5,
		"address.tenant":  carol,
		"embedding":       "x",
	})
	null = mkRow(t, items, map[string]any{"id": "rec_null"})
	empty = mkRow(t, items, map[string]any{
		"id": "rec_empty", "tags": []string{}, "owner": "user_gone", "config": `{}`,
		"name": "", "count": 0, "price": 0.0, "active": false,
	})
	odd = mkRow(t, items, map[string]any{
		"id": "rec_odd", "name": `a*b?c\d`, "title": "ÄÖÜ ΣΊΣΥΦΟΣ \u212aelvin", "tags": []string{"x", "x"},
		"config": `[1,2]`, "owner": carol, "count": -5, "price": -0.5,
	})
	return full, null, empty, odd
}

func TestEval(t *testing.T) {
	items, _, _ := filterTestTables("svc")
	full, null, empty, odd := evalTestRows(t)

	f := func(filter string, r *testRow, want bool) {
		t.Helper()
		n, err := ParseFilter(items, []byte(filter))
		if err != nil {
			t.Fatalf("%s: %v", filter, err)
		}
		if got := Eval(n, r); got != want {
			t.Errorf("%s on %s: got %v, want %v\n%s", filter, r.vals[MetaIDColumn].Str, got, want, Format(n))
		}
		got, err := NewReference(items, decodeFilter(t, filter)).Match(r)
		if err != nil || got != want {
			t.Errorf("%s on %s: reference got %v (%v), want %v", filter, r.vals[MetaIDColumn].Str, got, err, want)
		}
	}

	// Empty combinators.
	f(`{}`, null, true)
	f(`{"$any": []}`, full, false)
	f(`{"$all": []}`, full, true)
	f(`{"$none": []}`, full, true)
	f(`{"$not": {}}`, full, false)

	// One object's keys are alternatives under $any and $none, AND-ed
	// under $all and $not; column operators alike.
	f(`{"$any": {"name": "Hello", "count": 99}}`, full, true)
	f(`{"$any": {"name": "nope", "count": 3}}`, full, true)
	f(`{"$any": {"name": "nope", "count": 99}}`, full, false)
	f(`{"$none": {"name": "nope", "count": 3}}`, full, false)
	f(`{"$none": {"name": "nope", "count": 99}}`, full, true)
	f(`{"$not": {"name": "Hello", "count": 99}}`, full, true)
	f(`{"$all": {"name": "Hello", "count": 99}}`, full, false)
	f(`{"$any": {}}`, full, true)
	f(`{"count": {"$any": {"$gt": 10, "$lt": 4}}}`, full, true)
	f(`{"count": {"$none": {"$gt": 10, "$lt": 4}}}`, full, false)
	f(`{"count": {"$none": {"$gt": 10, "$lt": 4}}}`, null, true)
	f(`{"count": {"$not": {"$gt": 1, "$lt": 4}}}`, full, false)
	f(`{"owner": {"$any": {"name": "nope", "age": 30}}}`, full, true)
	f(`{"owner": {"$none": {"name": "nope", "age": 30}}}`, full, false)
	f(`{"owner": {"$none": {"name": "nope", "age": 30}}}`, null, true)
	f(`{"owner": {"$any": {"$is": "user_gone", "name": "bob"}}}`, empty, true)
	f(`{"address": {"$any": {"city": "nope", "geo.lat": 52.5}}}`, full, true)
	f(`{"$none": {"config->a": 2, "name": "x"}}`, full, true)
	f(`{"$none": {"config->a": 2, "name": "x"}}`, empty, false) // no path a
	f(`{"$any": {"config->zz": 1, "name": "Hello"}}`, full, true)

	// Array operators take any element predicate.
	f(`{"tags": {"$includesAny": {"$any": ["q", "y"]}}}`, full, true)
	f(`{"tags": {"$includesAny": {"$any": ["q", "r"]}}}`, full, false)
	f(`{"tags": {"$includesAll": {"$any": ["x", "y", "Zed"]}}}`, full, true)
	f(`{"tags": {"$includesAll": {"$any": ["x", "y"]}}}`, full, false)
	f(`{"tags": {"$includesAll": {"$any": ["x", "y"]}}}`, odd, true)
	f(`{"tags": {"$includesAll": {"$any": ["x", "y"]}}}`, empty, false)
	f(`{"tags": {"$includesNone": {"$any": ["q", "Zed"]}}}`, full, false)
	f(`{"tags": {"$includesNone": {"$any": ["q", "Zed"]}}}`, odd, true)
	f(`{"tags": {"$includesNone": {"$any": ["q", "Zed"]}}}`, null, true)
	f(`{"tags": {"$includesAny": {"$all": [{"$startsWith": "Z"}, {"$endsWith": "d"}]}}}`, full, true)
	f(`{"tags": {"$includesAny": {"$all": [{"$startsWith": "x"}, {"$endsWith": "d"}]}}}`, full, false)
	f(`{"tags": {"$includesAll": {"$any": [{"$startsWith": "Z"}, {"$is": ["x", "y"]}]}}}`, full, true)
	f(`{"tags": {"$includesAll": {"$any": [{"$startsWith": "Z"}, "x"]}}}`, full, false)
	f(`{"tags": {"$includesAny": {"$isNot": "x"}}}`, full, true)
	f(`{"tags": {"$includesAny": {"$isNot": "x"}}}`, odd, false)
	f(`{"tags": {"$includesAll": {"$not": "q"}}}`, full, true)
	f(`{"tags": {"$includesAll": {"$not": "q"}}}`, empty, false)
	f(`{"tags": {"$includesNone": {"$none": ["x", "y"]}}}`, odd, true) // every element is x or y
	f(`{"tags": {"$includesNone": {"$none": ["x", "y"]}}}`, full, false)
	f(`{"tags": {"$includes": {"$gt": "a", "$lt": "y"}}}`, full, true)
	f(`{"tags": {"$includes": {"$gt": "x", "$lt": "y"}}}`, full, false)
	f(`{"tags": {"$includesNone": {"$gt": "x", "$lt": "y"}}}`, null, true)
	f(`{"owner.team.labels": {"$includesNone": {"$all": [{"$startsWith": "l"}, {"$endsWith": "1"}]}}}`, full, false)
	f(`{"owner.team.labels": {"$includesNone": {"$all": [{"$startsWith": "l"}, {"$endsWith": "1"}]}}}`, null, false)
	f(`{"owner.team.labels": {"$includesAll": {"$any": ["l1", "l2"]}}}`, full, true)

	// Equality and its negation; null matches only the negation.
	f(`{"name": "Hello"}`, full, true)
	f(`{"name": "hello"}`, full, false)
	f(`{"name": "Hello"}`, null, false)
	f(`{"name": {"$isNot": "Hello"}}`, null, true)
	f(`{"name": {"$isNot": "Hello"}}`, full, false)
	f(`{"name": {"$isNot": "other"}}`, full, true)
	f(`{"name": ""}`, empty, true)
	f(`{"name": ""}`, null, false)
	f(`{"name": {"$is": ["a", "Hello"]}}`, full, true)
	f(`{"name": {"$is": ["a", "b"]}}`, full, false)
	f(`{"name": {"$is": []}}`, full, false)
	f(`{"name": {"$isNot": []}}`, null, true)
	f(`{"count": 3}`, full, true)
	f(`{"count": 3.0}`, full, true)
	f(`{"count": 0}`, empty, true)
	f(`{"count": 0}`, null, false)
	f(`{"price": 2.5}`, full, true)
	f(`{"price": 0}`, empty, true)
	f(`{"price": -0.0}`, empty, true)
	f(`{"active": true}`, full, true)
	f(`{"active": false}`, empty, true)
	f(`{"active": false}`, null, false)
	f(`{"active": {"$isNot": true}}`, null, true)
	f(`{"born": "2000-02-29T13:00:00+01:00"}`, full, true)
	f(`{"email": "a@example.com"}`, full, true)

	// Comparisons: by value, never on null.
	f(`{"count": {"$gt": 2}}`, full, true)
	f(`{"count": {"$gt": 3}}`, full, false)
	f(`{"count": {"$ge": 3}}`, full, true)
	f(`{"count": {"$lt": 3}}`, full, false)
	f(`{"count": {"$le": 3}}`, full, true)
	f(`{"count": {"$lt": 0}}`, odd, true)
	f(`{"count": {"$lt": 100}}`, null, false)
	f(`{"count": {"$gt": -100}}`, null, false)
	f(`{"count": {"$not": {"$gt": -100}}}`, null, true)
	f(`{"count": {"$gt": 1, "$lt": 4}}`, full, true)
	f(`{"count": {"$gt": 3, "$lt": 4}}`, full, false)
	f(`{"price": {"$gt": 2, "$le": 2.5}}`, full, true)
	f(`{"price": {"$lt": 0}}`, odd, true)
	f(`{"price": {"$lt": 0}}`, empty, false)
	f(`{"born": {"$gt": "2000-01-01T00:00:00Z"}}`, full, true)
	f(`{"born": {"$lt": "2000-02-29T12:00:00.000000001Z"}}`, full, true)
	f(`{"born": {"$lt": "2000-02-29T12:00:00Z"}}`, full, false)
	f(`{"name": {"$gt": "H"}}`, full, true)
	f(`{"name": {"$gt": "h"}}`, full, false) // bytewise: "H" < "h"
	f(`{"name": {"$ge": "", "$lt": "I"}}`, full, true)
	f(`{"name": {"$ge": ""}}`, null, false)
	f(`{"email": {"$gt": "a@"}}`, full, true)

	// String operators: bytewise, and case-insensitive variants.
	f(`{"name": {"$contains": "ell"}}`, full, true)
	f(`{"name": {"$contains": "ELL"}}`, full, false)
	f(`{"name": {"$contains": ""}}`, full, true)
	f(`{"name": {"$contains": ""}}`, null, false)
	f(`{"name": {"$iContains": "ELL"}}`, full, true)
	f(`{"name": {"$iContains": "x"}}`, full, false)
	f(`{"title": {"$iContains": "äöü"}}`, odd, true)
	f(`{"title": {"$iContains": "σίσυφοσ"}}`, odd, true)
	f(`{"title": {"$iContains": "kelvin"}}`, odd, true)
	f(`{"title": {"$contains": "kelvin"}}`, odd, false)
	f(`{"name": {"$startsWith": "He"}}`, full, true)
	f(`{"name": {"$startsWith": "he"}}`, full, false)
	f(`{"name": {"$endsWith": "llo"}}`, full, true)
	f(`{"name": {"$endsWith": "x"}}`, full, false)
	f(`{"name": {"$endsWith": ""}}`, empty, true)
	f(`{"name": {"$pattern": "H*o"}}`, full, true)
	f(`{"name": {"$pattern": "H?llo"}}`, full, true)
	f(`{"name": {"$pattern": "h*"}}`, full, false)
	f(`{"name": {"$iPattern": "h*O"}}`, full, true)
	f(`{"name": {"$pattern": "*"}}`, null, false)
	f(`{"name": {"$pattern": "*"}}`, empty, true)
	f(`{"name": {"$pattern": "a\\*b\\?c\\\\d"}}`, odd, true)
	f(`{"name": {"$pattern": "a\\*b\\?c\\\\"}}`, odd, false)
	f(`{"name": {"$pattern": "a\\**"}}`, odd, true)
	f(`{"name": {"$pattern": "a\\?*"}}`, odd, false)
	f(`{"email": {"$endsWith": "@example.com"}}`, full, true)
	f(`{"id": {"$startsWith": "rec_"}}`, full, true)

	// Multiple columns: any, all, none on values, nulls and empty lists.
	f(`{"tags": "x"}`, full, true)
	f(`{"tags": "q"}`, full, false)
	f(`{"tags": "x"}`, null, false)
	f(`{"tags": "x"}`, empty, false)
	f(`{"tags": {"$isNot": "x"}}`, null, true)
	f(`{"tags": {"$isNot": "x"}}`, full, false)
	f(`{"tags": {"$includes": ["q", "y"]}}`, full, true)
	f(`{"tags": {"$includes": []}}`, full, false)
	f(`{"tags": {"$includes": {"$startsWith": "Z"}}}`, full, true)
	f(`{"tags": {"$includes": {"$iContains": "ZED"}}}`, full, true)
	f(`{"tags": {"$includes": {"$gt": "y"}}}`, full, false) // "Zed" < "y" bytewise
	f(`{"tags": {"$includesAll": "x"}}`, full, false)
	f(`{"tags": {"$includesAll": "x"}}`, odd, true)
	f(`{"tags": {"$includesAll": "x"}}`, empty, false)
	f(`{"tags": {"$includesAll": "x"}}`, null, false)
	f(`{"tags": {"$includesAll": ["x", "y", "Zed"]}}`, full, true)
	f(`{"tags": {"$includesAll": ["x", "y"]}}`, full, false)
	f(`{"tags": {"$includesAll": []}}`, full, false)
	f(`{"tags": {"$includesAll": []}}`, empty, false)
	f(`{"tags": {"$includesAll": {"$pattern": "?*"}}}`, full, true)
	f(`{"tags": {"$includesAll": {"$ge": "Z", "$le": "y"}}}`, full, true)
	f(`{"tags": {"$includesAll": {"$ge": "a", "$le": "y"}}}`, full, false)
	f(`{"tags": {"$includesNone": "x"}}`, full, false)
	f(`{"tags": {"$includesNone": "q"}}`, full, true)
	f(`{"tags": {"$includesNone": "x"}}`, empty, true)
	f(`{"tags": {"$includesNone": "x"}}`, null, true)
	f(`{"tags": {"$includesNone": ["q", "Zed"]}}`, full, false)
	f(`{"tags": {"$includesNone": [{"$contains": "e"}, "q"]}}`, full, false)
	f(`{"tags": {"$includesNone": [{"$contains": "e"}, "q"]}}`, odd, true)
	f(`{"tags": {"$includesNone": []}}`, null, true)
	f(`{"$exists": "tags"}`, empty, true)
	f(`{"$exists": "tags"}`, null, false)

	// Links: through a null or dangling link nothing matches, so the
	// negation does.
	f(`{"owner.name": "bob"}`, full, true)
	f(`{"owner": {"name": "bob"}}`, full, true)
	f(`{"owner.name": "bob"}`, null, false)
	f(`{"owner.name": "bob"}`, empty, false)
	f(`{"$not": {"owner.name": "bob"}}`, empty, true)
	f(`{"owner.name": {"$isNot": "bob"}}`, empty, true)
	f(`{"owner.team.name": "red"}`, full, true)
	f(`{"owner.team.labels": "l1"}`, full, true)
	f(`{"owner.team.name": "red"}`, odd, false) // carol's team is gone
	f(`{"owner.boss.name": "bob"}`, odd, true)
	f(`{"owner.boss.boss.name": "bob"}`, odd, false)
	f(`{"address.tenant.boss.team.name": "red"}`, full, true)
	f(`{"owner": "user_bob"}`, full, true)
	f(`{"owner": "user_gone"}`, empty, true)
	f(`{"owner": {"$isNot": "user_bob"}}`, null, true)
	f(`{"owner.id": "user_gone"}`, empty, false)
	f(`{"owner.id": "user_bob"}`, full, true)
	f(`{"$exists": "owner"}`, empty, true)
	f(`{"$exists": "owner"}`, null, false)
	f(`{"$exists": "owner.name"}`, empty, false)
	f(`{"$exists": "owner.name"}`, full, true)
	f(`{"$notExists": "owner.name"}`, empty, true)
	f(`{"$exists": "owner.boss"}`, full, false)
	f(`{"owner": {"$any": [{"name": "carol"}, "user_bob"]}}`, full, true)
	f(`{"owner": {"$any": [{"name": "carol"}, "user_bob"]}}`, odd, true)
	f(`{"owner": {"$any": [{"name": "carol"}, "user_bob"]}}`, empty, false)
	f(`{"owner.settings->theme": "dark"}`, full, true)
	f(`{"owner.settings->theme": {"$isNot": "dark"}}`, odd, false)

	// Meta columns.
	f(`{"id": "rec_full"}`, full, true)
	f(`{"id": {"$any": ["rec_null", "rec_full"]}}`, full, true)
	f(`{"svc.version": {"$ge": 2}}`, full, true)
	f(`{"svc.version": {"$gt": 2}}`, full, false)
	f(`{"svc.createdAt": {"$lt": "2024-01-01T00:00:01Z"}}`, full, true)
	f(`{"svc.updatedAt": {"$gt": "2024-05-31T00:00:00Z"}}`, full, true)

	// Objects.
	f(`{"address.city": "Berlin"}`, full, true)
	f(`{"address": {"geo": {"lat": {"$gt": 50}}}}`, full, true)
	f(`{"$exists": "address"}`, full, true)
	f(`{"$exists": "address"}`, null, false)
	f(`{"$exists": "address.geo"}`, full, true)
	f(`{"$existsNot": "address.geo"}`, odd, true)

	// Vectors and files: only whether they exist.
	f(`{"$exists": "embedding"}`, full, true)
	f(`{"$exists": "embedding"}`, null, false)
	f(`{"$exists": "photo"}`, full, false)

	// Json: paths, missing paths never match, even negated.
	f(`{"config->a": 1}`, full, true)
	f(`{"config->a": 1.0}`, full, true)
	f(`{"config->a": "1"}`, full, false)
	f(`{"config->a": {"$gt": 0.5}}`, full, true)
	f(`{"config->a": {"$ge": 1, "$lt": 2}}`, full, true)
	f(`{"config->big": {"$gt": 1e299}}`, full, true)
	f(`{"config->a": {"$isNot": 2}}`, full, true)
	f(`{"config->a": {"$isNot": 2}}`, empty, false)
	f(`{"config->a": {"$isNot": 2}}`, null, false)
	f(`{"$not": {"config->a": 2}}`, empty, false)
	f(`{"$not": {"config->a": 2}}`, full, true)
	f(`{"$not": {"config->a": 1}}`, full, false)
	f(`{"$not": {"$not": {"config->a": 1}}}`, full, true)
	f(`{"$none": [{"config->a": 2}, {"name": "x"}]}`, full, true)
	f(`{"$none": [{"config->a": 2}, {"name": "x"}]}`, empty, false)
	f(`{"$not": {"$any": [{"config->a": 2}, {"name": "x"}]}}`, empty, false)
	f(`{"$not": {"$all": [{"config->a": 1}, {"name": "x"}]}}`, full, true)
	f(`{"$not": {"$all": [{"config->zz": 1}, {"name": "x"}]}}`, full, true) // name decides
	f(`{"$not": {"$all": [{"config->zz": 1}, {"name": "Hello"}]}}`, full, false)
	f(`{"$not": {"$any": [{"config->zz": 1}, {"name": "Hello"}]}}`, full, false)
	f(`{"$not": {"$any": [{"config->zz": 1}, {"name": "x"}]}}`, full, false)
	f(`{"config->b->c": {"$contains": "<"}}`, full, true)
	f(`{"config->b->c": {"$startsWith": "x"}}`, full, true)
	f(`{"config->b->c": {"$endsWith": "y"}}`, full, true)
	f(`{"config->b->c": {"$pattern": "x?y"}}`, full, true)
	f(`{"config->s": {"$iContains": "STRASSE"}}`, full, false)
	f(`{"config->s": {"$iContains": "STRAẞE"}}`, full, true)
	f(`{"config->t": true}`, full, true)
	f(`{"config->t": {"$isNot": false}}`, full, true)
	f(`{"config->b": {"$contains": "\"c\""}}`, full, true) // objects as their text
	f(`{"config->arr": {"$is": "[1,2]"}}`, full, true)
	f(`{"config->b->c->d": "x"}`, full, false)
	f(`{"config->n": {"$isNot": 1}}`, full, false) // JSON null is missing
	f(`{"$exists": "config->n"}`, full, false)
	f(`{"$exists": "config->b->c"}`, full, true)
	f(`{"$existsNot": "config->zz"}`, full, true)
	f(`{"$existsNot": "config->zz"}`, null, true)
	f(`{"$not": {"$exists": "config->a"}}`, full, false)
	f(`{"config->a": 1}`, odd, false) // the document is an array
	f(`{"config": "{ \"n\": null, \"t\": true, \"s\": \"Straße\", \"big\": 1e300, \"b\": {\"c\": \"x<y\"}, \"arr\": [1, 2], \"a\": 1 }"}`, full, true)
	f(`{"config": {"$isNot": "{}"}}`, empty, false)
	f(`{"config": {"$isNot": "{}"}}`, null, true)
}

// decodeFilter decodes a filter's JSON text as the API does.
func decodeFilter(t *testing.T, raw string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

// TestEvalAST covers what the parser does not produce: values of another
// numeric kind, unusual kinds and malformed rows.
func TestEvalAST(t *testing.T) {
	items, _, _ := filterTestTables("svc")
	price, count, tags, cfg := items.Columns["price"], items.Columns["count"], items.Columns["tags"], items.Columns["config"]
	row := &testRow{vals: map[uint32]codec.Value{
		price.ID: codec.Float(2.5),
		count.ID: codec.Int(math.MaxInt64),
		tags.ID:  codec.String("not a list"),
		cfg.ID:   codec.String("{not json"),
	}}
	f := func(n Node, want bool) {
		t.Helper()
		if got := Eval(n, row); got != want {
			t.Errorf("%s: got %v, want %v", Format(n), got, want)
		}
	}
	f(&Pred{Column: price, Op: OpGt, Value: codec.Int(2)}, true)
	f(&Pred{Column: price, Op: OpLt, Value: codec.Int(3)}, true)
	f(&Pred{Column: price, Op: OpEq, Value: codec.Int(2)}, false)
	f(&Pred{Column: price, Op: OpEq, Value: codec.String("2.5")}, false)
	f(&Pred{Column: price, Op: OpContains, Value: codec.String("2")}, false)
	f(&Pred{Column: count, Op: OpLt, Value: codec.Float(math.MaxInt64)}, true) // 2^63 exactly
	f(&Pred{Column: count, Op: OpEq, Value: codec.Float(math.MaxInt64)}, false)
	f(&Pred{Column: count, Op: OpGt, Value: codec.Float(math.Inf(-1))}, true)
	f(&Pred{Column: count, Op: OpGt, Value: codec.Float(math.NaN())}, false)
	f(&Pred{Column: tags, Op: OpEq, Quant: QuantAny, Value: codec.String("not a list")}, false)
	f(&Pred{Column: tags, Op: OpEq, Quant: QuantNoElement, Value: codec.String("x")}, true)
	f(&Pred{Column: cfg, Op: OpExists, JSONPath: []string{"a"}}, false)
	f(&Pred{Column: cfg, Op: OpExists}, true)
	f(&Pred{Column: price, Op: OpPattern, Value: codec.String("*")}, false) // no compiled pattern
	f(&Not{Child: &Or{}}, true)
}

func TestCompareIntFloat(t *testing.T) {
	f := func(i int64, x float64, want int) {
		t.Helper()
		if got := compareIntFloat(i, x); got != want {
			t.Errorf("compareIntFloat(%d, %v) = %d, want %d", i, x, got, want)
		}
		if c, ok := naiveCompare(codec.Float(x), codec.Int(i)); !ok || c != -want {
			t.Errorf("naiveCompare(float %v, int %d) = %d, %v", x, i, c, ok)
		}
	}
	f(0, 0, 0)
	f(0, math.Copysign(0, -1), 0)
	f(1, 1.5, -1)
	f(2, 1.5, 1)
	f(-1, -1.5, 1)
	f(-2, -1.5, -1)
	f(-1, -1, 0)
	f(math.MaxInt64, math.MaxInt64, -1) // the float is 2^63
	f(math.MinInt64, math.MinInt64, 0)  // -2^63 is exact
	f(math.MinInt64, -1e19, 1)
	f(1<<53+1, 1<<53, 1) // beyond float precision, still exact
	f(0, math.Inf(1), -1)
	f(0, math.Inf(-1), 1)
	f(0, math.NaN(), -1)
}
