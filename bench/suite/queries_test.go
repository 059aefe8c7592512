package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// TestSQLQuery checks the translation of filters and sorts of the query mix
// into SQL, one line per case.
func TestSQLQuery(t *testing.T) {
	f := func(filter, sort, wantSQL, wantArgs string) {
		t.Helper()
		var sortRaw json.RawMessage
		if sort != "" {
			sortRaw = json.RawMessage(sort)
		}
		sql, args, err := sqlQuery("id", json.RawMessage(filter), sortRaw)
		if err != nil {
			t.Fatalf("%s %s: %v", filter, sort, err)
		}
		if sql != wantSQL {
			t.Errorf("%s %s:\n got %s\nwant %s", filter, sort, sql, wantSQL)
		}
		if got := fmt.Sprint(args); got != wantArgs {
			t.Errorf("%s %s: args %s, want %s", filter, sort, got, wantArgs)
		}
	}
	f(`{"category":"books"}`, "",
		`SELECT id FROM docs WHERE category = $1 ORDER BY id LIMIT 20`, `[books]`)
	f(`{"price":{"$ge":10,"$lt":12.5}}`, "",
		`SELECT id FROM docs WHERE price >= $1 AND price < $2 ORDER BY id LIMIT 20`, `[10 12.5]`)
	f(`{"category":"toys","active":true}`, `{"created_at":"desc"}`,
		`SELECT id FROM docs WHERE active = $1 AND category = $2 ORDER BY created_at DESC, id LIMIT 20`, `[true toys]`)
	f(`{"created_at":{"$ge":"2021-01-01T00:00:00Z"}}`, "",
		`SELECT id FROM docs WHERE created_at >= $1 ORDER BY id LIMIT 20`, `[2021-01-01 00:00:00 +0000 UTC]`)
	f(`{"title":{"$contains":"50%_off"}}`, "",
		`SELECT id FROM docs WHERE title ILIKE $1 ORDER BY id LIMIT 20`, `[%50\%\_off%]`)
	f(`{"tags":{"$includes":"tag007"}}`, `{"price":"asc"}`,
		`SELECT id FROM docs WHERE tags @> $1 ORDER BY price ASC, id LIMIT 20`, `[[tag007]]`)
	f(`{"$any":[{"category":"music"},{"views":{"$ge":1000}}]}`, `[{"rating":"desc"},{"created_at":"asc"}]`,
		`SELECT id FROM docs WHERE ((category = $1) OR (views >= $2)) ORDER BY rating DESC, created_at ASC, id LIMIT 20`, `[music 1000]`)
}

// TestSQLQueryMix translates every query the generator makes.
func TestSQLQueryMix(t *testing.T) {
	d := newDataset(1000, 40)
	for _, q := range d.q.Filter {
		if _, _, err := sqlQuery("id", q.Filter, q.Sort); err != nil {
			t.Errorf("%s %s %s: %v", q.Kind, q.Filter, q.Sort, err)
		}
	}
}

// TestCopyRow checks the COPY text encoding of a doc.
func TestCopyRow(t *testing.T) {
	doc := map[string]any{
		"id": "d1", "title": "a\tb", "body": `back\slash`, "category": "books",
		"tags": []any{"tag001", "tag002"}, "price": json.Number("1.5"), "rating": json.Number("4"),
		"views": json.Number("12"), "created_at": "2021-01-01T00:00:00Z", "active": false, "owner": "u00001",
	}
	var b bytes.Buffer
	appendCopyRow(&b, doc)
	want := "d1\ta\\tb\tback\\\\slash\tbooks\t{tag001,tag002}\t1.5\t4\t12\t2021-01-01T00:00:00Z\tf\tu00001\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
}

// TestQuantile checks nearest-rank quantiles.
func TestQuantile(t *testing.T) {
	f := func(n int, q float64, want int) {
		t.Helper()
		s := summarize(durations(n), 0, 0, "")
		got := map[float64]int{0.5: int(s.P50), 0.99: int(s.P99)}[q]
		if got != want {
			t.Errorf("n=%d q=%v: got %d, want %d", n, q, got, want)
		}
	}
	f(1, 0.5, 1)
	f(100, 0.5, 50)
	f(100, 0.99, 99)
	f(1000, 0.99, 990)
}

// durations returns 1ns … n ns.
func durations(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i + 1)
	}
	return out
}

// TestSelected holds which phases and workloads -only lets run.
func TestSelected(t *testing.T) {
	only := map[string]bool{"W2": true, "W5": true}
	for name, want := range map[string]bool{
		"W2": true, "W2 postgresql": true, "W5": true, "W3": false, "W1 import": false,
		"W7 import": false, "W10": false, "coppice": true, "postgres": true, "Wx": true,
	} {
		if got := selected(only, name); got != want {
			t.Errorf("selected(%q) = %v, want %v", name, got, want)
		}
		if !selected(nil, name) {
			t.Errorf("selected(%q) with no -only = false", name)
		}
	}
}
