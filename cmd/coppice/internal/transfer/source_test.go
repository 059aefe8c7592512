package transfer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// readAll reads every record of a source as "line: raw", "line: !bad" or
// "line: cells", then the error that ended it ("EOF" at the end).
func readAll(src source) []string {
	var out []string
	for {
		rec, err := src.next()
		if errors.Is(err, io.EOF) {
			return append(out, "EOF")
		}
		if err != nil {
			return append(out, "error: "+err.Error())
		}
		switch {
		case rec.bad != "":
			out = append(out, fmt.Sprintf("%d: !%s", rec.line, rec.bad))
		case rec.cells != nil:
			out = append(out, fmt.Sprintf("%d: %q", rec.line, rec.cells))
		default:
			out = append(out, fmt.Sprintf("%d: %s", rec.line, rec.raw))
		}
	}
}

func TestSources(t *testing.T) {
	f := func(format, in string, want ...string) {
		t.Helper()
		br := bufio.NewReaderSize(strings.NewReader(in), 16)
		var src source
		switch format {
		case FormatNDJSON:
			src = newNDJSONSource(br)
		case FormatJSON:
			src = newArraySource(br)
		case FormatCSV:
			cs, err := newCSVSource(br, ';')
			if err != nil {
				if got := "header: " + err.Error(); got != want[0] {
					t.Errorf("%q: %s, want %s", in, got, want[0])
				}
				return
			}
			src = cs
		}
		got := readAll(src)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s %q:\n got %q\nwant %q", format, in, got, want)
		}
	}
	f(FormatNDJSON, "", "EOF")
	f(FormatNDJSON, "\ufeff{\"a\":1}\r\n\r\n  \n{\"b\":2}", `1: {"a":1}`, `4: {"b":2}`, "EOF")
	f(FormatNDJSON, "{\"a\":1}\n{\"a\":\n[1]\n\"x\"\n", `1: {"a":1}`, "2: !invalid JSON: unexpected end of JSON input",
		"3: !not a JSON object", "4: !not a JSON object", "EOF")
	long := `{"s":"` + strings.Repeat("x", 3<<20) + `"}`
	f(FormatNDJSON, long+"\n{}\n", "1: "+long, "2: {}", "EOF")

	f(FormatJSON, "[]", "EOF")
	f(FormatJSON, " \n [ \n ] trailing", "EOF")
	f(FormatJSON, "\ufeff[{\"a\":\"]\\\"}\"},\n\n  {\n\"b\" : [1,{}]\n} , 3,\"s\",null,{\"c\":tru}]",
		`1: {"a":"]\"}"}`, "3: {\n\"b\" : [1,{}]\n}", "5: !not a JSON object", "5: !not a JSON object", "5: !not a JSON object",
		"5: !invalid JSON: invalid character '}' in literal true (expecting 'e')", "EOF")
	f(FormatJSON, `{"a":1}`, "error: line 1: the input is not a JSON array: it does not start with [")
	f(FormatJSON, "[{\"a\":1}\n{\"b\":2}]", `1: {"a":1}`, "error: line 2: expected , or ] after an array element, found '{'")
	f(FormatJSON, "[{\"a\":1},\n{\"b\":", `1: {"a":1}`, "error: line 2: the JSON array ends before its closing ]")
	f(FormatJSON, "[{\"a\":1}", `1: {"a":1}`, "error: line 1: the JSON array ends before its closing ]")
	f(FormatJSON, "", "error: line 1: the JSON array ends before its closing ]")

	f(FormatCSV, "a;b\n1;2\n\n\"x\ny\";3\n4\n5;\"6\n", `2: ["1" "2"]`, `4: ["x\ny" "3"]`, "6: !has 1 fields, the header has 2",
		`7: !extraneous or missing " in quoted-field`, "EOF")
	f(FormatCSV, "\ufeffid;name\r\nx;y\r\n", `2: ["x" "y"]`, "EOF")
	f(FormatCSV, "", "header: the CSV input is empty: it needs a header of column names")
	f(FormatCSV, "a;;b\n", "header: CSV header: column 2 has no name")
	f(FormatCSV, "a; a\n", "header: CSV header: column [a] appears twice")
}

