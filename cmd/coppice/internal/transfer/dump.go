package transfer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine"
)

// Dumps (codec/dumpheader.go): one database in a file, every branch with
// its lineage, schema, migrations, records, files and git mapping, which
// Load recreates under any name, on the same server or another. Over HTTP
// they travel through GET /dbs/{db}/dump and POST /dbs/{db}/load; with a
// data directory no server holds, through the engine.

// DumpOptions configure Dump.
type DumpOptions struct {
	// Target names the database (Database; Table and Branch are not used)
	// and where it lives: a server (URL, APIKey, Workspace) or a data
	// directory (DataDir, Workspace).
	Target Target
	// Branch, when set, keeps only that branch and the branches it was
	// forked from, up to the first: the data of every other branch is left
	// out of the dump.
	Branch string
	// Out receives the dump.
	Out io.Writer
	// Program names the program writing a dump of a data directory, for
	// the dump's header.
	Program string
}

// DumpSummary is what Dump wrote.
type DumpSummary struct {
	Database string
	// Branches are the branches kept when DumpOptions.Branch was set.
	Branches []string
	Bytes    int64
	Took     time.Duration
}

// checkDatabase reports a target that names no database or no place.
func (t *Target) checkDatabase() error {
	switch {
	case t.Database == "":
		return errors.New("no database: set --db")
	case t.DataDir != "" && t.Workspace == "":
		return errors.New("no workspace: --workspace is required with --data")
	case t.DataDir == "" && t.URL == "":
		return errors.New("no server: set --url, or --data for a data directory")
	}
	return nil
}

// Dump writes a dump of a database to o.Out. Every byte is checked as it
// goes: a dump cut short or corrupted on the way is an error, whatever
// was written by then.
func Dump(ctx context.Context, o DumpOptions) (*DumpSummary, error) {
	start := time.Now()
	t := o.Target
	if err := t.checkDatabase(); err != nil {
		return nil, err
	}
	src, err := dumpSource(ctx, &t, o.Program)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	br := bufio.NewReaderSize(src, codec.MaxDumpHeader)
	h, line, err := readDumpHeader(br)
	if err != nil {
		return nil, err
	}
	out := &countingWriter{w: o.Out}
	sum := &DumpSummary{Database: h.Database}
	if o.Branch == "" {
		if _, err := out.Write(line); err != nil {
			return nil, err
		}
		if err := engine.VerifyBackup(io.TeeReader(br, out)); err != nil {
			return nil, dumpError(out.err, err)
		}
	} else if sum.Branches, err = pruneDump(h, br, o.Branch, out); err != nil {
		return nil, dumpError(out.err, err)
	}
	sum.Bytes, sum.Took = out.n, time.Since(start)
	return sum, nil
}

// dumpError prefers the failure to write the dump out over what the
// reader of the dump made of it.
func dumpError(writeErr, err error) error {
	if writeErr != nil {
		return writeErr
	}
	if engine.CodeOf(err) == engine.CodeInvalid {
		return fmt.Errorf("the dump is incomplete or corrupt: %w", err)
	}
	return err
}

// dumpSource returns the dump of t's database, from the server or the
// data directory.
func dumpSource(ctx context.Context, t *Target, program string) (io.ReadCloser, error) {
	if t.DataDir == "" {
		s, err := newHTTPStore(t, 1)
		if err != nil {
			return nil, err
		}
		return s.stream(ctx, "GET", "/dbs/"+url.PathEscape(t.Database)+"/dump", nil, 0, http.StatusOK)
	}
	core, err := workspaceCore(t.Workspace)
	if err != nil {
		return nil, err
	}
	eng, err := openDataDir(t.DataDir)
	if err != nil {
		return nil, err
	}
	info, err := eng.GetDatabase(core, t.Database)
	if err != nil {
		eng.Close()
		return nil, err
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h := codec.DumpHeader{Database: info.Name, Region: info.Region, CreatedAt: info.CreatedAt, DumpedAt: time.Now().UTC(), Server: program}
		_, err := pw.Write(codec.AppendDumpHeader(nil, h))
		if err == nil {
			err = eng.BackupDatabase(core, t.Database, pw)
		}
		pw.CloseWithError(err)
	}()
	return &closers{Reader: pr, close: func() error {
		pr.Close()
		<-done
		return eng.Close()
	}}, nil
}

// readDumpHeader reads and decodes a dump's header line; line is valid
// until br's next read.
func readDumpHeader(br *bufio.Reader) (h codec.DumpHeader, line []byte, err error) {
	line, err = br.ReadSlice('\n')
	if err != nil && !errors.Is(err, bufio.ErrBufferFull) && !errors.Is(err, io.EOF) {
		return h, nil, err
	}
	h, err = codec.DecodeDumpHeader(line)
	return h, line, err
}

// pruneDump restores a dump's body into a scratch data directory, deletes
// every branch but keep and the branches it was forked from, and writes
// what is left as a dump with header h. It returns the branches kept.
func pruneDump(h codec.DumpHeader, body io.Reader, keep string, out io.Writer) ([]string, error) {
	scratch, err := os.MkdirTemp("", "coppice-dump-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	eng, err := engine.Open(scratch, engine.Options{NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	if err := eng.RestoreDatabase("", h.Database, h.Region, body); err != nil {
		return nil, err
	}
	kept, err := lineageOf(eng, h.Database, keep)
	if err != nil {
		return nil, err
	}
	all, err := eng.Branches().List("", h.Database)
	if err != nil {
		return nil, err
	}
	for _, b := range all {
		if !contains(kept, b.Name) {
			if err := eng.Branches().Delete(engine.Ref{Database: h.Database, Branch: b.Name}); err != nil {
				return nil, err
			}
		}
	}
	if _, err := out.Write(codec.AppendDumpHeader(nil, h)); err != nil {
		return nil, err
	}
	return kept, eng.BackupDatabase("", h.Database, out)
}

