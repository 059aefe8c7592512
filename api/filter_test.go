package api

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
)

// filterFixture holds things owned by people: strings, a bool, multiple
// columns on both sides of a link, and an object, so that the single-object
// and array forms of the filter combinators tell their readings apart.
func filterFixture(t *testing.T) *testServer {
	ts := startServer(t, Options{})
	ts.createDB("db")
	ts.createTable("db", "people",
		map[string]any{"name": "name", "type": "string"},
		map[string]any{"name": "role", "type": "string"},
		map[string]any{"name": "tags", "type": "multiple"},
	)
	ts.createTable("db", "things",
		map[string]any{"name": "name", "type": "string"},
		map[string]any{"name": "kind", "type": "string"},
		map[string]any{"name": "flag", "type": "bool"},
		map[string]any{"name": "tags", "type": "multiple"},
		map[string]any{"name": "owner", "type": "link", "link": map[string]any{"table": "people"}},
		map[string]any{"name": "info", "type": "object", "columns": []any{
			map[string]any{"name": "color", "type": "string"}, map[string]any{"name": "size", "type": "int"},
		}},
	)
	people := map[string]map[string]any{
		"p1": {"name": "ann", "role": "admin", "tags": []string{"x"}},
		"p2": {"name": "bob", "role": "user", "tags": []string{"y", "z"}},
		"p3": {"name": "cid", "role": "user"},
	}
	for _, id := range []string{"p1", "p2", "p3"} {
		ts.expect(201, "PUT", "/db/db:main/tables/people/data/"+id, people[id])
	}
	things := map[string]map[string]any{
		"t1": {"name": "apple pie", "kind": "alpha", "flag": false, "tags": []string{"banana"}, "owner": "p1", "info": map[string]any{"color": "red", "size": 1}},
		"t2": {"name": "apple tart", "kind": "beta", "flag": true, "tags": []string{"cherry", "banana"}, "owner": "p2", "info": map[string]any{"color": "blue", "size": 2}},
		"t3": {"name": "apple cake", "kind": "beta", "flag": false, "tags": []string{"date"}, "owner": "p3", "info": map[string]any{"color": "green", "size": 1}},
		"t4": {"name": "apple jam", "kind": "gamma", "flag": false},
		"t5": {"name": "apple crumble", "kind": "alpha", "flag": true, "tags": []string{"banana", "date"}, "owner": "p3"},
	}
	for _, id := range []string{"t1", "t2", "t3", "t4", "t5"} {
		ts.expect(201, "PUT", "/db/db:main/tables/things/data/"+id, things[id])
	}
	return ts
}

const things = "/db/db:main/tables/things"

// Filters whose readings differ between "each key of a single object is one
// alternative" and "the keys of an object are AND-ed", with the records of
// the filter fixture each matches.
var (
	anyOfKeys  = map[string]any{"$any": map[string]any{"kind": "alpha", "flag": true}}
	noneOfKeys = map[string]any{"$none": map[string]any{"kind": "alpha", "flag": true}}
	includesOr = map[string]any{"tags": map[string]any{"$includesAny": map[string]any{"$any": []string{"banana", "cherry"}}}}
)

