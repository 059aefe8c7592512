package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
)

// explainDocs is how many docs of the benchmark dataset the explain tests
// load: enough for the planner to walk ordered indexes as well as to fill
// heaps.
const explainDocs = 20_000

// explainFixture is a server holding the benchmark dataset (bench/gen) in
// database bench, whose every request is slow enough for the slow-request
// log, which so holds the plan of every query as it really ran.
type explainFixture struct {
	*testServer
	logs *logBuffer
	g    *gen.Gen
}

// startExplainFixture loads the users and n docs, without the docs' text
// bodies, which no request here reads.
func startExplainFixture(t *testing.T, n int) *explainFixture {
	logs := &logBuffer{}
	log, err := NewLoggerTo(logs, "info", LogFormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, Options{Logger: log, SlowRequest: time.Nanosecond})
	ts.createDB("bench")
	ref := engine.Ref{Workspace: ts.info.Workspace, Database: "bench", Branch: "main"}
	for _, tbl := range []struct {
		name string
		cols []engine.ColumnDef
	}{{gen.UsersTable, gen.UsersColumns()}, {gen.DocsTable, gen.DocsColumns()}} {
		if _, err := ts.eng.Schema().CreateTable(ref, tbl.name); err != nil {
			t.Fatal(err)
		}
		if _, err := ts.eng.Schema().SetTableColumns(ref, tbl.name, tbl.cols); err != nil {
			t.Fatal(err)
		}
	}
	g := gen.New(gen.Config{N: n, Seed: 1})
	load := func(table string, walk func(func(map[string]any) error) error) {
		batch := make([]map[string]any, 0, engine.MaxBulkRecords)
		flush := func() error {
			_, err := ts.eng.BulkInsert(context.Background(), ref, table, batch)
			batch = batch[:0]
			return err
		}
		err := walk(func(rec map[string]any) error {
			delete(rec, "body")
			if batch = append(batch, rec); len(batch) == cap(batch) {
				return flush()
			}
			return nil
		})
		if err == nil && len(batch) > 0 {
			err = flush()
		}
		if err != nil {
			t.Fatalf("load %s: %v", table, err)
		}
	}
	load(gen.UsersTable, g.Users)
	load(gen.DocsTable, g.Docs)
	return &explainFixture{testServer: ts, logs: logs, g: g}
}

// docsPath is the path of an endpoint of the docs table.
func docsPath(endpoint string) string {
	return "/db/bench:main/tables/" + gen.DocsTable + "/" + endpoint
}

// step is an explain step as a response carries it.
type step struct {
	Kind          string  `json:"kind"`
	Detail        string  `json:"detail"`
	Via           string  `json:"via"`
	EstimatedRows uint64  `json:"estimatedRows"`
	ActualRows    uint64  `json:"actualRows"`
	TimeMs        float64 `json:"timeMs"`
	Skipped       bool    `json:"skipped"`
	Children      []*step `json:"children"`
}

// head is the step's line without rows, as the text form prints it.
func (s *step) head() string {
	h := s.Kind
	if s.Detail != "" {
		h += " " + s.Detail
	}
	if s.Via != "" {
		h += " via " + s.Via
	}
	return h
}

// only returns the one child of a step of a pipeline, failing unless it
// has exactly one of the kind.
func (s *step) only(t *testing.T, kinds ...string) *step {
	t.Helper()
	if len(s.Children) != 1 || !contains(kinds, s.Children[0].Kind) {
		t.Fatalf("%s: children %v, want one %v", s.head(), s.Children, kinds)
	}
	return s.Children[0]
}

func (s *step) String() string { return s.head() }

