package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// Vector search benchmarks: n records (1e4 and 1e5, up to
// COPPICE_BENCH_MAX) with a 64-dimensional vector of normal components and
// one of ten categories, 5% without a vector. Each op is one
// Engine.VectorSearch for the 10 closest records to a fixed query, over
// every record or over one category (a tenth) by a filter. The first
// search of a size builds the column's vector store, outside the timed
// region; its time is logged.

// vectorBenchDim is the dimension of the benchmark vectors.
const vectorBenchDim = 64

// vectorBenchFixture is a durable engine holding the vectors of one size.
type vectorBenchFixture struct {
	env *benchEnv
	ref engine.Ref
}

// buildVectorBenchFixture loads n records into table vecs of database vec.
func buildVectorBenchFixture(b *testing.B, env *benchEnv, n int) *vectorBenchFixture {
	f := &vectorBenchFixture{env: env, ref: env.ref("vec", "main")}
	if _, err := env.e.CreateDatabase(engine.CreateDatabaseRequest{Workspace: env.ws, Name: "vec", Region: "local"}); err != nil {
		b.Fatal(err)
	}
	if _, err := env.e.Schema().CreateTable(f.ref, "vecs"); err != nil {
		b.Fatal(err)
	}
	if _, err := env.e.Schema().SetTableColumns(f.ref, "vecs", []engine.ColumnDef{
		{Name: "emb", Type: engine.TypeVector, Vector: &engine.VectorDef{Dimension: vectorBenchDim}},
		{Name: "cat", Type: engine.TypeString},
	}); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	r := rand.New(rand.NewPCG(benchSeed, 64))
	batch := make([]map[string]any, 0, engine.MaxBulkRecords)
	for start := 0; start < n; start += engine.MaxBulkRecords {
		batch = batch[:0]
		for i := start; i < min(n, start+engine.MaxBulkRecords); i++ {
			rec := map[string]any{"id": benchID(i), "cat": fmt.Sprintf("c%d", r.IntN(10))}
			if r.IntN(20) > 0 {
				rec["emb"] = benchVector(r)
			}
			batch = append(batch, rec)
		}
		if _, err := env.e.BulkInsert(context.Background(), f.ref, "vecs", batch); err != nil {
			b.Fatal(err)
		}
	}
	t1 := time.Now()
	env.durable(b)
	if _, err := env.e.VectorSearch(context.Background(), f.ref, "vecs", engine.VectorSearchRequest{Column: "emb", Query: benchVector(r)}); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d records in %v; first search (building the vector store) %v",
		n, t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	return f
}

// benchVector returns a vector of normal components.
func benchVector(r *rand.Rand) []float64 {
	v := make([]float64, vectorBenchDim)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

func BenchmarkVectorSearch(b *testing.B) {
	fixture := perSize(b, buildVectorBenchFixture)
	query := benchVector(rand.New(rand.NewPCG(benchSeed, 1)))
	l2 := engine.SimilarityL2
	for _, n := range benchSizes(b, 1e4, 1e5) {
		for _, c := range []struct {
			name   string
			in     engine.VectorSearchRequest
			filter json.RawMessage
		}{
			{"cosine", engine.VectorSearchRequest{Column: "emb", Query: query}, nil},
			{"l2", engine.VectorSearchRequest{Column: "emb", Query: query, Similarity: &l2}, nil},
			{"cosine-filter", engine.VectorSearchRequest{Column: "emb", Query: query}, json.RawMessage(`{"cat":"c3"}`)},
			{"l2-filter", engine.VectorSearchRequest{Column: "emb", Query: query, Similarity: &l2}, json.RawMessage(`{"cat":"c3"}`)},
		} {
			b.Run(sizeLabel(n)+"/"+c.name, func(b *testing.B) {
				f := fixture(b, n)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					in := c.in
					filter, err := index.ReadFilter(c.filter)
					if err != nil {
						b.Fatal(err)
					}
					in.Filter = filter
					res, err := f.env.e.VectorSearch(context.Background(), f.ref, "vecs", in)
					if err != nil {
						b.Fatal(err)
					}
					if len(res.Hits) != 10 {
						b.Fatalf("%d hits", len(res.Hits))
					}
				}
			})
		}
	}
}
