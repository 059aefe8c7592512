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