// explained posts a body to an explain endpoint, checks the response's
// shape and every step's invariants, and returns the root step.
func (f *explainFixture) explained(t *testing.T, endpoint string, body any) *step {
	t.Helper()
	r := f.expect(200, "POST", docsPath(endpoint+"/explain"), body)
	var out struct {
		Plan        *step    `json:"plan"`
		Text        string   `json:"text"`
		TotalTimeMs *float64 `json:"totalTimeMs"`
	}
	if err := json.Unmarshal(r.raw, &out); err != nil || out.Plan == nil || out.TotalTimeMs == nil {
		t.Fatalf("%s explain: %v: %s", endpoint, err, r.raw)
	}
	if !strings.HasPrefix(out.Text, out.Plan.head()+": est ") {
		t.Errorf("text does not start with the root %q:\n%s", out.Plan.head(), out.Text)
	}
	if out.Plan.TimeMs > *out.TotalTimeMs {
		t.Errorf("root %.3f ms, longer than the request's %.3f ms", out.Plan.TimeMs, *out.TotalTimeMs)
	}
	checkSteps(t, out.Plan)
	return out.Plan
}

// checkSteps checks the invariants of a tree of steps: a step that ran
// produced no more rows than estimated and took at least its children's
// time; a skipped one has no rows and no time.
func checkSteps(t *testing.T, s *step) {
	t.Helper()
	switch {
	case s.Skipped && (s.ActualRows != 0 || s.EstimatedRows != 0 || s.TimeMs != 0):
		t.Errorf("%s: skipped with rows or time", s.head())
	case s.ActualRows > s.EstimatedRows:
		t.Errorf("%s: actual %d above the estimate %d", s.head(), s.ActualRows, s.EstimatedRows)
	}
	for _, c := range s.Children {
		if c.TimeMs > s.TimeMs {
			t.Errorf("%s: %.3f ms, longer than its parent %s's %.3f ms", c.head(), c.TimeMs, s.head(), s.TimeMs)
		}
		checkSteps(t, c)
	}
}

// count is the number of docs a filter matches, from an aggregate.
func (f *explainFixture) count(t *testing.T, filter json.RawMessage) uint64 {
	t.Helper()
	body := map[string]any{"aggs": map[string]any{"n": map[string]any{"count": "*"}}}
	if filter != nil {
		body["filter"] = filter
	}
	r := f.expect(200, "POST", docsPath("aggregate"), body)
	n, err := r.obj()["aggs"].(map[string]any)["n"].(json.Number).Int64()
	if err != nil {
		t.Fatal(err)
	}
	return uint64(n)
}

// loggedPlan returns the plan the slow-request log holds for the request
// a response answered.
func (f *explainFixture) loggedPlan(t *testing.T, r *response) string {
	t.Helper()
	id := r.header.Get("x-request-id")
	for _, l := range f.logs.lines(t) {
		if l["request"] == id && l["msg"] == "slow request" {
			plan, _ := l["plan"].(string)
			return plan
		}
	}
	t.Fatalf("no slow-request line with a plan for %s", id)
	return ""
}

// filterSteps lists the kinds of a filter's steps, depth first, children
// in their order.
func filterSteps(s *step) string {
	var kinds []string
	var walk func(s *step)
	walk = func(s *step) {
		kinds = append(kinds, s.Kind)
		for _, c := range s.Children {
			walk(c)
		}
	}
	walk(s)
	return strings.Join(kinds, " ")
}

