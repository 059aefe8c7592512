package index

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// TestGoValues: requests built from Go values (FilterOf, SortOf,
// ColumnsOf, AggsOf) answer as the same requests read from JSON, cursors
// included.
func TestGoValues(t *testing.T) {
	src := sumTestSource("store")
	secret := []byte("secret")
	opts := QueryOptions{Secret: secret, MaxSize: 10, MaxOffset: 10, DefaultSize: 2}
	page := func(in QueryRequest) string {
		t.Helper()
		p, err := Query(context.Background(), src, in, opts)
		if err != nil {
			t.Fatal(err)
		}
		next, err := Query(context.Background(), src, QueryRequest{Page: PageInput{After: &p.Cursor}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		proj, err := ParseColumns(src.Table(), next.Columns, nil)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(p.Rows, next.Rows, describeProjection(proj))
	}
	read := QueryRequest{
		Filter:  must(ReadFilter([]byte(`{"n": {"$gt": 1}, "kind": {"$isNot": "zzz"}}`))),
		Sort:    must(ReadSort([]byte(`[{"f": "desc"}, "kind"]`))),
		Columns: must(ReadColumns([]byte(`["kind", "o"]`))),
	}
	built := QueryRequest{
		Filter:  FilterOf(map[string]any{"n": map[string]any{"$gt": 1}, "kind": map[string]any{"$isNot": "zzz"}}),
		Sort:    SortOf([]any{map[string]any{"f": "desc"}, "kind"}),
		Columns: ColumnsOf([]any{"kind", "o"}),
	}
	if a, b := page(read), page(built); a != b {
		t.Errorf("read %s, built %s", a, b)
	}
	aggs := `{"k": {"topValues": {"column": "kind", "aggs": {"s": {"sum": {"column": "n"}}}}}}`
	var v any
	if err := json.Unmarshal([]byte(aggs), &v); err != nil {
		t.Fatal(err)
	}
	want, err := aggregateJSON(src, "", aggs)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Aggregate(context.Background(), src, AggregateRequest{Aggs: AggsOf(v)})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(aggregateObject(res)); string(got) != want {
		t.Errorf("aggregate built %s, read %s", got, want)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
