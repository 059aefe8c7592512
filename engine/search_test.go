package engine

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/fts"
	"github.com/coppice-db/coppice/index"
)

var searchSeed = flag.Int64("search.seed", 0, "seed of TestSearchDifferential (0: time)")

// searchTables are the tables of the search tests.
var searchTables = map[string][]ColumnDef{
	"docs": {
		{Name: "title", Type: TypeString},
		{Name: "body", Type: TypeText},
		{Name: "tags", Type: TypeMultiple},
		{Name: "n", Type: TypeInt},
	},
}

// searchVocab are the words of the random texts: short and long, with
// neighbours at edit distances 1 and 2.
var searchVocab = []string{
	"a", "an", "ant", "and", "cat", "cart", "card", "care", "cared", "scare",
	"house", "horse", "mouse", "moose", "louse", "hose", "search", "starch",
	"branch", "brunch", "bench", "zebra", "zebras", "über", "uber", "naïve",
	"naive", "x1", "x12", "x123",
}

func randomText(rng *rand.Rand, words int) string {
	ws := make([]string, words)
	for i := range ws {
		w := searchVocab[rng.Intn(len(searchVocab))]
		if rng.Intn(5) == 0 {
			r := []rune(w)
			w = strings.ToUpper(string(r[:1])) + string(r[1:])
		}
		ws[i] = w
	}
	return strings.Join(ws, " ")
}

func randomDoc(rng *rand.Rand) map[string]any {
	doc := map[string]any{"n": json.Number(fmt.Sprint(rng.Intn(10)))}
	if rng.Intn(6) > 0 {
		doc["title"] = randomText(rng, 1+rng.Intn(4))
	}
	if rng.Intn(6) > 0 {
		doc["body"] = randomText(rng, rng.Intn(40))
	}
	if rng.Intn(3) > 0 {
		var tags []any
		for range rng.Intn(4) {
			tags = append(tags, randomText(rng, 1+rng.Intn(2)))
		}
		doc["tags"] = tags
	}
	return doc
}

// searchOracle ranks records by the search rules computed from the texts
// directly: no postings, no dictionary.
type searchOracle map[string]map[string]any

func (o searchOracle) clone() searchOracle {
	c := searchOracle{}
	for id, r := range o {
		c[id] = r
	}
	return c
}

type oracleHit struct {
	id    string
	score float64
}

// fieldTexts returns a record's texts of one column, and whether it has a
// value.
func fieldTexts(rec map[string]any, col string) ([]string, bool) {
	switch v := rec[col].(type) {
	case string:
		return []string{v}, true
	case []any:
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = s.(string)
		}
		return out, true
	}
	return nil, false
}