// TestExplainW3 explains the queries of the benchmark's W3 mix (bench/gen)
// and checks that each explain shows the plan the query runs: the filter's
// steps the planner makes of it, the order step the real query took (as
// the slow-request log recorded it), a walk exactly when the planner's
// rule says so; and that the counts hold: every step's actual rows within
// its estimate, the filter's rows what an aggregate counts, the root's
// the records the real query returns.
func TestExplainW3(t *testing.T) {
	f := startExplainFixture(t, explainDocs)
	// The filter steps each kind of query makes, depth first.
	shapes := map[string]string{
		"eq":            "postings",
		"range":         "range",
		"eq-sort":       "and postings postings",
		"ranges-sort":   "and range range range",
		"contains":      "scan trigram",
		"includes-sort": "postings",
		"link-sort":     "postings",
	}
	seen := map[string]bool{}
	for _, q := range f.g.Queries(16).Filter {
		want, ok := shapes[q.Kind]
		if !ok {
			continue
		}
		seen[q.Kind] = true
		t.Run(fmt.Sprintf("%s/%s/%s", q.Kind, q.Filter, q.Sort), func(t *testing.T) {
			body := map[string]any{"filter": q.Filter, "page": map[string]any{"size": 20}}
			if string(q.Sort) != "null" {
				body["sort"] = q.Sort
			}
			real := f.expect(200, "POST", docsPath("query"), body)
			records := len(real.obj()["records"].([]any))
			plan := f.explained(t, "query", body)
			matches := f.count(t, q.Filter)

			if plan.Kind != "query" || plan.Detail != "size 20" || plan.ActualRows != uint64(records) || plan.EstimatedRows != 20 {
				t.Errorf("root %s: est %d, actual %d; the query returned %d records", plan.head(), plan.EstimatedRows, plan.ActualRows, records)
			}
			read := plan.only(t, "records")
			order := read.only(t, "walk", "heap", "lazy walk")
			filter := order.only(t, "and", "postings", "range", "scan")
			limit, page := min(21, matches), min(20, matches)
			if read.EstimatedRows != page || read.ActualRows != page {
				t.Errorf("%s: est %d, actual %d, want %d", read.head(), read.EstimatedRows, read.ActualRows, page)
			}
			if order.EstimatedRows != limit || order.ActualRows != limit {
				t.Errorf("%s: est %d, actual %d, want %d of %d matches", order.head(), order.EstimatedRows, order.ActualRows, limit, matches)
			}
			lazy := order.Kind == "lazy walk"
			switch {
			case lazy && (filter.ActualRows < order.ActualRows || filter.ActualRows > matches):
				// A lazy walk's filter counts the rows it passed on the way.
				t.Errorf("%s: passed %d rows for a walk of %d, of %d matches", filter.head(), filter.ActualRows, order.ActualRows, matches)
			case !lazy && filter.ActualRows != matches:
				t.Errorf("%s: actual %d, an aggregate counts %d", filter.head(), filter.ActualRows, matches)
			}
			if got := filterSteps(filter); got != want {
				t.Errorf("filter steps %q, want %q", got, want)
			}
			// The planner walks an ordered index when the candidates are
			// many: |cand| > 4096 and |cand|² > 50·limit·|live|. The
			// fixture's ids grow with its rows, so the ids' in-memory
			// order, once the column store holds it, is one run of rows
			// (index.RunOrderedValues), which a walk takes the candidates
			// of in row order: it seeks once per run it enters, against
			// an id comparison per candidate for a heap, and walks unless
			// 4·(limit·|live|/|cand|/|live| + 1) ≥ |cand|.
			walk := matches > 4096 && matches*matches > 50*21*explainDocs
			if string(q.Sort) == "null" && (order.Via == "id order" || order.Via == "id store") {
				walk = 4*(21/float64(matches)+1) < float64(matches)
			}
			if !lazy && (order.Kind == "walk") != walk {
				t.Errorf("%s on %d of %d rows: a walk is %v by the planner's rule", order.head(), matches, explainDocs, walk)
			}
			// The real query ordered its page the same way.
			if logged := f.loggedPlan(t, real); !strings.Contains(logged, "("+order.head()+"(") {
				t.Errorf("the query ran\n%s\nits explain shows %s", logged, order.head())
			}
			t.Logf("%s on %d matches", order.head(), matches)
			if t.Failed() {
				t.Logf("explain:\n%s", mustJSON(t, plan))
			}
		})
	}
	for kind := range shapes {
		if !seen[kind] {
			t.Errorf("no %s query in the mix", kind)
		}
	}
}

