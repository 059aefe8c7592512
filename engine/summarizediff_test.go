package engine

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/index"
)

// TestSummarizeDifferential runs random summarize requests — group-by
// subsets, summary functions, filters, sorts and page sizes — through
// Summarize and through a naive computation over the records read back, on
// a table large enough that single-column groups walk postings, and
// compares the outputs.
func TestSummarizeDifferential(t *testing.T) {
	for _, storeless := range []bool{false, true} {
		t.Run(storePath(storeless), func(t *testing.T) { summarizeDifferential(t, storeless) })
	}
}

func summarizeDifferential(t *testing.T, storeless bool) {
	seed := *summarizeSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -summarize.seed=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	e, ref := recFixture(t, petsTables)
	e.mem.SetStoreless(storeless)
	names := []string{"ann", "bob", "cid", "dee", "eve"}
	for i, n := range names {
		vals := map[string]any{"name": n}
		if i%2 == 0 {
			vals["age"] = json.Number(fmt.Sprint(20 + i))
		}
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "owners", ID: fmt.Sprintf("o%d", i), Values: vals}); err != nil {
			t.Fatal(err)
		}
	}
	kinds := []string{"dog", "cat", "bird", "fish", "Dog"}
	words := []string{"a", "b", "c", "d"}
	randomPet := func() map[string]any {
		v := map[string]any{}
		maybe := func(k string, x any) {
			if rng.Intn(6) > 0 {
				v[k] = x
			}
		}
		maybe("name", fmt.Sprintf("n%d", rng.Intn(40)))
		maybe("kind", kinds[rng.Intn(len(kinds))])
		maybe("legs", json.Number(fmt.Sprint(rng.Intn(5))))
		maybe("weight", json.Number(fmt.Sprint(float64(rng.Intn(40))/4-2)))
		maybe("born", time.Date(2024, 1, 1+rng.Intn(20), rng.Intn(3)*8, 0, 0, 0, time.UTC).Format(time.RFC3339))
		var tags []any
		for j := rng.Intn(3); j > 0; j-- {
			tags = append(tags, words[rng.Intn(len(words))])
		}
		maybe("tags", tags)
		maybe("notes", words[rng.Intn(len(words))]+" "+words[rng.Intn(len(words))])
		maybe("cfg", fmt.Sprintf(`{"x":%d}`, rng.Intn(3)))
		info := map[string]any{}
		if rng.Intn(3) > 0 {
			info["color"] = []string{"red", "green", "blue"}[rng.Intn(3)]
		}
		if rng.Intn(3) > 0 {
			info["size"] = json.Number(fmt.Sprint(rng.Intn(4)))
		}
		maybe("info", info)
		maybe("owner", fmt.Sprintf("o%d", rng.Intn(len(names))))
		maybe("vaccinated", rng.Intn(2) == 0)
		return v
	}
	n := 2600
	var batch []map[string]any
	for i := 0; i < n; i++ {
		p := randomPet()
		p["id"] = fmt.Sprintf("p%04d", i)
		batch = append(batch, p)
		if len(batch) == MaxBulkRecords || i == n-1 {
			if _, err := e.BulkInsert(ctx, ref, "pets", batch); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
	}
	// Updates and deletes after the value store is built.
	if _, err := e.Summarize(ctx, ref, "pets", SummarizeRequest{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 80; i++ {
		id := fmt.Sprintf("p%04d", rng.Intn(n))
		var err error
		if i%2 == 0 {
			_, err = e.WriteOne(ref, Op{Kind: OpDelete, Table: "pets", ID: id})
		} else {
			_, err = e.WriteOne(ref, Op{Kind: OpInsert, Table: "pets", ID: id, Values: randomPet()})
		}
		if err != nil && CodeOf(err) != CodeNotFound {
			t.Fatal(err)
		}
	}
	// A deleted owner leaves dangling links.
	if _, err := e.WriteOne(ref, Op{Kind: OpDelete, Table: "owners", ID: "o4"}); err != nil {
		t.Fatal(err)
	}

	oracle := newSummarizeOracle(t, e, ref)
	groupCols := []string{"kind", "legs", "weight", "born", "tags", "notes", "cfg", "info.color", "info.size", "owner", "owner.name", "owner.age", "vaccinated"}
	countCols := []string{"*", "kind", "legs", "tags", "notes", "cfg", "owner", "owner.name", "info.size"}
	minMaxCols := []string{"name", "kind", "legs", "weight", "born", "tags", "notes", "info.color", "owner.name", "owner.age"}
	numCols := []string{"legs", "weight", "info.size", "owner.age"}
	cases := 400
	if testing.Short() {
		cases = 150
	}
	for c := 0; c < cases; c++ {
		if c%30 == 29 {
			// Keep writing between summaries: cached postings and scans
			// must follow the table.
			id := fmt.Sprintf("p%04d", rng.Intn(n))
			// A pet may link the deleted owner: that write is refused.
			if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "pets", ID: id, Values: randomPet()}); err != nil && CodeOf(err) != CodeInvalid {
				t.Fatal(err)
			}
			oracle = newSummarizeOracle(t, e, ref)
		}
		body := map[string]any{}
		var groups []string
		switch rng.Intn(8) {
		case 0: // no columns key
		case 1:
			body["columns"] = []string{}
		default:
			perm := rng.Perm(len(groupCols))[:1+rng.Intn(2)]
			if rng.Intn(3) == 0 {
				perm = perm[:1] // one column: postings when it has an index
			}
			for _, i := range perm {
				groups = append(groups, groupCols[i])
			}
			if rng.Intn(10) == 0 {
				groups = append(groups, "info") // expands to info.color, info.size
			}
			body["columns"] = groups
		}
		sums := map[string]any{}
		var sumNames []string
		for i := rng.Intn(4); i > 0; i-- {
			name := fmt.Sprintf("s%d", len(sums))
			var expr map[string]any
			switch rng.Intn(5) {
			case 0:
				expr = map[string]any{"count": countCols[rng.Intn(len(countCols))]}
			case 1:
				expr = map[string]any{"min": minMaxCols[rng.Intn(len(minMaxCols))]}
			case 2:
				expr = map[string]any{"max": minMaxCols[rng.Intn(len(minMaxCols))]}
			case 3:
				expr = map[string]any{"sum": numCols[rng.Intn(len(numCols))]}
			default:
				expr = map[string]any{"average": numCols[rng.Intn(len(numCols))]}
			}
			sums[name] = expr
			sumNames = append(sumNames, name)
		}
		if len(sums) > 0 || rng.Intn(2) == 0 {
			body["summaries"] = sums
		}
		if len(sumNames) > 0 && rng.Intn(4) == 0 {
			body["summariesFilter"] = randomHaving(rng, sums, sumNames)
		}
		if f := randomPetFilter(rng, kinds, names); f != nil {
			body["filter"] = f
		}
		if rng.Intn(3) == 0 {
			keys := append(slices.Clone(groups), sumNames...)
			if len(keys) > 0 {
				k := keys[rng.Intn(len(keys))]
				if k != "info" {
					body["sort"] = []any{map[string]any{k: []string{"asc", "desc"}[rng.Intn(2)]}}
				}
			}
		}
		size := 1000
		if rng.Intn(4) == 0 {
			size = 1 + rng.Intn(10)
		}
		body["page"] = map[string]any{"size": size}
		raw := marshalJSON(t, body)
		in := summarizeBody(t, raw)
		got, err := e.Summarize(ctx, ref, "pets", in)
		if err != nil {
			t.Fatalf("seed %d: %s: %v", seed, raw, err)
		}
		want := oracle.summarize(t, body)
		if g, w := marshalJSON(t, summaryObjects(got)), marshalJSON(t, want); g != w {
			t.Fatalf("seed %d: %s:\nsummarize %s\nnaive     %s", seed, raw, g, w)
		}
	}
}

