package engine

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/coppice-db/coppice/index"
)

// TestExplainQuery checks the steps of an explained query against its
// records, and that a query not explained carries its plan without rows.
func TestExplainQuery(t *testing.T) {
	e, ref := recFixture(t, searchTables)
	for i := range 50 {
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", ID: fmt.Sprintf("d%02d", i),
			Values: map[string]any{"n": i % 10, "title": fmt.Sprintf("doc %d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	size := 3
	in := QueryRequest{Filter: index.FilterOf(map[string]any{"n": map[string]any{"$ge": 7}}),
		Sort: index.SortOf(map[string]any{"n": "desc"}), Page: PageInput{Size: &size}}
	plain, err := e.Query(ctx, ref, "docs", in, QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := plain.Plan.String(); got != "query size 3(heap n desc, id; limit 4 via column store(range n >= ?))" {
		t.Errorf("plan of a query not explained: %s", got)
	}
	in.Explain = true
	res, err := e.Query(ctx, ref, "docs", in, QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	root := res.Plan.Tree()
	want := "query size 3: est 3, actual 3\n" +
		"  records read and project: est 3, actual 3\n" +
		"    heap n desc, id; limit 4 via column store: est 4, actual 4\n" +
		"      range n >= 7 via ordered range: est 15, actual 15\n"
	if got := withoutTimes(root.String()); got != want || len(res.Records) != 3 {
		t.Errorf("explained %d records as\n%s\nwant\n%s", len(res.Records), got, want)
	}
	if root.Time < root.Children[0].Time || root.Children[0].Time < root.Children[0].Children[0].Time {
		t.Errorf("times not inclusive:\n%s", root)
	}
}

// withoutTimes drops the time at the end of each line of ExplainNode.String.
func withoutTimes(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if j := strings.LastIndex(l, ", "); j >= 0 && strings.Contains(l, "actual") {
			lines[i] = l[:j]
		}
	}
	return strings.Join(lines, "\n")
}

// TestExplainSearchBranch checks that an explained branch search shows
// the steps of every table searched, adding up to the result.
func TestExplainSearchBranch(t *testing.T) {
	tables := map[string][]ColumnDef{"a": searchTables["docs"], "b": searchTables["docs"]}
	e, ref := recFixture(t, tables)
	rng := rand.New(rand.NewSource(1))
	for _, tbl := range []string{"a", "b"} {
		for range 40 {
			if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: tbl, Values: randomDoc(rng)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	q, size := "cat", 5
	res, err := e.SearchBranch(ctx, ref, SearchRequest{Query: &q, Size: &size, Explain: true}, SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	root := res.Plan
	if root == nil || root.Kind != "search" || root.Actual != uint64(len(res.Records)) || len(root.Children) != 2 {
		t.Fatalf("%d records of %d explained as\n%s", len(res.Records), res.TotalCount, root)
	}
	var matched, read uint64
	for i, th := range root.Children {
		scoring := th.Find("scoring")
		if th.Kind != "highlight" || th.Detail != []string{"a", "b"}[i] || scoring == nil || !scoring.Ran {
			t.Fatalf("table step %d:\n%s", i, th)
		}
		matched += scoring.Actual
		read += th.Actual
	}
	if matched != uint64(res.TotalCount) || read < uint64(len(res.Records)) || res.TotalCount == 0 {
		t.Errorf("%d matches, %d records, explained as\n%s", res.TotalCount, len(res.Records), root)
	}
	// A search not explained has the same steps with the same rows, and
	// none of its filter's.
	plain, err := e.SearchBranch(ctx, ref, SearchRequest{Query: &q, Size: &size}, SearchOptions{})
	if err != nil || plain.Plan == nil {
		t.Fatalf("a search not explained: error %v, plan %v", err, plain.Plan)
	}
	for _, kind := range []string{"search", "highlight", "top-k", "scoring", "candidates"} {
		a, b := plain.Plan.Find(kind), root.Find(kind)
		if a == nil || a.Detail != b.Detail || a.Actual != b.Actual || a.Ran != b.Ran {
			t.Errorf("step %s: not explained\n%s\nexplained\n%s", kind, plain.Plan, root)
		}
	}
	if c := plain.Plan.Find("candidates"); len(c.Children) != 0 {
		t.Errorf("a search not explained traced its filter:\n%s", plain.Plan)
	}
}
