package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/index"
)

// TestQueryPaging pages through random sorts and filters with cursors,
// forwards and backwards, and with offsets, and checks every page against a
// naive sort of the matching records. The table is large enough for every
// way of ordering: walking an ordered index over the filter's rows, walking
// it while testing each row against the filter (broad filters with ranges),
// and keeping a heap. The broad filters run again on a branch whose writes
// after the fork change, delete and add rows.
func TestQueryPaging(t *testing.T) {
	for _, storeless := range []bool{false, true} {
		t.Run(storePath(storeless), func(t *testing.T) { queryPaging(t, storeless) })
	}
}

func queryPaging(t *testing.T, storeless bool) {
	rng := rand.New(rand.NewSource(7))
	e, ref := recFixture(t, map[string][]ColumnDef{"t": {
		{Name: "s", Type: TypeString}, {Name: "n", Type: TypeInt}, {Name: "f", Type: TypeFloat},
		{Name: "d", Type: TypeDatetime}, {Name: "b", Type: TypeBool},
	}})
	e.mem.SetStoreless(storeless)
	rows := 6000
	if testing.Short() {
		rows = 4500
	}
	if storeless {
		// Without stores every page reads the records of its candidates.
		rows = 1500
	}
	for i := 0; i < rows; i += 1000 {
		var batch []map[string]any
		for j := i; j < i+1000 && j < rows; j++ {
			v := map[string]any{}
			if rng.Intn(6) > 0 {
				v["s"] = string(rune('a' + rng.Intn(20)))
			}
			if rng.Intn(6) > 0 {
				v["n"] = json.Number(fmt.Sprint(rng.Intn(50)))
			}
			if rng.Intn(6) > 0 {
				v["f"] = json.Number(fmt.Sprint(rng.Float64() * 100))
			}
			v["d"] = time.Date(2024, 1, 1, 0, 0, rng.Intn(100000), 0, time.UTC).Format(time.RFC3339)
			v["b"] = rng.Intn(3) > 0
			batch = append(batch, v)
		}
		if _, err := e.BulkInsert(context.Background(), ref, "t", batch); err != nil {
			t.Fatal(err)
		}
	}
	sorts := []string{``, `[{"n":"asc"}]`, `{"f":"desc"}`, `["s"]`, `[{"s":"desc"},{"n":"asc"}]`, `[{"svc.createdAt":"desc"}]`, `[{"d":"asc"}]`, `[{"b":"desc"}]`,
		`[{"n":"desc"},{"f":"asc"}]`, `[{"b":"asc"},{"d":"desc"}]`, `[{"f":"asc"},{"s":"desc"}]`}
	filters := []string{``, `{"$any":{"b":false,"s":"c"}}`, `{"n":{"$lt":5}}`, `{"s":"c"}`, `{"$not":{"s":{"$contains":"c"}}}`}
	// Broad filters of ranges the walks test row by row: with postings,
	// negations, nulls (n and f are missing on some rows) and ties.
	lazy := []string{
		`{"n":{"$ge":3}}`,
		`{"f":{"$lt":90},"$not":{"s":"c"}}`,
		`{"$any":[{"n":{"$lt":20}},{"s":"a"}],"b":true}`,
		`{"d":{"$ge":"2024-01-01T03:00:00Z"},"f":{"$ge":5}}`,
		`{"n":{"$ge":45}}`,
	}
	if !storeless {
		filters = append(filters, lazy...)
		checkLazy(t, e, ref, lazy, true)
	}
	checkPaging(t, e, ref, sorts, filters)
	if storeless {
		return
	}
	dev := Ref{Workspace: ref.Workspace, Database: ref.Database, Branch: "dev"}
	if err := e.Branches().Create(dev, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Query(ctx, dev, "t", QueryRequest{Page: PageInput{Size: ptr(200)}}, QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range res.Records {
		var op Op
		switch i % 3 {
		case 0:
			op = Op{Kind: OpDelete, Table: "t", ID: d.ID}
		case 1:
			op = Op{Kind: OpInsert, Table: "t", ID: d.ID, Values: map[string]any{"n": json.Number(fmt.Sprint(i % 50)), "f": json.Number("50.5"), "b": true}}
		case 2:
			op = Op{Kind: OpInsert, Table: "t", ID: fmt.Sprintf("dev%03d", i), Values: map[string]any{"n": json.Number("49"), "s": "a", "d": "2024-01-02T00:00:00Z"}}
		}
		if _, err := e.WriteOne(dev, op); err != nil {
			t.Fatal(err)
		}
	}
	checkLazy(t, e, dev, lazy, false)
	checkPaging(t, e, dev, sorts, lazy)
}

// TestLazyWalkTies: a walk of a sort of several keys takes the rows of one
// value of the first key together, so a first key with large groups of
// ties has it test whole groups. The cost rule counts them: such a query
// does not start a lazy walk only to give up at its budget within the
// first group, and the walk that runs gives the naive order's pages; so
// does the walk of a sort on that key alone, which takes ties row by row.
func TestLazyWalkTies(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{"t": {{Name: "g", Type: TypeInt}, {Name: "v", Type: TypeInt}}})
	rng := rand.New(rand.NewSource(3))
	for range 3 {
		var batch []map[string]any
		for i := range 1000 {
			batch = append(batch, map[string]any{"g": json.Number(fmt.Sprint(i % 3)), "v": json.Number(fmt.Sprint(rng.Intn(100)))})
		}
		if _, err := e.BulkInsert(ctx, ref, "t", batch); err != nil {
			t.Fatal(err)
		}
	}
	filters := []string{`{"v":{"$lt":50}}`, `{"v":{"$ge":10}}`}
	sorts := []string{`[{"g":"desc"},{"v":"asc"}]`, `{"g":"asc"}`}
	for _, srt := range sorts {
		for _, flt := range filters {
			res, err := e.Query(ctx, ref, "t", QueryRequest{Filter: mustFilter(flt), Sort: mustSort(srt), Page: PageInput{Size: ptr(10)}}, QueryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p := res.Plan.String(); strings.Contains(p, "gave up") {
				t.Errorf("filter %s sort %s: %s", flt, srt, p)
			}
		}
	}
	checkPaging(t, e, ref, sorts, filters)
}

// TestPagingTiesByID pages through sorts on columns of few values, whose
// records' ids do not follow the order they were inserted in, forwards
// and backwards across groups of ties, on a table and on a branch whose
// writes after the fork change values, delete rows and add ids among the
// old ones. The column orders the walks read keep ties in id order: a
// walk that took them in insertion order would give pages out of order.
func TestPagingTiesByID(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{"t": {{Name: "g", Type: TypeInt}, {Name: "p", Type: TypeFloat}, {Name: "b", Type: TypeBool}}})
	rng := rand.New(rand.NewSource(5))
	const rows = 3000
	ids := rng.Perm(rows)
	for i := 0; i < rows; i += 1000 {
		var batch []map[string]any
		for j := i; j < i+1000; j++ {
			v := map[string]any{"id": fmt.Sprintf("k%05d", 2*ids[j]), "b": rng.Intn(3) > 0}
			if rng.Intn(10) > 0 {
				v["g"] = json.Number(fmt.Sprint(rng.Intn(5)))
			}
			v["p"] = json.Number(fmt.Sprintf("%d.25", rng.Intn(8)))
			batch = append(batch, v)
		}
		if _, err := e.BulkInsert(ctx, ref, "t", batch); err != nil {
			t.Fatal(err)
		}
	}
	sorts := []string{`{"g":"asc"}`, `{"g":"desc"}`, `{"p":"asc"}`, `{"p":"desc"}`}
	filters := []string{``, `{"b":true}`, `{"p":{"$ge":1}}`, `{"g":{"$lt":3},"b":true}`}
	checkPaging(t, e, ref, sorts, filters)
	dev := Ref{Workspace: ref.Workspace, Database: ref.Database, Branch: "dev"}
	if err := e.Branches().Create(dev, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	old, added := rng.Perm(rows), rng.Perm(rows)
	for i := range 300 {
		id := fmt.Sprintf("k%05d", 2*old[i])
		var op Op
		switch i % 3 {
		case 0:
			op = Op{Kind: OpDelete, Table: "t", ID: id}
		case 1:
			op = Op{Kind: OpInsert, Table: "t", ID: id, Values: map[string]any{"g": json.Number(fmt.Sprint(rng.Intn(5))), "p": json.Number("3.25"), "b": true}}
		case 2:
			// An odd id falls between the old ones.
			op = Op{Kind: OpInsert, Table: "t", ID: fmt.Sprintf("k%05d", 2*added[i]+1), Values: map[string]any{"g": json.Number("2"), "p": json.Number("3.25"), "b": true}}
		}
		if _, err := e.WriteOne(dev, op); err != nil {
			t.Fatal(err)
		}
	}
	checkPaging(t, e, dev, sorts, filters)
	checkPaging(t, e, ref, sorts, filters[:2])
}

// checkLazy checks that each filter, with a sort on an in-memory order or
// in id order and a small page, runs as a lazy walk, that a broad filter
// it cannot test walks the ids' order, and (when eager) that a selective
// filter does not, nor a range the walk would reach only at its end.
func checkLazy(t *testing.T, e *Engine, ref Ref, filters []string, eager bool) {
	t.Helper()
	plan := func(flt, srt string) string {
		res, err := e.Query(ctx, ref, "t", QueryRequest{Filter: mustFilter(flt), Sort: mustSort(srt), Page: PageInput{Size: ptr(10)}}, QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Plan.String()
	}
	for _, flt := range filters {
		if p := plan(flt, `{"n":"desc"}`); !strings.Contains(p, "(lazy walk") {
			t.Errorf("filter %s on %s: plan %s, want a lazy walk", flt, ref.Branch, p)
		}
		if p := plan(flt, ``); !strings.Contains(p, "(lazy walk") || !strings.Contains(p, "via id order") {
			t.Errorf("filter %s in id order on %s: plan %s, want a lazy walk of the ids", flt, ref.Branch, p)
		}
	}
	// A broad filter that cannot be tested row by row walks the ids'
	// order over its rows.
	if p := plan(`{"$not":{"s":{"$contains":"c"}}}`, ``); !strings.Contains(p, "walk id; limit 11 via id order") || strings.Contains(p, "lazy") {
		t.Errorf("a broad $contains in id order on %s: plan %s, want a walk of the ids", ref.Branch, p)
	}
	if !eager {
		return
	}
	if p := plan(`{"s":"c","n":{"$lt":5}}`, `{"n":"desc"}`); strings.Contains(p, "(lazy walk") {
		t.Errorf("a selective filter walks lazily: %s", p)
	}
	if p := plan(`{"n":{"$ge":45}}`, `{"n":"asc"}`); strings.Contains(p, "(lazy walk") {
		t.Errorf("a walk that meets the range's rows last stays lazy: %s", p)
	}
}

// checkPaging pages through every sort and filter on ref and checks the
// pages against a naive sort of the matching records.
func checkPaging(t *testing.T, e *Engine, ref Ref, sorts, filters []string) {
	t.Helper()
	for _, srt := range sorts {
		for _, flt := range filters {
			want := naiveOrder(t, e, ref, flt, srt)
			for _, size := range []int{37, 200} {
				name := fmt.Sprintf("sort=%s filter=%s size=%d", srt, flt, size)
				got := pageThrough(t, e, ref, flt, srt, size, false)
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("%s forward: %d rows, want %d\n got %.200v\nwant %.200v", name, len(got), len(want), got, want)
				}
				got = pageThrough(t, e, ref, flt, srt, size, true)
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("%s backward: %d rows, want %d", name, len(got), len(want))
				}
			}
			// Offsets count from the start of the order.
			size, offset := 20, 40
			res, err := e.Query(ctx, ref, "t", QueryRequest{Filter: mustFilter(flt), Sort: mustSort(srt), Page: PageInput{Size: &size, Offset: &offset}}, QueryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			end := min(offset+size, len(want))
			if got := docIDs(res.Records); offset < len(want) && strings.Join(got, ",") != strings.Join(want[offset:end], ",") {
				t.Fatalf("sort=%s filter=%s offset page: %v", srt, flt, got)
			}
		}
	}
}

func docIDs(docs []*Doc) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out
}

// pageThrough reads every page with after cursors (or, backwards, from
// before=end with before cursors) and returns the ids in order.
func pageThrough(t *testing.T, e *Engine, ref Ref, flt, srt string, size int, backwards bool) []string {
	t.Helper()
	var out [][]string
	in := QueryRequest{Filter: mustFilter(flt), Sort: mustSort(srt), Page: PageInput{Size: &size}}
	if backwards {
		end := "end"
		in.Page.Before = &end
	}
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
		res, err := e.Query(ctx, ref, "t", in, QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Size != size {
			t.Fatalf("meta size %d, want %d", res.Size, size)
		}
		if len(res.Records) > size {
			t.Fatalf("%d records on a page of %d", len(res.Records), size)
		}
		out = append(out, docIDs(res.Records))
		if !res.More {
			break
		}
		if len(res.Records) != size {
			t.Fatalf("a page with more after it holds %d of %d records", len(res.Records), size)
		}
		c := res.Cursor
		in = QueryRequest{Page: PageInput{}}
		if backwards {
			in.Page.Before = &c
		} else {
			in.Page.After = &c
		}
	}
	var ids []string
	if backwards {
		for i := len(out) - 1; i >= 0; i-- {
			ids = append(ids, out[i]...)
		}
		return ids
	}
	for _, p := range out {
		ids = append(ids, p...)
	}
	return ids
}

// naiveOrder filters every record with the naive evaluator and sorts them
// with a comparator written from the spec: nulls last in both directions,
// then ascending id.
func naiveOrder(t *testing.T, e *Engine, ref Ref, flt, srt string) []string {
	t.Helper()
	src, release, err := e.openSource(context.Background(), ref, "t", memstore.Need{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	var decoded any
	if flt != "" {
		if decoded, err = decodeFilter([]byte(flt)); err != nil {
			t.Fatal(err)
		}
	}
	filter := index.NewReference(src.Table(), decoded)
	var sortAny any
	if srt != "" {
		json.Unmarshal([]byte(srt), &sortAny)
	}
	order, err := index.ParseSort(src.Table(), sortAny)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id   string
		vals []codec.Value
	}
	var rs []row
	live, _ := src.Live()
	it := live.Iterator()
	for it.HasNext() {
		var rec codec.Record
		if ok, err := src.Record(it.Next(), &rec); err != nil || !ok {
			t.Fatal("live row without a record", err)
		}
		v := &rowView{src: src, rec: &rec}
		if match, err := filter.Match(v); err != nil || !match {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		r := row{id: rec.ID}
		for _, k := range order.Keys {
			r.vals = append(r.vals, v.Value(k.Column))
		}
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool {
		for k, key := range order.Keys {
			a, b := rs[i].vals[k], rs[j].vals[k]
			if a.IsNull() != b.IsNull() {
				return b.IsNull()
			}
			if c := codec.Compare(a, b); c != 0 {
				return (c < 0) != key.Desc
			}
		}
		return rs[i].id < rs[j].id
	})
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.id
	}
	return ids
}