// randomPetFilter builds a small random filter on pets, or nil.
func randomPetFilter(rng *rand.Rand, kinds, owners []string) any {
	switch rng.Intn(11) {
	case 0, 1:
		return nil
	case 2:
		return map[string]any{"kind": kinds[rng.Intn(len(kinds))]}
	case 3:
		return map[string]any{"legs": map[string]any{"$gt": rng.Intn(4)}}
	case 4:
		return map[string]any{"vaccinated": rng.Intn(2) == 0}
	case 5:
		return map[string]any{"owner.name": owners[rng.Intn(len(owners))]}
	case 6:
		return map[string]any{"weight": map[string]any{"$lt": float64(rng.Intn(40))/4 - 2}}
	case 7:
		return map[string]any{"$not": map[string]any{"kind": kinds[rng.Intn(len(kinds))]}}
	case 8:
		return map[string]any{"$any": []any{map[string]any{"tags": "a"}, map[string]any{"info.color": "red"}}}
	case 9:
		// One object's keys under a combinator; array operators over
		// combined element predicates.
		op := []string{"$any", "$all", "$none", "$not"}[rng.Intn(4)]
		return map[string]any{op: map[string]any{
			"kind": kinds[rng.Intn(len(kinds))],
			"tags": map[string]any{
				[]string{"$includes", "$includesAll", "$includesNone"}[rng.Intn(3)]: map[string]any{
					[]string{"$any", "$all", "$none", "$not"}[rng.Intn(4)]: []string{"a", "b"}[:1+rng.Intn(2)],
				},
			},
			"owner": map[string]any{"$any": map[string]any{"name": owners[rng.Intn(len(owners))], "age": map[string]any{"$gt": 21}}},
		}}
	}
	return map[string]any{"$exists": []string{"kind", "weight", "owner", "cfg"}[rng.Intn(4)]}
}

