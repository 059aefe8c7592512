package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

// TestColIndexConcurrentQueries runs queries that build and read the
// derived structures of a store from several goroutines while records are
// written, and checks each answer against the filter's count at the end.
// It is meant for the race detector.
func TestColIndexConcurrentQueries(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{"items": {
		{Name: "s", Type: TypeString}, {Name: "n", Type: TypeInt}, {Name: "f", Type: TypeFloat},
	}})
	words := []string{"alpha", "beta", "gamma", "delta"}
	item := func(i int) map[string]any {
		return map[string]any{"s": words[i%4] + fmt.Sprint(i%7), "n": json.Number(fmt.Sprint(i % 50)), "f": json.Number(fmt.Sprint(float64(i%40) / 4))}
	}
	for start := 0; start < 3000; start += MaxBulkRecords {
		var batch []map[string]any
		for i := start; i < start+MaxBulkRecords; i++ {
			batch = append(batch, item(i))
		}
		if _, err := e.BulkInsert(context.Background(), ref, "items", batch); err != nil {
			t.Fatal(err)
		}
	}
	filters := []string{
		`{"n":{"$ge":10,"$lt":30},"f":{"$gt":2}}`,
		`{"s":{"$contains":"lph"}}`,
		`{"s":{"$iContains":"ETA"}}`,
	}
	size := 5
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				f := filters[(g+i)%len(filters)]
				in := QueryRequest{Filter: mustFilter(f), Sort: mustSort(`{"n":"desc"}`), Page: PageInput{Size: &size}}
				if _, err := e.Query(ctx, ref, "items", in, QueryOptions{}); err != nil {
					errs <- err
					return
				}
				sum := SummarizeRequest{Filter: mustFilter(f), Columns: []string{"s"}, Summaries: []Summary{{Name: "m", Function: "max", Column: "f"}}}
				if _, err := e.Summarize(ctx, ref, "items", sum); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 40 {
			if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "items", Values: item(3000 + i)}); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, f := range filters {
		rows, err := e.FilterRows(ref, "items", mustFilter(f))
		if err != nil {
			t.Fatal(err)
		}
		if rows.IsEmpty() {
			t.Fatalf("%s matches nothing", f)
		}
	}
}
