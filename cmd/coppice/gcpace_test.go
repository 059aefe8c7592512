package main

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercentKeepsHeadroom(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, headroom int64
		want           int
	}{
		{0, 256 * mib, maxGCPercent},
		{32 * mib, 256 * mib, maxGCPercent},
		{100 * mib, 256 * mib, maxGCPercent},
		{200 * mib, 256 * mib, 128},
		{256 * mib, 256 * mib, 100},
		{1 << 30, 256 * mib, 100},
		{100 * mib, 64 * mib, 100},
	} {
		if got := gcPercent(c.live, c.headroom); got != c.want {
			t.Errorf("gcPercent(%d MiB live, %d MiB headroom) = %d, want %d", c.live/mib, c.headroom/mib, got, c.want)
		}
	}
}

// gogc reads the collector's GOGC.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// waitGOGC collects until GOGC is want, for at most five seconds.
func waitGOGC(t *testing.T, want uint64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); gogc() != want; {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d, want %d", gogc(), want)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPaceGCFollowsLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	if gogc() != 100 {
		t.Skipf("GOGC is %d before the test", gogc())
	}
	// A headroom far above this process's live heap: the most.
	stop := paceGC(1 << 40)
	waitGOGC(t, maxGCPercent)
	stop()
	waitGOGC(t, 100)

	// A headroom below the live heap: the default.
	stop = paceGC(1)
	defer stop()
	for range 5 {
		runtime.GC()
	}
	if got := gogc(); got != 100 {
		t.Errorf("GOGC %d with no headroom above the live heap, want 100", got)
	}
}

func TestPaceGCLeavesGOGCOfEnvironment(t *testing.T) {
	t.Setenv("GOGC", "100")
	stop := paceGC(1 << 40)
	defer stop()
	for range 5 {
		runtime.GC()
	}
	time.Sleep(50 * time.Millisecond)
	if got := gogc(); got != 100 {
		t.Errorf("GOGC %d with GOGC set in the environment, want 100", got)
	}
}
