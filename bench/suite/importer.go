package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/coppice-db/coppice/bench/gen"
)

// sysImport labels the rows measured through `coppice import`.
const sysImport = "coppice import"

// importDB is the database the W1 import loads; it is deleted after.
const importDB = "imported"

// importCmd is `coppice import` of the dataset's NDJSON into a table of
// srv, with the loader's requests in flight and a progress line per 100k
// records into out.
func (s *suite) importCmd(srv *server, db, table string, out *bytes.Buffer) *exec.Cmd {
	cmd := exec.Command(s.cfg.bin, "import", "--url", "http://"+srv.addr, "--workspace", srv.ws,
		"--db", db, "--table", table, "--format", "ndjson", "--concurrency", strconv.Itoa(s.cfg.loaders),
		"--progress", "lines", s.ds.jsonPath)
	cmd.Env = append(os.Environ(), "COPPICE_API_KEY="+benchKey)
	cmd.Stdout, cmd.Stderr = out, out
	return cmd
}

// coppiceImportW1 loads the dataset's docs through `coppice import` into
// a database of its own (users loaded first, as the suite's loader has
// them), timing the process from start to exit, then deletes the
// database so that the workloads after W1 see the same server.
func (s *suite) coppiceImportW1(srv *server) error {
	if err := s.coppiceSchema(srv, importDB); err != nil {
		return err
	}
	logf("coppice import: loading %d docs into %s", s.ds.n, importDB)
	var out bytes.Buffer
	cmd := s.importCmd(srv, importDB, gen.DocsTable, &out)
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("coppice import: %v: %s", err, trim(out.Bytes(), 600))
	}
	load := series{elapsed: time.Since(t0), units: s.ds.n}
	// The import's own CPU shares the cores with the server's.
	client := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	s.rep.add("W1", "bulk insert, everything indexed", sysImport, load.summary("docs/s"),
		fmt.Sprintf("`coppice import` of the dataset's NDJSON, %d requests in flight; the whole process, start to exit; its CPU %s per 1000 docs",
			s.cfg.loaders, fmtDur(client*1000/time.Duration(max(1, s.ds.n)))))
	return srv.call("DELETE", "/workspaces/"+srv.ws+"/dbs/"+importDB, nil, 200, nil)
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
