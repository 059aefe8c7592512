package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
)

// Request logs. Every request ends with one access-log line at info level
// and, when it took longer than Options.SlowRequest, one slow-request line
// at warn level. Both name the request by its route template, never by its
// raw path, and carry no header, query argument or body: API keys, invite
// keys, file signatures and record values stay out of the log.

// DefaultSlowRequest is the default threshold of the slow-request log.
const DefaultSlowRequest = 500 * time.Millisecond

// Log formats of Options.LogFormat.
const (
	LogFormatText = "text"
	LogFormatJSON = "json"
)

// NewLoggerTo returns a logger writing to w at a level named debug, info,
// warn or error ("" means info), in the format text or json ("" means
// text).
func NewLoggerTo(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if level == "" {
		level = "info"
	}
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("api: unknown log level %q (want debug, info, warn or error)", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "", LogFormatText:
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case LogFormatJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("api: unknown log format %q (want text or json)", format)
}

// PlanSummary is what a query handler leaves on its request for the
// slow-request log: String is called only when the request turns out slow,
// after the handler has returned, so a handler may hand over its plan as is
// and leave the formatting to it.
type PlanSummary interface{ String() string }

// setPlan records the plan a request ran, for the slow-request log.
func (r *request) setPlan(p PlanSummary) { r.plan = p }

// finish ends a request that serve handled: the access log, the
// slow-request log and the metrics. It runs before r is recycled.
func (s *Server) finish(ctx *fasthttp.RequestCtx, r *request, start time.Time) {
	now := time.Now()
	took := now.Sub(start)
	status := ctx.Response.StatusCode()
	rt := r.route
	var method string
	if rt != nil {
		method = rt.method // a constant string: no copy of the request's
	} else {
		method = string(ctx.Method())
	}
	if s.metrics != nil {
		s.metrics.observe(rt, method, status, took)
	}
	slow := s.slow > 0 && took > s.slow
	info := s.log.Enabled(context.Background(), slog.LevelInfo)
	if !info && !slow {
		return
	}
	var buf [8]slog.Attr
	attrs := append(buf[:0],
		slog.String("request", r.requestID()),
		slog.String("method", method),
		slog.String("route", routeLabel(rt)),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000),
	)
	ws, db, branch := r.logScope()
	if ws != "" {
		attrs = append(attrs, slog.String("workspace", ws))
	}
	if db != "" {
		attrs = append(attrs, slog.String("database", db))
	}
	if branch != "" {
		attrs = append(attrs, slog.String("branch", branch))
	}
	if info {
		rec := slog.NewRecord(now, slog.LevelInfo, "request", 0)
		rec.AddAttrs(attrs...)
		rec.AddAttrs(bodySizes(ctx)...)
		s.logRecord(rec)
	}
	if slow {
		rec := slog.NewRecord(now, slog.LevelWarn, "slow request", 0)
		rec.AddAttrs(attrs...)
		if r.plan != nil {
			rec.AddAttrs(slog.String("plan", r.plan.String()))
		}
		rec.AddAttrs(slog.Duration("threshold", s.slow))
		s.logRecord(rec)
	}
}

// logRecord hands a request's log record to the log's handler. The records
// are built here rather than through Logger methods, which would look up
// the caller's program counter on every request for a source location the
// access log does not need.
func (s *Server) logRecord(rec slog.Record) {
	h := s.log.Handler()
	if h.Enabled(context.Background(), rec.Level) {
		_ = h.Handle(context.Background(), rec) // a failing log has nowhere to report to
	}
}

// finishRejected ends a request that fasthttp rejected before serve saw it
// (malformed, too large): the access log and the metrics, without a route.
func (s *Server) finishRejected(ctx *fasthttp.RequestCtx, id string) {
	status := ctx.Response.StatusCode()
	if s.metrics != nil {
		s.metrics.rejected(string(ctx.Method()), status)
	}
	if !s.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	rec := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
	rec.AddAttrs(
		slog.String("request", id),
		slog.String("method", methodLabel(string(ctx.Method()))),
		slog.String("route", unmatchedRoute),
		slog.Int("status", status),
	)
	rec.AddAttrs(bodySizes(ctx)...)
	s.logRecord(rec)
}

// routeLabel is the route template of a request, or unmatchedRoute.
func routeLabel(rt *route) string {
	if rt == nil {
		return unmatchedRoute
	}
	return rt.template
}

// methodLabel keeps the methods the API uses and folds every other one, so
// that clients cannot grow the set of label values.
func methodLabel(m string) string {
	switch m {
	case "GET", "PUT", "POST", "PATCH", "DELETE", "HEAD", "OPTIONS":
		return m
	}
	return "OTHER"
}

// logScope returns the workspace, database and branch a request names, as
// far as they are known: resolved when the handler resolved them, else as
// the path spells them.
func (r *request) logScope() (ws, db, branch string) {
	if r.resolved && r.branchErr == nil {
		return r.branch.Workspace, r.branch.Database, r.branch.Branch
	}
	ws = r.wsLabel
	if ws == "" {
		ws = r.rawParam("ws")
	}
	if core, ok := engine.WorkspaceCore(ws); ok {
		ws = core // one name per workspace, however the path spells it
	}
	db = r.rawParam("db")
	if dbb := r.rawParam("dbb"); dbb != "" {
		db, branch, _ = strings.Cut(dbb, ":")
	}
	return ws, db, branch
}

// rawParam returns a path parameter decoded, or "" when the route has none
// of that name or it does not decode.
func (r *request) rawParam(name string) string {
	if r.ctx == nil {
		return ""
	}
	v, err := r.param(name)
	if err != nil {
		return ""
	}
	return v
}
