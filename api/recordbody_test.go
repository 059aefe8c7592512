package api

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/internal/proccpu"
)

// recordBodies are record bodies the scan reads: every kind of value,
// escapes of every kind, invalid UTF-8 and surrogates, repeated keys.
var recordBodies = []string{
	`{}`,
	`null`,
	` { "a" : 1 , "b":[ ] ,"c":{ } } `,
	`{"title":"plain words","n":-0.5e+10,"i":0,"f":1.25E-3,"t":true,"F":false,"z":null}`,
	`{"tags":["a","b",["c",{"d":[1,2,[]]}]],"o":{"p":{"q":"r"}}}`,
	`{"esc":"\" \\ \/ \b \f \n \r \t","u":"\u00e9\u4e2d\u0000\u001f\uFFFF"}`,
	`{"pair":"\ud83d\ude00","lone":"\ud800","low":"\udc00x","bad":"\ud800\u0041","twice":"\ud800\ud800\udc00"}`,
	`{"hi":"\uD83D\uDE00","tail":"\ud83d","slash":"\ud83d\\ude00"}`,
	"{\"bytes\":\"\xff\xfe a \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80 \xef\xbf\xbd\"}",
	"{\"k\xff\":1,\"k\\u00e9\":2,\"k\\n\":3}",
	`{"a":1,"a":{"b":2},"a":[3]}`,
	`{"big":123456789012345678901234567890,"neg":-0}`,
	`{"html":"\u003cb\u003e \u0026 \u2028\u2029"}`,
}

// recordLists are bulk bodies the scan reads.
var recordLists = []string{
	`{"records":[]}`,
	`{"records":[{"a":1},null,{"b":"\u00e9"}]}`,
	` {"records" : [ {"a":[1,{"c":null}]} , {} ] } `,
}