func (o searchOracle) search(words []string, fuzz int, phrase bool, target []string, weights map[string]float64, filterN *int) (hits []oracleHit, total int) {
	ids := make([]string, 0, len(o))
	for id := range o {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	fields := map[string]map[string]*oracleField{} // column → id → field
	vocab := map[string]bool{}
	for _, col := range []string{"title", "body", "tags"} {
		fields[col] = map[string]*oracleField{}
		for _, id := range ids {
			texts, ok := fieldTexts(o[id], col)
			if !ok {
				continue
			}
			f := &oracleField{tf: map[string]int{}}
			for _, s := range texts {
				toks := fts.Tokenize(s)
				f.toks = append(f.toks, toks)
				for _, t := range toks {
					f.tf[t.Term]++
					vocab[t.Term] = true
				}
				f.words += len(toks)
			}
			fields[col][id] = f
		}
	}
	// Expansions of each word over the vocabulary of live records.
	expansions := make([]map[string]oracleExp, len(words))
	for i, w := range words {
		expansions[i] = map[string]oracleExp{}
		k := fts.Edits(w, fuzz)
		for term := range vocab {
			if d := levenshteinOSA(w, term); d <= k {
				expansions[i][term] = oracleExp{dist: d}
			} else if phrase && i == len(words)-1 && strings.HasPrefix(term, w) {
				expansions[i][term] = oracleExp{completion: true}
			}
		}
	}
	scores := map[string]float64{}
	matched := map[string]bool{}
	for _, col := range target {
		docs, sum := 0, 0
		df := map[string]int{}
		for _, f := range fields[col] {
			docs++
			sum += fts.BucketLength(fts.LengthBucket(f.words))
			for t := range f.tf {
				df[t]++
			}
		}
		avg := 0.0
		if docs > 0 {
			avg = float64(sum) / float64(docs)
		}
		for i := range words {
			for _, id := range ids {
				if filterN != nil && o[id]["n"] != json.Number(fmt.Sprint(*filterN)) {
					continue
				}
				f := fields[col][id]
				if f == nil {
					continue
				}
				best, hit := 0.0, false
				for term, ex := range expansions[i] {
					tf := f.tf[term]
					if tf == 0 {
						continue
					}
					levels := 0
					for _, l := range fts.TFLevels {
						if tf >= int(l) {
							levels++
						}
					}
					s := weights[col] * fts.MatchFactor(ex.dist, ex.completion) *
						fts.TermBM25(fts.IDF(docs, df[term]), fts.TFClass(levels), fts.BucketLength(fts.LengthBucket(f.words)), avg)
					best, hit = max(best, s), true
				}
				if hit {
					scores[id] += best
					matched[id] = true
				}
			}
		}
	}
	for id := range matched {
		if phrase && len(words) > 1 && !o.hasPhrase(fields, target, id, expansions) {
			continue
		}
		hits = append(hits, oracleHit{id, scores[id]})
	}
	slices.SortFunc(hits, func(a, b oracleHit) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	return hits, len(hits)
}

// hasPhrase reports whether a searched field of the record holds the
// query words on consecutive positions.
func (o searchOracle) hasPhrase(fields map[string]map[string]*oracleField, target []string, id string, exps []map[string]oracleExp) bool {
	for _, col := range target {
		f := fields[col][id]
		if f == nil {
			continue
		}
		for _, toks := range f.toks {
			for start := range toks {
				ok := true
				for j := range exps {
					k := start + j
					if k >= len(toks) || toks[k].Pos != toks[start].Pos+j {
						ok = false
						break
					}
					if _, in := exps[j][toks[k].Term]; !in {
						ok = false
						break
					}
				}
				if ok {
					return true
				}
			}
		}
	}
	return false
}

type oracleField struct {
	tf    map[string]int
	words int
	toks  [][]fts.Token
}

type oracleExp struct {
	dist       int
	completion bool
}

// levenshteinOSA is the optimal-string-alignment distance by its
// definition, over characters.
func levenshteinOSA(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// TestSearchDifferential writes random texts on main and on a fork, and
// after each round compares random searches on both branches with the
// oracle: the same records, in the same order, with the same scores.
func TestSearchDifferential(t *testing.T) {
	seed := *searchSeed
	if seed == 0 {
		seed = rand.Int63()
	}
	t.Logf("seed %d (-search.seed to repeat)", seed)
	rng := rand.New(rand.NewSource(seed))
	e, main := recFixture(t, searchTables)
	child := main
	child.Branch = "child"
	models := map[string]searchOracle{"main": {}}
	refs := map[string]Ref{"main": main}
	rounds, writes, queries := 8, 40, 30
	if testing.Short() {
		rounds, writes, queries = 5, 30, 20
	}
	next, searches, found := 0, 0, 0
	for round := range rounds {
		if round == 2 {
			if err := e.Branches().Create(child, CreateBranchRequest{From: "main"}); err != nil {
				t.Fatal(err)
			}
			models["child"], refs["child"] = models["main"].clone(), child
		}
		for _, name := range model.SortedKeys(models) {
			m, ref := models[name], refs[name]
			for range writes {
				ids := model.SortedKeys(m)
				switch op := rng.Intn(10); {
				case op < 5 || len(ids) == 0:
					next++
					id := fmt.Sprintf("r%03d", next)
					doc := randomDoc(rng)
					if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", ID: id, Values: doc}); err != nil {
						t.Fatal(err)
					}
					m[id] = doc
				case op < 8:
					id := ids[rng.Intn(len(ids))]
					doc := randomDoc(rng)
					if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", ID: id, Values: doc}); err != nil {
						t.Fatal(err)
					}
					m[id] = doc
				default:
					id := ids[rng.Intn(len(ids))]
					if _, err := e.WriteOne(ref, Op{Kind: OpDelete, Table: "docs", ID: id}); err != nil {
						t.Fatal(err)
					}
					delete(m, id)
				}
			}
		}
		for _, name := range model.SortedKeys(models) {
			for q := range queries {
				if checkRandomSearch(t, e, refs[name], models[name], rng, fmt.Sprintf("round %d %s query %d", round, name, q)) > 0 {
					found++
				}
				searches++
			}
		}
	}
	// Most random queries must find something, or the comparison says
	// little.
	t.Logf("%d searches, %d found records", searches, found)
	if found < searches/2 {
		t.Fatalf("only %d of %d searches found records", found, searches)
	}
}

func checkRandomSearch(t *testing.T, e *Engine, ref Ref, m searchOracle, rng *rand.Rand, label string) (hits int) {
	t.Helper()
	nw := 1 + rng.Intn(3)
	var words []string
	for range nw {
		w := strings.ToLower(searchVocab[rng.Intn(len(searchVocab))])
		if rng.Intn(3) == 0 && len(w) > 2 {
			// a typo: drop, double or swap a letter
			r := []rune(w)
			i := rng.Intn(len(r) - 1)
			switch rng.Intn(3) {
			case 0:
				r = append(r[:i], r[i+1:]...)
			case 1:
				r = append(r[:i+1], r[i:]...)
			default:
				r[i], r[i+1] = r[i+1], r[i]
			}
			w = string(r)
		}
		if r := []rune(w); rng.Intn(4) == 0 && len(r) > 2 {
			w = string(r[:2])
		}
		words = append(words, w)
	}
	fuzz := rng.Intn(3)
	phrase := rng.Intn(3) == 0
	target := []string{"title", "body", "tags"}
	weights := map[string]float64{"title": 1, "body": 1, "tags": 1}
	var targetJSON json.RawMessage
	if rng.Intn(2) == 0 {
		target = nil
		var items []any
		for _, c := range []string{"title", "body", "tags"} {
			if rng.Intn(3) == 0 {
				continue
			}
			w := float64(1 + rng.Intn(10))
			weights[c] = w
			target = append(target, c)
			items = append(items, map[string]any{"column": c, "weight": w})
		}
		targetJSON, _ = json.Marshal(items)
		if len(items) == 0 {
			// An empty target searches everything, as none does.
			target = []string{"title", "body", "tags"}
			weights = map[string]float64{"title": 1, "body": 1, "tags": 1}
		}
	}
	var filterN *int
	var filter json.RawMessage
	if rng.Intn(4) == 0 {
		n := rng.Intn(10)
		filterN = &n
		filter = json.RawMessage(fmt.Sprintf(`{"n": %d}`, n))
	}
	query := strings.Join(words, " ")
	f := float64(fuzz)
	size := 200
	in := SearchRequest{Query: &query, Fuzziness: &f, Size: &size}
	if err := readSearch(&in, targetJSON, filter, nil); err != nil {
		t.Fatal(err)
	}
	if phrase {
		p := "phrase"
		in.Prefix = &p
	}
	res, err := e.SearchTable(ctx, ref, "docs", in, SearchOptions{})
	if err != nil {
		t.Fatalf("%s: %q: %v", label, query, err)
	}
	// The engine's words are the query's tokens, repeats included.
	var toks []string
	for _, tok := range fts.Tokenize(query) {
		toks = append(toks, tok.Term)
	}
	want, total := m.search(toks, fuzz, phrase, target, weights, filterN)
	if res.TotalCount != total {
		t.Fatalf("%s: %q fuzziness %d phrase %v target %v filter %s: totalCount %d, oracle %d", label, query, fuzz, phrase, target, filter, res.TotalCount, total)
	}
	if len(want) > size {
		want = want[:size]
	}
	got := make([]oracleHit, len(res.Records))
	for i, h := range res.Records {
		got[i] = oracleHit{h.Doc.ID, h.Score}
	}
	gotList, wantList := hitList(got), hitList(want)
	if !slices.Equal(gotList, wantList) {
		t.Fatalf("%s: %q fuzziness %d phrase %v target %v filter %s:\n got %v\nwant %v", label, query, fuzz, phrase, target, filter, gotList, wantList)
	}
	return len(gotList)
}

// hitList prints hits for comparison. Scores are sums whose rounding
// depends on the order of their terms, so scores within a billionth of
// each other count as a tie, and tied hits are listed by id.
func hitList(hits []oracleHit) []string {
	hits = slices.Clone(hits)
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }
	for i := 0; i < len(hits); {
		j := i + 1
		for j < len(hits) && near(hits[j-1].score, hits[j].score) {
			j++
		}
		slices.SortFunc(hits[i:j], func(a, b oracleHit) int { return strings.Compare(a.id, b.id) })
		i = j
	}
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = fmt.Sprintf("%s %.10g", h.id, h.score)
	}
	return out
}

