package main

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestServerCPU reads this process's CPU time the way the suite reads
// the server's: it must grow while the process computes, and only as fast
// as the cores allow.
func TestServerCPU(t *testing.T) {
	s := &server{cmd: &exec.Cmd{Process: &os.Process{Pid: os.Getpid()}}}
	c0 := s.cpu()
	w0 := time.Now()
	x := 1
	for s.cpu()-c0 < 100*time.Millisecond {
		if time.Since(w0) > 10*time.Second {
			t.Fatalf("cpu time moved %v in 10 s of spinning", s.cpu()-c0)
		}
		for i := range 100_000 {
			x = x*31 + i
		}
	}
	if d, wall := s.cpu()-c0, time.Since(w0); d > 3*wall+20*time.Millisecond {
		t.Fatalf("cpu time %v over %v of wall time in one goroutine (x=%d)", d, wall, x)
	}
	// Both sources agree to within the ticks' resolution.
	pid := strconv.Itoa(os.Getpid())
	if d, ok := threadsOnCPU(pid); ok {
		if ticks := ticksUsed(pid); d < ticks-50*time.Millisecond || d > ticks+50*time.Millisecond {
			t.Fatalf("threads ran %v, the process used %v", d, ticks)
		}
	}
}

// TestSeriesCPU checks the CPU time per operation of a summary: per
// unit when units are counted, and none unless every operation was
// measured.
func TestSeriesCPU(t *testing.T) {
	ms := time.Millisecond
	ticks := []time.Duration{0, 40 * ms, 40 * ms, 100 * ms}
	k := 0
	cpu := func() time.Duration { k++; return ticks[min(k-1, len(ticks)-1)] }
	run := func() (series, error) {
		return series{lat: []time.Duration{ms, ms, ms, ms}, elapsed: 4 * ms}, nil
	}
	a, _ := withCPU(cpu, run) // 0 → 40 ms over 4 requests
	if got := a.summary("req/s").CPU; got != 10*ms {
		t.Fatalf("cpu per request %v, want 10ms", got)
	}
	b, _ := withCPU(cpu, run) // 40 → 100 ms
	a.add(b)
	if got := a.summary("req/s").CPU; got != 12500*time.Microsecond {
		t.Fatalf("cpu per request over two series %v, want 12.5ms", got)
	}
	a.units = 100
	if got := a.summary("docs/s").CPU; got != ms {
		t.Fatalf("cpu per doc %v, want 1ms", got)
	}
	c, _ := run()
	a.add(c) // four requests not measured
	if got := a.summary("req/s").CPU; got != 0 {
		t.Fatalf("cpu per request with unmeasured requests %v, want none", got)
	}
}
