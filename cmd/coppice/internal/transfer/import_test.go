package transfer

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coppice-db/coppice/api"
	"github.com/coppice-db/coppice/engine"
)

// peopleColumns is the schema of the CSV tests.
var peopleColumns = []engine.ColumnDef{
	{Name: "name", Type: engine.TypeString},
	{Name: "age", Type: engine.TypeInt},
	{Name: "born", Type: engine.TypeDatetime},
	{Name: "tags", Type: engine.TypeMultiple},
	{Name: "active", Type: engine.TypeBool},
}

// peopleCSV has a record over two lines (5-6) and three bad records:
// line 4 (not an integer, found before sending), line 7 (not a datetime,
// refused by the server) and line 9 (a field short).
const peopleCSV = `id,name,age,born,tags,active
p1,Ann,34,1990-01-02T00:00:00Z,"[""a"",""b""]",true
p2,Bob,27,,,false
p3,Cid,abc,,,true
p4,"Dee
Dee",41,,,
p5,Eve,29,yesterday,,true
p6,Fay,50,,,
p7,Gus,3,,
p8,Hal,61,,,1
`

// failureLines returns the lines of the failures.
func failureLines(fs []Failure) []int64 {
	out := []int64{}
	for _, f := range fs {
		out = append(out, f.Line)
	}
	return out
}

// checkSummary compares the counts and failed lines of an import.
func checkSummary(t *testing.T, sum *ImportSummary, log string, read, imported, failed int64, lines []int64) {
	t.Helper()
	if sum.Read != read || sum.Imported != imported || sum.Failed != failed {
		t.Errorf("read %d imported %d failed %d, want %d %d %d\n%s", sum.Read, sum.Imported, sum.Failed, read, imported, failed, log)
	}
	if got := failureLines(sum.Failures); !reflect.DeepEqual(got, lines) {
		t.Errorf("failed lines %v, want %v\n%s", got, lines, log)
	}
}

