package index

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/coppice-db/coppice/codec"
)

// TestPlan runs testdata/plan, whose commands are
//
//   - "plan": a filter of the items fixture as input, the steps of the plan
//     chosen for it as output (the Outline of Plan.Tree);
//   - "records [table=users|teams]": records of items (or users, teams),
//     one JSON object a line, for the commands that run plans;
//   - "explain store=none|values|dense|indexed": a filter run on the
//     records with explain on, its steps printed with their rows but not
//     their times. The store says what value stores the source has; its
//     rows must be those of the plan run without explain and without
//     stores;
//   - "query store=...": a query body ({filter, sort, page}) run with
//     explain on: the query's steps, then the ids of the page, which must
//     be those of the query run without explain and without stores;
//   - "summarize store=...": a summarize body run with explain on: its
//     steps, then its groups.
//
// Every explained tree must hold the invariants of ExplainNode.
// Regenerate with go test ./index -run TestPlan -rewrite.
func TestPlan(t *testing.T) {
	items, users, teams := filterTestTables("svc")
	records := map[*Table][]*codec.Record{}
	source := func(t *testing.T, d *datadriven.TestData) *memSource {
		var mode string
		d.ScanArgs(t, "store", &mode)
		mk := func(tbl *Table) *memSource {
			m := &memSource{t: tbl, rows: map[uint32]*codec.Record{}, tables: map[uint32]*memSource{}}
			switch mode {
			case "none":
				m.noStore = true
			case "values":
			case "dense":
				m.dense = true
			case "indexed":
				m.dense, m.indexed = true, true
			default:
				t.Fatalf("unknown store %s", mode)
			}
			for i, r := range records[tbl] {
				m.rows[uint32(i)] = r
			}
			return m
		}
		ms, us, ts := mk(items), mk(users), mk(teams)
		ms.tables[users.ID] = us
		us.tables[teams.ID], us.tables[users.ID] = ts, us
		return ms
	}
	datadriven.RunTest(t, "testdata/plan", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "plan":
			n, err := ParseFilter(items, []byte(d.Input))
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return Compile(n).String()
		case "records":
			tbl := items
			if d.HasArg("table") {
				var name string
				d.ScanArgs(t, "table", &name)
				tbl = map[string]*Table{"users": users, "teams": teams}[name]
			}
			records[tbl] = nil
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				rec, err := goldenRecord(tbl, line)
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				records[tbl] = append(records[tbl], rec)
			}
			return ""
		case "explain":
			src := source(t, d)
			n, err := ParseFilter(items, []byte(d.Input))
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			rows, tree, err := Compile(n).Explain(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			plain := &memSource{t: items, rows: src.rows, tables: src.tables, noStore: true}
			want, err := Compile(n).Execute(context.Background(), plain)
			if err != nil {
				t.Fatal(err)
			}
			if !rows.Equals(want) {
				t.Fatalf("explained rows %v, without explain and stores %v", rows.ToArray(), want.ToArray())
			}
			checkExplained(t, tree, rows.GetCardinality())
			return tree.counts()
		case "query":
			src := source(t, d)
			var body struct {
				Filter json.RawMessage `json:"filter"`
				Sort   json.RawMessage `json:"sort"`
				Page   struct {
					Size   *int `json:"size"`
					Offset *int `json:"offset"`
				} `json:"page"`
			}
			if err := json.Unmarshal([]byte(d.Input), &body); err != nil {
				t.Fatal(err)
			}
			in := QueryRequest{Page: PageInput{Size: body.Page.Size, Offset: body.Page.Offset}, Explain: true}
			in.Filter = must(ReadFilter(body.Filter))
			in.Sort = must(ReadSort(body.Sort))
			page, err := Query(context.Background(), src, in, QueryOptions{
				Secret: []byte("k"), MaxSize: 200, MaxOffset: 800, DefaultSize: 20})
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			tree := page.Plan.Tree()
			checkExplained(t, tree, uint64(len(page.Rows)))
			// Without stores every condition runs on the records, eagerly.
			plain := &memSource{t: items, rows: src.rows, tables: src.tables, noStore: true}
			in.Explain = false
			want, err := Query(context.Background(), plain, in, QueryOptions{
				Secret: []byte("k"), MaxSize: 200, MaxOffset: 800, DefaultSize: 20})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(page.Rows, want.Rows) || page.More != want.More {
				t.Fatalf("page %v (more %v), without stores %v (more %v)", page.Rows, page.More, want.Rows, want.More)
			}
			ids := make([]string, len(page.Rows))
			for i, row := range page.Rows {
				ids[i] = src.rows[row].ID
			}
			return tree.counts() + "page: " + strings.Join(ids, ", ") + "\n"
		case "summarize":
			src := source(t, d)
			in, err := summarizeRequest(d.Input)
			if err != nil {
				t.Fatal(err)
			}
			in.Explain = true
			res, err := Summarize(context.Background(), src, in)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			tree := res.Plan.Tree()
			checkExplained(t, tree, uint64(len(res.Rows)))
			var b strings.Builder
			for _, obj := range summaryObjects(res) {
				line, _ := json.Marshal(obj)
				b.Write(line)
				b.WriteByte('\n')
			}
			return tree.counts() + b.String()
		}
		t.Fatalf("unknown command %s", d.Cmd)
		return ""
	})
}

// checkExplained checks the invariants of a tree that ran: every step that
// ran produced no more rows than estimated, a step skipped has no rows or
// time, and the root produced rows.
func checkExplained(t *testing.T, root *ExplainNode, rows uint64) {
	t.Helper()
	if !root.Ran || root.Actual != rows {
		t.Errorf("root %s: ran %v, actual %d, want %d rows", root.head(), root.Ran, root.Actual, rows)
	}
	var walk func(n *ExplainNode)
	walk = func(n *ExplainNode) {
		switch {
		case n.Ran && n.Actual > n.Estimated:
			t.Errorf("%s: actual %d above the estimate %d", n.head(), n.Actual, n.Estimated)
		case !n.Ran && (n.Actual != 0 || n.Estimated != 0 || n.Time != 0):
			t.Errorf("%s: skipped with rows or time", n.head())
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(root)
}

// counts prints a tree with rows but without times, which vary from run to
// run: the form of goldens of plans that ran.
func (n *ExplainNode) counts() string {
	var b strings.Builder
	n.write(&b, 0, true, false)
	return b.String()
}

// TestPlanSummary checks the one-line summary logs get: the steps in the
// plan's words, with "?" for every value of the request.
func TestPlanSummary(t *testing.T) {
	items, _, _ := filterTestTables("svc")
	f := func(filter, want string) {
		t.Helper()
		n, err := ParseFilter(items, []byte(filter))
		if err != nil {
			t.Fatal(err)
		}
		if got := Compile(n).Tree().Summary(); got != want {
			t.Errorf("%s:\n got %s\nwant %s", filter, got, want)
		}
	}
	f(`{}`, "live")
	f(`{"name": "secret", "price": {"$gt": 3.5}}`, "and(postings name = ?; range price > ?)")
	f(`{"$any": [{"tags": {"$includes": ["s1", "s2"]}}, {"title": {"$contains": "s3"}}]}`,
		"or(postings tags any in ?; scan title contains ?)")
	f(`{"tags": {"$includesAll": {"$all": [{"$startsWith": "s"}, {"$not": "t"}]}}, "$exists": "price"}`,
		"and(postings price exists; scan tags all startsWith ?; scan tags all element: not = ?)")
	f(`{"owner.name": {"$isNot": "ann"}}`, "not(link owner(postings name = ?))")
}