// TestSearchSeesAcknowledgedWrites runs writers and searchers side by side:
// every write, once acknowledged, is found by the next search of its
// writer, and searchers never see a record half indexed.
func TestSearchSeesAcknowledgedWrites(t *testing.T) {
	e, ref := recFixture(t, searchTables)
	const writers, perWriter = 3, 30
	size := 200
	errs := make(chan error, writers+1)
	done := make(chan struct{})
	for w := range writers {
		go func() {
			for i := range perWriter {
				word := fmt.Sprintf("w%dn%d", w, i)
				id := fmt.Sprintf("r%d-%d", w, i)
				doc := map[string]any{"title": "marker " + word, "body": randomText(rand.New(rand.NewSource(int64(i))), 20)}
				if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", ID: id, Values: doc}); err != nil {
					errs <- err
					return
				}
				q, f := word, 0.0
				res, err := e.SearchTable(ctx, ref, "docs", SearchRequest{Query: &q, Fuzziness: &f}, SearchOptions{})
				if err != nil {
					errs <- err
					return
				}
				if len(res.Records) != 1 || res.Records[0].Doc.ID != id {
					errs <- fmt.Errorf("write %s acknowledged, then a search for %q found %d records", id, word, len(res.Records))
					return
				}
			}
			errs <- nil
		}()
	}
	go func() {
		q, f := "marker", 0.0
		for {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			res, err := e.SearchTable(ctx, ref, "docs", SearchRequest{Query: &q, Fuzziness: &f, Size: &size}, SearchOptions{})
			if err != nil {
				errs <- err
				return
			}
			for _, h := range res.Records {
				if h.Doc.Values["title"] == nil {
					errs <- fmt.Errorf("record %s found without its title", h.Doc.ID)
					return
				}
			}
		}
	}()
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	q, f := "marker", 0.0
	res, err := e.SearchTable(ctx, ref, "docs", SearchRequest{Query: &q, Fuzziness: &f, Size: &size}, SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.TotalCount != writers*perWriter {
		t.Fatalf("totalCount %d, want %d", res.TotalCount, writers*perWriter)
	}
}

