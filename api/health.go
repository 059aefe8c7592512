package api

import (
	"net/http"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// Health, readiness and the API description: the endpoints serve answers
// itself, without authentication and ahead of the router.
//
//   - GET /healthz: 200 while the process is alive and serving, whatever
//     else it is doing; 503 with the reason once its storage failed (a
//     full disk, an I/O error) and it takes no more writes. A load
//     balancer or supervisor restarts the server when it fails.
//   - GET /readyz: 200 once the server accepts requests on its listener,
//     503 before that and from the start of Shutdown, so a load balancer
//     stops sending new requests while the ones in flight drain; 503 with
//     the reason, as /healthz, once its storage failed.
//   - GET /openapi.json: the OpenAPI document of both planes (openapi.go).

// readiness is the state /readyz reports. The zero value is not ready.
type readiness struct {
	started atomic.Bool // Serve was called
	stopped atomic.Bool // Shutdown was called
}

// serving marks the server as accepting requests.
func (h *readiness) serving() { h.started.Store(true) }

// draining marks the server as shutting down: it stays not ready.
func (h *readiness) draining() { h.stopped.Store(true) }

// ready reports whether the server accepts new work.
func (h *readiness) ready() bool { return h.started.Load() && !h.stopped.Load() }

// builtin returns the handler of a built-in route and notes the route on r,
// or returns nil when path is not one.
func (s *Server) builtin(method, path string, r *request) fasthttp.RequestHandler {
	if method != "GET" && method != "HEAD" {
		return nil
	}
	switch path {
	case "/healthz":
		r.route = routeHealthz
		return s.healthz
	case "/readyz":
		r.route = routeReadyz
		return s.readyz
	case "/openapi.json":
		r.route = routeOpenAPI
		return s.serveOpenAPI
	}
	return nil
}

// healthz answers GET /healthz.
func (s *Server) healthz(ctx *fasthttp.RequestCtx) {
	if err := s.eng.Health(); err != nil {
		writeJSON(ctx, http.StatusServiceUnavailable, map[string]any{"status": "degraded", "message": err.Error()})
		return
	}
	writeJSON(ctx, http.StatusOK, bodyHealthy)
}

// Bodies of the health endpoints.
var (
	bodyHealthy  = rawJSON(`{"status":"ok"}`)
	bodyReady    = rawJSON(`{"status":"ready"}`)
	bodyNotReady = rawJSON(`{"status":"unavailable"}`)
)

// readyz answers GET /readyz.
func (s *Server) readyz(ctx *fasthttp.RequestCtx) {
	if !s.health.ready() {
		writeJSON(ctx, http.StatusServiceUnavailable, bodyNotReady)
		return
	}
	if err := s.eng.Health(); err != nil {
		writeJSON(ctx, http.StatusServiceUnavailable, map[string]any{"status": "degraded", "message": err.Error()})
		return
	}
	writeJSON(ctx, http.StatusOK, bodyReady)
}

// serveOpenAPI answers GET /openapi.json.
func (s *Server) serveOpenAPI(ctx *fasthttp.RequestCtx) {
	writeJSON(ctx, http.StatusOK, rawJSON(s.openapi))
}
