package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coppice-db/coppice/bench/gen"
)

// testAnswer is a query answer of n records of the dataset, as the server
// writes one, with the cursor cursor.
func testAnswer(n int, cursor string) []byte {
	g := gen.New(gen.Config{N: 1000, Seed: 1})
	recs := make([]string, n)
	for i := range recs {
		d := g.Doc(i)
		d["id"] = gen.DocID(i)
		d["xata"] = map[string]any{"version": 0, "createdAt": "2026-11-26T10:00:00.000Z", "updatedAt": "2026-11-26T10:00:00.000Z"}
		d["note"] = "a \"quoted\" \\ word\u2028 é"
		b, _ := json.Marshal(d)
		recs[i] = string(b)
	}
	c, _ := json.Marshal(cursor)
	return []byte(`{"meta":{"page":{"cursor":` + string(c) + `,"more":true,"size":20}},"records":[` + strings.Join(recs, ",") + `]}`)
}

// TestReadPage checks that readPage takes from an answer what
// encoding/json does, and refuses malformed answers.
func TestReadPage(t *testing.T) {
	in := testAnswer(20, `abc"\/d`)
	got, err := readPage(in)
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Meta struct {
			Page struct {
				Cursor string `json:"cursor"`
				More   bool   `json:"more"`
			} `json:"page"`
		} `json:"meta"`
		Records []json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal(in, &want); err != nil {
		t.Fatal(err)
	}
	if got.cursor != want.Meta.Page.Cursor || got.more != want.Meta.Page.More || len(got.records) != len(want.Records) {
		t.Fatalf("got cursor %q more %v %d records, want %q %v %d",
			got.cursor, got.more, len(got.records), want.Meta.Page.Cursor, want.Meta.Page.More, len(want.Records))
	}
	for i := range got.records {
		if !bytes.Equal(got.records[i], want.Records[i]) {
			t.Fatalf("record %d: got %s, want %s", i, got.records[i], want.Records[i])
		}
	}
	f := func(answer string) {
		t.Helper()
		if _, err := readPage([]byte(answer)); err == nil {
			t.Errorf("readPage(%q): no error", answer)
		}
	}
	f(``)
	f(`[]`)
	f(`{"meta":{"page":{"cursor":"x","more":true}},"records":[{"a":1}`)
	f(`{"meta":{"page":{"cursor":"x" "more":true}},"records":[]}`)
	f(`{"records":[{"a":1}{"b":2}]}`)
	f(`{"records":[{"a":01}]}`)
	f(`{"records":[{"a":1.}]}`)
	f(`{"records":[{"a":tru}]}`)
	f(`{"records":[{"a":"x` + "\n" + `"}]}`)
	f(`{"records":[{"a":"x\"}]}`)
	f(`{"records":[]} x`)
	f(`{"meta":{"page":{"cursor":1}}}`)
	if a, err := readPage([]byte(` {"meta" : {"page":{"more":false, "cursor":"x\\"}}, "records":[ ] } `)); err != nil || a.cursor != `x\` || a.more || len(a.records) != 0 {
		t.Errorf("spaced answer: %+v, %v", a, err)
	}
}

// BenchmarkReadPage is the client's share of a page of the cursor walk.
func BenchmarkReadPage(b *testing.B) {
	in := testAnswer(20, strings.Repeat("c", 120))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readPage(in); err != nil {
			b.Fatal(err)
		}
	}
}