func TestImportCSV(t *testing.T) {
	ts := startServer(t, t.TempDir(), false)
	ts.createTable("people", peopleColumns)
	sum, log := importText(t, ImportOptions{Target: ts.target("people"), InputName: "people.csv"}, peopleCSV)
	checkSummary(t, sum, log, 8, 5, 3, []int64{4, 7, 9})
	if sum.Stopped != nil || sum.Resume != 8 {
		t.Errorf("stopped %v, resume %d; want nil, 8", sum.Stopped, sum.Resume)
	}
	for _, want := range []string{
		`line 4: column [age]: "abc" is not an integer`,
		"line 7: column [born]: invalid value: expected an RFC 3339 datetime",
		"line 9: has 5 fields, the header has 6",
		"import: read 8 records, imported 5, failed 3",
		"import: failed lines (the CSV header is line 1): 4, 7, 9",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if got, want := ts.ids("people"), []string{"p1", "p2", "p4", "p6", "p8"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
	rec, err := ts.eng.Get(ts.ref(), "people", "p1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Values["age"] != int64(34) || !reflect.DeepEqual(rec.Values["tags"], []string{"a", "b"}) || rec.Values["active"] != true {
		t.Errorf("p1 = %v", rec.Values)
	}
	if rec, _ := ts.eng.Get(ts.ref(), "people", "p4"); rec == nil || rec.Values["name"] != "Dee\nDee" {
		t.Errorf("p4 = %+v", rec)
	}

	// --skip 4 passes over p1..p4 (lines 2-6): lines keep counting from
	// the start of the input.
	ts.createTable("people2", peopleColumns)
	sum, log = importText(t, ImportOptions{Target: ts.target("people2"), InputName: "people.csv", Skip: 4}, peopleCSV)
	checkSummary(t, sum, log, 4, 2, 2, []int64{7, 9})
	if sum.Skipped != 4 || sum.Resume != 8 || !strings.Contains(log, "after skipping 4") {
		t.Errorf("skipped %d resume %d\n%s", sum.Skipped, sum.Resume, log)
	}
	if got, want := ts.ids("people2"), []string{"p6", "p8"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}

	// A header naming a column the table lacks stops before sending.
	o := ImportOptions{Target: ts.target("people"), InputName: "x.csv"}
	o.Input = strings.NewReader("id,nope\nx,1\n")
	if _, err := Import(t.Context(), o); err == nil || !strings.Contains(err.Error(), "CSV column [nope] is not a column of table [people]") {
		t.Errorf("unknown CSV column: %v", err)
	}
	o.Input, o.Table = strings.NewReader("id\nx\n"), "missing"
	if _, err := Import(t.Context(), o); err == nil || !strings.Contains(err.Error(), "table [missing] not found: add --create") {
		t.Errorf("missing table: %v", err)
	}
}

// eventsNDJSON has a blank line and three bad records: line 4 (invalid
// JSON), line 5 (not an object) and line 6 (a string for an int column,
// refused by the server).
const eventsNDJSON = `{"id":"r1","name":"Ann","age":34,"score":1.5,"born":"1990-01-02T00:00:00Z","tags":["a"],"meta":{"k":1},"ok":true}

{"id":"r2","name":"Bob","age":27,"score":2,"ok":false}
{"id":"r3","name":"Cid",
["not","an","object"]
{"id":"r4","name":"Dee","age":"old"}
{"id":"r5","name":"Eve","age":5}
{"id":"r6","name":"Fay","age":6,"meta":[1,2]}
`

func TestImportNDJSONCreate(t *testing.T) {
	ts := startServer(t, t.TempDir(), false)
	// The first three records (one of them bad) decide the columns.
	o := ImportOptions{Target: ts.target("events"), InputName: "-", Create: true, InferRows: 3}
	sum, log := importText(t, o, eventsNDJSON)
	checkSummary(t, sum, log, 7, 4, 3, []int64{4, 5, 6})
	det, err := ts.eng.Branches().Details(ts.ref())
	if err != nil {
		t.Fatal(err)
	}
	events, err := det.Schema.Table("events")
	if err != nil {
		t.Fatal(err)
	}
	cols := events.Columns
	want := []engine.ColumnDef{
		{Name: "name", Type: engine.TypeString}, {Name: "age", Type: engine.TypeInt},
		{Name: "score", Type: engine.TypeFloat}, {Name: "born", Type: engine.TypeDatetime},
		{Name: "tags", Type: engine.TypeMultiple}, {Name: "meta", Type: engine.TypeJSON},
		{Name: "ok", Type: engine.TypeBool},
	}
	if !reflect.DeepEqual(cols, want) {
		t.Errorf("columns %+v\nwant %+v", cols, want)
	}
	for _, s := range []string{
		"created table [events] with columns: name string, age int, score float, born datetime, tags multiple, meta json, ok bool",
		"line 4: invalid JSON: unexpected end of JSON input",
		"line 5: not a JSON object",
		"line 6: column [age]: invalid value: expected an integer",
	} {
		if !strings.Contains(log, s) {
			t.Errorf("log lacks %q:\n%s", s, log)
		}
	}
	if got, want := ts.ids("events"), []string{"r1", "r2", "r5", "r6"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
}

// TestImportInvalidJSON imports NDJSON lines that look like objects but
// are not valid JSON among valid ones, some with quotes, braces and
// backslashes in strings: each bad line fails with the JSON error, alone.
func TestImportInvalidJSON(t *testing.T) {
	ts := startServer(t, t.TempDir(), false)
	ts.createTable("items", []engine.ColumnDef{{Name: "name", Type: engine.TypeString}})
	const in = `{"id":"a1","name":"Ann"}
{"id":"a2","name":tru}
{"id":"a3","name":"x"}{"id":"a4"}
{"id":"a5","name":"B\"}{,"}
{"id":"a6","name":"C",}
{"id":"a7","name":"\\\"}\\\\"}
{"id":"a8","name":"D"
`
	sum, log := importText(t, ImportOptions{Target: ts.target("items"), InputName: "-"}, in)
	checkSummary(t, sum, log, 7, 3, 4, []int64{2, 3, 5, 7})
	for _, s := range []string{
		"line 2: invalid JSON: invalid character '}' in literal true (expecting 'e')",
		"line 3: invalid JSON: invalid character '{' after top-level value",
		"line 5: invalid JSON: invalid character '}' looking for beginning of object key string",
		"line 7: invalid JSON: unexpected end of JSON input",
	} {
		if !strings.Contains(log, s) {
			t.Errorf("log lacks %q:\n%s", s, log)
		}
	}
	if got, want := ts.ids("items"), []string{"a1", "a5", "a7"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
	for id, want := range map[string]string{"a5": `B"}{,`, "a7": `\"}\\`} {
		if rec, _ := ts.eng.Get(ts.ref(), "items", id); rec == nil || rec.Values["name"] != want {
			t.Errorf("%s = %+v, want name %q", id, rec, want)
		}
	}
}

// TestImportResume stops an import at its first failed batch and
// continues it with the --skip the summary names: the two runs together
// import what one uninterrupted run does, nothing twice.
func TestImportResume(t *testing.T) {
	ts := startServer(t, t.TempDir(), false)
	ts.createTable("events", []engine.ColumnDef{
		{Name: "name", Type: engine.TypeString}, {Name: "age", Type: engine.TypeInt},
		{Name: "score", Type: engine.TypeFloat}, {Name: "born", Type: engine.TypeDatetime},
		{Name: "tags", Type: engine.TypeMultiple}, {Name: "meta", Type: engine.TypeJSON},
		{Name: "ok", Type: engine.TypeBool},
	})
	// Batches of two, one at a time: [r1 r2] [line 4, line 5] stops it.
	o := ImportOptions{Target: ts.target("events"), InputName: "e.ndjson", BatchSize: 2, Concurrency: 1, MaxErrors: 1}
	sum, log := importText(t, o, eventsNDJSON)
	checkSummary(t, sum, log, sum.Read, 2, 2, []int64{4, 5})
	if sum.Stopped == nil || sum.Resume != 4 || len(sum.Ahead) != 0 {
		t.Fatalf("stopped %v resume %d ahead %v\n%s", sum.Stopped, sum.Resume, sum.Ahead, log)
	}
	for _, s := range []string{"stopped: 2 records failed (--max-errors 1)", "continue, run the same import with --skip 4"} {
		if !strings.Contains(log, s) {
			t.Errorf("log lacks %q:\n%s", s, log)
		}
	}
	o.Skip, o.MaxErrors = sum.Resume, 0
	sum, log = importText(t, o, eventsNDJSON)
	checkSummary(t, sum, log, 3, 2, 1, []int64{6})
	if sum.Stopped != nil {
		t.Errorf("stopped: %v", sum.Stopped)
	}
	if got, want := ts.ids("events"), []string{"r1", "r2", "r5", "r6"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
}

func TestImportJSONArray(t *testing.T) {
	ts := startServer(t, t.TempDir(), false)
	ts.createTable("items", []engine.ColumnDef{{Name: "name", Type: engine.TypeString}})
	const in = `[
  {"id": "a1", "name": "Ann"},
  {
    "id": "a2",
    "name": 5
  },
  {"id": "a3", "name": "Cid"}, 7,
  {"id": "a4", "name": "x]}\"{,"}
]
`
	sum, log := importText(t, ImportOptions{Target: ts.target("items"), InputName: "items.json"}, in)
	checkSummary(t, sum, log, 5, 3, 2, []int64{3, 7})
	if !strings.Contains(log, "line 3: column [name]: invalid value: expected a string") || !strings.Contains(log, "line 7: not a JSON object") {
		t.Errorf("log:\n%s", log)
	}
	if got, want := ts.ids("items"), []string{"a1", "a3", "a4"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
	if rec, _ := ts.eng.Get(ts.ref(), "items", "a4"); rec == nil || rec.Values["name"] != `x]}"{,` {
		t.Errorf("a4 = %+v", rec)
	}

	// A malformed array stops the import at the place it breaks; what came
	// before is imported.
	ts.createTable("items2", []engine.ColumnDef{{Name: "name", Type: engine.TypeString}})
	sum, log = importText(t, ImportOptions{Target: ts.target("items2"), InputName: "-"}, "[{\"id\":\"b1\"},\n{\"id\":\"b2\"} {\"id\":\"b3\"}]")
	if sum.Imported != 2 || sum.Stopped == nil || !strings.Contains(sum.Stopped.Error(), `line 2: expected , or ] after an array element, found '{'`) || sum.Resume != 2 {
		t.Errorf("imported %d stopped %v resume %d\n%s", sum.Imported, sum.Stopped, sum.Resume, log)
	}
}

// TestImportProgressLines checks the plain progress line of a
// non-terminal output and the final figures.
func TestImportProgressLines(t *testing.T) {
	ts := startServer(t, t.TempDir(), false)
	ts.createTable("n", []engine.ColumnDef{{Name: "v", Type: engine.TypeInt}})
	var b strings.Builder
	for i := range 250 {
		b.WriteString(`{"v":` + strings.Repeat("1", 1+i%5) + "}\n")
	}
	o := ImportOptions{Target: ts.target("n"), InputName: "-", BatchSize: 50, Progress: Progress{Mode: ProgressLines, Every: 100}}
	sum, log := importText(t, o, b.String())
	checkSummary(t, sum, log, 250, 250, 0, []int64{})
	var lines []string
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "import: ") && !strings.HasPrefix(l, "import: read") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "import: 100 records, ") || !strings.HasPrefix(lines[1], "import: 200 records, ") ||
		!strings.Contains(lines[1], " records/s, ") || !strings.Contains(lines[1], "%, eta ") {
		t.Errorf("progress lines:\n%s", log)
	}
	if sum.Bytes != int64(b.Len()) {
		t.Errorf("bytes %d, want %d", sum.Bytes, b.Len())
	}
}

func TestInferColumns(t *testing.T) {
	long := strings.Repeat("x", longString+1)
	f := func(csv bool, values []string, want engine.ColumnType) {
		t.Helper()
		g := &guess{}
		for _, v := range values {
			if csv {
				g.noteCell(v)
			} else {
				var rec map[string]any
				d := json.NewDecoder(strings.NewReader(`{"v":` + v + `}`))
				d.UseNumber()
				if err := d.Decode(&rec); err != nil {
					t.Fatal(err)
				}
				g.noteJSON(rec["v"])
			}
		}
		if got := g.columnType(csv); got != want {
			t.Errorf("csv=%v %q: %s, want %s", csv, values, got, want)
		}
	}
	f(false, []string{"true", "null", "false"}, engine.TypeBool)
	f(false, []string{"1", "-7", "9007199254740993"}, engine.TypeInt)
	f(false, []string{"1", "2.5"}, engine.TypeFloat)
	f(false, []string{"1e3"}, engine.TypeFloat)
	f(false, []string{`"2024-01-02T03:04:05Z"`, `"2024-01-02T03:04:05.123+02:00"`}, engine.TypeDatetime)
	f(false, []string{`"2024-01-02T03:04:05Z"`, `"soon"`}, engine.TypeString)
	f(false, []string{`"a"`, `"` + long + `"`}, engine.TypeText)
	f(false, []string{`"a\nb"`}, engine.TypeText)
	f(false, []string{`["a","b"]`, `[]`}, engine.TypeMultiple)
	f(false, []string{`[1,2]`}, engine.TypeJSON)
	f(false, []string{`{"a":1}`}, engine.TypeJSON)
	f(false, []string{`"a"`, `1`}, engine.TypeJSON)
	f(false, []string{`null`}, engine.TypeString)
	f(true, []string{"true", "FALSE", ""}, engine.TypeBool)
	f(true, []string{"1", "0"}, engine.TypeInt)
	f(true, []string{"1", "0.5", "-3e2"}, engine.TypeFloat)
	f(true, []string{"1", "NaN"}, engine.TypeString)
	f(true, []string{"0x10"}, engine.TypeString)
	f(true, []string{"2024-01-02T03:04:05Z"}, engine.TypeDatetime)
	f(true, []string{`["a"]`}, engine.TypeMultiple)
	f(true, []string{`{"a":1}`}, engine.TypeJSON)
	f(true, []string{"1", "x"}, engine.TypeString)
	f(true, []string{"x", long}, engine.TypeText)
	f(true, []string{""}, engine.TypeString)

	in := newInferrer(true)
	in.addHeader([]string{"id", "name", "address.city", "address.zip"})
	in.add(&record{cells: []string{"a", "Ann", "Oslo", "0150"}}, []string{"id", "name", "address.city", "address.zip"})
	if got := describeColumns(in.columns()); got != "name string, address object {city string, zip int}" {
		t.Errorf("columns: %s", got)
	}
}

// TestImportRetriesAndSplits puts a proxy in front of the server that
// refuses the first bulk requests with 503, which are sent again, and
// gives the server a small body limit, under which batches are split and a
// record too large for it fails alone.
func TestImportRetriesAndSplits(t *testing.T) {
	ts := startServerWith(t, t.TempDir(), false, api.Options{MaxBody: 4096})
	ts.createTable("n", []engine.ColumnDef{{Name: "s", Type: engine.TypeString}})
	target, _ := url.Parse(ts.url)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var refused atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/bulk") && refused.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	var b strings.Builder
	for i := range 40 {
		s := strings.Repeat("x", 100)
		if i == 17 {
			s = strings.Repeat("y", 5000)
		}
		fmt.Fprintf(&b, "{\"id\":\"r%02d\",\"s\":%q}\n", i, s)
	}
	o := ImportOptions{Target: ts.target("n"), InputName: "-", Concurrency: 1}
	o.URL = front.URL
	sum, log := importText(t, o, b.String())
	checkSummary(t, sum, log, 40, 39, 1, []int64{18})
	if !strings.Contains(log, "line 18: larger than the server's request body limit (413)") || refused.Load() < 3 {
		t.Errorf("refused %d\n%s", refused.Load(), log)
	}
	if n := len(ts.ids("n")); n != 39 {
		t.Errorf("%d records, want 39", n)
	}
}

// TestImportLostConnection drops the connection of the second bulk
// request: the import does not send it again (it may have been applied),
// stops, and names the --skip that continues after the first batch.
func TestImportLostConnection(t *testing.T) {
	ts := startServer(t, t.TempDir(), false)
	ts.createTable("n", []engine.ColumnDef{{Name: "v", Type: engine.TypeInt}})
	target, _ := url.Parse(ts.url)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var bulks atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/bulk") && bulks.Add(1) == 2 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, "{\"id\":\"r%d\",\"v\":%d}\n", i, i)
	}
	o := ImportOptions{Target: ts.target("n"), InputName: "-", BatchSize: 3, Concurrency: 1}
	o.URL = front.URL
	sum, log := importText(t, o, b.String())
	if sum.Imported != 3 || sum.Resume != 3 || sum.Stopped == nil || !strings.Contains(sum.Stopped.Error(), "batch of lines 4-6: ") ||
		bulks.Load() != 2 || !strings.Contains(log, "run the same import with --skip 3") {
		t.Fatalf("imported %d resume %d stopped %v, %d bulk requests\n%s", sum.Imported, sum.Resume, sum.Stopped, bulks.Load(), log)
	}
	o.Skip = sum.Resume
	sum, log = importText(t, o, b.String())
	checkSummary(t, sum, log, 7, 7, 0, []int64{})
	if n := len(ts.ids("n")); n != 10 {
		t.Errorf("%d records, want 10", n)
	}
}