// randomHaving builds a summariesFilter: conditions that keep groups whose
// summary is set or whose count is large or small enough, alone or
// combined, in the list and the single-object forms of the combinators.
func randomHaving(rng *rand.Rand, sums map[string]any, sumNames []string) any {
	cond := func() (string, any) {
		name := sumNames[rng.Intn(len(sumNames))]
		if _, isCount := sums[name].(map[string]any)["count"]; isCount {
			op := []string{"$ge", "$lt", "$any", "$none"}[rng.Intn(4)]
			if op == "$any" || op == "$none" {
				return name, map[string]any{op: map[string]any{"$lt": 1 + rng.Intn(20), "$gt": 20 + rng.Intn(20)}}
			}
			return name, map[string]any{op: 1 + rng.Intn(20)}
		}
		return []string{"$exists", "$existsNot"}[rng.Intn(2)], name
	}
	if rng.Intn(3) == 0 {
		k, v := cond()
		return map[string]any{k: v}
	}
	op := []string{"$any", "$all", "$none", "$not"}[rng.Intn(4)]
	n := 1 + rng.Intn(3)
	if rng.Intn(2) == 0 {
		obj := map[string]any{}
		for i := 0; i < n; i++ {
			k, v := cond()
			obj[k] = v
		}
		return map[string]any{op: obj}
	}
	var list []any
	for i := 0; i < n; i++ {
		k, v := cond()
		list = append(list, map[string]any{k: v})
	}
	return map[string]any{op: list}
}

// summarizeOracle computes summaries naively from every record read back.
type summarizeOracle struct {
	pets    *index.Table
	records []*codec.Record
	owners  map[string]*codec.Record
	ownerT  *index.Table
}

func newSummarizeOracle(t *testing.T, e *Engine, ref Ref) *summarizeOracle {
	t.Helper()
	read := func(table string) (*index.Table, []*codec.Record) {
		src, release, err := e.openSource(ctx, ref, table, memstore.Need{Store: memstore.Required})
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		live, err := src.Live()
		if err != nil {
			t.Fatal(err)
		}
		var recs []*codec.Record
		it := live.Iterator()
		for it.HasNext() {
			var rec codec.Record
			ok, err := src.Record(it.Next(), &rec)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				recs = append(recs, rec.Clone())
			}
		}
		return src.Table(), recs
	}
	o := &summarizeOracle{owners: map[string]*codec.Record{}}
	o.pets, o.records = read("pets")
	var owners []*codec.Record
	o.ownerT, owners = read("owners")
	for _, r := range owners {
		o.owners[r.ID] = r
	}
	return o
}

// oracleRow shows a record to the naive filter evaluator.
type oracleRow struct {
	o   *summarizeOracle
	rec *codec.Record
}

func (r oracleRow) Value(c *index.Column) codec.Value {
	if c.ID == index.MetaIDColumn {
		return codec.String(r.rec.ID)
	}
	v, _ := r.rec.Get(c.ID)
	return v
}

func (r oracleRow) Linked(c *index.Column) index.RowView {
	v, ok := r.rec.Get(c.ID)
	if !ok || r.o.owners[v.Str] == nil {
		return nil
	}
	return oracleRow{r.o, r.o.owners[v.Str]}
}