func TestFilterFormsQuery(t *testing.T) {
	ts := filterFixture(t)
	f := func(filter any, want string) {
		t.Helper()
		r := ts.expect(200, "POST", things+"/query", map[string]any{"filter": filter})
		if got := ids(t, r); got != want {
			t.Errorf("%s: ids %s, want %s", marshal(t, filter), got, want)
		}
	}
	// Combinators: a single object's keys are alternatives for $any and
	// $none; an array's objects are each AND-ed first.
	f(anyOfKeys, "t1,t2,t5")
	f(noneOfKeys, "t3,t4")
	f(map[string]any{"$any": []any{map[string]any{"kind": "alpha", "flag": true}}}, "t5")
	f(map[string]any{"$none": []any{map[string]any{"kind": "alpha"}, map[string]any{"flag": true}}}, "t3,t4")
	f(map[string]any{"$none": []any{map[string]any{"kind": "alpha", "flag": true}}}, "t1,t2,t3,t4")
	f(map[string]any{"$all": map[string]any{"kind": "alpha", "flag": true}}, "t5")
	f(map[string]any{"$not": map[string]any{"kind": "alpha", "flag": true}}, "t1,t2,t3,t4")
	f(map[string]any{"$all": []any{anyOfKeys, map[string]any{"kind": map[string]any{"$isNot": "alpha"}}}}, "t2")
	// The same inside object columns and through links.
	f(map[string]any{"info": map[string]any{"$any": map[string]any{"color": "red", "size": 2}}}, "t1,t2")
	f(map[string]any{"info": map[string]any{"$none": map[string]any{"color": "red", "size": 2}}}, "t3,t4,t5")
	f(map[string]any{"owner": map[string]any{"$any": map[string]any{"name": "bob", "role": "admin"}}}, "t1,t2")
	f(map[string]any{"owner": map[string]any{"$none": map[string]any{"name": "bob", "role": "admin"}}}, "t3,t4,t5")
	// Column operators: a single object's operators are alternatives too.
	f(map[string]any{"name": map[string]any{"$any": map[string]any{"$endsWith": "pie", "$startsWith": "apple t"}}}, "t1,t2")
	f(map[string]any{"name": map[string]any{"$none": map[string]any{"$endsWith": "pie", "$startsWith": "apple t"}}}, "t3,t4,t5")
	f(map[string]any{"name": map[string]any{"$all": map[string]any{"$endsWith": "pie", "$startsWith": "apple"}}}, "t1")
	f(map[string]any{"name": map[string]any{"$not": map[string]any{"$endsWith": "pie", "$startsWith": "apple"}}}, "t2,t3,t4,t5")
	// Array operators take any predicate, combinators included.
	f(includesOr, "t1,t2,t5")
	f(map[string]any{"tags": map[string]any{"$includes": map[string]any{"$any": []string{"cherry", "date"}}}}, "t2,t3,t5")
	f(map[string]any{"tags": map[string]any{"$includesAll": map[string]any{"$any": []string{"banana", "cherry"}}}}, "t1,t2")
	f(map[string]any{"tags": map[string]any{"$includesNone": map[string]any{"$any": []string{"banana", "cherry"}}}}, "t3,t4")
	f(map[string]any{"tags": map[string]any{"$includesAll": map[string]any{"$any": []any{
		map[string]any{"$startsWith": "b"}, map[string]any{"$endsWith": "e"}}}}}, "t1,t3,t5")
	f(map[string]any{"tags": map[string]any{"$includesAny": map[string]any{"$all": []any{
		map[string]any{"$contains": "a"}, map[string]any{"$endsWith": "e"}}}}}, "t3,t5")
	f(map[string]any{"tags": map[string]any{"$includesAny": map[string]any{"$not": "banana"}}}, "t2,t3,t5")
	f(map[string]any{"tags": map[string]any{"$includesAny": map[string]any{"$isNot": "banana"}}}, "t2,t3,t5")
	f(map[string]any{"tags": map[string]any{"$includesAll": map[string]any{"$none": []string{"cherry", "date"}}}}, "t1")
	f(map[string]any{"owner.tags": map[string]any{"$includesAny": map[string]any{"$any": []string{"y", "x"}}}}, "t1,t2")
}

func TestFilterFormsSummarize(t *testing.T) {
	ts := filterFixture(t)
	count := map[string]any{"n": map[string]any{"count": "*"}}
	f := func(filter any, want string) {
		t.Helper()
		r := ts.expect(200, "POST", things+"/summarize", map[string]any{"columns": []string{}, "summaries": count, "filter": filter})
		jsonEq(t, marshal(t, filter), r.obj(), `{"summaries":[{"n":`+want+`}]}`)
	}
	f(anyOfKeys, "3")
	f(noneOfKeys, "2")
	f(includesOr, "3")
	f(map[string]any{"owner": map[string]any{"$any": map[string]any{"name": "bob", "role": "admin"}}}, "2")

	// summariesFilter takes the same language over group values and
	// summaries.
	having := func(columns []string, filter any, want string) {
		t.Helper()
		r := ts.expect(200, "POST", things+"/summarize", map[string]any{"columns": columns, "summaries": count, "summariesFilter": filter})
		var got []string
		for _, s := range r.obj()["summaries"].([]any) {
			m := s.(map[string]any)
			got = append(got, fmt.Sprint(m[columns[0]], ":", m["n"]))
		}
		sort.Strings(got)
		if strings.Join(got, " ") != want {
			t.Errorf("summariesFilter %s: got %s, want %s", marshal(t, filter), got, want)
		}
	}
	byKind := []string{"kind"}
	having(byKind, map[string]any{"$any": map[string]any{"kind": "alpha", "n": 1}}, "alpha:2 gamma:1")
	having(byKind, map[string]any{"$none": map[string]any{"kind": "alpha", "n": 1}}, "beta:2")
	having(byKind, map[string]any{"n": map[string]any{"$any": map[string]any{"$lt": 2, "$gt": 1}}}, "alpha:2 beta:2 gamma:1")
	having([]string{"tags"}, includesOr, "[banana date]:1 [banana]:1 [cherry banana]:1")
}

