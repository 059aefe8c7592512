package api

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// scannedBodies are query bodies of the shapes clients send, which the
// scan reads, some of their values left to the index package to decode.
var scannedBodies = []string{
	`{}`,
	`{"filter":{"category":"books","active":true},"sort":{"created_at":"desc"},"page":{"size":20}}`,
	`{"page":{"after":"ApVn4ETb_EhOZiAevrru7BcfeyJ0YWdzIjp7","size":20}}`,
	` { "filter" : { "price" : { "$ge" : 1.5e2 , "$lt" : [1, "x\"y"] } } , "columns" : [ "id", "title" ] , "page" : { "offset" : 40 , "size" : -3 } } `,
	`{"filter":null,"sort":null,"columns":null,"page":null}`,
	`{"filter":"x","sort":[{"a":"asc"},{"b":"desc"}],"columns":["*"],"consistency":"strong"}`,
	`{"page":{"before":"b","start":"s","end":"e"}}`,
	`{"filter":{"title":{"$contains":"caf\u00e9 \\ \n"}}}`,
	`{"page":{"after":"é"}}`,
	"{\"filter\":{\"\xff\":1}}",
	`{"sort":{"a\u00e9":"desc"},"columns":["\ud800"]}`,
	`{"columns":{"a":1}}`,
}

// otherBodies are query bodies the scan leaves to decodeStrict.
var otherBodies = []string{
	`{"Filter":{}}`,
	`{"filter":{},"filter":{}}`,
	`{"fil\u0074er":{}}`,
	`{"page":{"size":20,"size":30}}`,
	`{"page":{"size":20.0}}`,
	`{"page":{"size":1e1}}`,
	`{"page":{"size":12345678901}}`,
	`{"page":{"size":null}}`,
	`{"page":{"size":"20"}}`,
	`{"page":{"after":null}}`,
	`{"page":{"after":"a\"b"}}`,
	"{\"page\":{\"after\":\"\xff\"}}",
	`{"page":[]}`,
	`{"page":{"limit":3}}`,
	`{"consistency":null}`,
	`{"consistency":3}`,
	`{"limit":5}`,
	`null`,
	`[]`,
	`{"filter":{}`,
	`{"filter":{}} {}`,
	`{"filter":}`,
	`{"filter":{"a":01}}`,
	`{"filter":{"a":1.}}`,
	`{"filter":{"a":-}}`,
	`{"filter":{"a":[1,]}}`,
	`{"filter":{"a":1,}}`,
	`{"filter":{"a" 1}}`,
	`{"filter":{"a":tru}}`,
	"{\"filter\":{\"a\":\"x\ty\"}}",
	`{"filter":` + strings.Repeat("[", maxScanDepth+2) + strings.Repeat("]", maxScanDepth+2) + `}`,
	`{"page":{"size":020}}`,
	`{"page":{"size":-}}`,
	`{"page":nul}`,
	`{"page":{"size":20}`,
	`{"page":{"size":20}}}`,
	`{"sort":"a" "columns":[]}`,
	`{"sort":{0":0}}`,
	`{"sort":"\x"}`,
	`{"sort":"\u12"}`,
}

// queryBodySeeds are query bodies of every shape.
var queryBodySeeds = append(slices.Clip(scannedBodies), otherBodies...)

// checkQueryBody fails t unless scanQueryBody reads b as decodeStrict
// does, when it reads b at all; it reports whether it did.
func checkQueryBody(t *testing.T, b []byte) bool {
	t.Helper()
	var got queryBody
	if !scanQueryBody(b, &got) {
		return false
	}
	var want queryBody
	if err := decodeStrict(b, &want); err != nil {
		t.Fatalf("%s: scanned, but decodeStrict says %v", b, err)
	}
	gotF, gotS, gotC, gotErr := got.read()
	wantF, wantS, wantC, wantErr := want.read()
	if !reflect.DeepEqual(gotF, wantF) || !reflect.DeepEqual(gotS, wantS) || !reflect.DeepEqual(gotC, wantC) ||
		!reflect.DeepEqual(gotErr, wantErr) {
		t.Fatalf("%s: scanned %v %v %v %v, the index package reads %v %v %v %v",
			b, gotF, gotS, gotC, gotErr, wantF, wantS, wantC, wantErr)
	}
	got.decoded, got.filter, got.sort, got.columns = false, nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: scanned %+v, decodeStrict %+v", b, got, want)
	}
	return true
}

// TestScanQueryBody checks which bodies the scan reads and that it reads
// them as decodeStrict does.
func TestScanQueryBody(t *testing.T) {
	f := func(body string, scanned bool) {
		t.Helper()
		if got := checkQueryBody(t, []byte(body)); got != scanned {
			t.Errorf("%s: scanned %v, want %v", body, got, scanned)
		}
	}
	for _, body := range scannedBodies {
		f(body, true)
	}
	for _, body := range otherBodies {
		f(body, false)
	}
}

// FuzzQueryBody holds the scan to decodeStrict on any body.
func FuzzQueryBody(f *testing.F) {
	for _, b := range queryBodySeeds {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkQueryBody(t, b) })
}

// BenchmarkQueryBody compares the scan with decodeStrict on the body of a
// cursor page.
func BenchmarkQueryBody(b *testing.B) {
	body := []byte(`{"page":{"after":"ApVn4ETb_EhOZiAevrru7BcfeyJ0YWdzIjp7InRhZ3MiOnsiJGluY2x1ZGVzIjoidGFnMDAwIn19D3sicHJpY2UiOiJhc2MifQAUke2ryZvN4KK8AQEJML_g9cKPXCj2CWQwMDA4OTcwMgEJML_seuFHrhR7","size":20}}`)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var q queryBody
			if !scanQueryBody(body, &q) {
				b.Fatal("not scanned")
			}
		}
	})
	b.Run("decodeStrict", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var q queryBody
			if err := decodeStrict(body, &q); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadQueryBody reads the bodies of W3's eq and eq-sort pages as
// a query does: the scan, then the filter, sort and columns.
func BenchmarkReadQueryBody(b *testing.B) {
	for _, q := range serveQueryClasses()[:2] {
		body := q.body(3)
		b.Run(q.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var q queryBody
				if !scanQueryBody(body, &q) {
					b.Fatal("not scanned")
				}
				if _, _, _, err := q.read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
