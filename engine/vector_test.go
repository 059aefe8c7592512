package engine

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/engine/internal/model"
)

var vectorSeed = flag.Int64("vector.seed", 0, "seed of TestVectorSearchDifferential (0: time)")

// vectorTables are the tables of the vector search tests: docs with a
// two-dimensional vector, a nested three-dimensional one and a link.
var vectorTables = map[string][]ColumnDef{
	"owners": {{Name: "name", Type: TypeString}},
	"docs": {
		{Name: "kind", Type: TypeString},
		{Name: "emb", Type: TypeVector, Vector: &VectorDef{Dimension: 2}},
		{Name: "owner", Type: TypeLink, Link: &LinkDef{Table: "owners"}},
		{Name: "info", Type: TypeObject, Columns: []ColumnDef{
			{Name: "v", Type: TypeVector, Vector: &VectorDef{Dimension: 3}},
		}},
	},
}

// vectorFixture holds docs a…z around the unit circle, for a query [1, 0]:
// e is a parallel to a, z the zero vector, f has no vector.
func vectorFixture(t *testing.T) (*Engine, Ref) {
	t.Helper()
	e, ref := recFixture(t, vectorTables)
	if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "owners", ID: "o1", Values: map[string]any{"name": "ann"}}); err != nil {
		t.Fatal(err)
	}
	docs := []struct {
		id, kind string
		emb      []float64
	}{
		{"z", "y", []float64{0, 0}},
		{"e", "y", []float64{2, 0}},
		{"c", "x", []float64{1, 1}},
		{"a", "x", []float64{1, 0}},
		{"f", "y", nil},
		{"d", "y", []float64{-1, 0}},
		{"b", "x", []float64{0, 1}},
	}
	for _, d := range docs {
		vals := map[string]any{"kind": d.kind, "owner": "o1"}
		if d.emb != nil {
			vals["emb"] = d.emb
		}
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", ID: d.id, Values: vals}); err != nil {
			t.Fatal(err)
		}
	}
	return e, ref
}

// vsearch runs a search through the vector store and through the records
// and returns the hits as "id:score …" and the total count. The two paths
// must agree exactly.
func vsearch(t *testing.T, e *Engine, ref Ref, in VectorSearchRequest) (string, int) {
	t.Helper()
	res, err := e.VectorSearch(ctx, ref, "docs", in)
	if err != nil {
		t.Fatalf("%+v: %v", in, err)
	}
	slow, err := e.vectorSearch(ctx, ref, "docs", in, false)
	if err != nil {
		t.Fatalf("%+v without the store: %v", in, err)
	}
	got, want := formatHits(res), formatHits(slow)
	if got != want || res.TotalCount != slow.TotalCount {
		t.Fatalf("%+v: store %s (%d), records %s (%d)", in, got, res.TotalCount, want, slow.TotalCount)
	}
	return got, res.TotalCount
}

// formatHits writes hits as "id:score" with four significant digits.
func formatHits(res *VectorSearchResult) string {
	var b strings.Builder
	for i, h := range res.Hits {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%.4g", h.Doc.ID, h.Score)
	}
	return b.String()
}

func intp(n int) *int { return &n }

