package gen

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// collect returns the first n records of a stream.
func collect(t *testing.T, n int, walk func(func(map[string]any) error) error) []map[string]any {
	t.Helper()
	var out []map[string]any
	stop := errStop{}
	err := walk(func(rec map[string]any) error {
		out = append(out, rec)
		if len(out) == n {
			return stop
		}
		return nil
	})
	if err != stop && err != nil {
		t.Fatal(err)
	}
	return out
}

type errStop struct{}

func (errStop) Error() string { return "stop" }

func TestDeterminism(t *testing.T) {
	words := ShippedWords()
	a := New(Config{N: 1000, Seed: 7, Words: words})
	b := New(Config{N: 1000, Seed: 7, Words: reversed(words)})
	other := New(Config{N: 1000, Seed: 8, Words: words})
	small := New(Config{N: 100, Seed: 7, Words: words})

	docs := collect(t, 100, a.Docs)
	if len(docs) != 100 {
		t.Fatalf("got %d docs", len(docs))
	}
	if got := collect(t, 100, b.Docs); !reflect.DeepEqual(got, docs) {
		t.Errorf("same seed and vocabulary in another order: docs differ\n%v\n%v", got[0], docs[0])
	}
	if got := collect(t, 100, small.Docs); !reflect.DeepEqual(got, docs) {
		t.Errorf("a smaller N is not a prefix of the larger dataset")
	}
	if got := collect(t, 100, other.Docs); reflect.DeepEqual(got, docs) {
		t.Errorf("another seed gave the same docs")
	}
	if x, y := collect(t, 100, a.Users), collect(t, 100, b.Users); !reflect.DeepEqual(x, y) {
		t.Errorf("same seed: users differ")
	}
	if x, y := a.Queries(20), b.Queries(20); !reflect.DeepEqual(x, y) {
		t.Errorf("same seed: queries differ")
	}
	if a.Doc(5)["id"] != "d00000005" || a.User(5)["id"] != "u00005" {
		t.Errorf("ids %v %v", a.Doc(5)["id"], a.User(5)["id"])
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func TestDistributions(t *testing.T) {
	const n = 20_000
	g := New(Config{N: n, Seed: 1, Words: ShippedWords()})
	var active, priceIn5 int
	cats := map[string]int{}
	tagSeen := map[string]bool{}
	var prices []float64
	lo, hi := PriceQuantile(0.40), PriceQuantile(0.45)
	err := g.Docs(func(d map[string]any) error {
		if d["active"].(bool) {
			active++
		}
		cats[d["category"].(string)]++
		tags := d["tags"].([]any)
		if len(tags) < 1 || len(tags) > 5 {
			t.Fatalf("%s has %d tags", d["id"], len(tags))
		}
		seen := map[any]bool{}
		for _, tag := range tags {
			if seen[tag] {
				t.Fatalf("%s repeats tag %v", d["id"], tag)
			}
			seen[tag] = true
			tagSeen[tag.(string)] = true
		}
		for col, span := range map[string][2]int{"title": {3, 8}, "body": {30, 200}} {
			words := strings.Fields(d[col].(string))
			if len(words) < span[0] || len(words) > span[1] {
				t.Fatalf("%s.%s has %d words", d["id"], col, len(words))
			}
			for _, w := range words {
				if !g.InVocab(w) {
					t.Fatalf("%s.%s: %q is not a vocabulary word", d["id"], col, w)
				}
			}
		}
		price := number(t, d["price"])
		if price <= 0 {
			t.Fatalf("%s: price %v", d["id"], price)
		}
		if price >= lo && price < hi {
			priceIn5++
		}
		prices = append(prices, price)
		if r := number(t, d["rating"]); r < 0 || r > 5 {
			t.Fatalf("%s: rating %v", d["id"], r)
		}
		if _, err := strconv.ParseInt(string(d["views"].(json.Number)), 10, 64); err != nil {
			t.Fatalf("%s: views %v", d["id"], d["views"])
		}
		at, err := time.Parse(time.RFC3339, d["created_at"].(string))
		if err != nil || at.Before(Epoch) || !at.Before(End) {
			t.Fatalf("%s: created_at %v %v", d["id"], d["created_at"], err)
		}
		if u, _ := strconv.Atoi(strings.TrimPrefix(d["owner"].(string), "u")); u >= NumUsers {
			t.Fatalf("%s: owner %v", d["id"], d["owner"])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	within := func(name string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.4f, want %.4f ± %.4f", name, got, want, tol)
		}
	}
	within("active fraction", float64(active)/n, 0.7, 0.015)
	within("price fraction in [q40, q45)", float64(priceIn5)/n, 0.05, 0.01)
	slices.Sort(prices)
	within("median price", prices[n/2], math.Exp(priceMu), 1.5)
	if len(cats) != len(Categories) {
		t.Errorf("%d categories seen, want %d: %v", len(cats), len(Categories), cats)
	}
	for k := 1; k < len(Categories); k++ {
		if cats[Categories[k]] == 0 || cats[Categories[k]] > cats[Categories[0]] {
			t.Errorf("category %s: %d docs, the first has %d", Categories[k], cats[Categories[k]], cats[Categories[0]])
		}
	}
	within("share of the first category", float64(cats[Categories[0]])/n, 0.35, 0.03)
	if len(tagSeen) < NumTags*9/10 || len(tagSeen) > NumTags {
		t.Errorf("%d distinct tags, want about %d", len(tagSeen), NumTags)
	}
	emails := map[string]bool{}
	for i := range NumUsers {
		u := g.User(i)
		if emails[u["email"].(string)] {
			t.Fatalf("duplicate email %v", u["email"])
		}
		emails[u["email"].(string)] = true
	}
}

func number(t *testing.T, v any) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(string(v.(json.Number)), 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestWords(t *testing.T) {
	f := func(in string, want ...string) {
		t.Helper()
		if got := cleanWords(in); !slices.Equal(got, want) {
			t.Errorf("cleanWords(%q) = %q, want %q", in, got, want)
		}
	}
	f("")
	f("apple\nApple\napple\r\nit's\nbanana\ncafé\nx2\n\nbanana", "apple", "banana")

	shipped := ShippedWords()
	if len(shipped) < 3000 {
		t.Errorf("the shipped list has %d words", len(shipped))
	}
	if got := loadWords(t.TempDir() + "/missing"); !slices.Equal(got, shipped) {
		t.Errorf("without a system list: %d words, want the shipped %d", len(got), len(shipped))
	}
	if got := LoadWords(); len(got) < len(shipped)/2 {
		t.Errorf("LoadWords gave %d words", len(got))
	}
}

func TestQueries(t *testing.T) {
	const n, docs = 60, 2000
	g := New(Config{N: docs, Seed: 3, Words: ShippedWords()})
	q := g.Queries(n)
	for name, l := range map[string]int{"exact": len(q.Exact), "typo1": len(q.Typo1), "typo2": len(q.Typo2),
		"prefix": len(q.Prefix), "phrase": len(q.Phrase), "filter": len(q.Filter)} {
		if l != n {
			t.Errorf("%d %s queries, want %d", l, name, n)
		}
	}
	for _, w := range q.Exact {
		if !g.InVocab(w) || len(w) < 3 {
			t.Errorf("exact %q", w)
		}
	}
	for k, typos := range [][]Typo{1: q.Typo1, 2: q.Typo2} {
		for _, ty := range typos {
			if d := Levenshtein(ty.Query, ty.Word); d != k || g.InVocab(ty.Query) || !g.InVocab(ty.Word) {
				t.Errorf("typo%d %q of %q: distance %d, in vocabulary %v", k, ty.Query, ty.Word, d, g.InVocab(ty.Query))
			}
		}
	}
	for i, p := range q.Prefix {
		if len(p) != 1+i%3 {
			t.Errorf("prefix %d is %q", i, p)
		}
	}
	var bodies []string
	for i := range docs {
		bodies = append(bodies, " "+g.Doc(i)["body"].(string)+" ")
	}
	for _, p := range q.Phrase {
		if k := len(strings.Fields(p)); k < 2 || k > 4 {
			t.Errorf("phrase %q has %d words", p, k)
		}
		if !slices.ContainsFunc(bodies, func(b string) bool { return strings.Contains(b, " "+p+" ") }) {
			t.Errorf("phrase %q is in no body", p)
		}
	}
	kinds := map[string]bool{}
	for _, f := range q.Filter {
		kinds[f.Kind] = true
		if !json.Valid(f.Filter) || !json.Valid(f.Sort) {
			t.Errorf("%s: invalid JSON %s %s", f.Kind, f.Filter, f.Sort)
		}
	}
	if len(kinds) != len(filterKinds) {
		t.Errorf("%d kinds of filter, want %d", len(kinds), len(filterKinds))
	}
	if err := q.WriteFiles(t.TempDir()); err != nil {
		t.Fatal(err)
	}

	f := func(a, b string, want int) {
		t.Helper()
		if got := Levenshtein(a, b); got != want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
	f("", "", 0)
	f("", "abc", 3)
	f("kitten", "sitting", 3)
	f("ab", "ba", 2)
	f("flaw", "lawn", 2)
}

// TestLoadIntoEngine loads the schema, every user and a few docs into a real
// engine, runs each query of the filter mix, and checks counts that the
// generated records also give.
func TestLoadIntoEngine(t *testing.T) {
	const docs = 1500
	g := New(Config{N: docs, Seed: 5, Words: ShippedWords()})
	e, err := engine.Open(t.TempDir(), engine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	u, err := e.Accounts().CreateUser(engine.NewUser{Email: "gen@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := e.Accounts().CreateWorkspace(u.ID, "gen", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase(engine.CreateDatabaseRequest{Workspace: ws.Core, Name: "db", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	ref := engine.Ref{Workspace: ws.Core, Database: "db", Branch: "main"}
	for _, tc := range []struct {
		name string
		cols []engine.ColumnDef
	}{{UsersTable, UsersColumns()}, {DocsTable, DocsColumns()}} {
		if _, err := e.Schema().CreateTable(ref, tc.name); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Schema().SetTableColumns(ref, tc.name, tc.cols); err != nil {
			t.Fatalf("columns of %s: %v", tc.name, err)
		}
	}
	load := func(table string, walk func(func(map[string]any) error) error) {
		var batch []map[string]any
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			_, err := e.BulkInsert(context.Background(), ref, table, batch)
			batch = batch[:0]
			return err
		}
		err := walk(func(rec map[string]any) error {
			batch = append(batch, rec)
			if len(batch) == engine.MaxBulkRecords {
				return flush()
			}
			return nil
		})
		if err == nil {
			err = flush()
		}
		if err != nil {
			t.Fatalf("load %s: %v", table, err)
		}
	}
	load(UsersTable, g.Users)
	load(DocsTable, g.Docs)

	rec, err := e.Get(ref, DocsTable, DocID(17))
	if err != nil {
		t.Fatal(err)
	}
	if want := g.Doc(17)["title"]; rec.Values["title"] != want {
		t.Errorf("doc 17 title %v, want %v", rec.Values["title"], want)
	}

	// Counts of filters whose answer the generated docs give directly.
	var all []map[string]any
	g.Docs(func(d map[string]any) error { all = append(all, d); return nil })
	count := func(pred func(d map[string]any) bool) int {
		n := 0
		for _, d := range all {
			if pred(d) {
				n++
			}
		}
		return n
	}
	lo, hi := PriceQuantile(0.3), PriceQuantile(0.35)
	checks := []struct {
		filter string
		want   int
	}{
		{`{"category": "music"}`, count(func(d map[string]any) bool { return d["category"] == "music" })},
		{`{"active": true}`, count(func(d map[string]any) bool { return d["active"] == true })},
		{`{"price": {"$ge": ` + ftoa(lo) + `, "$lt": ` + ftoa(hi) + `}}`, count(func(d map[string]any) bool {
			p := number(t, d["price"])
			return p >= lo && p < hi
		})},
		{`{"tags": {"$includes": "tag003"}}`, count(func(d map[string]any) bool { return slices.Contains(d["tags"].([]any), any("tag003")) })},
		{`{"owner": "u00001"}`, count(func(d map[string]any) bool { return d["owner"] == "u00001" })},
	}
	for _, c := range checks {
		filter, err := index.ReadFilter([]byte(c.filter))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := e.FilterRows(ref, DocsTable, filter)
		if err != nil {
			t.Errorf("%s: %v", c.filter, err)
			continue
		}
		if got := int(rows.GetCardinality()); got != c.want || c.want == 0 {
			t.Errorf("%s: %d rows, the generated docs have %d", c.filter, got, c.want)
		}
	}

	size := 20
	for _, fq := range g.Queries(2 * len(filterKinds)).Filter {
		in := engine.QueryRequest{Page: engine.PageInput{Size: &size}}
		var err error
		if in.Filter, err = index.ReadFilter(fq.Filter); err != nil {
			t.Fatal(err)
		}
		if in.Sort, err = index.ReadSort(fq.Sort); err != nil {
			t.Fatal(err)
		}
		res, err := e.Query(context.Background(), ref, DocsTable, in, engine.QueryOptions{})
		if err != nil {
			t.Errorf("%s %s %s: %v", fq.Kind, fq.Filter, fq.Sort, err)
			continue
		}
		if len(res.Records) > size {
			t.Errorf("%s: %d records in a page of %d", fq.Kind, len(res.Records), size)
		}
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
