package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/memstore"
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
			{Name: "j", Type: TypeJSON},
		},
	})
	e.mem.SetStoreless(storeless)
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
		maybe("j", []string{`{"a":1,"s":"alpha"}`, `{"a":-2.5}`, `{"s":"beta","a":null}`, `{"a":{"b":1}}`, `[1,2]`, `{}`}[rng.Intn(6)])
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
	if err := e.Branches().Create(dev, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	// Diverge: both sides update, delete and insert after the fork, and a
	// query on main builds its value store before more writes arrive.
	if _, err := e.FilterRows(ref, "items", mustFilter(`{"n":{"$gt":0}}`)); err != nil {
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
	checked := 0
	defer func() { t.Logf("%d filters checked on two branches", checked) }()
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
			d, err := diffFilter(e, r, raw)
			if err != nil {
				// The generator builds valid filters only: a rejected
				// one is a form the parser misses.
				t.Fatalf("seed %d: filter %s on %s: %v", seed, raw, r.Branch, err)
			}
			checked++
			if fmt.Sprint(d.planner) != fmt.Sprint(d.reference) || fmt.Sprint(d.naive) != fmt.Sprint(d.reference) {
				t.Fatalf("seed %d: filter %s on %s:\nplanner   %v\nnaive     %v\nreference %v", seed, raw, r.Branch, d.planner, d.naive, d.reference)
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

// filterDiff holds the ids a filter matches by the planner, by the naive
// evaluator of the parsed filter, and by the reference reading of its JSON.
type filterDiff struct {
	planner, naive, reference []string
}

// diffFilter returns the ids matching a filter by the planner, the naive
// evaluator and the reference reading.
func diffFilter(e *Engine, ref Ref, raw json.RawMessage) (*filterDiff, error) {
	rows, err := e.FilterRows(ref, "items", mustFilter(string(raw)))
	if err != nil {
		return nil, err
	}
	src, release, err := e.openSource(context.Background(), ref, "items", memstore.Need{})
	if err != nil {
		return nil, err
	}
	defer release()
	node, err := index.ParseFilter(src.Table(), raw)
	if err != nil {
		return nil, err
	}
	decoded, err := decodeFilter(raw)
	if err != nil {
		return nil, err
	}
	reference := index.NewReference(src.Table(), decoded)
	live, err := src.Live()
	if err != nil {
		return nil, err
	}
	d := &filterDiff{}
	it := live.Iterator()
	for it.HasNext() {
		row := it.Next()
		var rec codec.Record
		ok, err := src.Record(row, &rec)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		view := &rowView{src: src, rec: &rec}
		if index.Eval(node, view) {
			d.naive = append(d.naive, rec.ID)
		}
		match, err := reference.Match(view)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", raw, err)
		}
		if match {
			d.reference = append(d.reference, rec.ID)
		}
		if rows.Contains(row) {
			d.planner = append(d.planner, rec.ID)
		}
	}
	sort.Strings(d.planner)
	sort.Strings(d.naive)
	sort.Strings(d.reference)
	return d, nil
}

// decodeFilter decodes a filter's JSON text as the API does.
func decodeFilter(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
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

// randomFilter builds a random filter expression over the items table, in
// every form of the language: combinators over a list or over one object
// (whose keys are alternatives under $any and $none), column operators
// over lists or one object of several operators, nested filters on
// objects and links, and array operators over element predicates that
// nest combinators.
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
		switch rng.Intn(6) {
		case 0:
			return v()
		case 1:
			return map[string]any{"$gt": v(), "$le": v()}
		case 2:
			return map[string]any{"$is": []any{v(), v()}}
		case 3:
			// One object of several operators under a combinator.
			op := []string{"$any", "$all", "$none", "$not"}[rng.Intn(4)]
			return map[string]any{op: map[string]any{"$gt": v(), "$lt": v()}}
		case 4:
			op := []string{"$any", "$all", "$none", "$not"}[rng.Intn(4)]
			return map[string]any{op: []any{v(), map[string]any{ops[rng.Intn(len(ops))]: v()}}}
		}
		return map[string]any{ops[rng.Intn(len(ops))]: v()}
	}
	if depth < 3 && rng.Intn(3) == 0 {
		var kids []any
		for i := rng.Intn(3) + 1; i > 0; i-- {
			kids = append(kids, randomFilter(rng, pick, depth+1))
		}
		op := []string{"$any", "$all", "$not", "$none"}[rng.Intn(4)]
		if rng.Intn(2) == 0 {
			// One object: the kids' keys side by side.
			obj := map[string]any{}
			for _, k := range kids {
				for key, v := range k.(map[string]any) {
					obj[key] = v
				}
			}
			return map[string]any{op: obj}
		}
		if op == "$not" {
			return map[string]any{op: kids[0]}
		}
		return map[string]any{op: kids}
	}
	switch rng.Intn(21) {
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
		return map[string]any{"m": map[string]any{ops[rng.Intn(len(ops))]: randomElementPredicate(rng, pick, strOp, 0)}}
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
		cols := []string{"s", "n", "m", "o.x", "l", "t", "d", "l.age", "o"}
		op := []string{"$exists", "$existsNot", "$notExists"}[rng.Intn(3)]
		return map[string]any{op: cols[rng.Intn(len(cols))]}
	case 14:
		return map[string]any{"svc.version": cmpOp(func() any { return json.Number(fmt.Sprint(rng.Intn(2))) })}
	case 15:
		// Combinators inside an object column or through a link.
		op := []string{"$any", "$all", "$none", "$not"}[rng.Intn(4)]
		if rng.Intn(2) == 0 {
			return map[string]any{"o": map[string]any{op: map[string]any{"x": json.Number(fmt.Sprint(rng.Intn(3))), "y": strOp()}}}
		}
		return map[string]any{"l": map[string]any{op: map[string]any{"name": strOp(), "age": cmpOp(num)}}}
	case 16:
		// A link's id beside filters on the linked record.
		op := []string{"$any", "$none"}[rng.Intn(2)]
		return map[string]any{"l": map[string]any{op: map[string]any{"$is": fmt.Sprintf("o%d", rng.Intn(8)), "name": pick()}}}
	case 17:
		op := []string{"$any", "$all", "$none", "$not"}[rng.Intn(4)]
		return map[string]any{"s": map[string]any{op: map[string]any{"$startsWith": pick(), "$endsWith": pick()}}}
	case 18:
		// Json paths: a record without the path matches no predicate on
		// it, not even a negated one.
		if rng.Intn(2) == 0 {
			return map[string]any{"j->a": cmpOp(fnum)}
		}
		return map[string]any{"j->s": strOp()}
	case 19:
		return map[string]any{[]string{"$exists", "$existsNot"}[rng.Intn(2)]: []string{"j->a", "j->s", "j->a->b", "j"}[rng.Intn(4)]}
	default:
		return map[string]any{"id": cmpOp(func() any { return fmt.Sprintf("i%03d", rng.Intn(150)) })}
	}
}

// randomElementPredicate builds the value of an array operator: a value,
// an operator object on one element, a range, a combinator over element
// predicates (a list, or one object of several operators), or a list of
// them.
func randomElementPredicate(rng *rand.Rand, pick func() string, strOp func() map[string]any, depth int) any {
	if depth < 2 && rng.Intn(3) == 0 {
		op := []string{"$any", "$all", "$none", "$not"}[rng.Intn(4)]
		switch rng.Intn(3) {
		case 0:
			return map[string]any{op: map[string]any{"$startsWith": pick(), "$endsWith": pick()}}
		case 1:
			return map[string]any{op: []any{pick(), pick()}}
		}
		var items []any
		for i := rng.Intn(3); i >= 0; i-- {
			items = append(items, randomElementPredicate(rng, pick, strOp, depth+1))
		}
		if depth == 0 && rng.Intn(4) == 0 {
			return items // a list: any of them
		}
		return map[string]any{op: items}
	}
	switch rng.Intn(5) {
	case 0:
		return pick()
	case 1:
		return map[string]any{"$gt": pick(), "$lt": pick()}
	case 2:
		return map[string]any{[]string{"$lt", "$ge"}[rng.Intn(2)]: pick()}
	case 3:
		return map[string]any{"$is": []any{pick(), pick()}}
	}
	return strOp()
}