func TestVectorSearchOrders(t *testing.T) {
	e, ref := vectorFixture(t)
	q := []float64{1, 0}
	f := func(in VectorSearchRequest, want string, wantTotal int) {
		t.Helper()
		got, total := vsearch(t, e, ref, in)
		if got != want || total != wantTotal {
			t.Errorf("%+v:\n got %s (%d)\nwant %s (%d)", in, got, total, want, wantTotal)
		}
	}
	// Cosine: a and e both point along q (a first by id); the zero vector
	// z counts as orthogonal, tied with b.
	f(VectorSearchRequest{Column: "emb", Query: q}, "a:1 e:1 c:0.8536 b:0.5 z:0.5 d:0", 6)
	f(VectorSearchRequest{Column: "emb", Query: q, Similarity: strp(SimilarityCosine)}, "a:1 e:1 c:0.8536 b:0.5 z:0.5 d:0", 6)
	// Distances: c, e and z at 1 (l1) or 1² (l2), b and d apart.
	f(VectorSearchRequest{Column: "emb", Query: q, Similarity: strp(SimilarityL1)}, "a:1 c:0.5 e:0.5 z:0.5 b:0.3333 d:0.3333", 6)
	f(VectorSearchRequest{Column: "emb", Query: q, Similarity: strp(SimilarityL2)}, "a:1 c:0.5 e:0.5 z:0.5 b:0.3333 d:0.2", 6)
	// A longer query changes distances, not cosines.
	f(VectorSearchRequest{Column: "emb", Query: []float64{3, 0}}, "a:1 e:1 c:0.8536 b:0.5 z:0.5 d:0", 6)
	f(VectorSearchRequest{Column: "emb", Query: []float64{3, 0}, Similarity: strp(SimilarityL2)}, "e:0.5 a:0.2 c:0.1667 z:0.1 b:0.09091 d:0.05882", 6)
	// A zero query is fine for distances.
	f(VectorSearchRequest{Column: "emb", Query: []float64{0, 0}, Similarity: strp(SimilarityL1)}, "z:1 a:0.5 b:0.5 d:0.5 c:0.3333 e:0.3333", 6)

	// Size cuts the list, not the count; ties are cut by id.
	f(VectorSearchRequest{Column: "emb", Query: q, Size: intp(2)}, "a:1 e:1", 6)
	f(VectorSearchRequest{Column: "emb", Query: q, Size: intp(1)}, "a:1", 6)
	f(VectorSearchRequest{Column: "emb", Query: q, Similarity: strp(SimilarityL1), Size: intp(3)}, "a:1 c:0.5 e:0.5", 6)
	f(VectorSearchRequest{Column: "emb", Query: q, Similarity: strp(SimilarityL1), Size: intp(5)}, "a:1 c:0.5 e:0.5 z:0.5 b:0.3333", 6)
	f(VectorSearchRequest{Column: "emb", Query: q, Size: intp(100)}, "a:1 e:1 c:0.8536 b:0.5 z:0.5 d:0", 6)

	// The filter applies before ranking; f (no vector) is never counted.
	f(VectorSearchRequest{Column: "emb", Query: q, Filter: mustFilter(`{"kind":"y"}`)}, "e:1 z:0.5 d:0", 3)
	f(VectorSearchRequest{Column: "emb", Query: q, Filter: mustFilter(`{"kind":"y"}`), Size: intp(1)}, "e:1", 3)
	f(VectorSearchRequest{Column: "emb", Query: q, Filter: mustFilter(`{"id":"f"}`)}, "", 0)
	f(VectorSearchRequest{Column: "emb", Query: q, Filter: mustFilter(`{"$exists":"emb"}`), Similarity: strp(SimilarityL2), Size: intp(2)}, "a:1 c:0.5", 6)
	f(VectorSearchRequest{Column: "emb", Query: q, Filter: mustFilter(`{"owner.name":"ann","kind":{"$isNot":"x"}}`)}, "e:1 z:0.5 d:0", 3)
	f(VectorSearchRequest{Column: "emb", Query: q, Filter: mustFilter(`{"kind":"none"}`)}, "", 0)
	f(VectorSearchRequest{Column: "emb", Query: q, Filter: mustFilter(`null`)}, "a:1 e:1 c:0.8536 b:0.5 z:0.5 d:0", 6)

	// A column nobody wrote.
	f(VectorSearchRequest{Column: "info.v", Query: []float64{1, 2, 3}}, "", 0)

	// Exact scores and whole records: links as ids, the vector itself.
	res, err := e.VectorSearch(ctx, ref, "docs", VectorSearchRequest{Column: "emb", Query: q, Similarity: strp(SimilarityL2), Size: intp(5)})
	if err != nil {
		t.Fatal(err)
	}
	var scores []float64
	for _, h := range res.Hits {
		scores = append(scores, h.Score)
	}
	if want := []float64{1, 0.5, 0.5, 0.5, 1.0 / 3}; !slices.Equal(scores, want) {
		t.Errorf("l2 scores %v, want %v", scores, want)
	}
	d := res.Hits[1].Doc
	if got := fmt.Sprint(d.ID, " ", d.Version, " ", d.Values); got != "c 0 map[emb:[1 1] kind:x owner:{o1}]" {
		t.Errorf("doc %s", got)
	}
	res, err = e.VectorSearch(ctx, ref, "docs", VectorSearchRequest{Column: "emb", Query: []float64{1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if h := res.Hits[0]; h.Doc.ID != "c" || math.Abs(h.Score-1) > 1e-15 || math.Abs(res.Hits[1].Score-(1+1/math.Sqrt2)/2) > 1e-15 {
		t.Errorf("cosine to [1 1]: %s", formatHits(res))
	}
}

func TestVectorSearchWrites(t *testing.T) {
	e, ref := vectorFixture(t)
	q := []float64{1, 0}
	write := func(op Op) {
		t.Helper()
		op.Table = "docs"
		if _, err := e.WriteOne(ref, op); err != nil {
			t.Fatal(err)
		}
	}
	f := func(ref Ref, fn, want string, wantTotal int) {
		t.Helper()
		in := VectorSearchRequest{Column: "emb", Query: q}
		if fn != "" {
			in.Similarity = &fn
		}
		got, total := vsearch(t, e, ref, in)
		if got != want || total != wantTotal {
			t.Errorf("%s %s:\n got %s (%d)\nwant %s (%d)", ref.Branch, fn, got, total, want, wantTotal)
		}
	}
	f(ref, "", "a:1 e:1 c:0.8536 b:0.5 z:0.5 d:0", 6)
	// The store is current after every kind of write: kept, not rebuilt.
	built := vectorStoreOf(t, e, ref, "docs", "emb")
	write(Op{Kind: OpUpdate, ID: "b", Values: map[string]any{"emb": []float64{1, 0}}})
	write(Op{Kind: OpDelete, ID: "a"})
	write(Op{Kind: OpUpdate, ID: "c", Values: map[string]any{"emb": nil}})
	write(Op{Kind: OpUpdate, ID: "f", Values: map[string]any{"emb": []float64{0, -1}}})
	write(Op{Kind: OpInsert, ID: "g", Values: map[string]any{"emb": []float64{5, 5}}})
	write(Op{Kind: OpInsert, ID: "d", Values: map[string]any{"kind": "y"}}) // replaced without a vector
	f(ref, "", "b:1 e:1 g:0.8536 f:0.5 z:0.5", 5)
	f(ref, SimilarityL1, "b:1 e:0.5 z:0.5 f:0.3333 g:0.1", 5)

	if vectorStoreOf(t, e, ref, "docs", "emb") != built {
		t.Errorf("writes rebuilt the vector store")
	}

	// A branch forked from main, then diverged: each sees its own.
	dev := ref
	dev.Branch = "dev"
	if err := e.Branches().Create(dev, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	f(dev, "", "b:1 e:1 g:0.8536 f:0.5 z:0.5", 5)
	if _, err := e.WriteOne(dev, Op{Kind: OpDelete, Table: "docs", ID: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.WriteOne(dev, Op{Kind: OpInsert, Table: "docs", ID: "h", Values: map[string]any{"emb": []float64{-3, 0}}}); err != nil {
		t.Fatal(err)
	}
	write(Op{Kind: OpUpdate, ID: "z", Values: map[string]any{"emb": []float64{1, 0}}})
	f(ref, "", "b:1 e:1 z:1 g:0.8536 f:0.5", 5)
	f(dev, "", "e:1 g:0.8536 f:0.5 z:0.5 h:0", 5)

	// A schema change drops the store; the next search builds it again.
	if _, err := e.Schema().AddColumn(ref, "docs", ColumnDef{Name: "n", Type: TypeInt}); err != nil {
		t.Fatal(err)
	}
	write(Op{Kind: OpUpdate, ID: "g", Values: map[string]any{"n": json.Number("1"), "emb": []float64{-1, -1}}})
	f(ref, "", "b:1 e:1 z:1 f:0.5 g:0.1464", 5)
	if vectorStoreOf(t, e, ref, "docs", "emb") == built {
		t.Errorf("a schema change kept the vector store")
	}
	if err := e.Branches().Delete(dev); err != nil {
		t.Fatal(err)
	}
	if _, err := e.VectorSearch(ctx, dev, "docs", VectorSearchRequest{Column: "emb", Query: q}); CodeOf(err) != CodeNotFound {
		t.Errorf("deleted branch: %v", err)
	}
	f(ref, SimilarityL2, "b:1 z:1 e:0.5 f:0.3333 g:0.1667", 5)
}

// branchTableOf returns the database, the branch and a table of ref,
// failing the test if any is missing.
func branchTableOf(t *testing.T, e *Engine, ref Ref, table string) (*database, *model.Branch, *model.Table) {
	t.Helper()
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.State().Branch(ref.Branch)
	if err != nil {
		t.Fatal(err)
	}
	tb := b.Schema.TableByName(table)
	if tb == nil {
		t.Fatalf("no table %s on %s", table, ref.Branch)
	}
	return d, b, tb
}

// vectorStoreOf returns the current vector store of a column of a table
// of a branch, failing the test if there is none.
func vectorStoreOf(t *testing.T, e *Engine, ref Ref, table, col string) *memstore.VectorStore {
	t.Helper()
	d, _, tb := branchTableOf(t, e, ref, table)
	v, err := d.Open(context.Background(), ref.Branch, table, memstore.Need{Store: memstore.Without, Vector: tb.ByPath[col].ID})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	if v.Vector == nil {
		t.Fatalf("no current vector store for %s.%s on %s", table, col, ref.Branch)
	}
	return v.Vector
}

// TestVectorSearchConcurrent runs searches while records change; with
// -race it checks the store's locking. Every answer must be well formed.
func TestVectorSearchConcurrent(t *testing.T) {
	e, ref := vectorFixture(t)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				id := fmt.Sprintf("w%d-%d", w, i%10)
				op := Op{Kind: OpInsert, Table: "docs", ID: id, Values: map[string]any{"emb": []float64{float64(i), float64(w)}}}
				if i%3 == 2 {
					op = Op{Kind: OpDelete, Table: "docs", ID: id}
				}
				if _, err := e.WriteOne(ref, op); err != nil && CodeOf(err) != CodeNotFound {
					t.Error(err)
					return
				}
			}
		}()
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				res, err := e.VectorSearch(ctx, ref, "docs", VectorSearchRequest{Column: "emb", Query: []float64{1, 1}, Size: intp(5)})
				if err != nil {
					t.Error(err)
					return
				}
				seen := map[string]bool{}
				for j, h := range res.Hits {
					if seen[h.Doc.ID] || j > 0 && h.Score > res.Hits[j-1].Score {
						t.Errorf("bad answer %s", formatHits(res))
						return
					}
					seen[h.Doc.ID] = true
				}
				if len(res.Hits) != min(5, res.TotalCount) || res.TotalCount < 6 {
					t.Errorf("%d hits of %d", len(res.Hits), res.TotalCount)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestVectorSearchErrors(t *testing.T) {
	e, ref := vectorFixture(t)
	q := []float64{1, 0}
	f := func(in VectorSearchRequest, code Code, want string) {
		t.Helper()
		_, err := e.VectorSearch(ctx, ref, "docs", in)
		mustCode(t, err, code, want)
	}
	f(VectorSearchRequest{Query: q}, CodeInvalid, "column is required")
	f(VectorSearchRequest{Column: "nope", Query: q}, CodeInvalid, "column [nope]: column not found")
	f(VectorSearchRequest{Column: "kind", Query: q}, CodeInvalid, "column [kind]: not a vector column")
	f(VectorSearchRequest{Column: "info", Query: q}, CodeInvalid, "not a vector column")
	f(VectorSearchRequest{Column: "id", Query: q}, CodeInvalid, "column [id]: column not found")
	f(VectorSearchRequest{Column: "emb"}, CodeInvalid, "queryVector is required")
	f(VectorSearchRequest{Column: "emb", Query: []float64{}}, CodeInvalid, "queryVector has 0 dimensions, column [emb] has 2")
	f(VectorSearchRequest{Column: "emb", Query: []float64{1, 2, 3}}, CodeInvalid, "queryVector has 3 dimensions")
	f(VectorSearchRequest{Column: "info.v", Query: q}, CodeInvalid, "column [info.v] has 3")
	f(VectorSearchRequest{Column: "emb", Query: q, Similarity: strp("dot")}, CodeInvalid, "similarityFunction must be cosineSimilarity, l1 or l2, got [dot]")
	f(VectorSearchRequest{Column: "emb", Query: q, Similarity: strp("L2")}, CodeInvalid, "similarityFunction")
	f(VectorSearchRequest{Column: "emb", Query: q, Size: intp(0)}, CodeInvalid, "size must be between 1 and 100, got 0")
	f(VectorSearchRequest{Column: "emb", Query: q, Size: intp(101)}, CodeInvalid, "size must be between 1 and 100, got 101")
	f(VectorSearchRequest{Column: "emb", Query: q, Size: intp(-1)}, CodeInvalid, "size must be between")
	f(VectorSearchRequest{Column: "emb", Query: []float64{0, 0}}, CodeInvalid, "queryVector must not be all zeros")
	f(VectorSearchRequest{Column: "emb", Query: []float64{math.NaN(), 1}, Similarity: strp(SimilarityL2)}, CodeInvalid, "finite")
	f(VectorSearchRequest{Column: "emb", Query: []float64{math.Inf(1), 1}, Similarity: strp(SimilarityL1)}, CodeInvalid, "finite")
	f(VectorSearchRequest{Column: "emb", Query: q, Filter: mustFilter(`{"nope":1}`)}, CodeInvalid, "column [nope]")
	f(VectorSearchRequest{Column: "emb", Query: q, Filter: mustFilter(`{"kind":{"$bogus":1}}`)}, CodeInvalid, "")
	f(VectorSearchRequest{Column: "emb", Query: q, Filter: mustFilter(`[1]`)}, CodeInvalid, "")

	in := VectorSearchRequest{Column: "emb", Query: q}
	for _, r := range []struct {
		ref   Ref
		table string
	}{
		{Ref{ref.Workspace, "nodb", "main"}, "docs"},
		{Ref{ref.Workspace, "db", "nobranch"}, "docs"},
		{ref, "notable"},
	} {
		if _, err := e.VectorSearch(ctx, r.ref, r.table, in); CodeOf(err) != CodeNotFound {
			t.Errorf("%v %s: %v, want not found", r.ref, r.table, err)
		}
	}
	// Not found comes before bad input.
	if _, err := e.VectorSearch(ctx, ref, "notable", VectorSearchRequest{}); CodeOf(err) != CodeNotFound {
		t.Errorf("unknown table, bad input: %v", err)
	}
}

// vecModel is the expected content of the differential test's table on one
// branch: id → record.
type vecModel map[string]*vecRecord

type vecRecord struct {
	emb  []float64 // 8 random normals, nil when null
	grid []float64 // 4 small integers, nil when null
	cat  string
}

func (m vecModel) clone() vecModel {
	out := vecModel{}
	for id, r := range m {
		c := *r
		out[id] = &c
	}
	return out
}

// brute ranks the model's records as the spec says, by the plain formulas:
// score desc, id asc.
func (m vecModel) brute(col string, q []float64, fn, cat string) []vecHit {
	var out []vecHit
	for id, r := range m {
		v := r.emb
		if col == "grid" {
			v = r.grid
		}
		if v == nil || cat != "" && r.cat != cat {
			continue
		}
		var s float64
		switch fn {
		case SimilarityL1:
			var d float64
			for i := range q {
				d += math.Abs(q[i] - v[i])
			}
			s = 1 / (1 + d)
		case SimilarityL2:
			var d2 float64
			for i := range q {
				d2 += (q[i] - v[i]) * (q[i] - v[i])
			}
			s = 1 / (1 + d2)
		default:
			var dot, nq, nv float64
			for i := range q {
				dot += q[i] * v[i]
				nq += q[i] * q[i]
				nv += v[i] * v[i]
			}
			cos := 0.0
			if nv > 0 {
				cos = dot / (math.Sqrt(nq) * math.Sqrt(nv))
			}
			s = (1 + cos) / 2
		}
		out = append(out, vecHit{id, s})
	}
	slices.SortFunc(out, func(a, b vecHit) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	return out
}

type vecHit struct {
	id    string
	score float64
}

// TestVectorSearchDifferential compares searches, through the store and
// through the records, with a brute-force ranking of a model, across random
// inserts, updates, deletes and nulls, on main and on a branch forked from
// it that then diverges. Vectors are often copies of others, so that ties
// by id are common; the grid column's small integers make l1 and l2 ties
// exact.
func TestVectorSearchDifferential(t *testing.T) {
	seed := *vectorSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -vector.seed=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	e, ref := recFixture(t, map[string][]ColumnDef{"pts": {
		{Name: "emb", Type: TypeVector, Vector: &VectorDef{Dimension: 8}},
		{Name: "grid", Type: TypeVector, Vector: &VectorDef{Dimension: 4}},
		{Name: "cat", Type: TypeString},
	}})
	models := map[string]vecModel{"main": {}}
	refs := map[string]Ref{"main": ref}

	var pool [][]float64 // emb vectors written, to copy
	randEmb := func() []float64 {
		if len(pool) > 0 && rng.Intn(4) == 0 {
			return slices.Clone(pool[rng.Intn(len(pool))])
		}
		v := make([]float64, 8)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		pool = append(pool, v)
		return slices.Clone(v)
	}
	randGrid := func() []float64 {
		v := make([]float64, 4)
		for i := range v {
			v[i] = float64(rng.Intn(5) - 2)
		}
		return v
	}
	cats := []string{"a", "b", "c"}
	nextID := 0
	randWrite := func(branch string) {
		m := models[branch]
		var ids []string
		for id := range m {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		op := Op{Table: "pts", Values: map[string]any{}}
		rec := &vecRecord{}
		switch k := rng.Intn(10); {
		case k < 4 || len(ids) == 0: // insert
			nextID++
			op.Kind, op.ID = OpInsert, fmt.Sprintf("p%04d", rng.Intn(5000))
			if _, ok := m[op.ID]; ok {
				op.ID = fmt.Sprintf("q%04d", nextID)
			}
			if rng.Intn(8) > 0 {
				rec.emb = randEmb()
				op.Values["emb"] = rec.emb
			}
			if rng.Intn(8) > 0 {
				rec.grid = randGrid()
				op.Values["grid"] = rec.grid
			}
			rec.cat = cats[rng.Intn(len(cats))]
			op.Values["cat"] = rec.cat
			m[op.ID] = rec
		case k < 8: // update some columns, maybe to null
			op.Kind, op.ID = OpUpdate, ids[rng.Intn(len(ids))]
			rec = m[op.ID]
			if rng.Intn(2) == 0 {
				if rng.Intn(5) == 0 {
					rec.emb = nil
					op.Values["emb"] = nil
				} else {
					rec.emb = randEmb()
					op.Values["emb"] = rec.emb
				}
			}
			if rng.Intn(2) == 0 {
				rec.grid = randGrid()
				op.Values["grid"] = rec.grid
			}
			if rng.Intn(3) == 0 {
				rec.cat = cats[rng.Intn(len(cats))]
				op.Values["cat"] = rec.cat
			}
		default:
			op.Kind, op.ID = OpDelete, ids[rng.Intn(len(ids))]
			delete(m, op.ID)
		}
		if _, err := e.WriteOne(refs[branch], op); err != nil {
			t.Fatalf("%s %s: %v", branch, describeOp(&op), err)
		}
	}
	check := func(branch string) {
		t.Helper()
		col, dim := "emb", 8
		if rng.Intn(2) == 0 {
			col, dim = "grid", 4
		}
		fns := []string{SimilarityL1, SimilarityL2}
		if col == "emb" {
			fns = append(fns, SimilarityCosine)
		}
		fn := fns[rng.Intn(len(fns))]
		q := make([]float64, dim)
		for i := range q {
			if col == "grid" {
				q[i] = float64(rng.Intn(5) - 2)
			} else {
				q[i] = rng.NormFloat64()
			}
		}
		size := 1 + rng.Intn(12)
		if rng.Intn(4) == 0 {
			size = 100
		}
		in := VectorSearchRequest{Column: col, Query: q, Similarity: &fn, Size: &size}
		cat := ""
		if rng.Intn(2) == 0 {
			cat = cats[rng.Intn(len(cats))]
			in.Filter = mustFilter(`{"cat":"` + cat + `"}`)
		}
		want := models[branch].brute(col, q, fn, cat)
		for _, useStore := range []bool{true, false} {
			res, err := e.vectorSearch(ctx, refs[branch], "pts", in, useStore)
			if err != nil {
				t.Fatalf("%s %+v: %v", branch, in, err)
			}
			if res.TotalCount != len(want) {
				t.Fatalf("%s %s %s cat %q store %v: total %d, want %d", branch, col, fn, cat, useStore, res.TotalCount, len(want))
			}
			w := want[:min(size, len(want))]
			ok := len(res.Hits) == len(w)
			for i := 0; ok && i < len(w); i++ {
				ok = res.Hits[i].Doc.ID == w[i].id && math.Abs(res.Hits[i].Score-w[i].score) < 1e-12
			}
			if !ok {
				var gb strings.Builder
				for _, h := range res.Hits {
					fmt.Fprintf(&gb, " %s:%.17g", h.Doc.ID, h.Score)
				}
				var wb strings.Builder
				for _, h := range w {
					fmt.Fprintf(&wb, " %s:%.17g", h.id, h.score)
				}
				t.Fatalf("%s %s %s q %v cat %q size %d store %v:\n got%s\nwant%s", branch, col, fn, q, cat, size, useStore, gb.String(), wb.String())
			}
		}
	}

	rounds, writes := 30, 15
	if testing.Short() {
		rounds = 12
	}
	for i := 0; i < 120; i++ {
		randWrite("main")
	}
	for round := 0; round < rounds; round++ {
		if round == rounds/3 {
			// Fork dev from main; both keep changing.
			dev := ref
			dev.Branch = "dev"
			if err := e.Branches().Create(dev, CreateBranchRequest{From: "main"}); err != nil {
				t.Fatal(err)
			}
			refs["dev"] = dev
			models["dev"] = models["main"].clone()
		}
		if round == 2*rounds/3 {
			// A schema change in the middle drops main's stores.
			if _, err := e.Schema().AddColumn(ref, "pts", ColumnDef{Name: "n", Type: TypeInt}); err != nil {
				t.Fatal(err)
			}
		}
		for branch := range models {
			for i := 0; i < writes; i++ {
				randWrite(branch)
			}
			for i := 0; i < 8; i++ {
				check(branch)
			}
		}
	}
}
