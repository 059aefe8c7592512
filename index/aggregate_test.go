package index

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestPercentile(t *testing.T) {
	xs := []float64{2, 3, 6, 8, 12}
	f := func(p, want float64) {
		t.Helper()
		if got := Percentile(xs, p); got != want {
			t.Errorf("p%v of %v = %v, want %v", p, xs, got, want)
		}
	}
	// The worked example of compat-api §8.2.
	f(10, 2)
	f(20, 2.5)
	f(40, 4.5)
	f(50, 6)
	f(80, 10)
	f(90, 12)
	// Clamped at both ends.
	f(0, 2)
	f(100, 12)
	if got := Percentile([]float64{7}, 50); got != 7 {
		t.Errorf("one value: %v", got)
	}
}

func TestPercentileKey(t *testing.T) {
	f := func(p float64, want string) {
		t.Helper()
		if got := PercentileKey(p); got != want {
			t.Errorf("PercentileKey(%v) = %q, want %q", p, got, want)
		}
	}
	f(10, "10.0")
	f(99.9, "99.9")
	f(12.25, "12.25")
	f(0, "0.0")
	f(100, "100.0")
}

// aggregateJSON runs aggs (and a filter) and prints the response as JSON.
func aggregateJSON(src Source, filter, aggs string) (string, error) {
	f, err := ReadFilter([]byte(filter))
	if err != nil {
		return "", err
	}
	a, err := ReadAggs([]byte(aggs))
	if err != nil {
		return "", err
	}
	out, err := Aggregate(context.Background(), src, AggregateRequest{Filter: f, Aggs: a})
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(aggregateObject(out))
	return string(b), err
}

func TestAggregateErrors(t *testing.T) {
	src := sumTestSource("store")
	f := func(aggs, want string) {
		t.Helper()
		_, err := aggregateJSON(src, "", aggs)
		if err == nil {
			t.Fatalf("%s: no error, want %q", aggs, want)
		}
		var ae *InputError
		if !errors.As(err, &ae) {
			t.Fatalf("%s: error %T %v is not an InputError", aggs, err, err)
		}
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: error %q, want %q", aggs, err, want)
		}
	}
	f(`[]`, "aggs must be an object")
	f(`{"foo":"bar"}`, "aggregation [foo]: an aggregation must be an object")
	f(`{"foo":{}}`, "exactly one kind")
	f(`{"foo":{"count":"*","sum":{"column":"n"}}}`, "exactly one kind")
	f(`{"foo":{"median":{"column":"n"}}}`, "unknown aggregation kind [median]")
	f(`{"foo":{"count":"x"}}`, "count takes")
	f(`{"foo":{"count":{"filter":{"nope":1}}}}`, "aggregation [foo]: filter: column [nope]: column not found")
	f(`{"foo":{"sum":"n"}}`, "must be an object")
	f(`{"foo":{"sum":{}}}`, "sum needs a column")
	f(`{"foo":{"sum":{"column":1}}}`, "column must be a column name")
	f(`{"foo":{"sum":{"column":"nope"}}}`, "column [nope]: column not found")
	f(`{"foo":{"sum":{"column":"who.age"}}}`, "column [who.age]: column not found")
	f(`{"foo":{"topValues":{"column":"who"}}}`, "link columns cannot be aggregated")
	f(`{"foo":{"sum":{"column":"kind"}}}`, "sum is not supported on string columns")
	f(`{"foo":{"percentiles":{"column":"kind","percentiles":[50]}}}`, "percentiles is not supported on string columns")
	f(`{"foo":{"average":{"column":"o"}}}`, "not supported on object columns")
	f(`{"foo":{"topValues":{"column":"d"}}}`, "topValues is not supported on datetime columns")
	f(`{"foo":{"dateHistogram":{"column":"n","interval":"1d"}}}`, "dateHistogram is not supported on int columns")
	f(`{"foo":{"sum":{"column":"n","size":3}}}`, "unknown parameter [size]")
	f(`{"foo":{"percentiles":{"column":"n"}}}`, "needs a list of percentiles")
	f(`{"foo":{"percentiles":{"column":"n","percentiles":[]}}}`, "must not be empty")
	f(`{"foo":{"percentiles":{"column":"n","percentiles":[101]}}}`, "percentile 101 is not between 0 and 100")
	f(`{"foo":{"percentiles":{"column":"n","percentiles":[-1]}}}`, "is not between 0 and 100")
	f(`{"foo":{"percentiles":{"column":"n","percentiles":["50"]}}}`, "must be a number")
	f(`{"foo":{"dateHistogram":{"column":"d"}}}`, "exactly one of interval and calendarInterval")
	f(`{"foo":{"dateHistogram":{"column":"d","interval":"1d","calendarInterval":"day"}}}`, "exactly one of interval and calendarInterval")
	f(`{"foo":{"dateHistogram":{"column":"d","interval":"1w"}}}`, "interval must be a number and a unit")
	f(`{"foo":{"dateHistogram":{"column":"d","interval":"0d"}}}`, "out of range")
	f(`{"foo":{"dateHistogram":{"column":"d","interval":5}}}`, "interval must be a number and a unit")
	f(`{"foo":{"dateHistogram":{"column":"d","calendarInterval":"fortnight"}}}`, "calendarInterval must be")
	f(`{"foo":{"dateHistogram":{"column":"d","calendarInterval":"day","timezone":"+2:00"}}}`, "timezone must look like")
	f(`{"foo":{"dateHistogram":{"column":"d","calendarInterval":"day","timezone":"+02:60"}}}`, "timezone must look like")
	f(`{"foo":{"topValues":{"column":"kind","size":1001}}}`, "size must not exceed 1000")
	f(`{"foo":{"topValues":{"column":"kind","size":0}}}`, "size must be at least 1")
	f(`{"foo":{"topValues":{"column":"kind","size":2.5}}}`, "size must be an integer")
	f(`{"foo":{"uniqueCount":{"column":"kind","precisionThreshold":40001}}}`, "precisionThreshold must be between 0 and 40000")
	f(`{"foo":{"numericHistogram":{"column":"n"}}}`, "needs an interval")
	f(`{"foo":{"numericHistogram":{"column":"n","interval":0}}}`, "interval must be greater than 0")
	f(`{"foo":{"numericHistogram":{"column":"n","interval":-1}}}`, "interval must be greater than 0")
	f(`{"foo":{"numericHistogram":{"column":"n","interval":1,"offset":"x"}}}`, "offset must be a number")
	f(`{"foo":{"sum":{"column":"n","aggs":{}}}}`, "sum is a metric and takes no sub-aggregations")
	f(`{"foo":{"count":{"aggs":{}}}}`, "count is a metric and takes no sub-aggregations")
	f(`{"foo":{"topValues":{"column":"kind","aggs":"x"}}}`, "aggregation [foo]: aggs must be an object")
	f(`{"foo":{"topValues":{"column":"kind","aggs":{"bar":{"max":{"column":"kind"}}}}}}`, "aggregation [foo.bar]: column [kind]: max is not supported on string columns")
	f(`{"foo":{"numericHistogram":{"column":"n","interval":0.000001}}}`, "more than 65536 buckets")
}

