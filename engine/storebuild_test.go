package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/index"
)

// storeOf returns the column store of a table of a branch and whether one
// is being built in the background.
func storeOf(t *testing.T, e *Engine, ref Ref, table string) (*tableStore, bool) {
	t.Helper()
	d, b, tb, err := e.resolveTable(ref, table)
	if err != nil {
		t.Fatal(err)
	}
	d.storeMu.RLock()
	defer d.storeMu.RUnlock()
	k := storeKey{b.ID, tb.ID}
	return d.stores[k], d.building[k]
}

// TestBackgroundStoreBuild: a table of BackgroundBuildRows records or more
// answers its first query from storage while its column store is built in
// the background, and the same query gives the same answer once the store
// is there; summaries wait for the store; a smaller table builds it before
// answering.
func TestBackgroundStoreBuild(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{
		"big":   {{Name: "n", Type: TypeInt}, {Name: "s", Type: TypeString}},
		"small": {{Name: "n", Type: TypeInt}},
	})
	e.opts.BackgroundBuildRows = 500
	fill := func(table string, rows int) {
		var batch []map[string]any
		for i := range rows {
			v := map[string]any{"n": json.Number(fmt.Sprint(i % 7))}
			if table == "big" {
				v["s"] = fmt.Sprintf("s%03d", i%50)
			}
			batch = append(batch, v)
		}
		if _, err := e.BulkInsert(ref, table, batch); err != nil {
			t.Fatal(err)
		}
	}
	fill("big", 800)
	fill("small", 100)

	size := 50
	in := index.QueryInput{
		Filter: json.RawMessage(`{"n": {"$ge": 3}, "s": {"$startsWith": "s01"}}`),
		Sort:   json.RawMessage(`[{"s": "desc"}, {"svc.version": "asc"}]`),
		Page:   index.PageInput{Size: &size},
	}
	query := func() string {
		t.Helper()
		res, err := e.Query(ref, "big", in, QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(docIDs(res.Records), ",")
	}
	if s, _ := storeOf(t, e, ref, "big"); s != nil {
		t.Fatal("a store before the first query")
	}
	first := query()
	if first == "" {
		t.Fatal("the first query found nothing")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, building := storeOf(t, e, ref, "big")
		if s != nil && !building {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no store after 20 s (building %v)", building)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if again := query(); again != first {
		t.Fatalf("with the store:\n%s\nfrom storage:\n%s", again, first)
	}

	// A summary of a table without its store builds it first.
	e.opts.BackgroundBuildRows = 1
	if _, err := e.Summarize(ref, "small", index.SummarizeInput{Columns: json.RawMessage(`["n"]`)}, ""); err != nil {
		t.Fatal(err)
	}
	if s, _ := storeOf(t, e, ref, "small"); s == nil {
		t.Fatal("no store after a summary")
	}

	// Below the threshold the first query builds the store.
	e.opts.BackgroundBuildRows = 500
	if _, err := e.CreateTable(ref, "tiny"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Query(ref, "tiny", index.QueryInput{}, QueryOptions{}); err != nil {
		t.Fatal(err)
	}
	if s, building := storeOf(t, e, ref, "tiny"); s == nil || building {
		t.Fatalf("store %v, building %v after the first query of a small table", s != nil, building)
	}
}
