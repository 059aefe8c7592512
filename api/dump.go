package api

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine"
)

// Dump and load: GET /dbs/{db}/dump streams one database as a dump
// (codec/dumpheader.go: a header line, then the engine's backup of the
// database's key range, taken from one snapshot), and POST /dbs/{db}/load
// recreates a dump as a new database {db} of the workspace, on this server
// or another one. Both are data-plane database operations: every member of
// the workspace may do them, and the workspace is resolved as for
// /dbs/{db}/gitBranches.
//
// A load reads its body as it comes rather than before the handler runs:
// it is bounded by Limits.MaxLoad instead of the request body limit, each
// read of it by the request timeout, and one load runs at a time, since
// the engine applies a load as one batch held in memory (all or nothing).
// Its connection serves no further request: whatever is left of an
// unread body would be read as one.

// loadRoute is the path pattern of POST /dbs/{db}/load.
const loadRoute = "/dbs/{db}/load"

// dumpRoutes registers the dump and load endpoints.
func (s *Server) dumpRoutes() {
	s.router.GET("/dbs/{db}/dump", s.handle(s.dumpDatabase))
	s.router.POST(loadRoute, s.handle(s.loadDatabase))
}

// streamsBody reports whether a request's handler reads its body itself
// (see loadDatabase); admission then leaves it unread.
func streamsBody(method, path string) bool {
	if method != "POST" {
		return false
	}
	rest, ok := strings.CutPrefix(path, "/dbs/")
	if !ok {
		return false
	}
	db, ok := strings.CutSuffix(rest, "/load")
	return ok && db != "" && !strings.Contains(db, "/")
}

// dumpDatabase: GET /dbs/{db}/dump.
func (s *Server) dumpDatabase(r *request) error {
	ws, db, err := r.dataDB()
	if err != nil {
		return err
	}
	info, err := s.eng.GetDatabase(ws, db)
	if err != nil {
		return err
	}
	header := codec.AppendDumpHeader(nil, codec.DumpHeader{
		Database: info.Name, Region: info.Region, CreatedAt: info.CreatedAt,
		DumpedAt: time.Now().UTC(), Server: ReadBuildInfo().Version,
	})
	r.ctx.Response.Header.Set("Content-Disposition", `attachment; filename="`+dumpFileName(db)+`"`)
	eng := s.eng
	s.streamResponse(r, "application/octet-stream", func(w io.Writer) error {
		if _, err := w.Write(header); err != nil {
			return err
		}
		return eng.BackupDatabase(ws, db, w)
	}, nil)
	return nil
}

// dumpFileName is the file name a dump of db is offered under. Database
// names are letters, digits and _ - ~ only.
func dumpFileName(db string) string { return db + ".dump" }

// loadDatabase: POST /dbs/{db}/load?region=R with a dump as the body; 201
// with the new database's metadata. The region defaults to the dump's.
func (s *Server) loadDatabase(r *request) error {
	ws, db, err := r.dataDB()
	if err != nil {
		return err
	}
	if !s.ops.loading.TryLock() {
		return &retryLater{"another load is running; retry when it ends"}
	}
	defer s.ops.loading.Unlock()
	body, err := s.streamBody(r, s.limits.MaxLoad, "the dump")
	if err != nil {
		return err
	}
	defer body.stop()
	region, _ := r.query("region")
	info, err := s.loadDump(ws, db, region, body)
	if body.err != nil {
		return body.err // the body's own failure, whatever the engine made of it
	}
	if err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusCreated, databaseJSON(info))
	return nil
}

// loadDump reads a dump from r and recreates it as database name of
// workspace ws, in region, or in the dump's region when region is "",
// which must be one of the server's. A dump that is malformed or fails its
// checksum creates nothing.
func (s *Server) loadDump(ws, name, region string, r io.Reader) (engine.DatabaseInfo, error) {
	br := bufio.NewReaderSize(r, codec.MaxDumpHeader)
	line, err := br.ReadSlice('\n')
	if err != nil && !errors.Is(err, bufio.ErrBufferFull) && !errors.Is(err, io.EOF) {
		return engine.DatabaseInfo{}, err
	}
	h, err := codec.DecodeDumpHeader(line)
	if err != nil {
		return engine.DatabaseInfo{}, invalid("%s", err.Error())
	}
	if region == "" {
		region = h.Region
	}
	if !s.hasRegion(region) {
		return engine.DatabaseInfo{}, invalid("region [%s] is not available on this server; name one of GET /workspaces/{ws}/regions with ?region=", region)
	}
	if err := s.eng.RestoreDatabase(ws, name, region, br); err != nil {
		return engine.DatabaseInfo{}, err
	}
	return s.eng.GetDatabase(ws, name)
}
