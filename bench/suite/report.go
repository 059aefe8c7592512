package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Row is one measured line of the report: a workload case on one system.
// A nil S means the system could not run the case; Note says why.
type Row struct {
	Workload string
	Case     string
	System   string
	S        *Summary
	Note     string
}

// Check is one target of BENCHMARKS.md with what this run measured. A nil
// Met means the target could not be judged in this run.
type Check struct {
	Workload string
	Target   string
	Measured string
	Met      *bool
}

// Report collects the rows, checks and facts of one run.
type Report struct {
	N       int
	Started time.Time
	Machine string
	Setup   []string // one line per system and setting
	Rows    []Row
	Checks  []Check
	Notes   []string
}

// add appends a measured row.
func (r *Report) add(workload, cas, system string, s Summary, note string) {
	r.Rows = append(r.Rows, Row{Workload: workload, Case: cas, System: system, S: &s, Note: note})
	logf("%s %s %s: p50 %s p99 %s cpu/op %s %s %s", workload, cas, system, fmtDur(s.P50), fmtDur(s.P99), fmtCPU(s.CPU), fmtRate(s.Rate, s.Unit), note)
}

// missing appends a row for a case a system could not run.
func (r *Report) missing(workload, cas, system, why string) {
	r.Rows = append(r.Rows, Row{Workload: workload, Case: cas, System: system, Note: why})
	logf("%s %s %s: %s", workload, cas, system, why)
}

// check appends a target judged by met.
func (r *Report) check(workload, target, measured string, met bool) {
	r.Checks = append(r.Checks, Check{Workload: workload, Target: target, Measured: measured, Met: &met})
}

// unjudged appends a target this run could not judge.
func (r *Report) unjudged(workload, target, why string) {
	r.Checks = append(r.Checks, Check{Workload: workload, Target: target, Measured: why})
}

// note appends a free line under the tables.
func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// find returns the summary of a row, or nil.
func (r *Report) find(workload, cas, system string) *Summary {
	for _, row := range r.Rows {
		if row.Workload == workload && row.Case == cas && row.System == system {
			return row.S
		}
	}
	return nil
}

// write renders the report as Markdown into dir/<date>-<N>.md and returns
// the path.
func (r *Report) write(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.md", r.Started.UTC().Format("2006-01-02"), r.N))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriter(f)
	r.render(w)
	if err := w.Flush(); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// render writes the Markdown of the report.
func (r *Report) render(w *bufio.Writer) {
	fmt.Fprintf(w, "# Benchmark suite, N = %d\n\n", r.N)
	fmt.Fprintf(w, "Run %s, %s.\n\n", r.Started.UTC().Format(time.RFC3339), time.Since(r.Started).Round(time.Second))
	fmt.Fprintf(w, "Machine: %s\n\n", r.Machine)
	for _, s := range r.Setup {
		fmt.Fprintf(w, "- %s\n", s)
	}
	fmt.Fprintf(w, "\n## Targets\n\n")
	fmt.Fprintf(w, "A ratio is the first value over the second: for \"≥ k× peer\" targets on latency, the peer's over Coppice's; on throughput, Coppice's over the other's; for \"≤\" targets, the case over its reference.\n\n")
	fmt.Fprintf(w, "| workload | target | measured | result |\n|---|---|---|---|\n")
	met, missed, open := 0, 0, 0
	for _, c := range r.Checks {
		res := "n/a"
		switch {
		case c.Met == nil:
			open++
		case *c.Met:
			res = "met"
			met++
		default:
			res = "**missed**"
			missed++
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", c.Workload, c.Target, c.Measured, res)
	}
	fmt.Fprintf(w, "\n%d met, %d missed, %d not judged.\n", met, missed, open)
	fmt.Fprintf(w, "\n## Measurements\n\n")
	fmt.Fprintf(w, "Latencies are of one operation (a request, a query, a batch of a load); throughput is over the wall time of the series. Server CPU is the time the Coppice server's threads ran (background work included) per operation over the series, from /proc/<pid>/task/*/schedstat before and after each request or phase; the load generator shares the cores.\n\n")
	fmt.Fprintf(w, "| workload | case | system | p50 | p99 | server CPU/op | throughput | n | note |\n|---|---|---|---|---|---|---|---|---|\n")
	rows := slices.Clone(r.Rows)
	slices.SortStableFunc(rows, func(a, b Row) int { return strings.Compare(a.Workload, b.Workload) })
	for _, row := range rows {
		if row.S == nil {
			fmt.Fprintf(w, "| %s | %s | %s | — | — | — | — | — | %s |\n", row.Workload, row.Case, row.System, row.Note)
			continue
		}
		s := row.S
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", row.Workload, row.Case, row.System,
			fmtDur(s.P50), fmtDur(s.P99), fmtCPU(s.CPU), fmtRate(s.Rate, s.Unit), s.N, row.Note)
	}
	if len(r.Notes) > 0 {
		fmt.Fprintf(w, "\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
}

// machineLine describes the CPU, cores, memory, kernel and Go version.
func machineLine() string {
	cpu := "unknown cpu"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	ram := "unknown RAM"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		for line := range strings.Lines(string(b)) {
			if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
				ram = fmt.Sprintf("%.1f GiB RAM", float64(kb)/(1<<20))
				break
			}
		}
	}
	kernel := "unknown kernel"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s, %d cores, %s, %s, %s %s/%s", cpu, runtime.NumCPU(), ram, kernel, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// logf prints a progress line on stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// ratioText prints a ratio like "2.31×".
func ratioText(x float64) string { return fmt.Sprintf("%.2f×", x) }

// judgedRatioText prints a ratio judged against want like ratioText, with
// as many more digits (up to six) as it takes to tell x from want when
// they differ: 2.998 judged against 3 reads "2.998×", not "3.00×".
func judgedRatioText(x, want float64) string {
	for digits := 2; digits <= 6; digits++ {
		if x == want || fmt.Sprintf("%.*f", digits, x) != fmt.Sprintf("%.*f", digits, want) {
			return fmt.Sprintf("%.*f×", digits, x)
		}
	}
	return fmt.Sprintf("%.6f×", x)
}

// bytesText prints a size in MiB or GiB.
func bytesText(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// dirSize returns the bytes of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}
