package api

import (
	"fmt"
	"strings"
	"testing"
)

// searchFixture holds books and authors whose texts make each ranking rule
// visible on its own.
func searchFixture(t *testing.T, opts Options) *testServer {
	ts := startServer(t, opts)
	ts.createDB("db")
	ts.createTable("db", "books",
		map[string]any{"name": "title", "type": "string"},
		map[string]any{"name": "blurb", "type": "text"},
		map[string]any{"name": "tags", "type": "multiple"},
		map[string]any{"name": "pages", "type": "int"},
		map[string]any{"name": "published", "type": "datetime"},
		map[string]any{"name": "info", "type": "object", "columns": []any{
			map[string]any{"name": "author", "type": "string"},
		}},
	)
	ts.createTable("db", "authors",
		map[string]any{"name": "name", "type": "string"},
		map[string]any{"name": "bio", "type": "text"},
	)
	books := map[string]map[string]any{
		"b1": {"title": "The quick zebra", "blurb": "stripes everywhere", "pages": 1},
		// b2 and b3 hold "garden" in different columns, alike otherwise.
		"b2": {"title": "garden", "blurb": "orchard"},
		"b3": {"title": "orchard", "blurb": "garden"},
		// b4 and b5 score the same on "lantern": boosters decide.
		"b4": {"title": "lantern", "pages": 10, "published": "2020-01-01T00:00:00Z", "tags": []string{"old"}, "info": map[string]any{"author": "ann"}},
		"b5": {"title": "lantern", "pages": 100, "published": "2024-01-01T00:00:00Z", "tags": []string{"new"}, "info": map[string]any{"author": "bob"}},
		"b6": {"title": `Tom & Jerry <b>`, "tags": []string{"cartoon cat", "mouse"}},
	}
	for _, id := range []string{"b1", "b2", "b3", "b4", "b5", "b6"} {
		ts.expect(201, "PUT", "/db/db:main/tables/books/data/"+id, books[id])
	}
	ts.expect(201, "PUT", "/db/db:main/tables/authors/data/a1", map[string]any{"name": "Greta Garden", "bio": "writes about zebras"})
	return ts
}

const searchBooks = "/db/db:main/tables/books/search"

// hitIDs returns the ids of a search response's records, in order.
func hitIDs(r *response) string {
	var ids []string
	for _, rec := range r.obj()["records"].([]any) {
		ids = append(ids, rec.(map[string]any)["id"].(string))
	}
	return strings.Join(ids, ",")
}

func (ts *testServer) searchIDs(url string, body map[string]any) string {
	ts.t.Helper()
	return hitIDs(ts.expect(200, "POST", url, body))
}

func TestSearchTypos(t *testing.T) {
	ts := searchFixture(t, Options{})
	// "zebro" is one edit from "zebra", "zxbro" two.
	for _, c := range []struct {
		query string
		fuzz  int
		want  string
	}{
		{"zebra", 0, "b1"},
		{"zebro", 0, ""},
		{"zebro", 1, "b1"},
		{"zxbro", 1, ""},
		{"zxbro", 2, "b1"},
		{"ZEBRA", 0, "b1"},
		{"qiuck", 1, "b1"}, // a transposition counts one edit
	} {
		if got := ts.searchIDs(searchBooks, map[string]any{"query": c.query, "fuzziness": c.fuzz}); got != c.want {
			t.Errorf("%q fuzziness %d: got [%s], want [%s]", c.query, c.fuzz, got, c.want)
		}
	}
	// Default fuzziness is 1.
	if got := ts.searchIDs(searchBooks, map[string]any{"query": "zebro"}); got != "b1" {
		t.Errorf("default fuzziness: got [%s]", got)
	}
	// An exact match ranks above a typo match: "lantern" exactly in b4 and
	// b5; "lanterns" is one edit away from both, exactly in none.
	ts.expect(201, "PUT", "/db/db:main/tables/books/data/b7", map[string]any{"title": "lanterns"})
	if got := ts.searchIDs(searchBooks, map[string]any{"query": "lanterns"}); got != "b7,b4,b5" {
		t.Errorf("exact above typo: got [%s]", got)
	}
}

