package engine

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/index"
)

var querySeed = flag.Int64("query.seed", 0, "seed of TestFilterDifferential (0: time)")

// TestFilterDifferential runs thousands of random filters through the
// planner (postings, value stores, ordered scans) and through the naive
// row-by-row evaluator, on main and on a child branch with its own writes,
// and compares the matching records.
func TestFilterDifferential(t *testing.T) {
	for _, storeless := range []bool{false, true} {
		t.Run(storePath(storeless), func(t *testing.T) { filterDifferential(t, storeless) })
	}
}

func filterDifferential(t *testing.T, storeless bool) {
	seed := *querySeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -query.seed=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	e, ref := recFixture(t, map[string][]ColumnDef{
		"owners": {{Name: "name", Type: TypeString}, {Name: "age", Type: TypeInt}},
		"items": {
			{Name: "s", Type: TypeString},
			{Name: "n", Type: TypeInt},
			{Name: "f", Type: TypeFloat},
			{Name: "b", Type: TypeBool},
			{Name: "d", Type: TypeDatetime},
			{Name: "m", Type: TypeMultiple},
			{Name: "t", Type: TypeText},
			{Name: "o", Type: TypeObject, Columns: []ColumnDef{{Name: "x", Type: TypeInt}, {Name: "y", Type: TypeString}}},
			{Name: "l", Type: TypeLink, Link: &LinkDef{Table: "owners"}},
		},
	})
	e.storeless = storeless
	words := []string{"alpha", "beta", "Gamma", "delta", "al", "b*c", "", "ALPHA", "ε"}
	pick := func() string { return words[rng.Intn(len(words))] }
	for i := 0; i < 8; i++ {
		vals := map[string]any{"name": pick()}
		if rng.Intn(4) > 0 {
			vals["age"] = json.Number(fmt.Sprint(rng.Intn(5)))
		}
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "owners", ID: fmt.Sprintf("o%d", i), Values: vals}); err != nil {
			t.Fatal(err)
		}
	}
	randomItem := func() map[string]any {
		v := map[string]any{}
		maybe := func(k string, x any) {
			if rng.Intn(5) > 0 {
				v[k] = x
			}
		}
		maybe("s", pick())
		maybe("n", json.Number(fmt.Sprint(rng.Intn(7)-3)))
		maybe("f", json.Number(fmt.Sprint(float64(rng.Intn(9))/2-2)))
		maybe("b", rng.Intn(2) == 0)
		maybe("d", time.Date(2024, 1, 1+rng.Intn(5), 0, 0, 0, 0, time.UTC).Format(time.RFC3339))
		m := []any{}
		for j := rng.Intn(4); j > 0; j-- {
			m = append(m, pick())
		}
		maybe("m", m)
		maybe("t", pick()+" "+pick())
		maybe("o", map[string]any{"x": json.Number(fmt.Sprint(rng.Intn(3))), "y": pick()})
		maybe("l", fmt.Sprintf("o%d", rng.Intn(8)))
		return v
	}
	ids := []string{}
	for i := 0; i < 150; i++ {
		id := fmt.Sprintf("i%03d", i)
		ids = append(ids, id)
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "items", ID: id, Values: randomItem()}); err != nil {
			t.Fatal(err)
		}
	}
	dev := Ref{Workspace: ref.Workspace, Database: ref.Database, Branch: "dev"}
	if err := e.CreateBranch(dev, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	// Diverge: both sides update, delete and insert after the fork, and a
	// query on main builds its value store before more writes arrive.
	if _, err := e.FilterRows(ref, "items", json.RawMessage(`{"n":{"$gt":0}}`), "svc"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60; i++ {
		r := []Ref{ref, dev}[rng.Intn(2)]
		id := ids[rng.Intn(len(ids))]
		var err error
		switch rng.Intn(3) {
		case 0:
			_, err = e.WriteOne(r, Op{Kind: OpInsert, Table: "items", ID: id, Values: randomItem()})
		case 1:
			_, err = e.WriteOne(r, Op{Kind: OpDelete, Table: "items", ID: id})
		case 2:
			_, err = e.WriteOne(r, Op{Kind: OpInsert, Table: "items", ID: fmt.Sprintf("n%03d", i), Values: randomItem()})
		}
		if err != nil && CodeOf(err) != CodeNotFound {
			t.Fatal(err)
		}
	}
	n := 3000
	if testing.Short() {
		n = 1500
	}
	checked, invalid := 0, 0
	defer func() { t.Logf("%d filters checked on two branches, %d invalid ones skipped", checked, invalid) }()
	for i := 0; i < n; i++ {
		if i%25 == 24 {
			// Keep writing between queries: cached postings must follow.
			r := []Ref{ref, dev}[rng.Intn(2)]
			id := ids[rng.Intn(len(ids))]
			var err error
			if rng.Intn(3) == 0 {
				_, err = e.WriteOne(r, Op{Kind: OpDelete, Table: "items", ID: id})
			} else {
				_, err = e.WriteOne(r, Op{Kind: OpInsert, Table: "items", ID: id, Values: randomItem()})
			}
			if err != nil && CodeOf(err) != CodeNotFound {
				t.Fatal(err)
			}
		}
		f := randomFilter(rng, pick, 0)
		raw, _ := json.Marshal(f)
		for _, r := range []Ref{ref, dev} {
			got, want, err := diffFilter(e, r, raw)
			if err != nil {
				if CodeOf(err) == CodeInvalid {
					invalid++
					continue // the generator may build invalid filters
				}
				t.Fatalf("%s on %s: %v", raw, r.Branch, err)
			}
			checked++
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d: filter %s on %s:\nplanner %v\nnaive   %v", seed, raw, r.Branch, got, want)
			}
		}
	}
}

