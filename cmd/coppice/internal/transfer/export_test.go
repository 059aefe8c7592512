package transfer

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// richColumns has a column of every type an export writes.
var richColumns = []engine.ColumnDef{
	{Name: "name", Type: engine.TypeString},
	{Name: "bio", Type: engine.TypeText},
	{Name: "age", Type: engine.TypeInt},
	{Name: "score", Type: engine.TypeFloat},
	{Name: "active", Type: engine.TypeBool},
	{Name: "born", Type: engine.TypeDatetime},
	{Name: "tags", Type: engine.TypeMultiple},
	{Name: "meta", Type: engine.TypeJSON},
	{Name: "team", Type: engine.TypeLink, Link: &engine.LinkDef{Table: "teams"}},
	{Name: "addr", Type: engine.TypeObject, Columns: []engine.ColumnDef{
		{Name: "city", Type: engine.TypeString}, {Name: "zip", Type: engine.TypeInt},
	}},
	{Name: "emb", Type: engine.TypeVector, Vector: &engine.VectorDef{Dimension: 2}},
}

// richNDJSON makes n records of richColumns; every tenth leaves most
// columns null.
func richNDJSON(n int) string {
	var b strings.Builder
	born := time.Date(1990, 1, 2, 3, 4, 5, 6e6, time.UTC)
	for i := range n {
		rec := map[string]any{"id": fmt.Sprintf("p%03d", i), "name": fmt.Sprintf("Person <%d> & co", i)}
		if i%10 != 0 {
			rec["bio"] = "line one\nline \u2028two"
			rec["age"] = i % 90
			rec["score"] = float64(i) / 4
			rec["active"] = i%2 == 0
			rec["born"] = born.Add(time.Duration(i) * time.Hour).Format(time.RFC3339Nano)
			rec["tags"] = []string{fmt.Sprint("t", i%3), "x"}
			rec["meta"] = map[string]any{"i": i, "s": "<b>"}
			rec["team"] = fmt.Sprint("t", i%3)
			rec["addr"] = map[string]any{"city": fmt.Sprint("C", i%7), "zip": i}
			rec["emb"] = []float64{float64(i), -float64(i) / 2}
		}
		line, _ := json.Marshal(rec)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestExportRoundTrip(t *testing.T) {
	ts := startServer(t, t.TempDir(), false)
	ts.createTable("teams", []engine.ColumnDef{{Name: "name", Type: engine.TypeString}})
	ts.createTable("people", richColumns)
	ts.createTable("people2", richColumns)
	sum, log := importText(t, ImportOptions{Target: ts.target("teams"), InputName: "-"},
		`{"id":"t0","name":"Zero"}`+"\n"+`{"id":"t1","name":"One"}`+"\n"+`{"id":"t2","name":"Two"}`+"\n")
	checkSummary(t, sum, log, 3, 3, 0, []int64{})
	const n = 450 // more than two pages
	sum, log = importText(t, ImportOptions{Target: ts.target("people"), InputName: "-"}, richNDJSON(n))
	checkSummary(t, sum, log, n, n, 0, []int64{})

	var elog strings.Builder
	out := exportText(t, ExportOptions{Target: ts.target("people"), Log: &elog, Progress: Progress{Mode: ProgressLines, Every: 200}})
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	const p000 = `{"id":"p000","name":"Person <0> & co"}`
	const p001 = `{"id":"p001","active":false,"addr":{"city":"C1","zip":1},"age":1,"bio":"line one\nline \u2028two",` +
		`"born":"1990-01-02T04:04:05.006Z","emb":[1,-0.5],"meta":"{\"i\":1,\"s\":\"<b>\"}","name":"Person <1> & co",` +
		`"score":0.25,"tags":["t1","x"],"team":"t1"}`
	if lines[0] != p000 || lines[1] != p001 {
		t.Errorf("first lines:\n%s\n%s\nwant\n%s\n%s", lines[0], lines[1], p000, p001)
	}
	// The log has a progress line with the total the count gave, then
	// the summary.
	if l := elog.String(); !strings.Contains(l, "export: 200 records, ") || !strings.Contains(l, "44%, eta ") ||
		!strings.Contains(l, fmt.Sprintf("export: wrote %d records (", n)) {
		t.Errorf("export log:\n%s", l)
	}

	// Import the export into a table of the same schema: the same records.
	sum, log = importText(t, ImportOptions{Target: ts.target("people2"), InputName: "people.ndjson"}, out)
	checkSummary(t, sum, log, n, n, 0, []int64{})
	if out2 := exportText(t, ExportOptions{Target: ts.target("people2")}); out2 != out {
		t.Errorf("export of the re-imported table differs")
	}

	// A query: filter, sort and columns, one of them from the linked table.
	q := exportText(t, ExportOptions{Target: ts.target("people"), Filter: `{"age":{"$ge":80}}`, Sort: "age:desc,name", Columns: []string{"name", "age", "team.name"}})
	var want []string
	for age := 89; age >= 80; age-- {
		var same []int
		for i := range n {
			if i%10 != 0 && i%90 == age {
				same = append(same, i)
			}
		}
		// Ties in age go by name, as strings.
		sort.Slice(same, func(a, b int) bool { return fmt.Sprint(same[a]) < fmt.Sprint(same[b]) })
		for _, i := range same {
			team := i % 3
			want = append(want, fmt.Sprintf(`{"id":"p%03d","age":%d,"name":"Person <%d> & co","team":{"id":"t%d","name":"%s"}}`,
				i, age, i, team, []string{"Zero", "One", "Two"}[team]))
		}
	}
	if got := strings.Split(strings.TrimSuffix(q, "\n"), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("query export:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestExportOptions(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		got, err := parseSort(in)
		if err != nil {
			got = json.RawMessage("error: " + err.Error())
		}
		if string(got) != want {
			t.Errorf("parseSort(%q) = %s, want %s", in, got, want)
		}
	}
	f("", "")
	f("name", `[{"name":"asc"}]`)
	f(" age:desc , name:asc", `[{"age":"desc"},{"name":"asc"}]`)
	f(`{"age":"desc"}`, `{"age":"desc"}`)
	f("age:down", `error: --sort: order of [age] must be asc or desc, got "down"`)
	f("a,,b", `error: --sort: empty column name in "a,,b"`)
	f(`{"age"`, `error: --sort is not valid JSON`)

	cols := &tableDef{Columns: []engine.ColumnDef{
		{Name: "a", Type: engine.TypeString}, {Name: "f", Type: engine.TypeFile}, {Name: "fs", Type: engine.TypeFileArray},
	}}
	if got, err := exportColumns(cols, nil); err != nil || string(got) != `["a"]` {
		t.Errorf("default columns with files: %s %v", got, err)
	}
	if got, err := exportColumns(&tableDef{Columns: cols.Columns[:1]}, nil); err != nil || got != nil {
		t.Errorf("default columns without files: %s %v", got, err)
	}
	if _, err := exportColumns(cols, []string{"a", "f.name"}); err == nil || !strings.Contains(err.Error(), "[f.name] is a file column") {
		t.Errorf("file column asked for: %v", err)
	}

	ts := startServer(t, t.TempDir(), false)
	for _, c := range []struct {
		o    ExportOptions
		want string
	}{
		{ExportOptions{Target: ts.target("nope")}, "table [nope] not found"},
		{ExportOptions{Target: ts.target("nope"), Filter: "[1]"}, "--filter must be a JSON object"},
		{ExportOptions{Target: Target{URL: ts.url, APIKey: "wrong", Database: "app", Table: "t"}}, "server answered 401 Unauthorized: invalid API key"},
		{ExportOptions{Target: Target{URL: ts.url, APIKey: testKey, Workspace: ts.ws, Database: "nodb", Table: "t"}}, "server answered 404"},
	} {
		var out strings.Builder
		c.o.Out = &out
		if _, err := Export(t.Context(), c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		} else if strings.Contains(err.Error(), testKey) {
			t.Errorf("the error shows the API key: %v", err)
		}
	}
}