func TestSearchPrefix(t *testing.T) {
	ts := searchFixture(t, Options{})
	for _, c := range []struct {
		query, prefix, want string
	}{
		{"zeb", "disabled", ""},
		{"zeb", "phrase", "b1"},
		{"quick zeb", "phrase", "b1"},
		{"zeb quick", "phrase", ""}, // the words must come in order
		{"quick zebra", "phrase", "b1"},
		{"the zebra", "phrase", ""},
		{"the stripes", "phrase", ""}, // in the same record, not adjacent
	} {
		got := ts.searchIDs(searchBooks, map[string]any{"query": c.query, "prefix": c.prefix, "fuzziness": 0})
		if got != c.want {
			t.Errorf("%q prefix %s: got [%s], want [%s]", c.query, c.prefix, got, c.want)
		}
	}
}

func TestSearchTargetWeights(t *testing.T) {
	ts := searchFixture(t, Options{})
	// Alike records tie and come by id; a weight breaks the tie.
	if got := ts.searchIDs(searchBooks, map[string]any{"query": "garden"}); got != "b2,b3" {
		t.Errorf("no target: got [%s]", got)
	}
	body := map[string]any{"query": "garden", "target": []any{"title", map[string]any{"column": "blurb", "weight": 10}}}
	if got := ts.searchIDs(searchBooks, body); got != "b3,b2" {
		t.Errorf("blurb weighted: got [%s]", got)
	}
	body["target"] = []any{map[string]any{"column": "title", "weight": 10}, "blurb"}
	if got := ts.searchIDs(searchBooks, body); got != "b2,b3" {
		t.Errorf("title weighted: got [%s]", got)
	}
	// Only the listed columns are searched; "*" adds the others.
	if got := ts.searchIDs(searchBooks, map[string]any{"query": "garden", "target": []any{"blurb"}}); got != "b3" {
		t.Errorf("blurb only: got [%s]", got)
	}
	body["target"] = []any{map[string]any{"column": "blurb", "weight": 2}, "*"}
	if got := ts.searchIDs(searchBooks, body); got != "b3,b2" {
		t.Errorf("blurb and the rest: got [%s]", got)
	}
	// An object column stands for its fields.
	if got := ts.searchIDs(searchBooks, map[string]any{"query": "bob", "target": []any{"info"}}); got != "b5" {
		t.Errorf("object target: got [%s]", got)
	}
	ts.expect(400, "POST", searchBooks, map[string]any{"query": "x", "target": []any{"nope"}})
	ts.expect(400, "POST", searchBooks, map[string]any{"query": "x", "target": []any{map[string]any{"column": "title", "weight": 11}}})
	ts.expect(400, "POST", searchBooks, map[string]any{"query": "x", "target": []any{map[string]any{"column": "title", "weight": 0}}})
	ts.expect(400, "POST", searchBooks, map[string]any{"query": "x", "target": "title"})
}

