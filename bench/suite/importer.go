package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
)

// sysImport labels the rows measured through `coppice import`.
const sysImport = "coppice import"

// importDB is the database the W1 import loads.
const importDB = "imported"

// importCmd is `coppice import` of the dataset's NDJSON into a table of
// srv, with the loader's requests in flight and a progress line per 100k
// records into out.
func (s *suite) importCmd(srv *server, db, table string, out io.Writer) *exec.Cmd {
	cmd := exec.Command(s.cfg.bin, "import", "--url", "http://"+srv.addr, "--workspace", srv.ws,
		"--db", db, "--table", table, "--format", "ndjson", "--concurrency", strconv.Itoa(s.cfg.loaders),
		"--progress", "lines", s.ds.jsonPath)
	cmd.Env = append(os.Environ(), "COPPICE_API_KEY="+benchKey)
	cmd.Stdout, cmd.Stderr = out, out
	return cmd
}

// w1Conditions are what the machine and the load's own pace were like
// during a W1 load: the loader and the import run one after the other
// on shared cores, so their ratio is read next to these.
type w1Conditions struct {
	load   [2]float64 // the 1-minute load average at the start and the end
	slices []float64  // docs per second of each 100k docs
}

// String gives the load average and the slowest and fastest 100k docs.
func (c w1Conditions) String() string {
	s := fmt.Sprintf("load average %.1f → %.1f", c.load[0], c.load[1])
	if len(c.slices) > 0 {
		lo, hi := c.slices[0], c.slices[0]
		for _, r := range c.slices {
			lo, hi = min(lo, r), max(hi, r)
		}
		s += fmt.Sprintf("; each 100k docs at %.0f–%.0f docs/s", lo, hi)
	}
	return s
}

// coppiceImportW1 loads the dataset's docs through `coppice import` into
// a server of its own, started on an empty data directory as the
// loader's was and with the users loaded first as the loader has them,
// timing the process from start to exit and charging the docs the
// server's CPU. The loader's server has settled (settled is the note
// that says how long it took) and stays idle meanwhile; the import's
// server and its data go once it is done.
func (s *suite) coppiceImportW1(loader Summary, settled string) error {
	dataDir := filepath.Join(s.cfg.work, "coppice-import")
	srv, err := startServer(s.cfg.bin, dataDir, filepath.Join(s.cfg.work, "coppice-import.log"))
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.stop(); err != nil {
			logf("coppice import: stopping its server: %v", err)
		}
		os.RemoveAll(dataDir)
	}()
	if err := srv.ready(time.Minute); err != nil {
		return err
	}
	if err := s.coppiceSchema(srv, importDB); err != nil {
		return err
	}
	st, err := srv.storage()
	if err != nil {
		return err
	}
	logf("coppice import: loading %d docs into %s of a server of its own", s.ds.n, importDB)
	out := &progressLog{}
	cmd := s.importCmd(srv, importDB, gen.DocsTable, out)
	cond := w1Conditions{load: [2]float64{loadAverage(), 0}}
	cpu0, t0 := srv.cpu(), time.Now()
	out.slices.at = t0
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("coppice import: %v: %s", err, trim(out.all.Bytes(), 600))
	}
	sum := series{elapsed: time.Since(t0), units: s.ds.n}.summary("docs/s")
	sum.CPU = (srv.cpu() - cpu0) / time.Duration(max(1, s.ds.n))
	cond.load[1], cond.slices = loadAverage(), out.slices.rates
	// The import's own CPU shares the cores with the server's.
	client := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	s.rep.add("W1", "bulk insert, everything indexed", sysImport, sum,
		fmt.Sprintf("`coppice import` of the dataset's NDJSON, %d requests in flight, on a server of its own started on an empty data directory "+
			"(at its start %s); the whole process, start to exit; its CPU %s per 1000 docs; %s",
			s.cfg.loaders, st, fmtDur(client*1000/time.Duration(max(1, s.ds.n))), cond))
	s.rep.note("W1: `coppice import` ran on a second server started on an empty data directory, as the loader's was, "+
		"once the loader's server had had no compaction, idle compaction or column-store build running or pending for two seconds (%s); "+
		"neither load wrote into a tree the other had filled. Server CPU per doc: loader %s, import %s",
		settled, fmtCPU(loader.CPU), fmtCPU(sum.CPU))
	return nil
}

// progressLog keeps the output of `coppice import` for error messages and
// passes its progress lines on to the log, each with the rate of the
// records since the line before.
type progressLog struct {
	all    bytes.Buffer
	part   []byte     // the start of a line not yet ended
	slices sliceRates // its at is set to the start of the process
}

// Write takes output as the process writes it (one writer at a time:
// exec.Cmd calls it from one goroutine when Stdout and Stderr are the
// same).
func (w *progressLog) Write(p []byte) (int, error) {
	w.all.Write(p)
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		w.line(string(w.part[:i]))
		w.part = w.part[i+1:]
	}
	return len(p), nil
}

// line logs a progress line ("import: 100000 records, …") with its slice's rate.
func (w *progressLog) line(l string) {
	var n int64
	rest, ok := strings.CutPrefix(l, "import: ")
	if !ok {
		return
	}
	if _, err := fmt.Sscanf(rest, "%d records,", &n); err != nil {
		return
	}
	logf("coppice import: %d docs, %.0f docs/s since the last line", n, w.slices.add(n))
}

// sliceRates turns running counts into the rate between each count and
// the one before.
type sliceRates struct {
	at    time.Time // when the last count was taken
	count int64
	rates []float64
}

// add takes count now and returns the rate since the last one.
func (r *sliceRates) add(count int64) float64 {
	now := time.Now()
	rate := float64(count-r.count) / now.Sub(r.at).Seconds()
	r.at, r.count = now, count
	r.rates = append(r.rates, rate)
	return rate
}

// coppiceImportW7 runs the query mix while `coppice import` loads the
// dataset's docs into another table of the database, then interrupts the
// import (it stops once its requests in flight are answered).
func (s *suite) coppiceImportW7(srv *server) error {
	const table = "ingest_import"
	if err := srv.call("PUT", s.tablePath(srv, benchDB, "main", table, ""), nil, 201, nil); err != nil {
		return err
	}
	if err := srv.call("PUT", s.tablePath(srv, benchDB, "main", table, "/schema"), map[string]any{"columns": gen.DocsColumns()}, 200, nil); err != nil {
		return err
	}
	var out bytes.Buffer
	cmd := s.importCmd(srv, benchDB, table, &out)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	time.Sleep(2 * time.Second) // the import is under way
	_, busy, err := s.coppiceMix(srv, "main", w7Passes)
	finished := false
	select {
	case werr := <-exited:
		// The import ended before the mix: part of the mix ran idle.
		finished = true
		if werr != nil && err == nil {
			err = fmt.Errorf("coppice import: %v: %s", werr, trim(out.Bytes(), 600))
		}
	default:
		cmd.Process.Signal(syscall.SIGINT)
		<-exited // interrupted: its status says not every record was imported
	}
	if err != nil {
		return err
	}
	note := "into another table of the database"
	if finished {
		note += "; the import finished before the mix did"
	}
	s.rep.add("W7", "query mix during coppice import", sysCoppice, busy.summary("q/s"), note)
	return nil
}

// loadAverage is the machine's 1-minute load average; 0 when /proc does
// not say.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0
	}
	f, _ := strconv.ParseFloat(fields[0], 64)
	return f
}