// FuzzSearchRequest feeds arbitrary queries, targets, filters and boosters
// to a table search: every answer is a ranking or an invalid-input error,
// never a panic or another failure.
func FuzzSearchRequest(f *testing.F) {
	f.Add("cart house", 1.0, `["title", {"column": "body", "weight": 3}, "*"]`, `{"n": {"$gt": 2}}`,
		`[{"numericBooster": {"column": "n", "factor": 2, "modifier": "log1p"}}]`)
	f.Add("zebr", 2.0, `null`, `{"title": {"$contains": "a"}}`,
		`[{"valueBooster": {"column": "tags", "value": "cat", "factor": 1, "ifMatchesFilter": {"n": 1}}}]`)
	f.Add("naïve über", 0.0, `[]`, `{}`, `[{"dateBooster": {"column": "svc.createdAt", "scale": "2d", "decay": 0.3}}]`)
	f.Add("", 3.0, `[{"column": 1}]`, `[1]`, `[{}]`)
	f.Add("x", 0.5, `"title"`, `{"body": {"$startsWith": "a"}}`, `[{"dateBooster": {"column": "n", "scale": "0d"}}]`)
	e, ref := recFixture(f, searchTables)
	rng := rand.New(rand.NewSource(1))
	for i := range 40 {
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", ID: fmt.Sprintf("r%d", i), Values: randomDoc(rng)}); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, query string, fuzz float64, target, filter, boosters string) {
		prefix := "phrase"
		if len(query)%2 == 0 {
			prefix = "disabled"
		}
		in := SearchRequest{Query: &query, Fuzziness: &fuzz, Prefix: &prefix}
		if err := readSearch(&in, []byte(target), []byte(filter), []byte(boosters)); err != nil {
			var ie *index.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("target %s filter %s boosters %s: %v (not an input error)", target, filter, boosters, err)
			}
			return
		}
		res, err := e.SearchTable(ctx, ref, "docs", in, SearchOptions{})
		if err != nil {
			var ee *Error
			if !errors.As(err, &ee) || ee.Code != CodeInvalid {
				t.Fatalf("query %q target %s filter %s boosters %s: %v (not an invalid-input error)", query, target, filter, boosters, err)
			}
			return
		}
		for i := 1; i < len(res.Records); i++ {
			if res.Records[i].Score > res.Records[i-1].Score {
				t.Fatalf("query %q: records out of order", query)
			}
		}
	})
}

