package api

import (
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
)

// Branch stats (compat-api.md §6): the number of records now, and reads and
// writes per hour over the last 24 hours.
//
// The read and write counters live in the server's memory only: they start
// at zero when the server starts and are not shared between servers. One
// successful request is one read or one write, whatever the number of
// records it touches (a bulk insert is one write, a query one read).
// Counters belong to a branch name: a branch deleted and created again
// within the window keeps them.

// Stats window and resolution.
const (
	statsHours      = 24
	statsResolution = time.Hour
)

// maxStatsBranches bounds the branches counted at once; past it, branches
// idle for the whole window are forgotten, and new ones wait for room.
const maxStatsBranches = 1 << 14

// accessStats are the per-branch counters. The zero value is ready to use;
// it is safe for concurrent use. Every request that succeeds counts
// itself: it finds its branch's counters in a map read without a lock and
// adds one to its hour's count, one atomic add; only a new hour takes the
// branch's lock. A branch counted for the first time joins a small map of
// recent branches, read under a lock, which is merged into the read-mostly
// map once it holds an eighth of that map's size (at once while that map
// holds fewer than 16): the copies the merges make come to a few per
// branch counted, not a copy of the whole table each.
type accessStats struct {
	settled readMostly[engine.Ref, *branchAccess]
	mu      sync.Mutex                   // guards recent and the adding of branches
	recent  map[engine.Ref]*branchAccess // counted since the last merge, not in settled
	// fullHour is the hour (plus one; 0: none) in which a branch found no
	// room: every branch counted was active within the window, and none
	// goes idle before the window moves at the next hour, so until then a
	// new branch is not counted without copying and scanning the map.
	fullHour atomic.Int64
}

// branchAccess is a ring of hourly buckets of one branch.
type branchAccess struct {
	mu    sync.Mutex // serializes the start of a slot's new hour
	hours [statsHours]accessBucket
}

// accessBucket counts one hour; hour is in hours since the Unix epoch and
// tells whether the slot still holds that hour or an older one. A new hour
// zeroes the counts before it is stored, so that a count made after the
// hour was seen is never lost.
type accessBucket struct {
	hour          atomic.Int64
	reads, writes atomic.Int64
}

