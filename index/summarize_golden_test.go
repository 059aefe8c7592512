package index

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/coppice-db/coppice/codec"
)

// TestSummarizeGolden runs testdata/summarize and TestAggregateGolden
// testdata/aggregate: "records" loads records of the things or people of
// sumTestTables (table=people; one JSON object per line, dotted paths for
// object columns, a link as the target's id), and "summarize" and
// "aggregate" run a request body on them, printing the response as the
// API shapes it: a summarize group per line, the aggs object indented.
// Every request runs on value stores, dense value stores and none, which
// must agree. Regenerate with go test ./index -run Golden -rewrite.
func TestSummarizeGolden(t *testing.T) { runSummaryGolden(t, "testdata/summarize") }

func TestAggregateGolden(t *testing.T) { runSummaryGolden(t, "testdata/aggregate") }

func runSummaryGolden(t *testing.T, file string) {
	things, people := sumTestTables()
	rows := map[*Table][]*codec.Record{}
	datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "records":
			tbl := things
			if d.HasArg("table") {
				var name string
				d.ScanArgs(t, "table", &name)
				if name == "people" {
					tbl = people
				}
			}
			rows[tbl] = nil
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				if line = strings.TrimSpace(line); line == "" {
					continue
				}
				rec, err := goldenRecord(tbl, line)
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				rows[tbl] = append(rows[tbl], rec)
			}
			return ""
		case "summarize", "aggregate":
			var outs []string
			for _, mode := range storeModes {
				noStore, dense := mode == "none", mode == "dense"
				ps := &memSource{t: people, rows: map[uint32]*codec.Record{}, noStore: noStore, dense: dense}
				ts := &memSource{t: things, rows: map[uint32]*codec.Record{}, noStore: noStore, dense: dense,
					tables: map[uint32]*memSource{people.ID: ps}}
				for i, r := range rows[people] {
					ps.rows[uint32(i)] = r
				}
				for i, r := range rows[things] {
					ts.rows[uint32(i)] = r
				}
				outs = append(outs, goldenRun(d.Cmd, ts, d.Input))
			}
			for i, out := range outs[1:] {
				if out != outs[0] {
					t.Fatalf("%s: with %s:\n%s\nwith %s:\n%s", d.Input, storeModes[0], outs[0], storeModes[i+1], out)
				}
			}
			return outs[0]
		}
		t.Fatalf("unknown command %s", d.Cmd)
		return ""
	})
}

// goldenRun runs a summarize or aggregate body on src and prints the
// response, or the error.
func goldenRun(cmd string, src Source, body string) string {
	var out []byte
	var err error
	if cmd == "summarize" {
		var res *SummarizeResult
		if res, err = summarizeBody(src, body); err == nil {
			var b strings.Builder
			for _, obj := range summaryObjects(res) {
				line, _ := json.Marshal(obj)
				b.Write(line)
				b.WriteByte('\n')
			}
			return b.String()
		}
	} else {
		var s string
		if s, err = aggregateBody(src, body); err == nil {
			var buf bytes.Buffer
			if err = json.Indent(&buf, []byte(s), "", "  "); err == nil {
				out = append(buf.Bytes(), '\n')
			}
		}
	}
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return string(out)
}

// aggregateBody reads an aggregate request body as the API does and runs
// it, returning the response as JSON.
func aggregateBody(src Source, body string) (string, error) {
	var b struct {
		Filter json.RawMessage `json:"filter"`
		Aggs   json.RawMessage `json:"aggs"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		return "", err
	}
	return aggregateJSON(src, string(b.Filter), string(b.Aggs))
}

// goldenRecord converts one JSON object to a record of t: values by
// column type, "id" as the record id.
func goldenRecord(t *Table, line string) (*codec.Record, error) {
	d := json.NewDecoder(strings.NewReader(line))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	rec := &codec.Record{Version: 1}
	rec.ID, _ = m["id"].(string)
	for path, v := range m {
		if path == "id" || v == nil {
			continue
		}
		c := t.Columns[path]
		if c == nil {
			return nil, fmt.Errorf("no column %s", path)
		}
		val, err := goldenValue(c.Type, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		rec.Set(c.ID, val)
	}
	return rec, nil
}

// goldenValue converts a JSON value to a value of a column type.
func goldenValue(typ ColumnType, v any) (codec.Value, error) {
	switch typ {
	case TypeInt:
		i, err := v.(json.Number).Int64()
		return codec.Int(i), err
	case TypeFloat:
		f, err := v.(json.Number).Float64()
		return codec.Float(f), err
	case TypeBool:
		return codec.Bool(v.(bool)), nil
	case TypeDatetime:
		tm, err := time.Parse(time.RFC3339Nano, v.(string))
		return codec.Datetime(tm), err
	case TypeMultiple:
		var strs []string
		for _, s := range v.([]any) {
			strs = append(strs, s.(string))
		}
		return codec.Strings(strs), nil
	}
	s, ok := v.(string)
	if !ok {
		return codec.Value{}, fmt.Errorf("want a string for a %s column", typ)
	}
	return codec.String(s), nil
}