func TestSearchBoosters(t *testing.T) {
	ts := searchFixture(t, Options{})
	lantern := func(boosters ...any) string {
		t.Helper()
		return ts.searchIDs(searchBooks, map[string]any{"query": "lantern", "boosters": boosters})
	}
	if got := lantern(); got != "b4,b5" {
		t.Fatalf("no booster: got [%s]", got)
	}
	cases := []struct {
		name    string
		booster map[string]any
		want    string
	}{
		{"value on b5", map[string]any{"valueBooster": map[string]any{"column": "info.author", "value": "bob", "factor": 2}}, "b5,b4"},
		{"value on b4", map[string]any{"valueBooster": map[string]any{"column": "info.author", "value": "ann", "factor": 2}}, "b4,b5"},
		{"value in multiple", map[string]any{"valueBooster": map[string]any{"column": "tags", "value": "new", "factor": 2}}, "b5,b4"},
		{"value with unmatched filter", map[string]any{"valueBooster": map[string]any{"column": "info.author", "value": "bob", "factor": 2,
			"ifMatchesFilter": map[string]any{"pages": 10}}}, "b4,b5"},
		{"numeric", map[string]any{"numericBooster": map[string]any{"column": "pages", "factor": 1}}, "b5,b4"},
		{"numeric reciprocal", map[string]any{"numericBooster": map[string]any{"column": "pages", "factor": 1, "modifier": "reciprocal"}}, "b4,b5"},
		{"numeric log", map[string]any{"numericBooster": map[string]any{"column": "pages", "factor": 1, "modifier": "log"}}, "b5,b4"},
		{"numeric filtered", map[string]any{"numericBooster": map[string]any{"column": "pages", "factor": 1,
			"ifMatchesFilter": map[string]any{"pages": map[string]any{"$lt": 50}}}}, "b4,b5"},
		{"date near b5", map[string]any{"dateBooster": map[string]any{"column": "published", "origin": "2024-02-01T00:00:00Z", "scale": "30d", "decay": 0.5}}, "b5,b4"},
		{"date near b4", map[string]any{"dateBooster": map[string]any{"column": "published", "origin": "2019-12-01T00:00:00Z", "scale": "30d", "decay": 0.5}}, "b4,b5"},
		{"date on createdAt", map[string]any{"dateBooster": map[string]any{"column": "svc.createdAt", "scale": "1d", "decay": 0.5}}, "b5,b4"}, // b5 is newer
	}
	for _, c := range cases {
		if got := lantern(c.booster); got != c.want {
			t.Errorf("%s: got [%s], want [%s]", c.name, got, c.want)
		}
	}
	// Scores: the same text score plus exactly the boost.
	r := ts.expect(200, "POST", searchBooks, map[string]any{"query": "lantern"})
	base := score(t, r, 0)
	r = ts.expect(200, "POST", searchBooks, map[string]any{"query": "lantern",
		"boosters": []any{map[string]any{"numericBooster": map[string]any{"column": "pages", "factor": 0.5, "modifier": "square"}}}})
	// b5: (0.5·100)² = 2500 added; b4: (0.5·10)² = 25.
	if got, want := score(t, r, 0), base+2500; fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", want) {
		t.Errorf("square booster: score %v, want %v", got, want)
	}
	if got, want := score(t, r, 1), base+25; fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", want) {
		t.Errorf("square booster: second score %v, want %v", got, want)
	}
	for _, bad := range []any{
		map[string]any{},
		map[string]any{"valueBooster": map[string]any{"column": "title", "value": "x", "factor": 1}, "numericBooster": map[string]any{"column": "pages", "factor": 1}},
		map[string]any{"valueBooster": map[string]any{"column": "nope", "value": "x", "factor": 1}},
		map[string]any{"numericBooster": map[string]any{"column": "title", "factor": 1}},
		map[string]any{"numericBooster": map[string]any{"column": "pages", "factor": 1, "modifier": "cube"}},
		map[string]any{"dateBooster": map[string]any{"column": "published", "scale": "1w", "decay": 0.5}},
		map[string]any{"dateBooster": map[string]any{"column": "published", "scale": "1d", "decay": 2}},
		map[string]any{"dateBooster": map[string]any{"column": "pages", "scale": "1d", "decay": 0.5}},
		map[string]any{"valueBooster": map[string]any{"column": "title", "value": "x", "factor": 1, "bogus": 1}},
	} {
		ts.expect(400, "POST", searchBooks, map[string]any{"query": "lantern", "boosters": []any{bad}})
	}
}

// score returns the score of the i-th record of a search response.
func score(t *testing.T, r *response, i int) float64 {
	t.Helper()
	rec := r.obj()["records"].([]any)[i].(map[string]any)
	var f float64
	fmt.Sscan(fmt.Sprint(rec["svc"].(map[string]any)["score"]), &f)
	if !(f > 0) {
		t.Fatalf("score %v is not positive", rec["svc"].(map[string]any)["score"])
	}
	return f
}