// TestSearchCompactsVocabulary writes more new words than a vocabulary
// keeps outside its automaton: the next search answers at once, the
// vocabulary is rebuilt in the background, and searches answer the same
// before and after.
func TestSearchCompactsVocabulary(t *testing.T) {
	e, ref := recFixture(t, searchTables)
	search := func(q string) []string {
		t.Helper()
		fuzz := 1.0
		res, err := e.SearchTable(ctx, ref, "docs", SearchRequest{Query: &q, Fuzziness: &fuzz}, SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range res.Records {
			out = append(out, fmt.Sprintf("%s %.6f", h.Doc.ID, h.Score))
		}
		return out
	}
	search("first") // builds the search store before the words are written
	var batch []map[string]any
	for i := range memstore.MaxPendingTerms + 100 {
		batch = append(batch, map[string]any{"id": fmt.Sprintf("w%05d", i), "body": fmt.Sprintf("word%05d common", i)})
		if len(batch) == MaxBulkRecords || i == memstore.MaxPendingTerms+99 {
			if _, err := e.BulkInsert(ctx, ref, "docs", batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	pending := func() int {
		t.Helper()
		src, release, err := e.openSource(ctx, ref, "docs", memstore.Need{Search: true})
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		return src.view.Search.Lexicon().Pending()
	}
	if n := pending(); n <= memstore.MaxPendingTerms {
		t.Fatalf("%d words outside the automaton, want more than %d", n, memstore.MaxPendingTerms)
	}
	before := search("word00042 word01234")
	if len(before) < 2 {
		t.Fatalf("found %v, want word00042 and word01234 at least", before)
	}
	for deadline := time.Now().Add(10 * time.Second); pending() > 0; {
		if time.Now().After(deadline) {
			t.Fatal("the vocabulary was not rebuilt")
		}
		time.Sleep(time.Millisecond)
	}
	if after := search("word00042 word01234"); !slices.Equal(after, before) {
		t.Fatalf("after the rebuild found %v, before %v", after, before)
	}
}
