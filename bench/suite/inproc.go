package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// compactedMix measures the W3 mix in process on the store as the loads
// and workloads left it (e) and on the same store compacted: a copy of
// the data directory taken before e opened (copyDir), opened beside it
// and compacted by Engine.Compact. Whether reads pay for the merge
// operands and upper levels a load leaves: the rate of the whole mix,
// each kind weighing as many queries as it has, and the process's CPU
// time per query.
//
// The two stores are read in alternating passes (as loaded, compacted,
// compacted, as loaded, ...), each after a full garbage collection, once
// both have built their column stores and taken a warm-up pass: states
// measured one after the other would run under other conditions (the
// garbage of the first one's store build, the machine's load at each
// time), which on a shared machine swing the rate of identical passes
// as much as the ratio under test. The CPU time per query does not count
// the time the process waited for a core that others on the machine
// held. e is then compacted too, so that what runs after reads a
// compacted store.
func (s *suite) compactedMix(ctx context.Context, e *engine.Engine, copyDir string, op func(e *engine.Engine, i int) error) error {
	c, err := engine.Open(copyDir, engine.Options{})
	if err != nil {
		return err
	}
	defer func() {
		c.Close()
		os.RemoveAll(copyDir)
	}()
	t0 := time.Now()
	if err := c.Compact(ctx); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	took := time.Since(t0)
	stores := []*engine.Engine{e, c}
	// A warm-up pass each; the one on the copy starts its column store's
	// build, and both are measured once every build is done.
	for _, x := range stores {
		if _, _, err := s.runMix(0, nil, func(_ string, i int) error { return op(x, i) }); err != nil {
			return err
		}
	}
	if err := s.waitBuilds("the mixes as loaded and compacted", stores...); err != nil {
		return err
	}
	var got [2]series
	for round := range 2 * s.cfg.reps * compactedPasses {
		// ABBA: each state goes first as often as second.
		x := round % 2
		if round/2%2 == 1 {
			x = 1 - x
		}
		runtime.GC()
		for i := range s.ds.q.Filter {
			one, err := withCPU(processCPU, func() (series, error) {
				t0 := time.Now()
				err := op(stores[x], i)
				d := time.Since(t0)
				return series{lat: []time.Duration{d}, elapsed: d}, err
			})
			if err != nil {
				return err
			}
			got[x].add(one)
		}
	}
	if err := e.Compact(ctx); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	s.rep.add("W3", "query mix, as loaded", sysInProc, got[0].summary("q/s"),
		"engine.Query; the store as the loads and workloads left it; passes alternate with the compacted copy; CPU: of the process")
	s.rep.add("W3", "query mix, compacted", sysInProc, got[1].summary("q/s"),
		fmt.Sprintf("engine.Query; a copy of the store after Engine.Compact (%v); CPU: of the process", took.Round(time.Second)))
	return nil
}

// compactedPasses is how many times the configured passes each of the
// as-loaded and compacted stores is read: one pass at 1e6 lasts under a
// second, about as long as the swings of a shared machine.
const compactedPasses = 3

// copyDir copies the regular files of the directory tree src into dst,
// which must not exist.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// processCPU returns the CPU time this process has used so far, over all
// its threads (0 when the system cannot say).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitBuilds waits until none of stores is building a column store or
// has an idle compaction pending (a store opened with files above its
// bottom level compacts them once idle, as the server's phases wait for
// after theirs), up to a bound past which it notes that what runs next,
// named by what, ran during the builds.
func (s *suite) waitBuilds(what string, stores ...*engine.Engine) error {
	for t0 := time.Now(); ; time.Sleep(250 * time.Millisecond) {
		building := 0
		for _, x := range stores {
			st, err := x.Stats(0)
			if err != nil {
				return err
			}
			building += st.BuildsInProgress + st.Storage.IdleCompactionsPending
		}
		if building == 0 {
			return nil
		}
		if time.Since(t0) > 5*time.Minute {
			s.rep.note("in process: store builds or idle compactions still ran after %v; %s ran during them", time.Since(t0).Round(time.Second), what)
			return nil
		}
	}
}

// runInProcess opens the server's data directory with the engine package
// (the server is stopped) and runs the W3 mix, the cursor walks and W4 in
// process: the engine's own speed, without HTTP and JSON rendering.
func (s *suite) runInProcess(dataDir string) error {
	compactedDir := dataDir + ".compacted"
	os.RemoveAll(compactedDir)
	if err := copyDir(dataDir, compactedDir); err != nil {
		return fmt.Errorf("copy the data directory: %w", err)
	}
	defer os.RemoveAll(compactedDir)
	e, err := engine.Open(dataDir, engine.Options{})
	if err != nil {
		return err
	}
	defer e.Close()
	ref := engine.Ref{Workspace: s.ws[strings.LastIndexByte(s.ws, '-')+1:], Database: benchDB, Branch: "main"}
	size := pageSize
	opts := engine.QueryOptions{}
	ctx := context.Background()
	// queryOn reads a query's JSON, as the API does, and runs it on e.
	queryOn := func(e *engine.Engine, filter, sort json.RawMessage, page engine.PageInput) (*engine.QueryResult, error) {
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
	query := func(filter, sort json.RawMessage, page engine.PageInput) (*engine.QueryResult, error) {
		return queryOn(e, filter, sort, page)
	}
	mixOp := func(_ string, i int) error {
		q := s.ds.q.Filter[i]
		_, err := query(q.Filter, q.Sort, engine.PageInput{Size: &size})
		return err
	}
	// The first queries start the column store's build, which takes tens
	// of seconds at 1e6: the mix is measured once it is built, as the
	// server's workloads are.
	if _, _, err := s.runMix(0, nil, mixOp); err != nil {
		return err
	}
	if err := s.waitBuilds("the W3 mix", e); err != nil {
		return err
	}
	byKind, _, err := s.runMix(s.cfg.reps, nil, mixOp)
	if err != nil {
		return err
	}
	s.addMix(sysInProc, byKind, "engine.Query")
	if err := s.compactedMix(ctx, e, compactedDir, func(x *engine.Engine, i int) error {
		q := s.ds.q.Filter[i]
		_, err := queryOn(x, q.Filter, q.Sort, engine.PageInput{Size: &size})
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
	}, nil); err != nil {
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
