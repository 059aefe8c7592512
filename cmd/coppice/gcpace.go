package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// The collector's pace. Under GOGC's default (100) the heap may grow to
// twice what is live before the next collection. A server loading data
// has a small live heap (about 100 MB) and allocates fast, so the
// collector ran after every 100 MB or so: 17–21 µs of server CPU per
// document of a bulk load, a tenth of the server's. The pacer gives the
// heap a headroom of room above what is live instead: after every
// collection GOGC becomes 100 × headroom / live, between 100 and
// maxGCPercent (with GOGC at 200 the collector ran half as often, at 9 µs
// per document). A heap larger than the headroom is collected as under
// the default, so the peak of a server whose live heap is large does not
// grow. The headroom comes out of the memory plan's reserve for requests
// and the runtime (engine.MemoryPlan.Reserve), and the runtime's memory
// limit still applies.

// gcHeadroom is the most room the pacer keeps above the live heap.
const gcHeadroom = 256 << 20

// maxGCPercent bounds the pacer's GOGC.
const maxGCPercent = 200

// gcPercent is the GOGC that leaves headroom bytes above a live heap of
// live bytes, between 100 and maxGCPercent.
func gcPercent(live, headroom int64) int {
	if live <= 0 {
		return maxGCPercent
	}
	return int(min(max(100*headroom/live, 100), maxGCPercent))
}

// gcPacer sets GOGC after every collection (gcPercent).
type gcPacer struct {
	headroom int64
	percent  int // the GOGC the pacer set last
	sample   []metrics.Sample
	stopped  atomic.Bool
}

// paceGC starts pacing the collector with the given headroom, and returns
// what stops it and puts GOGC back to 100. It leaves the collector alone
// (and returns a no-op) when GOGC is set in the environment or headroom is
// not positive.
func paceGC(headroom int64) (stop func()) {
	if headroom <= 0 || os.Getenv("GOGC") != "" {
		return func() {}
	}
	p := &gcPacer{headroom: headroom, percent: 100, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	p.arm()
	return func() {
		if !p.stopped.Swap(true) {
			debug.SetGCPercent(100)
		}
	}
}

// gcSentinel is garbage whose cleanup tells the pacer that a collection
// ran (large enough not to share an allocation with other small objects).
type gcSentinel struct{ _ [32]byte }

// arm makes garbage that the next collection frees; its cleanup runs
// collected.
func (p *gcPacer) arm() {
	runtime.AddCleanup(new(gcSentinel), (*gcPacer).collected, p)
}

// collected sets GOGC for the live heap the last collection left, and
// arms the pacer for the next one.
func (p *gcPacer) collected() {
	if p.stopped.Load() {
		return
	}
	metrics.Read(p.sample)
	if p.sample[0].Value.Kind() == metrics.KindUint64 {
		if pct := gcPercent(int64(p.sample[0].Value.Uint64()), p.headroom); pct != p.percent {
			debug.SetGCPercent(pct)
			p.percent = pct
		}
	}
	p.arm()
}
