package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// BenchmarkMainWithChildrenMix isolates what live children cost their
// parent on the query mix of the benchmark suite (bench/gen's filter
// queries), as W6 measures it over HTTP: two databases hold the same
// generated docs and receive the same single-record updates of main, five
// between forks, and one of them forks a live child after each group. The
// queries run on main of both, interleaved, through a record cache as the
// server runs them; the ratio with/alone is what main pays for its
// children (target ≤ 1.1).
func BenchmarkMainWithChildrenMix(b *testing.B) {
	type fixture struct {
		env         *benchEnv
		alone, with engine.Ref
		mix         []engine.QueryRequest
	}
	for _, children := range []int{20} {
		get := perSize(b, func(b *testing.B, env *benchEnv, n int) *fixture {
			f := &fixture{env: env, alone: env.ref("alone", "main"), with: env.ref("with", "main")}
			g := gen.New(gen.Config{N: n, Seed: benchSeed})
			for _, ref := range []engine.Ref{f.alone, f.with} {
				loadGenDatabase(b, env, g, ref)
			}
			env.durable(b)
			at := 0
			for k := range children {
				for range 5 {
					id := gen.DocID(at * 7919 % n)
					at++
					for _, ref := range []engine.Ref{f.alone, f.with} {
						ops := []engine.Op{{Kind: engine.OpUpdate, Table: gen.DocsTable, ID: id, Values: map[string]any{"views": int64(at)}}}
						if _, err := env.e.Write(context.Background(), ref, ops); err != nil {
							b.Fatalf("update %v %s: %v", ref, id, err)
						}
					}
				}
				child := env.ref("with", fmt.Sprintf("live%02d", k))
				if err := env.e.Branches().Create(child, engine.CreateBranchRequest{From: "main"}); err != nil {
					b.Fatal(err)
				}
			}
			for _, q := range g.Queries(40).Filter {
				req := engine.QueryRequest{Page: engine.PageInput{Size: &queryPage}}
				var err error
				if req.Filter, err = index.ReadFilter(q.Filter); err == nil {
					req.Sort, err = index.ReadSort(q.Sort)
				}
				if err != nil {
					b.Fatalf("%s %s: %v", q.Filter, q.Sort, err)
				}
				f.mix = append(f.mix, req)
			}
			return f
		})
		for _, n := range benchSizes(b, 1e4, 1e5, 1e6) {
			b.Run(fmt.Sprintf("%s/children=%d", sizeLabel(n), children), func(b *testing.B) {
				f := get(b, n)
				opts := engine.QueryOptions{Views: true, Records: engine.NewRecordCache(64 << 20)}
				warm := func() {
					for _, q := range f.mix {
						for _, ref := range []engine.Ref{f.alone, f.with} {
							if _, err := f.env.e.Query(context.Background(), ref, gen.DocsTable, q, opts); err != nil {
								b.Fatalf("query %v: %v", ref, err)
							}
						}
					}
				}
				// The first queries start the column stores' builds: time
				// once they are built.
				warm()
				waitForBuilds(b, f.env.e)
				warm()
				b.ResetTimer()
				reportSides(b, "query", "alone", fmt.Sprintf("with%d", children),
					interleavedGenQueries(b, f.env.e, f.alone, f.with, f.mix, opts))
			})
		}
	}
}

// createGenDatabase creates the database of ref with the generated users
// and docs tables, empty.
func createGenDatabase(b *testing.B, env *benchEnv, ref engine.Ref) {
	b.Helper()
	if _, err := env.e.CreateDatabase(engine.CreateDatabaseRequest{Workspace: env.ws, Name: ref.Database, Region: "local"}); err != nil {
		b.Fatal(err)
	}
	for _, t := range []struct {
		name string
		cols []engine.ColumnDef
	}{{gen.UsersTable, gen.UsersColumns()}, {gen.DocsTable, gen.DocsColumns()}} {
		if _, err := env.e.Schema().CreateTable(ref, t.name); err != nil {
			b.Fatal(err)
		}
		if _, err := env.e.Schema().SetTableColumns(ref, t.name, t.cols); err != nil {
			b.Fatal(err)
		}
	}
}

// loadGenDatabase creates the database of ref with the generated users and
// docs tables and loads them.
func loadGenDatabase(b *testing.B, env *benchEnv, g *gen.Gen, ref engine.Ref) {
	createGenDatabase(b, env, ref)
	loadGenerated(b, env.e, ref, gen.UsersTable, g.Users)
	loadGenerated(b, env.e, ref, gen.DocsTable, g.Docs)
}

// interleavedGenQueries times the queries of mix on the docs table of two
// branches as interleavedQueriesWith does on the table of benchColumns.
func interleavedGenQueries(b *testing.B, e *engine.Engine, x, y engine.Ref, mix []engine.QueryRequest, opts engine.QueryOptions) (side [2]sideCost) {
	refs := [2]engine.Ref{x, y}
	return interleavedOn(b, len(mix), func(s, i int) {
		if _, err := e.Query(context.Background(), refs[s], gen.DocsTable, mix[i], opts); err != nil {
			b.Fatalf("query %v: %v", refs[s], err)
		}
	})
}