func TestSearchHighlight(t *testing.T) {
	ts := searchFixture(t, Options{})
	r := ts.expect(200, "POST", searchBooks, map[string]any{"query": "jerry mouse"})
	rec := r.obj()["records"].([]any)[0].(map[string]any)
	jsonEq(t, "highlight", rec["svc"].(map[string]any)["highlight"],
		`{"title":["Tom &amp; <em>Jerry</em> &lt;b&gt;"],"tags":["<em>mouse</em>"]}`)
	r = ts.expect(200, "POST", searchBooks, map[string]any{"query": "jerry", "highlight": map[string]any{"encodeHTML": false}})
	rec = r.obj()["records"].([]any)[0].(map[string]any)
	jsonEq(t, "raw highlight", rec["svc"].(map[string]any)["highlight"], `{"title":["Tom & <em>Jerry</em> <b>"]}`)
	r = ts.expect(200, "POST", searchBooks, map[string]any{"query": "jerry", "highlight": map[string]any{"enabled": false}})
	rec = r.obj()["records"].([]any)[0].(map[string]any)
	if _, ok := rec["svc"].(map[string]any)["highlight"]; ok {
		t.Errorf("highlight disabled but present: %s", r.raw)
	}
	// Typo variants are marked; object columns nest; the record is whole.
	r = ts.expect(200, "POST", searchBooks, map[string]any{"query": "bobb"})
	rec = r.obj()["records"].([]any)[0].(map[string]any)
	jsonEq(t, "nested highlight", rec["svc"].(map[string]any)["highlight"], `{"info":{"author":["<em>bob</em>"]}}`)
	if keys(rec) != "id,info,pages,published,svc,tags,title" || keys(rec["svc"]) != "createdAt,highlight,score,table,updatedAt,version" {
		t.Errorf("record keys %s, meta keys %s", keys(rec), keys(rec["svc"]))
	}
	if rec["svc"].(map[string]any)["table"] != "books" {
		t.Errorf("table %v", rec["svc"].(map[string]any)["table"])
	}
}

func TestSearchPagingAndErrors(t *testing.T) {
	ts := searchFixture(t, Options{})
	// Either word matches.
	all := ts.searchIDs(searchBooks, map[string]any{"query": "garden lantern"})
	if ids := strings.Split(all, ","); len(ids) != 4 || !strings.Contains(all, "b2") || !strings.Contains(all, "b3") {
		t.Fatalf("garden lantern: got [%s]", all)
	}
	r := ts.expect(200, "POST", searchBooks, map[string]any{"query": "garden lantern", "page": map[string]any{"size": 2, "offset": 1}})
	if got := hitIDs(r); got != strings.Join(strings.Split(all, ",")[1:3], ",") {
		t.Errorf("page 2 of size 2 from 1: got [%s] of [%s]", got, all)
	}
	if n := r.obj()["totalCount"]; fmt.Sprint(n) != "4" {
		t.Errorf("totalCount %v", n)
	}
	// Filters apply before ranking.
	if got := ts.searchIDs(searchBooks, map[string]any{"query": "lantern", "filter": map[string]any{"pages": map[string]any{"$gt": 50}}}); got != "b5" {
		t.Errorf("filtered: got [%s]", got)
	}
	r = ts.expect(200, "POST", searchBooks, map[string]any{})
	jsonEq(t, "empty body", r.obj(), `{"records":[],"totalCount":0}`)
	ts.expect(200, "POST", searchBooks, nil)
	for _, bad := range []map[string]any{
		{"query": ""},
		{"query": "x", "fuzziness": 3},
		{"query": "x", "fuzziness": 0.5},
		{"query": "x", "prefix": "word"},
		{"query": "x", "page": map[string]any{"size": 201}},
		{"query": "x", "page": map[string]any{"size": 0}},
		{"query": "x", "page": map[string]any{"offset": 801}},
		{"query": "x", "bogus": true},
		{"query": "x", "highlight": map[string]any{"bogus": true}},
		{"query": "x", "filter": map[string]any{"blurb": map[string]any{"$contains": "gar"}}},
		{"query": "x", "filter": map[string]any{"blurb": map[string]any{"$startsWith": "gar"}}},
		{"query": "x", "filter": map[string]any{"tags": "old"}},
		{"query": "x", "filter": map[string]any{"nope": 1}},
		{"query": "x", "tables": []string{"books"}},
	} {
		ts.expect(400, "POST", searchBooks, bad)
	}
	// $contains on a string column is fine.
	if got := ts.searchIDs(searchBooks, map[string]any{"query": "lantern", "filter": map[string]any{"title": map[string]any{"$contains": "ant"}}}); got != "b4,b5" {
		t.Errorf("$contains on string: got [%s]", got)
	}
	ts.expect(404, "POST", "/db/db:nope/tables/books/search", map[string]any{"query": "x"})
	ts.expect(404, "POST", "/db/db:main/tables/nope/search", map[string]any{"query": "x"})
	ts.expect(404, "POST", "/db/nope:main/tables/books/search", map[string]any{"query": "x"})
}