func TestDetectFormat(t *testing.T) {
	f := func(format, name, in, want string) {
		t.Helper()
		got, err := detectFormat(format, name, bufio.NewReader(strings.NewReader(in)))
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != want {
			t.Errorf("detectFormat(%q, %q, %q) = %s, want %s", format, name, in, got, want)
		}
	}
	f("csv", "a.json", "[", "csv")
	f("", "a.NDJSON", "", "ndjson")
	f("", "a.jsonl", "", "ndjson")
	f("", "a.csv", "{", "csv")
	f("", "a.json", " \r\n\t[", "json")
	f("", "-", "\ufeff{", "ndjson")
	f("", "data.txt", "id,name", "error: cannot tell the input's format (it starts with neither [ nor {): set --format")
	f("", "-", "  ", "error: cannot tell the input's format: set --format")
	f("xml", "-", "", `error: unknown format "xml": want ndjson, json or csv`)
}

// FuzzArraySource compares the array reader with encoding/json: on any
// input it must not panic, and on a JSON array it yields each element,
// valid objects as they are and everything else as a bad record.
func FuzzArraySource(f *testing.F) {
	for _, s := range []string{"[]", `[{"a":1},{"b":"]}"}]`, "[\n{\"a\":\n[1,{}]},\n2, \"x\", null]", `[{"a":"\"\\"}]`, `[{`, `[1 2]`, `["\u00e9"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var got []record
		src := newArraySource(bufio.NewReader(strings.NewReader(in)))
		var err error
		for {
			var rec record
			if rec, err = src.next(); err != nil {
				break
			}
			got = append(got, rec)
		}
		var elems []json.RawMessage
		if json.Unmarshal([]byte(strings.TrimPrefix(in, "\ufeff")), &elems) != nil || bytes.HasPrefix([]byte(in), []byte("null")) {
			return
		}
		if !errors.Is(err, io.EOF) {
			t.Fatalf("valid array %q: %v", in, err)
		}
		if len(got) != len(elems) {
			t.Fatalf("%q: %d records, want %d", in, len(got), len(elems))
		}
		for i, e := range elems {
			isObject := bytes.HasPrefix(bytes.TrimSpace(e), []byte("{"))
			if isObject != (got[i].raw != nil) || (got[i].raw != nil && !bytes.Equal(got[i].raw, bytes.TrimSpace(e))) {
				t.Fatalf("%q: element %d = %q (bad %q), want %s", in, i, got[i].raw, got[i].bad, e)
			}
		}
	})
}

// TestOneObject checks the shape test of NDJSON lines: every JSON object
// passes, and what it lets through cannot run into its neighbours.
func TestOneObject(t *testing.T) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":"}"}`, `{"a":"\"}"}`, `{"a":"\\"}`, `{"a":"\\\"{"}`, `{"a":[{},[]]}`, `{"a" 1}`, `{"a":tru}`} {
		if !oneObject([]byte(s)) {
			t.Errorf("%s: not one object", s)
		}
	}
	for _, s := range []string{``, `{`, `}`, `[]`, `"x"`, `{"a":1}{"b":2}`, `{"a":1},{"b":2}`, `{"a":"}`, `{"a":"\"}`, `{"a":"\\"}"}`, `{"a":[}`, `{}]`, `{"a":1}]`} {
		if oneObject([]byte(s)) {
			t.Errorf("%s: one object", s)
		}
	}
}

// FuzzOneObject compares oneObject with encoding/json: a JSON object
// always passes, and a line that passes is, in a bulk body that parses,
// exactly one of its records.
func FuzzOneObject(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":"\"}"}`, `{"a":[1,{"b":"]"}]}`, `{"a":1}{"b":2}`, `{"a":"\\"}`, `{"a":"\\\"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		b := bytes.TrimSpace([]byte(in))
		in = string(b)
		ok := oneObject(b)
		if json.Valid(b) && len(b) > 0 && b[0] == '{' && !ok {
			t.Fatalf("%q is a JSON object", in)
		}
		if !ok {
			return
		}
		body := []byte(`[{"x":1},` + in + `,{"x":2}]`)
		var recs []json.RawMessage
		if json.Unmarshal(body, &recs) != nil {
			return
		}
		if len(recs) != 3 || string(recs[1]) != in {
			t.Fatalf("%q: the body holds %q", in, recs)
		}
	})
}
