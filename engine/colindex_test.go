package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coppice-db/coppice/codec"
)

// TestColIndexFollowsWrites builds the order, dictionary and trigram index
// of columns, then writes, and checks them after every few writes against
// what a rebuild from the values gives.
func TestColIndexFollowsWrites(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	words := []string{"alpha", "Beta", "gamma", "ALPHA", "bét", "ab", "", "alphabet", "eta"}
	ints := &colValues{kind: codec.KindInt}
	floats := &colValues{kind: codec.KindFloat}
	strs := &colValues{kind: codec.KindString}
	write := func(row uint32) {
		if rng.Intn(5) == 0 {
			ints.set(row, codec.Null())
			floats.set(row, codec.Null())
			strs.set(row, codec.Null())
			return
		}
		ints.set(row, codec.Int(int64(rng.Intn(20)-10)))
		floats.set(row, codec.Float(float64(rng.Intn(40))/4-5))
		strs.set(row, codec.String(words[rng.Intn(len(words))]+words[rng.Intn(len(words))]))
	}
	for row := range uint32(3000) {
		write(row)
	}
	check := func(step int) {
		t.Helper()
		for _, c := range []*colValues{ints, floats} {
			order := c.Order()
			want := c.present.ToArray()
			slices.SortStableFunc(want, func(a, b uint32) int {
				x, y := c.Get(a), c.Get(b)
				return codec.Compare(x, y)
			})
			if !slices.Equal(order, want) {
				t.Fatalf("step %d: order of %v column differs", step, c.kind)
			}
		}
		codes, vals, ok := strs.Codes()
		if !ok {
			t.Fatalf("step %d: no dictionary", step)
		}
		for row := range uint32(3200) {
			want := strs.Get(row)
			got := codec.Null()
			if int(row) < len(codes) && codes[row] > 0 {
				got = vals[codes[row]-1]
			}
			if codec.Compare(got, want) != 0 || got.IsNull() != want.IsNull() {
				t.Fatalf("step %d: row %d coded %v, holds %v", step, row, got, want)
			}
		}
		for _, sub := range []string{"alp", "ALPHA", "pha", "bét", "Bét", "etaal", "xyz", "ab"} {
			for _, fold := range []bool{false, true} {
				cand, ok := strs.SubstringCandidates(sub, fold)
				if !ok {
					if len(sub) >= 3 && isASCII(sub) {
						t.Fatalf("step %d: %q not narrowed", step, sub)
					}
					continue
				}
				it := strs.present.Iterator()
				for it.HasNext() {
					row := it.Next()
					s := strs.strs[row]
					match := strings.Contains(s, sub)
					if fold {
						match = strings.Contains(strings.ToUpper(s), strings.ToUpper(sub)) || !isASCII(s)
					}
					if match && !cand.Contains(row) {
						t.Fatalf("step %d: %q (fold %v) misses row %d %q", step, sub, fold, row, s)
					}
				}
			}
		}
	}
	check(0)
	for step := 1; step <= 30; step++ {
		for range rng.Intn(50) + 1 {
			write(uint32(rng.Intn(3200)))
		}
		check(step)
	}
}

// TestDictionaryLimit drops a column's dictionary when it outgrows
// maxDictValues, and never builds one for a column with more values.
func TestDictionaryLimit(t *testing.T) {
	c := &colValues{kind: codec.KindString}
	for row := range uint32(maxDictValues) {
		c.set(row, codec.String(fmt.Sprint(row)))
	}
	if _, _, ok := c.Codes(); !ok {
		t.Fatal("no dictionary at the limit")
	}
	c.set(maxDictValues, codec.String("one more"))
	if _, _, ok := c.Codes(); ok {
		t.Fatal("dictionary past the limit")
	}
	d := &colValues{kind: codec.KindString}
	for row := range uint32(maxDictValues + 1) {
		d.set(row, codec.String(fmt.Sprint(row)))
	}
	if _, _, ok := d.Codes(); ok {
		t.Fatal("dictionary built past the limit")
	}
}

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
