// Command suite runs the side-by-side benchmarks of BENCHMARKS.md (W1–W8)
// against Coppice, PostgreSQL and Bleve and their ceilings, one system at a
// time, and writes a Markdown report of figures and target ratios.
//
// bench/run.sh installs what it needs, builds bin/coppice and runs this
// program; `make bench N=…` calls the script.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"
)

// config is the command line.
type config struct {
	n       int
	bin     string
	out     string
	work    string
	queries int
	search  int
	reps    int
	gets    int
	conns   int
	pgConns int
	loaders int
	keep    bool
	skip    map[string]bool
	only    map[string]bool // workloads to run ("W2"); empty: every one
}

// suite is one run: its configuration, dataset, report and the facts the
// targets need besides the report rows.
type suite struct {
	cfg config
	ds  *dataset
	rep *Report
	ws  string // Coppice workspace id

	coppiceDisk, pgDisk, bleveDisk int64
	rssAfterLoad, rssAfterQueries  int64 // kB
	rssEnd                         int64 // kB
	pgVersion                      string
}

func main() {
	var cfg config
	var skip string
	flag.IntVar(&cfg.n, "n", 100_000, "number of docs")
	flag.StringVar(&cfg.bin, "bin", "bin/coppice", "the coppice binary to serve with")
	flag.StringVar(&cfg.out, "out", "bench/results", "directory of the report")
	flag.StringVar(&cfg.work, "work", "bench/.work", "scratch directory for the data of every system (emptied first)")
	flag.IntVar(&cfg.queries, "queries", 160, "queries of the filter/sort mix (spread over its 8 kinds)")
	flag.IntVar(&cfg.search, "search", 50, "queries of each search class")
	flag.IntVar(&cfg.reps, "reps", 3, "timed passes over each query set after one warm-up pass")
	flag.IntVar(&cfg.gets, "gets", 60_000, "point gets per system")
	flag.IntVar(&cfg.conns, "conns", 64, "HTTP connections (and PostgreSQL clients) of the point-get load")
	flag.IntVar(&cfg.pgConns, "pg-conns", 16, "PostgreSQL pool size under the point-get clients")
	flag.IntVar(&cfg.loaders, "loaders", 2, "bulk requests in flight while loading Coppice")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the data directories after the run")
	flag.StringVar(&skip, "skip", "", "comma-separated systems to leave out: ceiling, coppice, inproc, postgres, bleve")
	var only string
	flag.StringVar(&only, "only", "", "comma-separated workloads the coppice and postgres phases run after their loads (W2,W5); empty: all")
	flag.Parse()
	cfg.only = map[string]bool{}
	for _, w := range splitComma(only) {
		cfg.only[w] = true
	}
	cfg.skip = map[string]bool{}
	for _, s := range splitComma(skip) {
		cfg.skip[s] = true
	}
	if err := run(cfg); err != nil {
		fmt.Fprintf(os.Stderr, "suite: %v\n", err)
		os.Exit(1)
	}
}

// run runs every phase and writes the report. A failing phase is noted in
// the report and the run goes on.
func run(cfg config) error {
	var err error
	if cfg.bin, err = filepath.Abs(cfg.bin); err != nil {
		return err
	}
	if cfg.work, err = filepath.Abs(cfg.work); err != nil {
		return err
	}
	if _, err := os.Stat(cfg.bin); err != nil {
		return fmt.Errorf("coppice binary: %w (build it with make build)", err)
	}
	os.RemoveAll(cfg.work)
	if err := os.MkdirAll(cfg.work, 0o755); err != nil {
		return err
	}
	s := &suite{cfg: cfg, rep: &Report{N: cfg.n, Started: time.Now(), Machine: machineLine()}}
	logf("generating the queries of %d docs", cfg.n)
	s.ds = newDataset(cfg.n, max(cfg.queries, cfg.search))
	s.ds.q.Filter = s.ds.q.Filter[:cfg.queries]
	t0 := time.Now()
	if err := s.ds.generate(cfg.work); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	logf("generated %d docs in %v", cfg.n, time.Since(t0).Round(time.Millisecond))

	phases := []struct {
		name string
		run  func() error
	}{
		{"ceiling", s.runCeilings},
		{"coppice", s.runCoppice},
		{"inproc", func() error { return s.runInProcess(filepath.Join(cfg.work, "coppice")) }},
		{"postgres", s.runPostgres},
		{"bleve", s.runBleve},
	}
	var path string
	for _, p := range phases {
		if cfg.skip[p.name] {
			s.rep.note("%s: skipped on request", p.name)
			continue
		}
		logf("phase %s", p.name)
		s.try(p.name, p.run)
		// The report is rewritten after every phase, so a run cut short
		// still leaves what it measured.
		if path, err = s.writeReport(); err != nil {
			return err
		}
	}
	if !cfg.keep {
		os.RemoveAll(cfg.work)
	}
	logf("report: %s", path)
	return nil
}

