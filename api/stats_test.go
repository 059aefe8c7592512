package api

import (
	"sync"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// Branch counters count every request made at once, by hour: a slot a day
// old starts again from zero, and branches keep their own counts.
func TestAccessStatsCounts(t *testing.T) {
	var a accessStats
	main := engine.Ref{Workspace: "w", Database: "d", Branch: "main"}
	dev := engine.Ref{Workspace: "w", Database: "d", Branch: "dev"}
	now := time.Date(2026, 11, 27, 10, 30, 0, 0, time.UTC)
	count := func(ref engine.Ref, at time.Time) (reads, writes int64) {
		r, w := a.series(ref, at)
		for i := range r {
			reads += r[i]["value"].(int64)
			writes += w[i]["value"].(int64)
		}
		return reads, writes
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				ref := main
				if i%4 == 0 {
					ref = dev
				}
				a.note(ref, g%2 == 0, now)
			}
		})
	}
	wg.Wait()
	if r, w := count(main, now); r != 3000 || w != 3000 {
		t.Errorf("main: %d reads, %d writes; want 3000 and 3000", r, w)
	}
	if r, w := count(dev, now); r != 1000 || w != 1000 {
		t.Errorf("dev: %d reads, %d writes; want 1000 and 1000", r, w)
	}
	// An hour later both hours count; a day later the first is gone, and
	// its slot counts the new hour alone.
	a.note(main, false, now.Add(time.Hour))
	if r, _ := count(main, now.Add(time.Hour)); r != 3001 {
		t.Errorf("an hour later: %d reads, want 3001", r)
	}
	day := now.Add(statsHours * time.Hour)
	a.note(main, false, day)
	if r, w := count(main, day); r != 2 || w != 0 {
		t.Errorf("a day later: %d reads, %d writes; want 2 and 0", r, w)
	}
}
