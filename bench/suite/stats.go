package main

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// Summary is what a measured series of operations reports: latency
// quantiles of one operation and the rate of operations (or of the unit
// named by Unit) over the elapsed wall time.
type Summary struct {
	N        int
	P50, P99 time.Duration
	Elapsed  time.Duration
	Rate     float64 // units per second
	Unit     string  // "req/s", "docs/s", …
	// CPU is the server's CPU time (user and system, all threads) per
	// unit, read from /proc before and after; 0 when not measured.
	CPU time.Duration
}

// summarize sorts lat in place and returns its quantiles; the rate counts
// one unit per latency unless units is positive.
func summarize(lat []time.Duration, elapsed time.Duration, units int, unit string) Summary {
	slices.Sort(lat)
	if units <= 0 {
		units = len(lat)
	}
	s := Summary{N: len(lat), Elapsed: elapsed, Unit: unit}
	if len(lat) > 0 {
		s.P50 = quantile(lat, 0.50)
		s.P99 = quantile(lat, 0.99)
	}
	if elapsed > 0 {
		s.Rate = float64(units) / elapsed.Seconds()
	}
	return s
}

// quantile returns the q-quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted)) + 0.5)
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

// series is a set of latencies and the wall time they took; units counts
// what a rate is of (0 means one per latency). cpu is the server CPU time
// the series cost, when measured (cpuN operations of it were).
type series struct {
	lat     []time.Duration
	elapsed time.Duration
	units   int
	cpu     time.Duration
	cpuN    int
	// slices are the units per second of each 100k units of a bulk load.
	slices []float64
}

// add appends the latencies, time, units and CPU time of o.
func (s *series) add(o series) {
	s.lat = append(s.lat, o.lat...)
	s.elapsed += o.elapsed
	s.units += o.units
	s.cpu += o.cpu
	s.cpuN += o.cpuN
}

// summary sorts the latencies and summarizes them, with the server CPU
// time per unit when it was measured for every operation.
func (s series) summary(unit string) Summary {
	sum := summarize(s.lat, s.elapsed, s.units, unit)
	if s.cpuN > 0 && s.cpuN == len(s.lat) {
		units := s.units
		if units <= 0 {
			units = len(s.lat)
		}
		sum.CPU = s.cpu / time.Duration(units)
	}
	return sum
}

// withCPU runs a measurement and charges it the CPU time cpu reports
// across it; cpu nil measures nothing.
func withCPU(cpu func() time.Duration, run func() (series, error)) (series, error) {
	if cpu == nil {
		return run()
	}
	c0 := cpu()
	s, err := run()
	s.cpu += cpu() - c0
	s.cpuN = len(s.lat)
	return s, err
}

// measure runs op n times on conc goroutines in a closed loop (each
// goroutine starts its next operation when the last one returns) and
// returns the latencies and the wall time. The first error stops every
// goroutine and is returned.
func measure(n, conc int, op func(worker, i int) error) (series, error) {
	conc = max(1, min(conc, n))
	var (
		mu   sync.Mutex
		next int
		lat  = make([]time.Duration, 0, n)
		fail error
		wg   sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if fail != nil || next >= n {
			return 0, false
		}
		next++
		return next - 1, true
	}
	start := time.Now()
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, n/conc+1)
			for {
				i, ok := take()
				if !ok {
					break
				}
				t0 := time.Now()
				err := op(w, i)
				mine = append(mine, time.Since(t0))
				if err != nil {
					mu.Lock()
					if fail == nil {
						fail = fmt.Errorf("operation %d: %w", i, err)
					}
					mu.Unlock()
					break
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return series{lat: lat, elapsed: time.Since(start)}, fail
}

// sequential runs op n times one after another; see measure.
func sequential(n int, op func(i int) error) (series, error) {
	return measure(n, 1, func(_, i int) error { return op(i) })
}

// fmtDur prints a latency with three significant digits.
func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "—"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

// fmtCPU prints a CPU time per operation, or a dash when not measured.
func fmtCPU(d time.Duration) string {
	if d == 0 {
		return "—"
	}
	return fmtDur(d)
}

// fmtRate prints a rate with its unit.
func fmtRate(r float64, unit string) string {
	switch {
	case r == 0:
		return "—"
	case r >= 100:
		return fmt.Sprintf("%.0f %s", r, unit)
	default:
		return fmt.Sprintf("%.2f %s", r, unit)
	}
}