// summaryRow shows the summaries of a group, by name, to the reference
// reading of a summariesFilter.
type summaryRow map[string]any

// Value converts a summary's Go value to a codec value.
func (r summaryRow) Value(c *index.Column) codec.Value {
	switch v := r[c.Path].(type) {
	case int64:
		return codec.Int(v)
	case float64:
		return codec.Float(v)
	case string:
		return codec.String(v)
	case bool:
		return codec.Bool(v)
	case time.Time:
		return codec.Datetime(v)
	case []string:
		return codec.Strings(v)
	}
	return codec.Null()
}

// Linked is nil: summaries hold no links.
func (r summaryRow) Linked(*index.Column) index.RowView { return nil }

// decodeJSON is v as the API decodes it from a request body: through JSON,
// numbers as json.Number.
func decodeJSON(t *testing.T, v any) any {
	t.Helper()
	if v == nil {
		return nil
	}
	out, err := decodeFilter([]byte(marshalJSON(t, v)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// value reads a dotted column of a pet (through the owner link), with its
// column; null when absent.
func (o *summarizeOracle) value(rec *codec.Record, path string) (codec.Value, *index.Column) {
	if rest, ok := strings.CutPrefix(path, "owner."); ok {
		c := o.ownerT.Columns[rest]
		link, _ := rec.Get(o.pets.Columns["owner"].ID)
		owner := o.owners[link.Str]
		if owner == nil {
			return codec.Null(), c
		}
		v, _ := owner.Get(c.ID)
		return v, c
	}
	c := o.pets.Columns[path]
	v, _ := rec.Get(c.ID)
	return v, c
}

// jsonOf is the output form of a value of a column type.
func jsonOf(typ index.ColumnType, v codec.Value) any {
	if v.Kind == codec.KindNull {
		return nil
	}
	switch typ {
	case "int":
		return v.Int
	case "float":
		return v.Float
	case "bool":
		return v.Int == 1
	case "datetime":
		return time.Unix(0, v.Int).UTC()
	case "multiple":
		return append([]string{}, v.Strs...)
	}
	return v.Str
}

// oracleCompare orders output values: nulls last, then by type.
func oracleCompare(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	switch x := a.(type) {
	case int64:
		return cmp.Compare(x, b.(int64))
	case float64:
		return cmp.Compare(x, b.(float64))
	case string:
		return strings.Compare(x, b.(string))
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case time.Time:
		return x.Compare(b.(time.Time))
	case []string:
		return slices.Compare(x, b.([]string))
	}
	panic(fmt.Sprintf("oracleCompare %T", a))
}

// summarize computes a request naively.
func (o *summarizeOracle) summarize(t *testing.T, body map[string]any) []map[string]any {
	t.Helper()
	filter := index.NewReference(o.pets, decodeJSON(t, body["filter"]))
	var groups []string
	if g, ok := body["columns"].([]string); ok {
		for _, c := range g {
			if c == "info" {
				groups = append(groups, "info.color", "info.size")
				continue
			}
			groups = append(groups, c)
		}
	}
	// "info" may repeat info.color or info.size: keep first occurrences.
	var uniq []string
	for _, g := range groups {
		if !slices.Contains(uniq, g) {
			uniq = append(uniq, g)
		}
	}
	groups = uniq
	sums, _ := body["summaries"].(map[string]any)
	sumNames := make([]string, 0, len(sums))
	for k := range sums {
		sumNames = append(sumNames, k)
	}
	sort.Strings(sumNames)

	type group struct {
		vals []any // output values of the group columns
		recs []*codec.Record
	}
	var order []*group
	byKey := map[string]*group{}
	for _, rec := range o.records {
		match, err := filter.Match(oracleRow{o, rec})
		if err != nil {
			t.Fatal(err)
		}
		if !match {
			continue
		}
		vals := make([]any, len(groups))
		for i, g := range groups {
			v, c := o.value(rec, g)
			if c.Type == "link" {
				vals[i] = jsonOf("string", v)
			} else {
				vals[i] = jsonOf(c.Type, v)
			}
		}
		key := marshalJSON(t, vals)
		gr := byKey[key]
		if gr == nil {
			gr = &group{vals: vals}
			byKey[key] = gr
			order = append(order, gr)
		}
		gr.recs = append(gr.recs, rec)
	}
	if len(groups) == 0 && len(order) == 0 {
		order = append(order, &group{})
	}
	type row struct {
		vals []any
		sums map[string]any
	}
	rows := make([]row, 0, len(order))
	for _, gr := range order {
		r := row{vals: gr.vals, sums: map[string]any{}}
		for _, name := range sumNames {
			for fn, col := range sums[name].(map[string]any) {
				r.sums[name] = o.summary(gr.recs, fn, col.(string))
			}
		}
		rows = append(rows, r)
	}
	if hf, ok := body["summariesFilter"]; ok {
		// The summaries of a group as a record of a table of summaries.
		st := &index.Table{Name: "summaries", Columns: map[string]*index.Column{}}
		for _, name := range sumNames {
			for fn, col := range sums[name].(map[string]any) {
				typ := index.ColumnType("int")
				switch fn {
				case "average":
					typ = "float"
				case "min", "max", "sum":
					_, c := o.value(&codec.Record{}, col.(string))
					typ = c.Type
				}
				st.Columns[name] = &index.Column{Path: name, Type: typ}
			}
		}
		having := index.NewReference(st, decodeJSON(t, hf))
		rows = slices.DeleteFunc(rows, func(r row) bool {
			match, err := having.Match(summaryRow(r.sums))
			if err != nil {
				t.Fatal(err)
			}
			return !match
		})
	}
	type sortKey struct {
		group int
		sum   string
		desc  bool
	}
	var keys []sortKey
	if s, ok := body["sort"].([]any); ok {
		for _, e := range s {
			for k, d := range e.(map[string]any) {
				sk := sortKey{group: slices.Index(groups, k), sum: k, desc: d == "desc"}
				keys = append(keys, sk)
			}
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		for _, k := range keys {
			var a, b any
			if k.group >= 0 {
				a, b = rows[i].vals[k.group], rows[j].vals[k.group]
			} else {
				a, b = rows[i].sums[k.sum], rows[j].sums[k.sum]
			}
			c := oracleCompare(a, b)
			if k.desc && a != nil && b != nil {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		for g := range rows[i].vals {
			if c := oracleCompare(rows[i].vals[g], rows[j].vals[g]); c != 0 {
				return c < 0
			}
		}
		return false
	})
	size := 1000
	if p, ok := body["page"].(map[string]any); ok {
		size = p["size"].(int)
	}
	out := []map[string]any{}
	for i, r := range rows {
		if i == size {
			break
		}
		m := map[string]any{}
		for gi, g := range groups {
			path := g
			if g == "owner" {
				path = "owner.id"
			}
			index.SetPath(m, path, r.vals[gi])
		}
		for k, v := range r.sums {
			m[k] = v
		}
		out = append(out, m)
	}
	return out
}

// summary computes one summary function over records.
func (o *summarizeOracle) summary(recs []*codec.Record, fn, col string) any {
	if fn == "count" && col == "*" {
		return int64(len(recs))
	}
	var vals []codec.Value
	var typ index.ColumnType
	for _, rec := range recs {
		v, c := o.value(rec, col)
		typ = c.Type
		if v.Kind == codec.KindNull {
			continue
		}
		if v.Kind == codec.KindStrings && fn != "count" {
			for _, s := range v.Strs {
				vals = append(vals, codec.String(s))
			}
			continue
		}
		vals = append(vals, v)
	}
	if typ == "" {
		_, c := o.value(&codec.Record{}, col)
		typ = c.Type
	}
	switch fn {
	case "count":
		return int64(len(vals))
	case "sum":
		if len(vals) == 0 {
			return nil
		}
		if typ == "int" {
			var s int64
			for _, v := range vals {
				s += v.Int
			}
			return s
		}
		var s float64
		for _, v := range vals {
			s += v.Float
		}
		return s
	case "average":
		if len(vals) == 0 {
			return nil
		}
		if typ == "int" {
			var s int64
			for _, v := range vals {
				s += v.Int
			}
			return float64(s) / float64(len(vals))
		}
		var s float64
		for _, v := range vals {
			s += v.Float
		}
		return s / float64(len(vals))
	}
	if typ == "multiple" {
		typ = "string"
	}
	var best any
	for _, v := range vals {
		x := jsonOf(typ, v)
		c := oracleCompare(x, best)
		if best == nil || (fn == "min" && c < 0) || (fn == "max" && c > 0) {
			best = x
		}
	}
	return best
}
