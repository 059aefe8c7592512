package engine

import (
	"encoding/json"
	"flag"
	"testing"
)

var summarizeSeed = flag.Int64("summarize.seed", 0, "seed of TestSummarizeDifferential (0: time)")

// petsTables are the tables of the summarize tests: pets owned by owners.
var petsTables = map[string][]ColumnDef{
	"owners": {{Name: "name", Type: TypeString}, {Name: "age", Type: TypeInt}},
	"pets": {
		{Name: "name", Type: TypeString},
		{Name: "kind", Type: TypeString},
		{Name: "legs", Type: TypeInt},
		{Name: "weight", Type: TypeFloat},
		{Name: "born", Type: TypeDatetime},
		{Name: "tags", Type: TypeMultiple},
		{Name: "notes", Type: TypeText},
		{Name: "cfg", Type: TypeJSON},
		{Name: "info", Type: TypeObject, Columns: []ColumnDef{{Name: "color", Type: TypeString}, {Name: "size", Type: TypeInt}}},
		{Name: "owner", Type: TypeLink, Link: &LinkDef{Table: "owners"}},
		{Name: "vaccinated", Type: TypeBool},
	},
}

// petsFixture opens an engine holding a few owners and pets written one by
// one.
func petsFixture(t *testing.T) (*Engine, Ref) {
	t.Helper()
	e, ref := recFixture(t, petsTables)
	put := func(table, id string, vals map[string]any) {
		t.Helper()
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: table, ID: id, Values: vals}); err != nil {
			t.Fatalf("insert %s %s: %v", table, id, err)
		}
	}
	put("owners", "o1", map[string]any{"name": "ann", "age": json.Number("30")})
	put("owners", "o2", map[string]any{"name": "bob", "age": json.Number("40")})
	put("owners", "o3", map[string]any{"name": "cid"})
	put("pets", "p1", map[string]any{"name": "rex", "kind": "dog", "legs": json.Number("4"), "weight": json.Number("10.5"),
		"born": "2024-01-01T10:00:00Z", "tags": []any{"a", "b"}, "notes": "good boy", "cfg": `{"x":1}`,
		"info": map[string]any{"color": "brown", "size": json.Number("3")}, "owner": "o1", "vaccinated": true})
	put("pets", "p2", map[string]any{"name": "max", "kind": "dog", "legs": json.Number("4"), "weight": json.Number("20"),
		"born": "2024-01-03T00:00:00Z", "tags": []any{"c"}, "info": map[string]any{"color": "black"}, "owner": "o2", "vaccinated": false})
	put("pets", "p3", map[string]any{"name": "tom", "kind": "cat", "legs": json.Number("4"), "weight": json.Number("4.25"),
		"born": "2024-01-10T12:00:00Z", "tags": []any{}, "info": map[string]any{"color": "black", "size": json.Number("1")},
		"owner": "o1", "vaccinated": true})
	put("pets", "p4", map[string]any{"name": "tweety", "kind": "bird", "legs": json.Number("2"), "weight": json.Number("0.5"),
		"born": "2024-02-15T00:00:00Z", "owner": "o3"})
	put("pets", "p5", map[string]any{"name": "tripod", "kind": "cat", "legs": json.Number("3"), "tags": []any{"b"},
		"vaccinated": false, "cfg": `{"x":2}`})
	put("pets", "p6", map[string]any{"name": "x", "vaccinated": true})
	return e, ref
}

// summarizeBody reads a summarize request body.
func summarizeBody(t *testing.T, body string) SummarizeRequest {
	t.Helper()
	in, err := summarizeRequest(body)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return in
}

func marshalJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSummarizeOutputs(t *testing.T) {
	e, ref := petsFixture(t)
	f := func(body, want string) {
		t.Helper()
		out, err := e.Summarize(ctx, ref, "pets", summarizeBody(t, body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if got := marshalJSON(t, summaryObjects(out)); got != want {
			t.Errorf("%s:\ngot  %s\nwant %s", body, got, want)
		}
	}
	// Default order: group values ascending, null last.
	f(`{"columns":["kind"],"summaries":{"n":{"count":"*"}}}`,
		`[{"kind":"bird","n":1},{"kind":"cat","n":2},{"kind":"dog","n":2},{"kind":null,"n":1}]`)
	// Filter before grouping.
	f(`{"filter":{"legs":4},"columns":["kind"],"summaries":{"n":{"count":"*"}}}`,
		`[{"kind":"cat","n":1},{"kind":"dog","n":2}]`)
	// Every function, no columns: one row. count of a column counts
	// non-null values; min/max of a multiple look at its elements.
	f(`{"summaries":{"all":{"count":"*"},"weighed":{"count":"weight"},"w":{"sum":"weight"},"legs":{"sum":"legs"},`+
		`"avgLegs":{"average":"legs"},"first":{"min":"born"},"last":{"max":"born"},"minTag":{"min":"tags"},"maxTag":{"max":"tags"},`+
		`"minName":{"min":"name"},"maxNotes":{"max":"notes"},"minAge":{"min":"owner.age"},"size":{"max":"info.size"}}}`,
		`[{"all":6,"avgLegs":3.4,"first":"2024-01-01T10:00:00Z","last":"2024-02-15T00:00:00Z","legs":17,"maxNotes":"good boy",`+
			`"maxTag":"c","minAge":30,"minName":"max","minTag":"a","size":3,"w":35.25,"weighed":4}]`)
	// An empty columns list is one group; a filter matching nothing still
	// gives it, with explicit nulls for sums, averages, min and max.
	f(`{"columns":[],"filter":{"kind":"fish"},"summaries":{"n":{"count":"*"},"w":{"sum":"weight"},"a":{"average":"legs"},"m":{"min":"name"}}}`,
		`[{"a":null,"m":null,"n":0,"w":null}]`)
	// Grouped, nothing matching: no rows.
	f(`{"columns":["kind"],"filter":{"kind":"fish"},"summaries":{"n":{"count":"*"}}}`, `[]`)
	// Columns without summaries: the distinct groups.
	f(`{"columns":["vaccinated"]}`, `[{"vaccinated":false},{"vaccinated":true},{"vaccinated":null}]`)
	f(`{"columns":["kind","legs"]}`,
		`[{"kind":"bird","legs":2},{"kind":"cat","legs":3},{"kind":"cat","legs":4},{"kind":"dog","legs":4},{"kind":null,"legs":null}]`)
	// Link and object paths come back nested; a link itself as its id;
	// json as text; nulls explicit.
	f(`{"columns":["owner.name","info.color"],"summaries":{"n":{"count":"*"}}}`,
		`[{"info":{"color":"black"},"n":1,"owner":{"name":"ann"}},{"info":{"color":"brown"},"n":1,"owner":{"name":"ann"}},`+
			`{"info":{"color":"black"},"n":1,"owner":{"name":"bob"}},{"info":{"color":null},"n":1,"owner":{"name":"cid"}},`+
			`{"info":{"color":null},"n":2,"owner":{"name":null}}]`)
	f(`{"columns":["owner"],"summaries":{"w":{"sum":"weight"}}}`,
		`[{"owner":{"id":"o1"},"w":14.75},{"owner":{"id":"o2"},"w":20},{"owner":{"id":"o3"},"w":0.5},{"owner":{"id":null},"w":null}]`)
	f(`{"columns":["info"],"filter":{"kind":"dog"}}`, `[{"info":{"color":"black","size":null}},{"info":{"color":"brown","size":3}}]`)
	f(`{"columns":["cfg"],"summaries":{"n":{"count":"*"}}}`, `[{"cfg":"{\"x\":1}","n":1},{"cfg":"{\"x\":2}","n":1},{"cfg":null,"n":4}]`)
	f(`{"columns":["owner.*"],"filter":{"legs":4}}`,
		`[{"owner":{"age":30,"name":"ann"}},{"owner":{"age":40,"name":"bob"}}]`)
	// Sort by a summary: nulls last in both directions.
	f(`{"columns":["kind"],"summaries":{"w":{"sum":"weight"}},"sort":{"w":"asc"}}`,
		`[{"kind":"bird","w":0.5},{"kind":"cat","w":4.25},{"kind":"dog","w":30.5},{"kind":null,"w":null}]`)
	f(`{"columns":["kind"],"summaries":{"w":{"sum":"weight"}},"sort":[{"w":"desc"}]}`,
		`[{"kind":"dog","w":30.5},{"kind":"cat","w":4.25},{"kind":"bird","w":0.5},{"kind":null,"w":null}]`)
	f(`{"columns":["kind"],"sort":[{"kind":"desc"}]}`, `[{"kind":"dog"},{"kind":"cat"},{"kind":"bird"},{"kind":null}]`)
	f(`{"columns":["owner.name"],"summaries":{"n":{"count":"*"}},"sort":[{"n":"desc"},{"owner.name":"desc"}]}`,
		`[{"n":2,"owner":{"name":"ann"}},{"n":2,"owner":{"name":null}},{"n":1,"owner":{"name":"cid"}},{"n":1,"owner":{"name":"bob"}}]`)
	// summariesFilter over summaries and group values; page size.
	f(`{"columns":["kind"],"summaries":{"n":{"count":"*"},"w":{"sum":"weight"}},"summariesFilter":{"n":{"$ge":2},"w":{"$lt":30}}}`,
		`[{"kind":"cat","n":2,"w":4.25}]`)
	f(`{"columns":["owner.name"],"summaries":{"n":{"count":"*"}},"summariesFilter":{"owner":{"name":{"$any":["ann","cid"]}}}}`,
		`[{"n":2,"owner":{"name":"ann"}},{"n":1,"owner":{"name":"cid"}}]`)
	f(`{"columns":["kind"],"page":{"size":2}}`, `[{"kind":"bird"},{"kind":"cat"}]`)
	f(`{"columns":["kind"],"consistency":"eventual","page":{"size":1},"sort":{"kind":"desc"}}`, `[{"kind":"dog"}]`)
}

func TestSummarizeErrorsEngine(t *testing.T) {
	e, ref := petsFixture(t)
	f := func(body, want string) {
		t.Helper()
		_, err := e.Summarize(ctx, ref, "pets", summarizeBody(t, body))
		mustCode(t, err, CodeInvalid, want)
	}
	f(`{"columns":["info"],"summaries":{"info":{"count":"*"}}}`, "summary [info]: the name collides with the requested column [info.color]")
	f(`{"columns":["kind"],"summaries":{"kind":{"max":"legs"}}}`, "collides with the requested column [kind]")
	f(`{"summaries":{"x":{"count":"id"}}}`, "column [id]: internal columns cannot be summarized")
	f(`{"summaries":{"x":{"max":"svc.createdAt"}}}`, "column [svc.createdAt]: internal columns cannot be summarized")
	f(`{"summaries":{"x":{"count":"info"}}}`, "column [info]: object columns cannot be summarized")
	f(`{"summaries":{"x":{"min":"vaccinated"}}}`, "min is not supported on bool columns")
	f(`{"summaries":{"x":{"sum":"name"}}}`, "sum is not supported on string columns")
	f(`{"columns":["nope"]}`, "column [nope]: column not found")
	f(`{"summaries":{"x":{"count":"nope"}}}`, "column [nope]: column not found")
	f(`{"filter":{"nope":1}}`, "column [nope]: column not found")
	f(`{"columns":["kind"],"sort":["legs"]}`, "sort: column [legs] is neither a group column nor a summary")
	f(`{"page":{"size":1001}}`, "page size exceeds max limit of 1000")
	_, err := e.Summarize(ctx, ref, "nope", SummarizeRequest{})
	mustCode(t, err, CodeNotFound, "nope")
}

func TestAggregateOutputs(t *testing.T) {
	e, ref := petsFixture(t)
	f := func(filter, aggs, want string) {
		t.Helper()
		out, err := e.Aggregate(ctx, ref, "pets", AggregateRequest{Filter: mustFilter(filter), Aggs: mustAggs(aggs)})
		if err != nil {
			t.Fatalf("%s: %v", aggs, err)
		}
		if got := marshalJSON(t, aggregateObject(out)); got != want {
			t.Errorf("%s:\ngot  %s\nwant %s", aggs, got, want)
		}
	}
	// No aggs: the count.
	f("", "", `{"aggs":{"count":6}}`)
	f(`{"kind":"cat"}`, `{}`, `{"aggs":{"count":2}}`)
	// Metrics.
	f("", `{"all":{"count":"*"},"dogs":{"count":{"filter":{"kind":"dog"}}},"legs":{"sum":{"column":"legs"}},"w":{"sum":{"column":"weight"}},`+
		`"light":{"min":{"column":"weight"}},"heavy":{"max":{"column":"weight"}},"maxLegs":{"max":{"column":"legs"}},"avg":{"average":{"column":"weight"}},`+
		`"kinds":{"uniqueCount":{"column":"kind"}},"tags":{"uniqueCount":{"column":"tags","precisionThreshold":100}},`+
		`"p":{"percentiles":{"column":"weight","percentiles":[10,50,99.9]}}}`,
		`{"aggs":{"all":6,"avg":8.8125,"dogs":2,"heavy":20,"kinds":3,"legs":17,"light":0.5,"maxLegs":4,`+
			`"p":{"values":{"10.0":0.5,"50.0":7.375,"99.9":20}},"tags":3,"w":35.25}}`)
	// Metrics of nothing: sum 0, the others null.
	f(`{"kind":"fish"}`, `{"s":{"sum":{"column":"legs"}},"sw":{"sum":{"column":"weight"}},"m":{"min":{"column":"legs"}},"a":{"average":{"column":"legs"}},`+
		`"p":{"percentiles":{"column":"legs","percentiles":[50]}},"u":{"uniqueCount":{"column":"kind"}},`+
		`"t":{"topValues":{"column":"kind"}},"h":{"dateHistogram":{"column":"born","interval":"1d"}}}`,
		`{"aggs":{"a":null,"h":{"values":[]},"m":null,"p":{"values":{"50.0":null}},"s":0,"sw":0,"t":{"values":[]},"u":0}}`)
	// topValues: string keys, count descending then key ascending, size.
	f("", `{"k":{"topValues":{"column":"kind"}},"l":{"topValues":{"column":"legs","size":2}},"v":{"topValues":{"column":"vaccinated"}},`+
		`"w":{"topValues":{"column":"weight","size":1}}}`,
		`{"aggs":{"k":{"values":[{"$count":2,"$key":"cat"},{"$count":2,"$key":"dog"},{"$count":1,"$key":"bird"}]},`+
			`"l":{"values":[{"$count":3,"$key":"4"},{"$count":1,"$key":"2"}]},`+
			`"v":{"values":[{"$count":3,"$key":"true"},{"$count":2,"$key":"false"}]},`+
			`"w":{"values":[{"$count":1,"$key":"0.5"}]}}}`)
	// dateHistogram, calendar weeks start on Monday; empty buckets between.
	f("", `{"h":{"dateHistogram":{"column":"born","calendarInterval":"week","aggs":{"w":{"sum":{"column":"weight"}}}}}}`,
		`{"aggs":{"h":{"values":[{"$count":2,"$key":"2024-01-01T00:00:00.000Z","w":30.5},{"$count":1,"$key":"2024-01-08T00:00:00.000Z","w":4.25},`+
			`{"$count":0,"$key":"2024-01-15T00:00:00.000Z","w":0},{"$count":0,"$key":"2024-01-22T00:00:00.000Z","w":0},`+
			`{"$count":0,"$key":"2024-01-29T00:00:00.000Z","w":0},{"$count":0,"$key":"2024-02-05T00:00:00.000Z","w":0},`+
			`{"$count":1,"$key":"2024-02-12T00:00:00.000Z","w":0.5}]}}}`)
	// Months in a timezone: 2024-01-01T10:00Z is still January at -05:00.
	f("", `{"h":{"dateHistogram":{"column":"born","calendarInterval":"month","timezone":"-05:00"}}}`,
		`{"aggs":{"h":{"values":[{"$count":3,"$key":"2024-01-01T00:00:00.000-05:00"},{"$count":1,"$key":"2024-02-01T00:00:00.000-05:00"}]}}}`)
	f("", `{"h":{"dateHistogram":{"column":"born","calendarInterval":"quarter"}},"y":{"dateHistogram":{"column":"born","calendarInterval":"year","timezone":"+00:00"}}}`,
		`{"aggs":{"h":{"values":[{"$count":4,"$key":"2024-01-01T00:00:00.000Z"}]},"y":{"values":[{"$count":4,"$key":"2024-01-01T00:00:00.000Z"}]}}}`)
	// Fixed intervals align to the epoch in the timezone: 2024-01-01T10:00Z
	// is 2024-01-01T12:00+02:00, in the bucket of local midnight.
	f(`{"born":{"$lt":"2024-01-05T00:00:00Z"}}`, `{"h":{"dateHistogram":{"column":"born","interval":"1d","timezone":"+02:00"}}}`,
		`{"aggs":{"h":{"values":[{"$count":1,"$key":"2024-01-01T00:00:00.000+02:00"},{"$count":0,"$key":"2024-01-02T00:00:00.000+02:00"},`+
			`{"$count":1,"$key":"2024-01-03T00:00:00.000+02:00"}]}}}`)
	f(`{"born":{"$lt":"2024-01-05T00:00:00Z"}}`, `{"h":{"dateHistogram":{"column":"born","interval":"12h"}}}`,
		`{"aggs":{"h":{"values":[{"$count":1,"$key":"2024-01-01T00:00:00.000Z"},{"$count":0,"$key":"2024-01-01T12:00:00.000Z"},`+
			`{"$count":0,"$key":"2024-01-02T00:00:00.000Z"},{"$count":0,"$key":"2024-01-02T12:00:00.000Z"},{"$count":1,"$key":"2024-01-03T00:00:00.000Z"}]}}}`)
	// numericHistogram with an offset, empty buckets between.
	f("", `{"h":{"numericHistogram":{"column":"weight","interval":5,"offset":1}}}`,
		`{"aggs":{"h":{"values":[{"$count":1,"$key":-4},{"$count":1,"$key":1},{"$count":1,"$key":6},{"$count":0,"$key":11},{"$count":1,"$key":16}]}}}`)
	f("", `{"h":{"numericHistogram":{"column":"legs","interval":2}}}`,
		`{"aggs":{"h":{"values":[{"$count":2,"$key":2},{"$count":3,"$key":4}]}}}`)
	// Sub-aggregations at depth: kinds → months → legs histogram → count.
	f(`{"kind":{"$any":["dog","cat"]}}`, `{"k":{"topValues":{"column":"kind","aggs":{"m":{"dateHistogram":{"column":"born","calendarInterval":"month",`+
		`"aggs":{"l":{"numericHistogram":{"column":"legs","interval":10,"aggs":{"v":{"count":{"filter":{"vaccinated":true}}}}}}}}}}}}}`,
		`{"aggs":{"k":{"values":[{"$count":2,"$key":"cat","m":{"values":[{"$count":1,"$key":"2024-01-01T00:00:00.000Z","l":{"values":[{"$count":1,"$key":0,"v":1}]}}]}},`+
			`{"$count":2,"$key":"dog","m":{"values":[{"$count":2,"$key":"2024-01-01T00:00:00.000Z","l":{"values":[{"$count":2,"$key":0,"v":1}]}}]}}]}}}`)
}

func TestAggregateErrorsEngine(t *testing.T) {
	e, ref := petsFixture(t)
	f := func(aggs, want string) {
		t.Helper()
		_, err := e.Aggregate(ctx, ref, "pets", AggregateRequest{Aggs: mustAggs(aggs)})
		mustCode(t, err, CodeInvalid, want)
	}
	f(`{"foo":"bar"}`, "aggregation [foo]: an aggregation must be an object")
	f(`{"foo":{"mode":{"column":"legs"}}}`, "unknown aggregation kind [mode]")
	f(`{"foo":{"sum":{"column":"nope"}}}`, "column [nope]: column not found")
	f(`{"foo":{"topValues":{"column":"owner"}}}`, "link columns cannot be aggregated")
	f(`{"foo":{"percentiles":{"column":"name","percentiles":[50]}}}`, "percentiles is not supported on string columns")
	f(`{"foo":{"percentiles":{"column":"legs"}}}`, "needs a list of percentiles")
	f(`{"foo":{"percentiles":{"column":"legs","percentiles":[]}}}`, "must not be empty")
	f(`{"foo":{"percentiles":{"column":"legs","percentiles":[100.5]}}}`, "not between 0 and 100")
	f(`{"foo":{"dateHistogram":{"column":"born","interval":"1d","calendarInterval":"day"}}}`, "exactly one of interval and calendarInterval")
	f(`{"foo":{"dateHistogram":{"column":"born"}}}`, "exactly one of interval and calendarInterval")
	f(`{"foo":{"dateHistogram":{"column":"born","interval":"1y"}}}`, "interval must be a number and a unit")
	f(`{"foo":{"dateHistogram":{"column":"born","calendarInterval":"day","timezone":"CET"}}}`, "timezone must look like")
	f(`{"foo":{"topValues":{"column":"kind","size":1001}}}`, "size must not exceed 1000")
	f(`{"foo":{"uniqueCount":{"column":"kind","precisionThreshold":40001}}}`, "precisionThreshold must be between 0 and 40000")
	f(`{"foo":{"average":{"column":"legs","aggs":{"c":{"count":"*"}}}}}`, "average is a metric and takes no sub-aggregations")
	_, err := e.Aggregate(ctx, ref, "pets", AggregateRequest{Filter: mustFilter(`{"nope":1}`)})
	mustCode(t, err, CodeInvalid, "column [nope]: column not found")
	_, err = e.Aggregate(ctx, ref, "nope", AggregateRequest{})
	mustCode(t, err, CodeNotFound, "nope")
}

// TestSummarizeOnBranch checks that summarize reads the branch it is asked
// about.
func TestSummarizeOnBranch(t *testing.T) {
	e, ref := petsFixture(t)
	dev := Ref{Workspace: ref.Workspace, Database: ref.Database, Branch: "dev"}
	if err := e.Branches().Create(dev, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.WriteOne(dev, Op{Kind: OpInsert, Table: "pets", ID: "p7", Values: map[string]any{"kind": "dog"}}); err != nil {
		t.Fatal(err)
	}
	body := summarizeBody(t, `{"filter":{"kind":"dog"},"summaries":{"n":{"count":"*"}}}`)
	for _, c := range []struct {
		ref       Ref
		sum, aggs string
	}{{ref, `[{"n":2}]`, `{"aggs":{"count":2}}`}, {dev, `[{"n":3}]`, `{"aggs":{"count":3}}`}} {
		out, err := e.Summarize(ctx, c.ref, "pets", body)
		if err != nil {
			t.Fatal(err)
		}
		if got := marshalJSON(t, summaryObjects(out)); got != c.sum {
			t.Errorf("%s: summarize %s, want %s", c.ref.Branch, got, c.sum)
		}
		agg, err := e.Aggregate(ctx, c.ref, "pets", AggregateRequest{Filter: mustFilter(`{"kind":"dog"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if got := marshalJSON(t, aggregateObject(agg)); got != c.aggs {
			t.Errorf("%s: aggregate %s, want %s", c.ref.Branch, got, c.aggs)
		}
	}
}

// TestMetaKey: requests name the metadata columns under Options.Meta, and
// under no other key.
func TestMetaKey(t *testing.T) {
	for _, meta := range []string{"svc", "xata"} {
		other := map[string]string{"svc": "xata", "xata": "svc"}[meta]
		db := openTestDB(t, Options{Meta: meta})
		e, ref, table := db.e, db.ref("main"), testTables[0]
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: table, ID: "a", Values: map[string]any{"n": 1}}); err != nil {
			t.Fatal(err)
		}
		if e.Meta() != meta {
			t.Fatalf("Meta() = %q, want %q", e.Meta(), meta)
		}
		res, err := e.Query(ctx, ref, table, QueryRequest{
			Filter: mustFilter(`{"` + meta + `.version": {"$ge": 0}}`), Sort: mustSort(`{"` + meta + `.createdAt": "desc"}`),
			Columns: mustColumns(`["n", "` + meta + `.updatedAt"]`),
		}, QueryOptions{})
		if err != nil || len(res.Records) != 1 {
			t.Fatalf("%s: query %v, %v", meta, res, err)
		}
		_, err = e.Query(ctx, ref, table, QueryRequest{Filter: mustFilter(`{"` + other + `.version": 0}`)}, QueryOptions{})
		mustCode(t, err, CodeInvalid, "column ["+other+".version]: column not found")
		_, err = e.Summarize(ctx, ref, table, SummarizeRequest{Columns: []string{meta + ".version"}})
		mustCode(t, err, CodeInvalid, "internal columns cannot be grouped")
		agg, err := e.Aggregate(ctx, ref, table, AggregateRequest{Aggs: mustAggs(`{"v": {"count": {"filter": {"` + meta + `.version": {"$ge": 0}}}}}`)})
		if err != nil || marshalJSON(t, aggregateObject(agg)) != `{"aggs":{"v":1}}` {
			t.Fatalf("%s: aggregate %v, %v", meta, agg, err)
		}
	}
}