// storePath names the subtest of a differential test run with or without
// column stores.
func storePath(storeless bool) string {
	if storeless {
		return "storage"
	}
	return "store"
}

// diffFilter returns the ids matching a filter by the planner and by the
// naive evaluator.
func diffFilter(e *Engine, ref Ref, raw json.RawMessage) (got, want []string, err error) {
	rows, err := e.FilterRows(ref, "items", raw, "svc")
	if err != nil {
		return nil, nil, err
	}
	src, release, err := e.openSource(context.Background(), ref, "items", storeOptional)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	node, err := index.ParseFilter(src.Table(), raw, "svc")
	if err != nil {
		return nil, nil, err
	}
	live, err := src.Live()
	if err != nil {
		return nil, nil, err
	}
	it := live.Iterator()
	for it.HasNext() {
		row := it.Next()
		var rec codec.Record
		ok, err := src.Record(row, &rec)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			continue
		}
		if index.Eval(node, &rowView{src: src, rec: &rec}) {
			want = append(want, rec.ID)
		}
		if rows.Contains(row) {
			got = append(got, rec.ID)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	return got, want, nil
}

// rowView shows a stored record to the naive evaluator.
type rowView struct {
	src *source
	rec *codec.Record
}

func (v *rowView) Value(c *index.Column) codec.Value {
	switch c.ID {
	case index.MetaIDColumn:
		return codec.String(v.rec.ID)
	case index.MetaVersionColumn:
		return codec.Int(int64(v.rec.Version))
	case index.MetaCreatedAtColumn:
		return codec.Value{Kind: codec.KindDatetime, Int: v.rec.CreatedAt}
	case index.MetaUpdatedAtColumn:
		return codec.Value{Kind: codec.KindDatetime, Int: v.rec.UpdatedAt}
	}
	x, ok := v.rec.Get(c.ID)
	if !ok {
		return codec.Null()
	}
	return x
}

func (v *rowView) Linked(c *index.Column) index.RowView {
	x, ok := v.rec.Get(c.ID)
	if !ok {
		return nil
	}
	ls, err := v.src.Linked(c)
	if err != nil {
		return nil
	}
	target := ls.(*source)
	rows, err := target.Rows([]string{x.Str})
	if err != nil || rows.IsEmpty() {
		return nil
	}
	var rec codec.Record
	if ok, err := target.Record(rows.Minimum(), &rec); err != nil || !ok {
		return nil
	}
	return &rowView{src: target, rec: &rec}
}

// randomFilter builds a random filter expression over the items table.
func randomFilter(rng *rand.Rand, pick func() string, depth int) map[string]any {
	num := func() any { return json.Number(fmt.Sprint(rng.Intn(7) - 3)) }
	fnum := func() any { return json.Number(fmt.Sprint(float64(rng.Intn(9))/2 - 2)) }
	date := func() any { return time.Date(2024, 1, 1+rng.Intn(5), 0, 0, 0, 0, time.UTC).Format(time.RFC3339) }
	strOp := func() map[string]any {
		ops := []string{"$contains", "$iContains", "$startsWith", "$endsWith", "$pattern", "$iPattern", "$is", "$isNot"}
		arg := pick()
		op := ops[rng.Intn(len(ops))]
		if op == "$pattern" || op == "$iPattern" {
			arg = []string{"a*", "*a", "?eta", "*", "b\\*c", "AL*"}[rng.Intn(6)]
		}
		return map[string]any{op: arg}
	}
	cmpOp := func(v func() any) any {
		ops := []string{"$lt", "$le", "$gt", "$ge", "$is", "$isNot"}
		switch rng.Intn(4) {
		case 0:
			return v()
		case 1:
			return map[string]any{"$gt": v(), "$le": v()}
		case 2:
			return map[string]any{"$is": []any{v(), v()}}
		}
		return map[string]any{ops[rng.Intn(len(ops))]: v()}
	}
	if depth < 3 && rng.Intn(3) == 0 {
		var kids []any
		for i := rng.Intn(3) + 1; i > 0; i-- {
			kids = append(kids, randomFilter(rng, pick, depth+1))
		}
		switch rng.Intn(4) {
		case 0:
			return map[string]any{"$any": kids}
		case 1:
			return map[string]any{"$all": kids}
		case 2:
			return map[string]any{"$not": kids[0]}
		default:
			return map[string]any{"$none": kids}
		}
	}
	switch rng.Intn(16) {
	case 0:
		return map[string]any{"s": strOp()}
	case 1:
		return map[string]any{"n": cmpOp(num)}
	case 2:
		return map[string]any{"f": cmpOp(fnum)}
	case 3:
		return map[string]any{"b": rng.Intn(2) == 0}
	case 4:
		return map[string]any{"d": cmpOp(date)}
	case 5:
		ops := []string{"$includes", "$includesAny", "$includesAll", "$includesNone"}
		var arg any = pick()
		if rng.Intn(2) == 0 {
			arg = strOp()
		}
		return map[string]any{"m": map[string]any{ops[rng.Intn(len(ops))]: arg}}
	case 6:
		return map[string]any{"m": pick()}
	case 7:
		return map[string]any{"t": map[string]any{"$contains": pick()}}
	case 8:
		return map[string]any{"o.x": cmpOp(func() any { return json.Number(fmt.Sprint(rng.Intn(3))) })}
	case 9:
		return map[string]any{"o": map[string]any{"y": strOp()}}
	case 10:
		return map[string]any{"l.name": strOp()}
	case 11:
		return map[string]any{"l": map[string]any{"age": cmpOp(num)}}
	case 12:
		return map[string]any{"l": fmt.Sprintf("o%d", rng.Intn(8))}
	case 13:
		cols := []string{"s", "n", "m", "o.x", "l", "t", "d", "l.age"}
		op := []string{"$exists", "$existsNot", "$notExists"}[rng.Intn(3)]
		return map[string]any{op: cols[rng.Intn(len(cols))]}
	case 14:
		return map[string]any{"svc.version": cmpOp(func() any { return json.Number(fmt.Sprint(rng.Intn(2))) })}
	default:
		return map[string]any{"id": cmpOp(func() any { return fmt.Sprintf("i%03d", rng.Intn(150)) })}
	}
}
