package api

import (
	"runtime"
	"strconv"
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

// A table full of branches active within the window counts no new branch
// until one goes idle, and does not copy itself for each one it refuses;
// once the window has moved past the branches' hour, new ones are counted.
func TestAccessStatsFull(t *testing.T) {
	var a accessStats
	now := time.Date(2026, 11, 27, 10, 30, 0, 0, time.UTC)
	ref := func(i int) engine.Ref {
		return engine.Ref{Workspace: "w", Database: "d", Branch: "b" + strconv.Itoa(i)}
	}
	for i := range maxStatsBranches {
		a.note(ref(i), false, now)
	}
	a.note(ref(maxStatsBranches), false, now)
	if a.branch(ref(maxStatsBranches)) != nil {
		t.Fatal("a branch counted in a table full of active branches")
	}
	// Within the hour no counted branch goes idle: a refused branch costs
	// neither a copy nor a scan of the table.
	refused, later := ref(maxStatsBranches+1), now.Add(time.Minute)
	if n := testing.AllocsPerRun(10, func() { a.note(refused, false, later) }); n != 0 {
		t.Fatalf("a refused branch allocated %v times: copied the table", n)
	}
	day := now.Add(statsHours * time.Hour)
	a.note(ref(maxStatsBranches), true, day)
	if _, w := a.series(ref(maxStatsBranches), day); w[len(w)-1]["value"].(int64) != 1 {
		t.Fatal("a new branch is not counted once the others went idle")
	}
}

// Counting a table's worth of new branches, each read at once after it is
// added, copies the read-mostly map a few times per branch, not once per
// branch: a copy per branch would allocate about 8 GB here.
func TestAccessStatsManyBranches(t *testing.T) {
	var a accessStats
	now := time.Date(2026, 11, 27, 10, 30, 0, 0, time.UTC)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range maxStatsBranches {
		ref := engine.Ref{Workspace: "w", Database: "d", Branch: "b" + strconv.Itoa(i)}
		a.note(ref, false, now)
		a.note(ref, true, now)
		if a.branch(ref) == nil {
			t.Fatalf("branch %d not counted", i)
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 512<<20 {
		t.Fatalf("counting %d new branches allocated %d MiB", maxStatsBranches, n>>20)
	}
	counted := engine.Ref{Workspace: "w", Database: "d", Branch: "b0"}
	if n := testing.AllocsPerRun(10, func() { a.note(counted, false, now) }); n != 0 {
		t.Fatalf("counting a request of a counted branch allocated %v times", n)
	}
	for i := range maxStatsBranches {
		ref := engine.Ref{Workspace: "w", Database: "d", Branch: "b" + strconv.Itoa(i)}
		want := int64(1)
		if i == 0 {
			want = 12 // and the eleven calls of AllocsPerRun above
		}
		if r, w := a.series(ref, now); r[len(r)-1]["value"].(int64) != want || w[len(w)-1]["value"].(int64) != 1 {
			t.Fatalf("branch %d: counts lost across merges", i)
		}
	}
}