func TestAggregate(t *testing.T) {
	for _, mode := range storeModes {
		src := sumTestSource(mode)
		f := func(filter, aggs, want string) {
			t.Helper()
			got, err := aggregateJSON(src, filter, aggs)
			if err != nil {
				t.Fatalf("%s: %v", aggs, err)
			}
			if got != want {
				t.Errorf("%s: %s:\ngot  %s\nwant %s", mode, aggs, got, want)
			}
		}
		f("", "", `{"aggs":{"count":5}}`)
		f(`{"kind":"a"}`, `{}`, `{"aggs":{"count":2}}`)
		f("", `{"c":{"count":"*"},"cf":{"count":{"filter":{"n":{"$gt":1}}}},"s":{"sum":{"column":"n"}},"sf":{"sum":{"column":"f"}},`+
			`"mn":{"min":{"column":"f"}},"mx":{"max":{"column":"n"}},"avg":{"average":{"column":"n"}},"u":{"uniqueCount":{"column":"tags"}},`+
			`"p":{"percentiles":{"column":"n","percentiles":[50,12.25]}}}`,
			`{"aggs":{"avg":3.25,"c":5,"cf":3,"mn":-2,"mx":7,"p":{"values":{"12.25":1,"50.0":2.5}},"s":13,"sf":-0.25,"u":3}}`)
		f(`{"kind":"zzz"}`, `{"s":{"sum":{"column":"n"}},"sf":{"sum":{"column":"f"}},"mn":{"min":{"column":"f"}},"avg":{"average":{"column":"n"}},"p":{"percentiles":{"column":"n","percentiles":[50]}}}`,
			`{"aggs":{"avg":null,"mn":null,"p":{"values":{"50.0":null}},"s":0,"sf":0}}`)
		f("", `{"t":{"topValues":{"column":"kind","aggs":{"n":{"sum":{"column":"n"}}}}}}`,
			`{"aggs":{"t":{"values":[{"$count":2,"$key":"a","n":4},{"$count":2,"$key":"b","n":2}]}}}`)
		f("", `{"t":{"topValues":{"column":"ok","size":1}}}`, `{"aggs":{"t":{"values":[{"$count":2,"$key":"true"}]}}}`)
		f("", `{"h":{"numericHistogram":{"column":"n","interval":2,"aggs":{"c":{"count":"*"}}}}}`,
			`{"aggs":{"h":{"values":[{"$count":1,"$key":0,"c":1},{"$count":2,"$key":2,"c":2},{"$count":0,"$key":4,"c":0},{"$count":1,"$key":6,"c":1}]}}}`)
		f("", `{"h":{"dateHistogram":{"column":"d","calendarInterval":"day"}}}`,
			`{"aggs":{"h":{"values":[{"$count":1,"$key":"2024-01-01T00:00:00.000Z"},{"$count":0,"$key":"2024-01-02T00:00:00.000Z"},{"$count":1,"$key":"2024-01-03T00:00:00.000Z"}]}}}`)
	}
}
