package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
	"github.com/coppice-db/coppice/engine"
)

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
	inputs := make([]engine.QueryInput, len(s.ds.q.Filter))
	for i, q := range s.ds.q.Filter {
		inputs[i] = engine.QueryInput{Filter: q.Filter, Page: engine.PageInput{Size: &size}}
		if string(q.Sort) != "null" {
			inputs[i].Sort = q.Sort
		}
	}
	byKind, _, err := s.runMix(s.cfg.reps, func(_ string, i int) error {
		_, err := e.Query(context.Background(), ref, gen.DocsTable, inputs[i], opts)
		return err
	})
	if err != nil {
		return err
	}
	s.addMix(sysInProc, byKind, "engine.Query")
	if err := s.cursorWalks(sysInProc, func(q cursorQuery) (time.Duration, time.Duration, error) {
		filter, _ := json.Marshal(q.filter)
		sort, _ := json.Marshal(q.sortJSON())
		in := engine.QueryInput{Filter: filter, Sort: sort, Page: engine.PageInput{Size: &size}}
		var first, last time.Duration
		for page := 1; page <= cursorPages; page++ {
			t0 := time.Now()
			res, err := e.Query(context.Background(), ref, gen.DocsTable, in, opts)
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
			in = engine.QueryInput{Page: engine.PageInput{Size: &size, After: &cursor}}
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
	in := engine.SummarizeInput{Filter: filter, Columns: columns, Summaries: summaries, PageSize: &groups}
	var got int
	sr, err := s.timeReps(s.cfg.reps*10, func() error {
		rows, err := e.Summarize(context.Background(), ref, gen.DocsTable, in, "")
		got = len(rows)
		return err
	})
	if err != nil {
		return err
	}
	s.rep.add("W4", "group by category, 5 aggregates", sysInProc, sr.summary("q/s"), fmt.Sprintf("engine.Summarize; %d groups", got))
	return nil
}
