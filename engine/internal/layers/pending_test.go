package layers

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortRuns checks that ids made of sorted runs, few or many, long or
// short, come out sorted, each id once.
func TestSortRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, runs := range []int{0, 1, 2, 3, 5, 19, 64, 400} {
		for _, per := range []int{1, 7, 80} {
			var ids []string
			seen := map[string]bool{}
			for range runs {
				var run []string
				for range per {
					id := fmt.Sprintf("id%06d", rng.IntN(1_000_000))
					if !seen[id] {
						seen[id] = true
						run = append(run, id)
					}
				}
				slices.Sort(run)
				ids = append(ids, run...)
			}
			want := slices.Sorted(slices.Values(ids))
			sortRuns(ids)
			if !slices.Equal(ids, want) {
				t.Fatalf("%d runs of %d: not sorted", runs, per)
			}
		}
	}
}

// BenchmarkSortGroupIDs sorts the bitmap ids a group of 19 single-record
// inserts stages, one sorted run per record of the ids new to the group,
// with sortRuns and with a plain sort.
func BenchmarkSortGroupIDs(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	seen := map[string]bool{}
	var ids []string
	for range 19 {
		var run []string
		for range 140 {
			// A word's bitmap id: a column then the word, Zipf-like.
			id := fmt.Sprintf("\x00\x00\x00\x07t%s", fmt.Sprint(rng.IntN(1+rng.IntN(20000))))
			if !seen[id] {
				seen[id] = true
				run = append(run, id)
			}
		}
		slices.Sort(run)
		ids = append(ids, run...)
	}
	b.Logf("%d ids", len(ids))
	for _, bc := range []struct {
		name string
		sort func([]string)
	}{{"runs", sortRuns}, {"plain", slices.Sort[[]string]}} {
		b.Run(bc.name, func(b *testing.B) {
			work := make([]string, len(ids))
			for b.Loop() {
				copy(work, ids)
				bc.sort(work)
			}
		})
	}
}
