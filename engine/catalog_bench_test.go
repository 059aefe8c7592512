package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// BenchmarkCatalogScale measures what creating one more table, column or
// branch costs as their number grows: the median of a run of creations
// around the 100th, the 1,000th and the 10,000th of a database (the 25
// before and the 25 after each), and the
// ratios of the later medians to the first, which should stay near 1. One
// iteration builds all 10,000; run it with -benchtime 1x. The engine
// opens with NoSync, so that the figures are the catalog's work and not
// the disk's.
func BenchmarkCatalogScale(b *testing.B) {
	marks := []int{100, 1_000, 10_000}
	const run = 50 // creations timed around each mark
	kinds := []struct {
		name   string
		create func(env *benchEnv, ref engine.Ref, i int) error
	}{
		{"tables", func(env *benchEnv, ref engine.Ref, i int) error {
			_, err := env.e.Schema().CreateTable(ref, fmt.Sprintf("t%05d", i))
			return err
		}},
		{"columns", func(env *benchEnv, ref engine.Ref, i int) error {
			// Columns of one database, 100 to a table: the 10,000th lands
			// in a schema of 10,000 columns.
			table := fmt.Sprintf("t%05d", (i-1)/100)
			if (i-1)%100 == 0 {
				if _, err := env.e.Schema().CreateTable(ref, table); err != nil {
					return err
				}
			}
			_, err := env.e.Schema().AddColumn(ref, table, engine.ColumnDef{Name: fmt.Sprintf("c%05d", i), Type: engine.TypeString})
			return err
		}},
		{"branches", func(env *benchEnv, ref engine.Ref, i int) error {
			return env.e.Branches().Create(engine.Ref{Workspace: ref.Workspace, Database: ref.Database, Branch: fmt.Sprintf("b%05d", i)},
				engine.CreateBranchRequest{From: "main"})
		}},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			for range b.N {
				env := newBenchEnv(b, b)
				if _, err := env.e.CreateDatabase(engine.CreateDatabaseRequest{Workspace: env.ws, Name: "db", Region: "local"}); err != nil {
					b.Fatal(err)
				}
				ref := env.ref("db", "main")
				if _, err := env.e.Schema().CreateTable(ref, "base"); err != nil {
					b.Fatal(err)
				}
				medians := map[int]time.Duration{}
				var times []time.Duration
				for i := 1; i <= marks[len(marks)-1]+run/2; i++ {
					start := time.Now()
					if err := k.create(env, ref, i); err != nil {
						b.Fatal(err)
					}
					d := time.Since(start)
					for _, m := range marks {
						if i > m-run/2 && i <= m+run/2 {
							times = append(times, d)
							if i == m+run/2 {
								slices.Sort(times)
								medians[m] = times[len(times)/2]
								times = times[:0]
							}
						}
					}
				}
				first := medians[marks[0]]
				for _, m := range marks {
					b.ReportMetric(float64(medians[m].Microseconds()), fmt.Sprintf("us@%d", m))
				}
				for _, m := range marks[1:] {
					r := float64(medians[m]) / float64(first)
					b.ReportMetric(r, fmt.Sprintf("ratio%d/%d", m, marks[0]))
					b.Logf("%s: median %v at %d, %v at %d: ratio %.2f", k.name, medians[m], m, first, marks[0], r)
				}
			}
		})
	}
}