// TestExplainSummarize explains the summary of W4 (group by category
// with five summaries of the cheapest 80% of docs) and one with a filter
// on the groups.
func TestExplainSummarize(t *testing.T) {
	f := startExplainFixture(t, 5_000)
	filter := json.RawMessage(fmt.Sprintf(`{"price": {"$lt": %v}}`, gen.PriceQuantile(0.8)))
	body := map[string]any{
		"filter":  filter,
		"columns": []string{"category"},
		"summaries": map[string]any{
			"n": map[string]any{"count": "*"}, "views": map[string]any{"sum": "views"},
			"avg_price": map[string]any{"average": "price"}, "min_price": map[string]any{"min": "price"},
			"max_created": map[string]any{"max": "created_at"},
		},
		"page": map[string]any{"size": 5},
	}
	real := f.expect(200, "POST", docsPath("summarize"), body)
	groups := len(real.obj()["summaries"].([]any))
	plan := f.explained(t, "summarize", body)
	matches := f.count(t, filter)
	sort := plan.only(t, "sort")
	group := sort.only(t, "group")
	rng := group.only(t, "range")
	if plan.Kind != "summarize" || plan.ActualRows != uint64(groups) || groups != 5 {
		t.Errorf("root %s: actual %d; the request returned %d groups", plan.head(), plan.ActualRows, groups)
	}
	if rng.ActualRows != matches || group.EstimatedRows != matches || group.ActualRows != uint64(len(gen.Categories)) {
		t.Errorf("%d docs in %d groups, explained as\n%s", matches, len(gen.Categories), mustJSON(t, plan))
	}
	if sort.EstimatedRows != 5 || sort.ActualRows != 5 || group.Via == "" {
		t.Errorf("%s: est %d actual %d; %s", sort.head(), sort.EstimatedRows, sort.ActualRows, group.head())
	}
	if logged := f.loggedPlan(t, real); !strings.Contains(logged, "("+group.head()+"(") {
		t.Errorf("the request ran\n%s\nits explain shows %s", logged, group.head())
	}

	// A filter on the groups keeps those of more than 500 docs.
	body["summariesFilter"] = map[string]any{"n": map[string]any{"$gt": 500}}
	real = f.expect(200, "POST", docsPath("summarize"), body)
	plan = f.explained(t, "summarize", body)
	having := plan.only(t, "sort").only(t, "having")
	kept := uint64(len(real.obj()["summaries"].([]any)))
	if having.Detail != "n > 500" || having.EstimatedRows != uint64(len(gen.Categories)) || having.ActualRows < kept || plan.ActualRows != kept {
		t.Errorf("%d groups returned, explained as\n%s", kept, mustJSON(t, plan))
	}
}

// TestExplainSearch explains table searches: every step of the pipeline,
// the matches the real search counts, the page it returns.
func TestExplainSearch(t *testing.T) {
	f := startExplainFixture(t, 2_000)
	word := f.g.Word(40)
	for _, c := range []struct {
		name string
		body map[string]any
	}{
		{"word", map[string]any{"query": word}},
		{"typo, filter, page", map[string]any{"query": word[:len(word)-1] + "x", "fuzziness": 2,
			"filter": map[string]any{"active": true}, "page": map[string]any{"size": 5, "offset": 2}}},
		{"no match", map[string]any{"query": "zzzzqqqq", "fuzziness": 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			real := f.expect(200, "POST", docsPath("search"), c.body)
			records := uint64(len(real.obj()["records"].([]any)))
			total, _ := real.obj()["totalCount"].(json.Number).Int64()
			plan := f.explained(t, "search", c.body)
			high := plan.only(t, "highlight")
			top := high.only(t, "top-k")
			scoring := top.only(t, "scoring")
			cands := scoring.only(t, "candidates")
			filter := cands.only(t, "live", "postings")
			var fjs json.RawMessage
			if fl, ok := c.body["filter"]; ok {
				fjs, _ = json.Marshal(fl)
			}
			if n := f.count(t, fjs); filter.ActualRows != n || cands.ActualRows != n {
				t.Errorf("%s, %s: %d and %d candidates, an aggregate counts %d", cands.head(), filter.head(), cands.ActualRows, filter.ActualRows, n)
			}
			if plan.ActualRows != records || scoring.ActualRows != uint64(total) {
				t.Errorf("the search returned %d records of %d matches, explained as\n%s", records, total, mustJSON(t, plan))
			}
			if total > 0 && (top.Skipped || high.ActualRows < records || top.ActualRows != min(top.EstimatedRows, uint64(total))) {
				t.Errorf("explained as\n%s", mustJSON(t, plan))
			}
			if high.Detail != gen.DocsTable {
				t.Errorf("%s: not the table's", high.head())
			}
			// The slow-request log has the steps of a search not explained
			// too, with their rows, without the filter's own steps.
			logged := f.loggedPlan(t, real)
			want := fmt.Sprintf("search %s [%d rows](highlight %s [%d rows](top-k", plan.Detail, records, gen.DocsTable, high.ActualRows)
			if !strings.HasPrefix(logged, want) || !strings.Contains(logged, fmt.Sprintf("candidates [%d rows])", cands.ActualRows)) {
				t.Errorf("the search logged the plan\n%s\nwant it to start %s and end with its %d candidates", logged, want, cands.ActualRows)
			}
			if strings.Contains(logged, word[:len(word)-1]) {
				t.Errorf("the logged plan holds a word of the query: %s", logged)
			}
		})
	}
}