// writeReport judges the rows so far and writes the report.
func (s *suite) writeReport() (string, error) {
	s.rep.Checks = nil
	s.setup()
	s.judge()
	return s.rep.write(s.cfg.out)
}

// try runs one phase or workload and notes its failure in the report. A
// workload -only leaves out is noted as skipped instead.
func (s *suite) try(name string, fn func() error) {
	if !selected(s.cfg.only, name) {
		s.rep.note("%s: skipped on request", name)
		return
	}
	logf("%s", name)
	if err := fn(); err != nil {
		logf("%s failed: %v", name, err)
		s.rep.note("%s failed: %v", name, err)
	}
}

// setup describes the systems and settings of the run.
func (s *suite) setup() {
	bleveVersion := "bleve (version unknown)"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/blevesearch/bleve/v2" {
				bleveVersion = "Bleve " + d.Version
			}
		}
	}
	pg := s.pgVersion
	if pg == "" {
		pg = "PostgreSQL (not run)"
	}
	c := s.cfg
	s.rep.Setup = []string{
		fmt.Sprintf("Dataset: bench/gen, seed %d, %d docs and %d users, %d words of vocabulary.", seed, s.ds.n, 10_000, s.ds.g.VocabSize()),
		fmt.Sprintf("Coppice: `coppice serve` of this tree (bin/coppice, -tags pebblegozstd), default settings, synced writes; HTTP load: closed loop, fasthttp client, %d connections.", c.conns),
		fmt.Sprintf("%s (Debian package) on loopback: synchronous_commit=on, fsync=on, shared_buffers=256MB, work_mem=64MB, jit=off; btree on every filter column, GIN on tags and on a stored tsvector of title and body; pgx v5, prepared statements.", pg),
		fmt.Sprintf("%s in process, on disk (scorch): title and body, unicode tokenizer + lowercase, no stop words, stored with term vectors; match queries (operator or) with the class's fuzziness, prefix queries, top %d, html highlight.", bleveVersion, pageSize),
		fmt.Sprintf("Disk after loading: Coppice data directory %s (WAL included), PostgreSQL database %s (pg_database_size: WAL excluded), Bleve index %s.",
			bytesText(s.coppiceDisk), bytesText(s.pgDisk), bytesText(s.bleveDisk)),
		fmt.Sprintf("Queries: %d of the filter/sort mix (8 kinds in turn), %d per search class; %d timed passes after a warm-up; W4: %d timed runs on Coppice, %d on PostgreSQL. One system runs at a time.", c.queries, c.search, c.reps, c.reps*10, c.reps*2),
	}
}

// selected reports whether the phase or workload name runs under -only:
// a workload ("W1 import", "W2 postgresql") runs when only is empty or
// holds its first word; a phase always does.
func selected(only map[string]bool, name string) bool {
	w, _, _ := strings.Cut(name, " ")
	if len(only) == 0 || len(w) < 2 || w[0] != 'W' || w[1] < '0' || w[1] > '9' {
		return true
	}
	return only[w]
}

// splitComma splits a comma-separated list, dropping empty items.
func splitComma(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' })
}