// lineageOf returns branch and the branches it was forked from, nearest
// first, as long as each is still the branch the fork was taken from.
func lineageOf(eng *engine.Engine, db, branch string) ([]string, error) {
	d, err := eng.Branches().Details(engine.Ref{Database: db, Branch: branch})
	if engine.CodeOf(err) == engine.CodeNotFound {
		return nil, fmt.Errorf("branch [%s] is not in the dump of database [%s]", branch, db)
	}
	if err != nil {
		return nil, err
	}
	names := []string{branch}
	for d.StartedFrom != nil && !contains(names, d.StartedFrom.BranchName) {
		p, err := eng.Branches().Details(engine.Ref{Database: db, Branch: d.StartedFrom.BranchName})
		if err != nil || p.ID != d.StartedFrom.DBBranchID {
			break // deleted, or another branch of the same name since
		}
		names = append(names, p.BranchName)
		d = p
	}
	return names, nil
}

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// LoadOptions configure Load.
type LoadOptions struct {
	// Target names where the database goes: a server (URL, APIKey,
	// Workspace) or a data directory (DataDir, Workspace). Database is its
	// name; "" keeps the dump's.
	Target Target
	// Region is the new database's region; "" keeps the dump's.
	Region string
	// In is the dump; InSize its length, or -1 when unknown.
	In     io.Reader
	InSize int64
}

// LoadSummary is what Load created.
type LoadSummary struct {
	Database, Region string
	Bytes            int64
	Took             time.Duration
}

// Load recreates a dump as a new database, all or nothing: a dump that is
// malformed or fails its checksum creates nothing.
func Load(ctx context.Context, o LoadOptions) (*LoadSummary, error) {
	start := time.Now()
	t := o.Target
	br := bufio.NewReaderSize(o.In, codec.MaxDumpHeader)
	h, line, err := readDumpHeader(br)
	if err != nil {
		return nil, err
	}
	header := bytes.Clone(line)
	if t.Database == "" {
		t.Database = h.Database
	}
	if err := t.checkDatabase(); err != nil {
		return nil, err
	}
	sum := &LoadSummary{Database: t.Database}
	var in *countingReader
	if t.DataDir != "" {
		in = &countingReader{r: br, n: int64(len(header))}
		sum.Region, err = loadDir(&t, o.Region, h, in)
	} else {
		// The server reads the whole dump: from the file's start when it
		// can be read again (and then sent again), else the header again.
		in = &countingReader{r: io.MultiReader(bytes.NewReader(header), br)}
		if rs, ok := o.In.(io.ReadSeeker); ok && o.InSize >= 0 {
			if _, err := rs.Seek(0, io.SeekStart); err == nil {
				in = &countingReader{r: rs}
			}
		}
		sum.Region, err = loadHTTP(ctx, &t, o.Region, in, o.InSize)
	}
	if err != nil {
		return nil, err
	}
	sum.Bytes, sum.Took = in.n, time.Since(start)
	return sum, nil
}

// loadHTTP sends a dump to the server's load endpoint and returns the new
// database's region.
func loadHTTP(ctx context.Context, t *Target, region string, body io.Reader, size int64) (string, error) {
	s, err := newHTTPStore(t, 1)
	if err != nil {
		return "", err
	}
	defer s.close()
	path := "/dbs/" + url.PathEscape(t.Database) + "/load"
	if region != "" {
		path += "?region=" + url.QueryEscape(region)
	}
	rc, err := s.stream(ctx, "POST", path, body, size, http.StatusCreated)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	var out struct {
		Region string `json:"region"`
	}
	if err := json.NewDecoder(io.LimitReader(rc, 1<<20)).Decode(&out); err != nil {
		return "", fmt.Errorf("load: unexpected answer: %w", err)
	}
	return out.Region, nil
}

// loadDir restores a dump's body into a data directory.
func loadDir(t *Target, region string, h codec.DumpHeader, body io.Reader) (string, error) {
	core, err := workspaceCore(t.Workspace)
	if err != nil {
		return "", err
	}
	eng, err := openDataDir(t.DataDir)
	if err != nil {
		return "", err
	}
	defer eng.Close()
	if region == "" {
		region = h.Region
	}
	if err := eng.RestoreDatabase(core, t.Database, region, body); err != nil {
		return "", err
	}
	return region, nil
}

// countingWriter counts the bytes written through it and keeps its first
// failure.
type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

// Write writes p and counts it.
func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// countingReader counts the bytes read through it; it seeks when what it
// reads does.
type countingReader struct {
	r io.Reader
	n int64
}

// Read reads and counts.
func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Seek seeks the reader underneath, if it can.
func (c *countingReader) Seek(off int64, whence int) (int64, error) {
	sk, ok := c.r.(io.Seeker)
	if !ok {
		return 0, errors.New("cannot seek")
	}
	n, err := sk.Seek(off, whence)
	if err == nil {
		c.n = n
	}
	return n, err
}

// closers is a reader with a close function.
type closers struct {
	io.Reader
	close func() error
}

// Close calls the close function.
func (c *closers) Close() error { return c.close() }
