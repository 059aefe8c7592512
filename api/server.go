package api

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
)

// Compatibility modes of Options.Compat.
const (
	CompatNone = "none"
	CompatXata = "xata"
)

// DefaultMaxBody is the default request body limit in bytes.
const DefaultMaxBody = 32 << 20

// Options configure a Server. cmd/coppice fills them from flags and the
// environment; tests fill them directly. Where the data lives and how the
// engine opens it are the engine's options: the server is handed an open
// engine.
type Options struct {
	// Compat is CompatNone ("" means the same) or CompatXata: the record
	// metadata key becomes "xata" and page limits follow the legacy API.
	Compat string
	// Regions are the region ids databases may be created in; empty means
	// the default of the compatibility mode (compat-api.md §6).
	Regions []string
	// Domains are the host-name suffixes of the workspace host form
	// {workspace}.{region}.{domain}; empty means "localhost".
	Domains []string
	// MaxBody is the request body limit in bytes; 0 means DefaultMaxBody.
	MaxBody int
	// LogLevel is debug, info, warn or error; "" means info. Every request
	// logs one access line at info.
	LogLevel string
	// LogFormat is LogFormatText or LogFormatJSON; "" means text.
	LogFormat string
	// SlowRequest is the duration past which a request is logged again at
	// warn level; 0 means DefaultSlowRequest, a negative value turns the
	// slow-request log off.
	SlowRequest time.Duration
	// Metrics receives the server's request metrics and reads the engine's
	// at scrape time; nil means none. ServeMetrics serves them. One
	// Metrics serves one Server.
	Metrics *Metrics
	// PublicURL is the base of the absolute file URLs the server hands out
	// (compat-api.md §11.3), e.g. https://db.example.com; "" means
	// http:// and the address the server listens on.
	PublicURL string
	// Logger receives the server's logs; nil means a logger on stderr at
	// LogLevel in LogFormat.
	Logger *slog.Logger
	// Limits bound requests and connections; see limits.go.
	Limits Limits
	// RecordCacheSize is the memory in bytes that point reads and query
	// pages keep records in as read, and again their encodings, so that a
	// hot record is answered without reading or encoding it again; 0 means
	// DefaultRecordCacheSize, a negative value turns the cache off.
	RecordCacheSize int
}

// Server is the HTTP front end: both planes of the API on one handler. It is
// safe for concurrent use; a RequestCtx is never kept after its handler
// returns.
type Server struct {
	eng     *engine.Engine
	cluster *engine.Cluster // nil on a single server; see cluster.go
	// peers are the clients of the other nodes of a cluster, by API
	// address, that requests are passed on to (cluster.go).
	peers struct {
		sync.Mutex
		m map[string]*fasthttp.HostClient
	}
	opts    Options
	log     *slog.Logger
	meta    string // record metadata key: "svc" or "xata"
	regions []region
	domains []string

	router *routeTable
	http   *fasthttp.Server

	metrics *Metrics      // nil: no metrics
	slow    time.Duration // slow-request threshold; 0: off
	health  readiness     // see health.go
	openapi []byte        // GET /openapi.json, see openapi.go

	reqPrefix string
	reqSeq    atomic.Uint64

	records  *engine.RecordCache     // point reads and query pages; nil: off
	encoded  *viewEncodings          // the encodings of records' views; nil: off
	pointGet fasthttp.RequestHandler // see pointGetHandler; nil: use the router
	// pointGetPaths are the parameters of the paths of point reads up to
	// their id, for servePointGet.
	pointGetPaths pathPrefixes
	secrets       secretHeaders // see authenticate

	labels readMostly[string, string] // workspace label → core, see workspaceCore

	stats accessStats // reads and writes per branch and hour, see stats.go
	ops   opsState    // backups and loads in progress, see admin_backup.go
	files fileURLs    // default base of file URLs, see files.go

	// Limits and their state: admission.go, authlimit.go, conns.go,
	// reqctx.go.
	limits Limits
	slots  *slots
	heavy  *slots // the heavy requests' own cap, see heavyRequest
	// syncWaiting counts the writes waiting for their sync that gave
	// their slot back (request.syncWait).
	syncWaiting *counter
	bodies      *bodyBudget
	bulk        *bulkGate // bulk requests' turns while reads are served
	authFails   *authLimiter
	base        context.Context // parent of request contexts; ends at Shutdown
	cancelBase  context.CancelCauseFunc
	timeLimit   error // cause of a request's deadline
	stopping    atomic.Bool
	active      atomic.Int64 // requests in serve
	connsMu     sync.Mutex
	conns       []*connLimiter // the listeners Serve accepts on
}