// branch returns the counters of a branch, or nil.
func (a *accessStats) branch(ref engine.Ref) *branchAccess {
	if b := a.settled.load()[ref]; b != nil {
		return b
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.recent[ref]
}

// hourOf returns the hour number of t.
func hourOf(t time.Time) int64 { return t.Unix() / int64(statsResolution/time.Second) }

// note counts one read or write of a branch at now.
func (a *accessStats) note(ref engine.Ref, write bool, now time.Time) {
	b := a.branch(ref)
	if b == nil {
		if b = a.add(ref, now); b == nil {
			return
		}
	}
	h := hourOf(now)
	slot := &b.hours[h%statsHours]
	if slot.hour.Load() != h {
		b.mu.Lock()
		if slot.hour.Load() != h {
			slot.reads.Store(0)
			slot.writes.Store(0)
			slot.hour.Store(h)
		}
		b.mu.Unlock()
	}
	if write {
		slot.writes.Add(1)
	} else {
		slot.reads.Add(1)
	}
}

// add returns the counters of a branch, creating them; nil when the table
// is full of branches active within the window. Idle branches are forgotten
// when the table is full.
func (a *accessStats) add(ref engine.Ref, now time.Time) *branchAccess {
	h := hourOf(now) + 1
	if a.fullHour.Load() == h {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	settled := a.settled.load()
	if b := settled[ref]; b != nil {
		return b
	}
	if b := a.recent[ref]; b != nil {
		return b
	}
	if len(settled)+len(a.recent) >= maxStatsBranches {
		a.settled.update(func(m map[engine.Ref]*branchAccess) bool { return forgetIdle(m, now) > 0 })
		forgetIdle(a.recent, now)
		settled = a.settled.load()
		if len(settled)+len(a.recent) >= maxStatsBranches {
			a.fullHour.Store(h)
			return nil
		}
	}
	b := &branchAccess{}
	if a.recent == nil {
		a.recent = map[engine.Ref]*branchAccess{}
	}
	a.recent[ref] = b
	if len(a.recent) >= max(1, len(settled)/8) {
		a.settled.update(func(m map[engine.Ref]*branchAccess) bool {
			maps.Copy(m, a.recent)
			return true
		})
		a.recent = nil
	}
	return b
}

// forgetIdle deletes the branches of m with no read or write within the
// window at now, and returns how many it deleted.
func forgetIdle(m map[engine.Ref]*branchAccess, now time.Time) int {
	oldest := hourOf(now) - statsHours + 1
	n := 0
	for k, b := range m {
		b.mu.Lock()
		idle := true
		for i := range b.hours {
			s := &b.hours[i]
			if s.hour.Load() >= oldest && s.reads.Load()+s.writes.Load() > 0 {
				idle = false
			}
		}
		b.mu.Unlock()
		if idle {
			delete(m, k)
			n++
		}
	}
	return n
}

// series returns the reads and writes of a branch, one datapoint per hour
// of the window, oldest first; the last is the current hour.
func (a *accessStats) series(ref engine.Ref, now time.Time) (reads, writes []map[string]any) {
	b := a.branch(ref)
	cur := hourOf(now)
	reads = make([]map[string]any, 0, statsHours)
	writes = make([]map[string]any, 0, statsHours)
	for h := cur - statsHours + 1; h <= cur; h++ {
		var r, w int64
		if b != nil {
			if s := &b.hours[h%statsHours]; s.hour.Load() == h {
				r, w = s.reads.Load(), s.writes.Load()
			}
		}
		ts := formatTime(time.Unix(h*int64(statsResolution/time.Second), 0))
		reads = append(reads, map[string]any{"timestamp": ts, "value": r})
		writes = append(writes, map[string]any{"timestamp": ts, "value": w})
	}
	return reads, writes
}

// reads wraps a read endpoint: each successful call counts as one read of
// its branch.
func (s *Server) reads(fn func(r *request) error) func(r *request) error {
	return func(r *request) error { return s.counted(r, fn, false) }
}

// writes wraps a write endpoint: each successful call counts as one write
// of its branch.
func (s *Server) writes(fn func(r *request) error) func(r *request) error {
	return func(r *request) error { return s.counted(r, fn, true) }
}

func (s *Server) counted(r *request, fn func(r *request) error, write bool) error {
	if err := fn(r); err != nil {
		return err
	}
	if ref, err := r.branchRef(); err == nil {
		// The time fasthttp took when it began handling the request: no
		// second clock read per request.
		now := r.ctx.Time()
		if now.IsZero() {
			now = time.Now()
		}
		s.stats.note(ref.Ref, write, now)
	}
	return nil
}

// branchStats: GET /db/{dbb}/stats.
func (s *Server) branchStats(r *request) error {
	ref, err := r.branchRef()
	if err != nil {
		return err
	}
	n, err := s.eng.RecordCount(ref.Ref)
	if err != nil {
		return err
	}
	now := time.Now()
	reads, writes := s.stats.series(ref.Ref, now)
	// Past record counts are not kept: the series is the count now, at
	// the current hour.
	records := []map[string]any{{"timestamp": writes[len(writes)-1]["timestamp"], "value": n}}
	writeJSON(r.ctx, http.StatusOK, map[string]any{
		"timestamp":       formatTime(now),
		"interval":        "24h",
		"resolution":      "1h",
		"numberOfRecords": records,
		"writesOverTime":  writes,
		"readsOverTime":   reads,
	})
	return nil
}

// unsupported is the endpoint of a feature this server does not implement
// (compat-api.md §13): 501 with a JSON error, also when the client asks
// for an event stream.
func unsupported(feature string) func(r *request) error {
	return func(r *request) error {
		return engine.Errorf(engine.CodeUnsupported, "%s is not supported by this server", feature)
	}
}

// askSessionRoute returns the handler of T/ask/ paths (ask with an empty
// session id, a new session), which the router keeps as one node with
// T/ask: the T/ask route's. It returns nil for any other path.
func (s *Server) askSessionRoute(method, path string, ctx *fasthttp.RequestCtx) fasthttp.RequestHandler {
	rest, ok := strings.CutSuffix(path, "/ask/")
	if !ok || !strings.Contains(rest, "/tables/") {
		return nil
	}
	h, _ := s.router.Lookup(method, path[:len(path)-1], ctx)
	return h
}