func TestFilterFormsAggregate(t *testing.T) {
	ts := filterFixture(t)
	f := func(filter any, want string) {
		t.Helper()
		r := ts.expect(200, "POST", things+"/aggregate", map[string]any{"filter": filter})
		jsonEq(t, marshal(t, filter), r.obj(), `{"aggs":{"count":`+want+`}}`)
	}
	f(anyOfKeys, "3")
	f(noneOfKeys, "2")
	f(includesOr, "3")
	// Inside a bucket's count.
	r := ts.expect(200, "POST", things+"/aggregate", map[string]any{"aggs": map[string]any{
		"any":  map[string]any{"count": map[string]any{"filter": anyOfKeys}},
		"none": map[string]any{"count": map[string]any{"filter": noneOfKeys}},
		"incl": map[string]any{"count": map[string]any{"filter": includesOr}},
		"kinds": map[string]any{"topValues": map[string]any{"column": "kind", "aggs": map[string]any{
			"c": map[string]any{"count": map[string]any{"filter": anyOfKeys}},
		}}},
	}})
	jsonEq(t, "bucket counts", r.obj(), `{"aggs":{"any":3,"incl":3,"none":2,"kinds":{"values":[`+
		`{"$count":2,"$key":"alpha","c":2},{"$count":2,"$key":"beta","c":1},{"$count":1,"$key":"gamma","c":0}]}}}`)
}

func TestFilterFormsSearch(t *testing.T) {
	ts := filterFixture(t)
	sorted := func(r *response) string {
		got := strings.Split(hitIDs(r), ",")
		sort.Strings(got)
		return strings.Join(got, ",")
	}
	f := func(filter any, want string) {
		t.Helper()
		r := ts.expect(200, "POST", things+"/search", map[string]any{"query": "apple", "filter": filter})
		if got := sorted(r); got != want {
			t.Errorf("table search %s: got %s, want %s", marshal(t, filter), got, want)
		}
		r = ts.expect(200, "POST", "/db/db:main/search", map[string]any{"query": "apple", "tables": []any{
			map[string]any{"table": "things", "filter": filter},
		}})
		if got := sorted(r); got != want {
			t.Errorf("branch search %s: got %s, want %s", marshal(t, filter), got, want)
		}
	}
	f(anyOfKeys, "t1,t2,t5")
	f(noneOfKeys, "t3,t4")
	f(map[string]any{"owner": map[string]any{"$any": map[string]any{"name": "bob", "role": "admin"}}}, "t1,t2")
	// A booster's ifMatchesFilter reads the same way.
	r := ts.expect(200, "POST", things+"/search", map[string]any{"query": "apple", "boosters": []any{
		map[string]any{"valueBooster": map[string]any{"column": "kind", "value": "beta", "factor": 10,
			"ifMatchesFilter": map[string]any{"$any": map[string]any{"flag": true, "name": "apple cake"}}}},
	}})
	if got := strings.Split(hitIDs(r), ","); len(got) != 5 || got[0]+","+got[1] != "t2,t3" && got[0]+","+got[1] != "t3,t2" {
		t.Errorf("boosted by ifMatchesFilter: got %v, want t2 and t3 first", got)
	}
	// Search filters do not take multiple columns of the searched table,
	// whatever the form; through a link they do.
	f(map[string]any{"owner.tags": map[string]any{"$includesAny": map[string]any{"$any": []string{"y", "x"}}}}, "t1,t2")
	f(map[string]any{"owner.tags": map[string]any{"$includesNone": map[string]any{"$any": []string{"y", "x"}}}}, "t3,t5")
	r = ts.expect(400, "POST", things+"/search", map[string]any{"query": "apple", "filter": includesOr})
	if want := "column [tags]: search filters do not support multiple columns"; message(r) != want {
		t.Errorf("multiple column in a search filter: %q, want %q", message(r), want)
	}
}

// marshal is the JSON text of v, for messages.
func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
