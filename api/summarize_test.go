package api

import (
	"runtime"
	"testing"
)

// TestSummarizeAndAggregateOverHTTP checks the two endpoints' shapes and
// statuses on the query fixture; the engine's tests cover every rule.
func TestSummarizeAndAggregateOverHTTP(t *testing.T) {
	ts := queryFixture(t, Options{})
	const users = "/db/db:main/tables/users"
	r := ts.expect(200, "POST", users+"/summarize", map[string]any{
		"columns":   []string{"team.name"},
		"summaries": map[string]any{"n": map[string]any{"count": "*"}, "oldest": map[string]any{"max": "age"}},
		"sort":      []any{map[string]any{"n": "desc"}},
	})
	jsonEq(t, "summaries", r.obj(), `{"summaries":[`+
		`{"n":3,"oldest":37,"team":{"name":null}},`+
		`{"n":2,"oldest":36,"team":{"name":"blue"}},`+
		`{"n":2,"oldest":33,"team":{"name":"red"}}]}`)
	r = ts.expect(200, "POST", users+"/summarize", map[string]any{
		"columns": []string{}, "filter": map[string]any{"age": map[string]any{"$gt": 32}},
		"summaries": map[string]any{"avg": map[string]any{"average": "age"}, "total": map[string]any{"sum": "age"}},
	})
	jsonEq(t, "whole table", r.obj(), `{"summaries":[{"avg":35.25,"total":141}]}`)
	ts.expect(400, "POST", users+"/summarize", map[string]any{"summaries": map[string]any{"x": map[string]any{"sum": "id"}}})
	ts.expect(400, "POST", users+"/summarize", map[string]any{"columns": []string{"nope"}})
	ts.expect(404, "POST", "/db/db:main/tables/nope/summarize", nil)

	r = ts.expect(200, "POST", users+"/aggregate", nil)
	jsonEq(t, "default count", r.obj(), `{"aggs":{"count":7}}`)
	r = ts.expect(200, "POST", users+"/aggregate", map[string]any{
		"filter": map[string]any{"$exists": "team"},
		"aggs": map[string]any{
			"teams": map[string]any{"topValues": map[string]any{"column": "name", "size": 2}},
			"p":     map[string]any{"percentiles": map[string]any{"column": "age", "percentiles": []int{50}}},
		},
	})
	// Four users have a team, aged 31, 32, 33 and 36; every name once, so
	// the top two are the first two names; the median interpolates.
	jsonEq(t, "aggregate", r.obj(), `{"aggs":{"p":{"values":{"50.0":32.5}},`+
		`"teams":{"values":[{"$count":1,"$key":"ann"},{"$count":1,"$key":"bob"}]}}}`)
	ts.expect(400, "POST", users+"/aggregate", map[string]any{"aggs": map[string]any{"x": "bar"}})
}

// TestSpareCoresOnlyWhenAlone: a summary folds on the other cores only
// while it is the one request in flight.
func TestSpareCoresOnlyWhenAlone(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var s Server
	f := func(inFlight int64, want int) {
		t.Helper()
		s.active.Store(inFlight)
		if got := s.spareCores(); got != want {
			t.Errorf("%d in flight: %d spare cores, want %d", inFlight, got, want)
		}
	}
	f(1, 3)
	f(2, 0)
	f(40, 0)
}