// declinedBodies are bodies the scan leaves to encoding/json.
var declinedBodies = []string{
	``, `{`, `}`, `[]`, `"x"`, `5`, `{"a":}`, `{"a":1,}`, `{"a" 1}`, `{"a":1}x`,
	`{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\x01\"}", `{"a":tru}`, `{"a":01}`,
	`{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{a:1}`, `null null`, `{"records":[{}]`,
	`{"records":[{},]}`, `{"records":[{}]}{}`,
}

// declinedLists are records, but bulk bodies the scan leaves to
// encoding/json.
var declinedLists = []string{
	`null`, `{}`, `{"records":null}`, `{"records":[1]}`, `{"records":["x"]}`,
	`{"records":[[]]}`, `{"records":{}}`, `{"records":[],"records":[]}`,
	`{"records":[],"x":1}`, `{"rec\u006frds":[]}`, `{"Records":[]}`,
}

// checkRecordBody checks, for any body b, that each scan either declines
// b or reads what encoding/json does: the same records, and no error.
func checkRecordBody(t *testing.T, b []byte) (scanned bool) {
	t.Helper()
	if rec, ok := scanRecord(b); ok {
		scanned = true
		var want map[string]any
		if err := decodeStrict(b, &want); err != nil {
			t.Fatalf("%q: the scan read a body encoding/json rejects: %v", b, err)
		}
		if !reflect.DeepEqual(rec, want) {
			t.Fatalf("%q: the scan read %#v, encoding/json %#v", b, rec, want)
		}
	}
	var got []map[string]any
	ok, err := scanRecordList(b, "records", func(rec map[string]any) error {
		got = append(got, rec)
		return nil
	})
	if err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	if !ok {
		return scanned
	}
	r := &request{ctx: &fasthttp.RequestCtx{}}
	r.ctx.Request.SetBody(b)
	var want []map[string]any
	present, err := r.decodeListBody("records", func(d *json.Decoder) error {
		rec, err := decodeRecord(d)
		want = append(want, rec)
		return err
	})
	if err != nil || !present {
		t.Fatalf("%q: the scan read a bulk body encoding/json rejects: present %v, %v", b, present, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: the scan read %#v, encoding/json %#v", b, got, want)
	}
	return true
}

// TestScanRecordBody: the scan reads plain bodies as encoding/json does
// and declines the others.
func TestScanRecordBody(t *testing.T) {
	for _, b := range append(recordBodies, recordLists...) {
		if !checkRecordBody(t, []byte(b)) {
			t.Errorf("%q: not scanned", b)
		}
	}
	for _, b := range declinedBodies {
		if _, ok := scanRecord([]byte(b)); ok {
			t.Errorf("%q: read as a record", b)
		}
	}
	for _, b := range append(declinedBodies, declinedLists...) {
		if ok, _ := scanRecordList([]byte(b), "records", func(map[string]any) error { return nil }); ok {
			t.Errorf("%q: read as a bulk body", b)
		}
	}
}

// TestScanRecordBodyDocs: the benchmark suite's documents, encoded as
// clients encode them (encoding/json escapes <, > and &), are scanned,
// alone and in bulk.
func TestScanRecordBodyDocs(t *testing.T) {
	g := gen.New(gen.Config{N: 300, Seed: 1})
	var docs []json.RawMessage
	if err := g.Docs(func(d map[string]any) error {
		d["note"] = "<é> & \u2028 \U0001F600 \"quoted\"\n\ttab \\ \x01"
		js, err := json.Marshal(d)
		if !checkRecordBody(t, js) {
			t.Fatalf("%s: not scanned", js)
		}
		docs = append(docs, js)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if b := bulkJSON(docs); !checkRecordBody(t, b) {
		t.Fatalf("the bulk body of the docs was not scanned")
	}
}

// FuzzRecordBody: for any body, the scans decline it or read what
// encoding/json reads.
func FuzzRecordBody(f *testing.F) {
	for _, list := range [][]string{recordBodies, recordLists, declinedBodies, declinedLists} {
		for _, b := range list {
			f.Add([]byte(b))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkRecordBody(t, b) })
}

// BenchmarkRecordBody decodes a bulk body of 1000 of the suite's docs by
// the scan and by encoding/json, as bulkRecords does, and each doc alone
// as recordBody does; ns/doc and cpu-ns/doc (the process's CPU, which the
// machine's other load does not inflate as much as the elapsed time) are
// per doc, allocs/op per 1000 docs.
func BenchmarkRecordBody(b *testing.B) {
	g := gen.New(gen.Config{N: 1000, Seed: 1})
	var docs []json.RawMessage
	if err := g.Docs(func(d map[string]any) error {
		js, err := json.Marshal(d)
		docs = append(docs, js)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	body := bulkJSON(docs)
	per := func(b *testing.B, decode func() int) {
		b.ReportAllocs()
		n := 0
		cpu0 := proccpu.Process()
		for b.Loop() {
			n += decode()
		}
		b.ReportMetric(float64((proccpu.Process()-cpu0).Nanoseconds())/float64(n), "cpu-ns/doc")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/doc")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("bulk-scan", func(b *testing.B) {
		per(b, func() int {
			n := 0
			ok, _ := scanRecordList(body, "records", func(map[string]any) error { n++; return nil })
			if !ok {
				b.Fatal("not scanned")
			}
			return n
		})
	})
	b.Run("single-scan", func(b *testing.B) {
		per(b, func() int {
			for _, d := range docs {
				if _, ok := scanRecord(d); !ok {
					b.Fatal("not scanned")
				}
			}
			return len(docs)
		})
	})
	b.Run("single-encoding-json", func(b *testing.B) {
		per(b, func() int {
			for _, d := range docs {
				var rec map[string]any
				if err := decodeStrict(d, &rec); err != nil {
					b.Fatal(err)
				}
			}
			return len(docs)
		})
	})
	b.Run("bulk-encoding-json", func(b *testing.B) {
		r := &request{ctx: &fasthttp.RequestCtx{}}
		r.ctx.Request.SetBody(body)
		per(b, func() int {
			n := 0
			if _, err := r.decodeListBody("records", func(d *json.Decoder) error {
				_, err := decodeRecord(d)
				n++
				return err
			}); err != nil {
				b.Fatal(err)
			}
			return n
		})
	})
}