// responseWriteBuffer is the size of the buffer a connection writes a
// response through. fasthttp writes the headers into it and then the body:
// a body that does not fit in what is left goes out in a second write
// system call, and on loopback a write costs as much CPU as encoding a
// page. A default page of twenty records fits, so it leaves in one write;
// the buffer is pooled across connections and held only while a response
// is being written.
const responseWriteBuffer = 32 << 10

// DefaultRecordCacheSize is the default Options.RecordCacheSize: the
// memory of the records point reads keep, and again of their encodings.
const DefaultRecordCacheSize = 32 << 20

// MetaKey is the record metadata key of a compatibility mode: "xata" in
// compat mode, else "svc". The engine a server serves is opened with it
// (engine.Options.Meta), so that requests name the metadata columns as
// responses show them.
func MetaKey(compat string) string {
	if compat == CompatXata {
		return "xata"
	}
	return "svc"
}

// New returns a Server that serves eng. The caller keeps ownership of eng
// and closes it after Shutdown.
func New(eng *engine.Engine, opts Options) (*Server, error) {
	switch opts.Compat {
	case "", CompatNone:
		opts.Compat = CompatNone
	case CompatXata:
	default:
		return nil, fmt.Errorf("api: unknown compatibility mode %q (want none or xata)", opts.Compat)
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	log := opts.Logger
	if log == nil {
		var err error
		if log, err = NewLoggerTo(os.Stderr, opts.LogLevel, opts.LogFormat); err != nil {
			return nil, err
		}
	}
	s := &Server{eng: eng, opts: opts, log: log, meta: MetaKey(opts.Compat), reqPrefix: randomHex(4), metrics: opts.Metrics}
	if eng != nil && eng.Meta() != s.meta {
		return nil, fmt.Errorf("api: compatibility mode %s needs an engine opened with Meta %q, not %q", opts.Compat, s.meta, eng.Meta())
	}
	switch {
	case opts.SlowRequest == 0:
		s.slow = DefaultSlowRequest
	case opts.SlowRequest > 0:
		s.slow = opts.SlowRequest
	}
	if eng != nil {
		s.cluster = eng.Cluster()
	}
	s.initLimits()
	if err := s.registerMetrics(); err != nil {
		return nil, fmt.Errorf("api: metrics: %w", err)
	}
	if n := cmp.Or(opts.RecordCacheSize, DefaultRecordCacheSize); n > 0 {
		s.records = engine.NewRecordCache(n)
		s.encoded = newViewEncodings(n)
	}
	s.regions = configuredRegions(opts.Compat, opts.Regions)
	s.domains = []string{"localhost"}
	if len(opts.Domains) > 0 {
		s.domains = s.domains[:0]
		for _, d := range opts.Domains {
			if d = strings.ToLower(strings.TrimSpace(d)); d != "" {
				s.domains = append(s.domains, d)
			}
		}
	}
	s.router = newRouteTable()
	s.routes()
	s.pointGet = s.pointGetHandler()
	doc, err := s.openAPIJSON()
	if err != nil {
		return nil, err
	}
	s.openapi = doc
	s.http = &fasthttp.Server{
		Handler:                      s.serve,
		ErrorHandler:                 s.transportError,
		Name:                         "coppice",
		MaxRequestBodySize:           opts.MaxBody,
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		SecureErrorLogMessage:        true, // no request bytes (API keys) in errors
		Logger:                       fasthttpLogger{log},
		WriteBufferSize:              responseWriteBuffer,
	}
	s.transportLimits(s.http)
	return s, nil
}

// Serve accepts connections on ln until Shutdown, within the connection
// limits.
func (s *Server) Serve(ln net.Listener) error {
	s.files.listening(ln.Addr())
	cl := newConnLimiter(ln, s.limits.MaxConns, s.limits.MaxConnsPerIP, s.log)
	if s.metrics != nil {
		cl.refused = s.metrics.connRefused
	}
	s.connsMu.Lock()
	s.conns = append(s.conns, cl)
	s.connsMu.Unlock()
	s.health.serving()
	return s.http.Serve(cl)
}

// Handler returns the request handler, for callers that run their own
// fasthttp server. /readyz answers 200 only while Serve runs.
func (s *Server) Handler() fasthttp.RequestHandler { return s.serve }

// routes registers every endpoint. Patterns match the raw (still
// percent-encoded) path; handlers decode each parameter.
func (s *Server) routes() {
	r := s.router
	const (
		ws  = "/workspaces/{ws}"
		dbb = "/db/{dbb}"
		t   = dbb + "/tables/{table}"
	)
	// Users, API keys, workspaces, members and invites (control plane).
	s.controlPlaneRoutes()
	// A cluster's administration.
	s.clusterRoutes()

	// Databases (control plane).
	r.GET(ws+"/dbs", s.handle(s.listDatabases))
	r.PUT(ws+"/dbs/{db}", s.handle(s.createDatabase))
	r.GET(ws+"/dbs/{db}", s.handle(s.getDatabase))
	r.PATCH(ws+"/dbs/{db}", s.handle(s.updateDatabase))
	r.DELETE(ws+"/dbs/{db}", s.handle(s.deleteDatabase))
	r.POST(ws+"/dbs/{db}/rename", s.handle(s.renameDatabase))
	r.GET(ws+"/regions", s.handle(s.listRegions))

	// Branches.
	r.GET("/dbs/{db}", s.handle(s.listBranches))
	r.GET(dbb, s.handle(s.getBranch))
	r.PUT(dbb, s.handle(s.createBranch))
	r.DELETE(dbb, s.handle(s.deleteBranch))
	r.GET(dbb+"/metadata", s.handle(s.getBranchMetadata))
	r.PUT(dbb+"/metadata", s.handle(s.setBranchMetadata))
	r.GET(dbb+"/stats", s.handle(s.branchStats))

	// Git branch mapping.
	r.GET("/dbs/{db}/gitBranches", s.handle(s.listGitBranches))
	r.POST("/dbs/{db}/gitBranches", s.handle(s.addGitBranch))
	r.DELETE("/dbs/{db}/gitBranches", s.handle(s.removeGitBranch))
	r.GET("/dbs/{db}/resolveBranch", s.handle(s.resolveBranch))

	// Tables and columns.
	r.PUT(t, s.handle(s.createTable))
	r.DELETE(t, s.handle(s.deleteTable))
	r.PATCH(t, s.handle(s.updateTable))
	r.GET(t+"/schema", s.handle(s.getTableSchema))
	r.PUT(t+"/schema", s.handle(s.setTableSchema))
	r.GET(t+"/columns", s.handle(s.listColumns))
	r.POST(t+"/columns", s.handle(s.addColumn))
	r.GET(t+"/columns/{column}", s.handle(s.getColumn))
	r.PATCH(t+"/columns/{column}", s.handle(s.renameColumn))
	r.DELETE(t+"/columns/{column}", s.handle(s.deleteColumn))

	// Records.
	r.POST(t+"/data", s.handle(s.writes(s.insertRecord)))
	r.PUT(t+"/data/{id}", s.handle(s.writes(s.putRecord)))
	r.PATCH(t+"/data/{id}", s.handle(s.writes(s.updateRecord)))
	r.POST(t+"/data/{id}", s.handle(s.writes(s.upsertRecord)))
	r.GET(t+"/data/{id}", s.handle(s.reads(s.getRecord)))
	r.DELETE(t+"/data/{id}", s.handle(s.writes(s.deleteRecord)))
	r.POST(t+"/bulk", s.handle(s.writes(s.bulkInsert)))
	r.POST(t+"/query", s.handle(s.reads(s.queryTable)))
	r.POST(t+"/summarize", s.handle(s.reads(s.summarizeTable)))
	r.POST(t+"/aggregate", s.handle(s.reads(s.aggregateTable)))
	r.POST(t+"/search", s.handle(s.reads(s.searchTable)))
	r.POST(t+"/query/explain", s.handle(s.reads(s.explainQuery)))
	r.POST(t+"/summarize/explain", s.handle(s.reads(s.explainSummarize)))
	r.POST(t+"/search/explain", s.handle(s.reads(s.explainSearch)))
	r.POST(t+"/vectorSearch", s.handle(s.reads(s.vectorSearch)))
	r.POST(dbb+"/transaction", s.handle(s.writes(s.transaction)))
	r.POST(dbb+"/search", s.handle(s.reads(s.searchBranch)))
	r.POST(dbb+"/search/explain", s.handle(s.reads(s.explainBranchSearch)))

	// Files: binary endpoints and access URLs (files.go).
	s.fileRoutes(t)

	// Dumps and loads of databases (dump.go), backups (admin_backup.go).
	s.dumpRoutes()
	s.backupRoutes()

	// Schema edits.
	r.POST(dbb+"/schema/compare", s.handle(s.compareSchema))
	r.POST(dbb+"/schema/compare/{branch}", s.handle(s.compareBranchSchemas))
	r.POST(dbb+"/schema/apply", s.handle(s.applySchemaEdits))
	r.POST(dbb+"/schema/preview", s.handle(s.previewSchemaEdits))
	r.POST(dbb+"/schema/update", s.handle(s.updateSchema))
	r.POST(dbb+"/schema/history", s.handle(s.schemaHistory))
	r.POST(dbb+"/schema/push", s.handle(s.pushMigrations))

	// Not implemented (compat-api.md §13): 501.
	r.POST(dbb+"/sql", s.handle(unsupported("sql")))
	r.POST(dbb+"/sql/batch", s.handle(unsupported("sql")))
	r.POST(t+"/ask", s.handle(unsupported("ask")))
	r.POST(t+"/ask/{sessionId}", s.handle(unsupported("ask")))
}

// routeMethods are the methods tried when a path matches no route of the
// request's method, to tell 405 from 404.
var routeMethods = []string{"GET", "PUT", "POST", "PATCH", "DELETE"}

// keyRequest is the user value key under which serve hands the request to
// the handlers.
type ctxKey int

const keyRequest ctxKey = 0

// requests recycles the request values of finished requests.
var requests = sync.Pool{New: func() any { return new(request) }}

// serve is the entry point of every request: request id, path
// normalization, the web console, the /ws/{id} prefix, health, then
// routing.
func (s *Server) serve(ctx *fasthttp.RequestCtx) {
	// The server noted the time just before calling serve: no clock read
	// of its own (a context made outside a server has none).
	start := ctx.Time()
	if start.IsZero() {
		start = time.Now()
	}
	r := requests.Get().(*request)
	*r = request{ctx: ctx, s: s, seq: s.setRequestID(ctx)}
	ctx.SetUserValue(keyRequest, r)
	s.active.Add(1)
	defer func() {
		s.finish(ctx, r, start)
		// The handler is done with r: no reference to it outlives serve.
		ctx.RemoveUserValue(keyRequest)
		s.release(r)
		if r.stop != nil {
			r.stop()
		}
		*r = request{}
		requests.Put(r)
		s.active.Add(-1)
	}()
	defer func() {
		if p := recover(); p != nil {
			id := r.requestID()
			s.log.Error("panic", slog.String("request", id), slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
			ctx.Response.ResetBody()
			writeJSON(ctx, http.StatusInternalServerError, errorBody(id, "internal error (request "+id+")"))
		}
	}()
	if s.pointGet != nil && s.servePointGet(r) {
		return
	}
	path := collapseSlashes(string(ctx.URI().PathOriginal()))
	if isConsolePath(path) {
		s.serveConsole(ctx, r.requestID(), path)
		return
	}
	if rest, ok := strings.CutPrefix(path, "/ws/"); ok {
		// The rest of the path keeps its leading slash: no new string.
		seg, tail := rest, "/"
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			seg, tail = rest[:i], rest[i:]
		}
		label, err := decodeSegment(seg)
		if err != nil || label == "" {
			s.writeError(ctx, r.requestID(), invalid("invalid workspace path segment [%s]", seg))
			return
		}
		r.wsLabel = label
		path = tail
	}
	method := methodName(ctx.Method())
	if h := s.builtin(method, path, r); h != nil {
		if hasBody(ctx) {
			ctx.SetConnectionClose() // the body stays unread
			markUnreadBody(ctx.Conn())
		}
		h(ctx)
		return
	}
	// Health, readiness and the API description answer during a shutdown
	// too; everything else is refused from its start.
	if !s.starting(ctx) {
		ctx.SetConnectionClose()
		s.writeError(ctx, r.requestID(), errShuttingDown)
		return
	}
	if !s.admit(r, streamsBody(method, path), heavyRequest(method, path), bulkRequest(method, path)) {
		return
	}
	if s.pointGet != nil && method == "GET" {
		if dbb, table, id, ok := pointGetParams(path); ok {
			r.setParams(dbb, table, id)
			s.pointGet(ctx)
			return
		}
	}
	if h, _ := s.router.Lookup(method, path, ctx); h != nil {
		h(ctx)
		return
	}
	if h := s.fileIndexRoute(method, path, ctx); h != nil {
		h(ctx) // .../file/, which the router cannot tell from .../file
		return
	}
	if h := s.askSessionRoute(method, path, ctx); h != nil {
		h(ctx) // .../ask/, which the router cannot tell from .../ask
		return
	}
	for _, m := range routeMethods {
		if m == method {
			continue
		}
		if h, _ := s.router.Lookup(m, path, nil); h != nil {
			s.writeError(ctx, r.requestID(), &statusError{http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s", method, path)})
			return
		}
	}
	s.writeError(ctx, r.requestID(), &statusError{http.StatusNotFound, "no endpoint at " + path})
}

// pointGetRoute is the route of point reads, the most frequent request.
// serve matches it itself, ahead of the router, whose parameters cost
// several allocations per request; pointGetHandler says when that is exact.
const pointGetRoute = "/db/{dbb}/tables/{table}/data/{id}"

// pointGetHandler returns the handler registered for pointGetRoute, for
// serve to call directly, or nil when another route could match some of its
// paths (serve then leaves every request to the router). Paths of the route
// are /db/D/tables/T/data/I with D, T and I non-empty segments.
func (s *Server) pointGetHandler() fasthttp.RequestHandler {
	want := strings.Split(pointGetRoute, "/")
	found := false
	for method, paths := range s.router.List() {
		if method != "GET" && method != router.MethodWild {
			continue
		}
		for _, p := range paths {
			if method == "GET" && p == pointGetRoute {
				found = true
				continue
			}
			if strings.ContainsAny(p, "*?") {
				return nil // catch-all and optional segments: not worth the analysis
			}
			segs := strings.Split(p, "/")
			if len(segs) != len(want) {
				continue
			}
			overlaps := true
			for i, w := range want {
				isParam := strings.HasPrefix(segs[i], "{")
				if !strings.HasPrefix(w, "{") && !isParam && segs[i] != w {
					overlaps = false
				}
			}
			if overlaps {
				return nil
			}
		}
	}
	if !found {
		return nil
	}
	// No other route matches the route's paths: the router answers any of
	// them with the route's handler.
	h, _ := s.router.Lookup("GET", "/db/d:b/tables/t/data/i", nil)
	return h
}

// servePointGet serves r when it is a point read whose path needs no
// normalization (no empty segment, nothing percent-encoded), as serve
// would, and reports whether it did. It reads the path where the request
// holds it: the part before the id is looked up among the prefixes seen
// before, and the id is handed to the handler as bytes, so that a read
// the record cache answers copies nothing of its request.
func (s *Server) servePointGet(r *request) bool {
	ctx := r.ctx
	if !ctx.IsGet() {
		return false
	}
	p := ctx.URI().PathOriginal()
	i := bytes.LastIndexByte(p, '/')
	if i < 0 || i == len(p)-1 || bytes.IndexByte(p, '%') >= 0 {
		return false
	}
	prefix := s.pointGetPaths.get(p[:i+1])
	if prefix == nil {
		return false
	}
	r.wsLabel = prefix.wsLabel
	r.setParams(prefix.dbb, prefix.table, "")
	r.rawID = p[i+1:]
	if !s.starting(ctx) {
		ctx.SetConnectionClose()
		s.writeError(ctx, r.requestID(), errShuttingDown)
		return true
	}
	if s.admit(r, false, false, false) {
		s.pointGet(ctx)
	}
	return true
}

// pathPrefix is what the path of a point read says before its id: the
// workspace label of a /ws/{id} prefix ("" without one), {dbb} and
// {table}, as serve would find them.
type pathPrefix struct {
	wsLabel, dbb, table string
}

// pathPrefixes remembers the prefixes of point read paths, which few
// clients vary, up to maxPathPrefixes of them. It is safe for concurrent
// use; every point read asks it, without a lock.
type pathPrefixes struct {
	m readMostly[string, *pathPrefix]
}

// maxPathPrefixes bounds the prefixes pathPrefixes holds.
const maxPathPrefixes = 4096

// get returns the parameters of the prefix of a point read's path, up to
// and including the slash before the id, or nil when p is no such prefix
// or needs normalizing. Prefixes of other paths are remembered too, as
// nil.
func (pp *pathPrefixes) get(p []byte) *pathPrefix {
	if v, ok := pp.m.load()[string(p)]; ok {
		return v
	}
	v := parsePathPrefix(string(p))
	pp.m.put(string(p), v, maxPathPrefixes)
	return v
}

// parsePathPrefix returns the parameters of a point read's path up to
// its id, or nil when the path is not one or needs normalizing.
func parsePathPrefix(path string) *pathPrefix {
	if strings.Contains(path, "//") {
		return nil
	}
	v := &pathPrefix{}
	if rest, ok := strings.CutPrefix(path, "/ws/"); ok {
		seg, tail, ok := strings.Cut(rest, "/")
		if !ok || seg == "" {
			return nil
		}
		v.wsLabel, path = seg, "/"+tail
	}
	dbb, table, id, ok := pointGetParams(path + "i")
	if !ok || id != "i" {
		return nil
	}
	v.dbb, v.table = dbb, table
	return v
}

// pointGetParams matches a path against pointGetRoute.
func pointGetParams(path string) (dbb, table, id string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/db/")
	if !ok {
		return "", "", "", false
	}
	dbb, rest, ok = strings.Cut(rest, "/")
	if !ok || dbb == "" {
		return "", "", "", false
	}
	if rest, ok = strings.CutPrefix(rest, "tables/"); !ok {
		return "", "", "", false
	}
	table, rest, ok = strings.Cut(rest, "/")
	if !ok || table == "" {
		return "", "", "", false
	}
	if id, ok = strings.CutPrefix(rest, "data/"); !ok || id == "" || strings.IndexByte(id, '/') >= 0 {
		return "", "", "", false
	}
	return dbb, table, id, true
}

// handle adapts an endpoint to a fasthttp handler: it authenticates the
// caller and writes the endpoint's error, if any.
func (s *Server) handle(fn func(r *request) error) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		r, _ := ctx.UserValue(keyRequest).(*request)
		if r == nil {
			r = &request{ctx: ctx, s: s}
			defer func() {
				if r.stop != nil {
					r.stop()
				}
			}()
		}
		err := r.call(fn)
		if err != nil && s.forward(r, err) {
			return
		}
		if err != nil {
			s.writeError(ctx, r.requestID(), r.contextError(err))
		}
	}
}

// setRequestID gives a response a new request id, unique within this
// process run (a random per-server prefix and a counter), and returns the
// counter's value, from which requestIDString spells the id again: most
// requests never need it as a string.
func (s *Server) setRequestID(ctx *fasthttp.RequestCtx) uint64 {
	var buf [40]byte
	seq := s.reqSeq.Add(1)
	ctx.Response.Header.SetCanonical(headerRequestID, s.appendRequestID(buf[:0], seq))
	return seq
}

// appendRequestID appends the request id of number seq.
func (s *Server) appendRequestID(b []byte, seq uint64) []byte {
	return strconv.AppendUint(append(append(b, "req_"...), s.reqPrefix...), seq, 36)
}

// requestIDString is the request id of number seq.
func (s *Server) requestIDString(seq uint64) string {
	var buf [40]byte
	return string(s.appendRequestID(buf[:0], seq))
}

// methodName returns a request method as a string, the methods the API
// serves as constants, without a copy.
func methodName(m []byte) string {
	switch string(m) {
	case "GET":
		return "GET"
	case "HEAD":
		return "HEAD"
	case "POST":
		return "POST"
	case "PUT":
		return "PUT"
	case "PATCH":
		return "PATCH"
	case "DELETE":
		return "DELETE"
	case "OPTIONS":
		return "OPTIONS"
	}
	return string(m)
}

// headerRequestID is the response header of request ids, in the form
// fasthttp sends.
var headerRequestID = []byte("X-Request-Id")

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// writeJSON writes v as the JSON body of a response with the given status;
// a 204 gets no body.
func writeJSON(ctx *fasthttp.RequestCtx, status int, v any) {
	ctx.SetStatusCode(status)
	if status == http.StatusNoContent {
		ctx.Response.ResetBody()
		return
	}
	ctx.SetContentType("application/json")
	if raw, ok := v.(rawJSON); ok {
		ctx.SetBody(raw)
		return
	}
	enc := json.NewEncoder(ctx)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only unencodable values get here, which is a bug.
		ctx.Response.ResetBody()
		ctx.SetStatusCode(http.StatusInternalServerError)
		ctx.SetBodyString(`{"message":"internal error: response encoding failed"}`)
	}
}

// collapseSlashes replaces every run of '/' with one.
func collapseSlashes(p string) string {
	if !strings.Contains(p, "//") {
		return p
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && i > 0 && p[i-1] == '/' {
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}