func TestSearchBranch(t *testing.T) {
	ts := searchFixture(t, Options{})
	const url = "/db/db:main/search"
	r := ts.expect(200, "POST", url, map[string]any{"query": "garden"})
	recs := r.obj()["records"].([]any)
	var got []string
	for _, rec := range recs {
		m := rec.(map[string]any)
		got = append(got, m["svc"].(map[string]any)["table"].(string)+"/"+m["id"].(string))
	}
	// The author's name has two words, the books' titles one: the books
	// score higher.
	if strings.Join(got, ",") != "books/b2,books/b3,authors/a1" {
		t.Errorf("branch search: got %v", got)
	}
	if fmt.Sprint(r.obj()["totalCount"]) != "3" {
		t.Errorf("totalCount %v", r.obj()["totalCount"])
	}
	if got := ts.searchIDs(url, map[string]any{"query": "garden", "tables": []any{"authors"}}); got != "a1" {
		t.Errorf("authors only: got [%s]", got)
	}
	got2 := ts.searchIDs(url, map[string]any{"query": "garden", "tables": []any{
		map[string]any{"table": "books", "target": []string{"blurb"}},
		map[string]any{"table": "authors", "filter": map[string]any{"name": "nobody"}},
	}})
	if got2 != "b3" {
		t.Errorf("per-table target and filter: got [%s]", got2)
	}
	// "zebras" is in a bio; "zebra" in a title: one typo apart.
	if got := ts.searchIDs(url, map[string]any{"query": "zebras", "fuzziness": 0}); got != "a1" {
		t.Errorf("zebras exact: got [%s]", got)
	}
	ts.expect(400, "POST", url, map[string]any{"query": "x", "tables": []any{""}})
	ts.expect(400, "POST", url, map[string]any{"query": "x", "tables": []any{"nope"}})
	ts.expect(400, "POST", url, map[string]any{"query": "x", "tables": []any{map[string]any{"table": "books", "bogus": 1}}})
	ts.expect(400, "POST", url, map[string]any{"query": "x", "target": []string{"title"}})
	ts.expect(400, "POST", url, map[string]any{})
	ts.expect(404, "POST", "/db/db:nope/search", map[string]any{"query": "x"})
}

func TestSearchSeesWritesAndBranches(t *testing.T) {
	ts := searchFixture(t, Options{})
	ts.expect(201, "PUT", "/db/db:dev", map[string]any{"from": "main"})
	ts.expect(201, "PUT", "/db/db:dev/tables/books/data/d1", map[string]any{"title": "walrus"})
	if got := ts.searchIDs("/db/db:dev/tables/books/search", map[string]any{"query": "walrus"}); got != "d1" {
		t.Errorf("dev after insert: got [%s]", got)
	}
	if got := ts.searchIDs(searchBooks, map[string]any{"query": "walrus"}); got != "" {
		t.Errorf("main sees the child's write: [%s]", got)
	}
	// Updates and deletes on main show at once; the child keeps its view.
	ts.expect(200, "PATCH", "/db/db:main/tables/books/data/b1", map[string]any{"title": "The slow walrus"})
	if got := ts.searchIDs(searchBooks, map[string]any{"query": "walrus zebra", "fuzziness": 0}); got != "b1" {
		t.Errorf("main after update: got [%s]", got)
	}
	if got := ts.searchIDs(searchBooks, map[string]any{"query": "zebra", "fuzziness": 0}); got != "" {
		t.Errorf("old word still found: [%s]", got)
	}
	if got := ts.searchIDs("/db/db:dev/tables/books/search", map[string]any{"query": "zebra", "fuzziness": 0}); got != "b1" {
		t.Errorf("dev lost its zebra: [%s]", got)
	}
	ts.expect(204, "DELETE", "/db/db:main/tables/books/data/b1", nil)
	if got := ts.searchIDs(searchBooks, map[string]any{"query": "walrus"}); got != "" {
		t.Errorf("deleted record found: [%s]", got)
	}
}

func TestSearchCompat(t *testing.T) {
	ts := searchFixture(t, Options{Compat: CompatXata})
	r := ts.expect(200, "POST", searchBooks, map[string]any{"query": "zebra",
		"boosters": []any{map[string]any{"dateBooster": map[string]any{"column": "xata.updatedAt", "scale": "1d", "decay": 0.5}}}})
	rec := r.obj()["records"].([]any)[0].(map[string]any)
	if keys(rec["xata"]) != "createdAt,highlight,score,table,updatedAt,version" {
		t.Errorf("compat meta keys %s", keys(rec["xata"]))
	}
}
