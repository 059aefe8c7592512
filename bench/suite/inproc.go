package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// compactedMix runs the W3 mix in process again, right after the mix as
// the loads left the store and then after compacting it: whether reads
// pay for the merge operands a load leaves (the rate of the whole mix,
// each kind weighing as many queries as it has, and the process's CPU
// time per query).
//
// Both states are measured alike: each after the store builds are done,
// a full collection of the garbage that came before (the column store's
// build leaves its garbage to whichever pass comes first), a warm-up pass
// and compactedPasses timed passes. The CPU time per query is what the
// engine spent on the query and beside it (garbage collection, background
// work); unlike the rate, it does not count the time the process waited
// for a core that others on the machine held.
func (s *suite) compactedMix(ctx context.Context, e *engine.Engine, op func(i int) error) error {
	// The mix before started the column store's build, which would land
	// in one of the two passes: both run once it is built.
	for t0 := time.Now(); ; time.Sleep(250 * time.Millisecond) {
		st, err := e.Stats(0)
		if err != nil {
			return err
		}
		if st.BuildsInProgress == 0 {
			break
		}
		if time.Since(t0) > 5*time.Minute {
			s.rep.note("in process: store builds still ran after %v; the mix as loaded ran during them", time.Since(t0).Round(time.Second))
			break
		}
	}
	passes := s.cfg.reps * compactedPasses
	mix := func() (series, error) {
		runtime.GC()
		_, all, err := s.runMix(passes, processCPU, func(_ string, i int) error { return op(i) })
		return all, err
	}
	loaded, err := mix()
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := e.Compact(ctx); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	took := time.Since(t0)
	compacted, err := mix()
	if err != nil {
		return err
	}
	s.rep.add("W3", "query mix, as loaded", sysInProc, loaded.summary("q/s"),
		"engine.Query; the store as the loads and workloads left it; CPU: of the process")
	s.rep.add("W3", "query mix, compacted", sysInProc, compacted.summary("q/s"),
		fmt.Sprintf("engine.Query; after Engine.Compact (%v); CPU: of the process", took.Round(time.Second)))
	return nil
}

// compactedPasses is how many times the configured passes the as-loaded
// and compacted mixes run: one pass at 1e6 lasts under a second, about
// as long as the swings of a shared machine.
const compactedPasses = 3

// processCPU returns the CPU time this process has used so far, over all
// its threads (0 when the system cannot say).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runInProcess opens the server's data directory with the engine package
// (the server is stopped) and runs the W3 mix, the cursor walks and W4 in
// process: the engine's own speed, without HTTP and JSON rendering.
func (s *suite) runInProcess(dataDir string) error {
	e, err := engine.Open(dataDir, engine.Options{})
	if err != nil {
		return err
	}
	defer e.Close()
	ref := engine.Ref{Workspace: s.ws[strings.LastIndexByte(s.ws, '-')+1:], Database: benchDB, Branch: "main"}
	size := pageSize
	opts := engine.QueryOptions{}
	ctx := context.Background()
	// query reads a query's JSON, as the API does, and runs it.
	query := func(filter, sort json.RawMessage, page engine.PageInput) (*engine.QueryResult, error) {
		in := engine.QueryRequest{Page: page}
		var err error
		if in.Filter, err = index.ReadFilter(filter); err != nil {
			return nil, err
		}
		if in.Sort, err = index.ReadSort(sort); err != nil {
			return nil, err
		}
		return e.Query(ctx, ref, gen.DocsTable, in, opts)
	}
	byKind, _, err := s.runMix(s.cfg.reps, nil, func(_ string, i int) error {
		q := s.ds.q.Filter[i]
		_, err := query(q.Filter, q.Sort, engine.PageInput{Size: &size})
		return err
	})
	if err != nil {
		return err
	}
	s.addMix(sysInProc, byKind, "engine.Query")
	if err := s.compactedMix(ctx, e, func(i int) error {
		q := s.ds.q.Filter[i]
		_, err := query(q.Filter, q.Sort, engine.PageInput{Size: &size})
		return err
	}); err != nil {
		return err
	}
	if err := s.cursorWalks(sysInProc, func(q cursorQuery) (time.Duration, time.Duration, error) {
		filter, _ := json.Marshal(q.filter)
		sort, _ := json.Marshal(q.sortJSON())
		var after *string
		var first, last time.Duration
		for page := 1; page <= cursorPages; page++ {
			t0 := time.Now()
			var res *engine.QueryResult
			var err error
			if after == nil {
				res, err = query(filter, sort, engine.PageInput{Size: &size})
			} else {
				res, err = query(nil, nil, engine.PageInput{Size: &size, After: after})
			}
			d := time.Since(t0)
			if err != nil {
				return 0, 0, err
			}
			if page == 1 {
				first = d
			}
			last = d
			if page < cursorPages && (!res.More || res.Cursor == "") {
				return 0, 0, fmt.Errorf("only %d pages", page)
			}
			cursor := res.Cursor
			after = &cursor
		}
		return first, last, nil
	}); err != nil {
		return err
	}

	body := summarizeBody()
	filter, _ := json.Marshal(body["filter"])
	columns, _ := json.Marshal(body["columns"])
	summaries, _ := json.Marshal(body["summaries"])
	groups := len(gen.Categories)
	var got int
	sr, err := s.timeReps(s.cfg.reps*10, func() error {
		in := engine.SummarizeRequest{PageSize: &groups}
		var err error
		if in.Filter, err = index.ReadFilter(filter); err != nil {
			return err
		}
		if in.Columns, err = index.ReadGroupColumns(columns); err != nil {
			return err
		}
		if in.Summaries, err = index.ReadSummaries(summaries); err != nil {
			return err
		}
		res, err := e.Summarize(ctx, ref, gen.DocsTable, in)
		if err == nil {
			got = len(res.Rows)
		}
		return err
	})
	if err != nil {
		return err
	}
	s.rep.add("W4", "group by category, 5 aggregates", sysInProc, sr.summary("q/s"), fmt.Sprintf("engine.Summarize; %d groups", got))
	return nil
}
