package main

import (
	"testing"
	"time"
)

// TestCursorWalksRhythm checks that the timed walks of a cursor query
// follow one another, with the walks that read the server's CPU after
// them, and that each timed page is charged those walks' mean CPU.
func TestCursorWalksRhythm(t *testing.T) {
	s := &suite{rep: &Report{}}
	var calls []string
	walk := func(q cursorQuery) (time.Duration, time.Duration, error) {
		calls = append(calls, "timed "+q.name)
		return 2 * time.Millisecond, time.Millisecond, nil
	}
	cpuWalks := 0
	cpuWalk := func(q cursorQuery) (time.Duration, time.Duration, error) {
		calls = append(calls, "cpu "+q.name)
		cpuWalks++
		// Alternate so that only the mean is a round figure.
		return time.Duration(100+cpuWalks%2*20) * time.Microsecond, time.Duration(80+cpuWalks%2*20) * time.Microsecond, nil
	}
	if err := s.cursorWalks(sysCoppice, walk, cpuWalk); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, q := range cursorQueries {
		for range walksPerQuery + 1 {
			want = append(want, "timed "+q.name)
		}
		for range cpuWalksPerQuery {
			want = append(want, "cpu "+q.name)
		}
	}
	if len(calls) != len(want) {
		t.Fatalf("%d walks, want %d", len(calls), len(want))
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Fatalf("walk %d was %q, want %q", i, calls[i], want[i])
		}
	}
	if len(s.rep.Rows) != 2*len(cursorQueries) {
		t.Fatalf("%d rows, want %d", len(s.rep.Rows), 2*len(cursorQueries))
	}
	for i, r := range s.rep.Rows {
		p50, cpu := 2*time.Millisecond, 110*time.Microsecond
		if i%2 == 1 {
			p50, cpu = time.Millisecond, 90*time.Microsecond
		}
		if r.S.P50 != p50 || r.S.CPU != cpu {
			t.Errorf("%s: p50 %v, cpu %v; want %v, %v", r.Case, r.S.P50, r.S.CPU, p50, cpu)
		}
	}
}
