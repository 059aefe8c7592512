package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkVectorSearchPaths compares, side by side on 1e4 records of
// dimension 64, a search through the vector store with one that reads
// every candidate's record: what the store buys.
func BenchmarkVectorSearchPaths(b *testing.B) {
	const n, dim = 10_000, 64
	db := openTestDB(b, Options{})
	ref := db.ref("main")
	if _, err := db.e.Schema().CreateTable(ref, "vecs"); err != nil {
		b.Fatal(err)
	}
	if _, err := db.e.Schema().AddColumn(ref, "vecs", ColumnDef{Name: "emb", Type: TypeVector, Vector: &VectorDef{Dimension: dim}}); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	vec := func() []float64 {
		v := make([]float64, dim)
		for i := range v {
			v[i] = r.NormFloat64()
		}
		return v
	}
	batch := make([]map[string]any, 0, MaxBulkRecords)
	for start := 0; start < n; start += MaxBulkRecords {
		batch = batch[:0]
		for i := start; i < start+MaxBulkRecords; i++ {
			batch = append(batch, map[string]any{"id": fmt.Sprintf("r%05d", i), "emb": vec()})
		}
		if _, err := db.e.BulkInsert(context.Background(), ref, "vecs", batch); err != nil {
			b.Fatal(err)
		}
	}
	in := VectorSearchRequest{Column: "emb", Query: vec()}
	for _, useStore := range []bool{true, false} {
		name := map[bool]string{true: "store", false: "records"}[useStore]
		b.Run(name, func(b *testing.B) {
			if _, err := db.e.vectorSearch(ctx, ref, "vecs", in, useStore); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := db.e.vectorSearch(ctx, ref, "vecs", in, useStore); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