// TestExplainBranchSearch explains a search over two tables of a branch:
// one highlight step per table, in the order asked, whose matches add up
// to the real search's count.
func TestExplainBranchSearch(t *testing.T) {
	f := startExplainFixture(t, 2_000)
	body := map[string]any{"query": f.g.Word(40), "tables": []any{gen.DocsTable, gen.UsersTable}}
	real := f.expect(200, "POST", "/db/bench:main/search", body)
	records := uint64(len(real.obj()["records"].([]any)))
	total, _ := real.obj()["totalCount"].(json.Number).Int64()
	r := f.expect(200, "POST", "/db/bench:main/search/explain", body)
	var out struct {
		Plan *step  `json:"plan"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(r.raw, &out); err != nil || out.Plan == nil {
		t.Fatalf("branch search explain: %v: %s", err, r.raw)
	}
	plan := out.Plan
	if plan.Kind != "search" || len(plan.Children) != 2 {
		t.Fatalf("explained as\n%s", out.Text)
	}
	var matched uint64
	for i, table := range []string{gen.DocsTable, gen.UsersTable} {
		high := plan.Children[i]
		if high.Kind != "highlight" || high.Detail != table {
			t.Fatalf("step %d is %s, want the highlight of %s:\n%s", i, high.head(), table, out.Text)
		}
		matched += high.only(t, "top-k").only(t, "scoring").ActualRows
	}
	if plan.ActualRows != records || matched != uint64(total) {
		t.Errorf("the search returned %d records of %d matches, explained as\n%s", records, total, out.Text)
	}
	for _, bad := range []any{
		map[string]any{"query": "x", "tables": []string{"nope"}},
		map[string]any{"query": "x", "filter": map[string]any{"active": true}},
		map[string]any{"tables": []string{gen.DocsTable}},
		map[string]any{"query": "x", "tables": "docs"},
	} {
		real := f.do("POST", "/db/bench:main/search", bad)
		ex := f.do("POST", "/db/bench:main/search/explain", bad)
		if real.status < 400 || ex.status != real.status || message(ex) != message(real) {
			t.Errorf("%v: request %d %q, explain %d %q", bad, real.status, message(real), ex.status, message(ex))
		}
	}
	if ex := f.do("POST", "/db/nope:main/search/explain", body); ex.status != 404 {
		t.Errorf("explain on a missing database: %d %s", ex.status, ex.raw)
	}
}

// TestExplainBadBodies checks, in both modes, that each explain endpoint
// refuses what its request refuses, with the same status and message, and
// that an explain of an unknown table is a 404 like the request's.
func TestExplainBadBodies(t *testing.T) {
	for _, compat := range []string{CompatNone, CompatXata} {
		t.Run(compat, func(t *testing.T) {
			ts := queryFixture(t, Options{Compat: compat})
			f := func(endpoint string, body any) {
				t.Helper()
				for _, table := range []string{"users", "nope"} {
					path := "/db/db:main/tables/" + table + "/" + endpoint
					real := ts.do("POST", path, body)
					ex := ts.do("POST", path+"/explain", body)
					if real.status < 400 || ex.status != real.status || message(ex) != message(real) {
						t.Errorf("%s %v: request %d %q, explain %d %q", path, body, real.status, message(real), ex.status, message(ex))
					}
				}
			}
			for _, b := range []any{
				map[string]any{"filter": map[string]any{"nope": 1}},
				map[string]any{"filter": map[string]any{"age": map[string]any{"$bogus": 1}}},
				map[string]any{"sort": map[string]any{"age": "sideways"}},
				map[string]any{"page": map[string]any{"size": 0}},
				map[string]any{"page": map[string]any{"after": "not-a-cursor"}},
				map[string]any{"consistency": "sometimes"},
				map[string]any{"bogus": 1},
				"{not json",
				`{"filter": {}} trailing`,
			} {
				f("query", b)
			}
			for _, b := range []any{
				map[string]any{"summaries": map[string]any{"x": map[string]any{"median": "age"}}},
				map[string]any{"columns": "age"},
				map[string]any{"columns": []string{"nope"}},
				map[string]any{"summariesFilter": map[string]any{"nope": 1}},
				map[string]any{"page": map[string]any{"size": 1001}},
				"[]",
			} {
				f("summarize", b)
			}
			for _, b := range []any{
				map[string]any{"query": ""},
				map[string]any{"query": "x", "fuzziness": 3},
				map[string]any{"query": "x", "tables": []string{"users"}},
				map[string]any{"query": "x", "target": []string{"nope"}},
				map[string]any{"query": "x", "filter": map[string]any{"tags": "a"}},
				map[string]any{"query": "x", "page": map[string]any{"size": 500}},
			} {
				f("search", b)
			}
			// The record metadata key of the mode names the metadata columns.
			meta := MetaKey(compat)
			r := ts.expect(200, "POST", "/db/db:main/tables/users/query/explain",
				map[string]any{"filter": map[string]any{meta + ".version": map[string]any{"$ge": 0}}, "sort": map[string]any{meta + ".createdAt": "desc"}})
			if text, _ := r.obj()["text"].(string); !strings.Contains(text, "{meta}.createdAt desc") {
				t.Errorf("explain of a sort on %s.createdAt:\n%s", meta, text)
			}
		})
	}
}

// TestExplainOpenAPI validates explain responses against the document the
// server serves.
func TestExplainOpenAPI(t *testing.T) {
	ts := queryFixture(t, Options{})
	r := ts.do("GET", ts.url+"/openapi.json", nil, withKey(""))
	v := &validator{t: t, doc: loadOpenAPI(t, r.raw)}
	for _, c := range []struct {
		endpoint string
		body     any
	}{
		{"query", map[string]any{"filter": map[string]any{"age": map[string]any{"$ge": 30}, "name": map[string]any{"$contains": "a"}}, "sort": map[string]any{"age": "desc"}}},
		{"query", nil},
		{"summarize", map[string]any{"columns": []string{"team"}, "summaries": map[string]any{"n": map[string]any{"count": "*"}}}},
		{"search", map[string]any{"query": "ann", "filter": map[string]any{"age": map[string]any{"$gt": 1}}}},
	} {
		v.check(ts, 200, "POST", "/db/{db_branch_name}/tables/{table_name}/"+c.endpoint+"/explain", c.body, "db:main", "users")
	}
	v.check(ts, 200, "POST", "/db/{db_branch_name}/search/explain", map[string]any{"query": "ann"}, "db:main")
	v.check(ts, 400, "POST", "/db/{db_branch_name}/tables/{table_name}/query/explain", map[string]any{"filter": map[string]any{"nope": 1}}, "db:main", "users")
	if v.checked != 6 {
		t.Errorf("%d responses checked", v.checked)
	}
}

// mustJSON is v as indented JSON, for failure messages.
func mustJSON(t *testing.T, v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
