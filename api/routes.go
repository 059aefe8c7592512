package api

import (
	"strings"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"
)

// routeTable is the router that also remembers every route it registers:
// each handler notes its route on the request, so the access log, the
// slow-request log and the metrics name requests by route template rather
// than by raw path, and the OpenAPI document can be checked against the
// routes served.
type routeTable struct {
	*router.Router
	// routes are the registered routes in registration order.
	routes []*route
}

// route is one endpoint: a method and a path pattern. Values are created
// once, when the route is registered, and never change.
type route struct {
	method string
	// pattern is the path as registered with the router, e.g.
	// /db/{dbb}/tables/{table}/query.
	pattern string
	// template is the pattern with the parameter names of the API
	// documents, e.g. /db/{db_branch_name}/tables/{table_name}/query: the
	// form logs, metrics and the OpenAPI document use.
	template string
}

// Routes served by Server.serve itself, ahead of the router.
var (
	routeHealthz = &route{method: "GET", pattern: "/healthz", template: "/healthz"}
	routeReadyz  = &route{method: "GET", pattern: "/readyz", template: "/readyz"}
	routeOpenAPI = &route{method: "GET", pattern: "/openapi.json", template: "/openapi.json"}
)

// builtinRoutes are the routes serve answers without the router.
var builtinRoutes = []*route{routeHealthz, routeReadyz, routeOpenAPI}

// unmatchedRoute is the route label of requests no route matched (404,
// 405, malformed requests).
const unmatchedRoute = "unmatched"

// newRouteTable returns an empty table over a new router.
func newRouteTable() *routeTable { return &routeTable{Router: router.New()} }

// GET registers a GET route.
func (t *routeTable) GET(path string, h fasthttp.RequestHandler) { t.Handle("GET", path, h) }

// PUT registers a PUT route.
func (t *routeTable) PUT(path string, h fasthttp.RequestHandler) { t.Handle("PUT", path, h) }

// POST registers a POST route.
func (t *routeTable) POST(path string, h fasthttp.RequestHandler) { t.Handle("POST", path, h) }

// PATCH registers a PATCH route.
func (t *routeTable) PATCH(path string, h fasthttp.RequestHandler) { t.Handle("PATCH", path, h) }

// DELETE registers a DELETE route.
func (t *routeTable) DELETE(path string, h fasthttp.RequestHandler) { t.Handle("DELETE", path, h) }

// Handle registers h for method and path with the router, wrapped so that
// the request it serves knows its route.
func (t *routeTable) Handle(method, path string, h fasthttp.RequestHandler) {
	rt := &route{method: method, pattern: path, template: routeTemplate(path)}
	t.routes = append(t.routes, rt)
	t.Router.Handle(method, path, func(ctx *fasthttp.RequestCtx) {
		if r, _ := ctx.UserValue(keyRequest).(*request); r != nil {
			r.route = rt
		}
		h(ctx)
	})
}

// paramNames maps the router's parameter names to those of the API
// documents (spec/service-interface.md, spec/compat-api.md).
var paramNames = map[string]string{
	"ws":        "workspace_id",
	"db":        "db_name",
	"dbb":       "db_branch_name",
	"table":     "table_name",
	"id":        "record_id",
	"column":    "column_name",
	"fileId":    "file_id",
	"accessId":  "access_id",
	"branch":    "branch_name",
	"invite":    "invite_id",
	"user":      "user_id",
	"name":      "key_name",
	"sessionId": "session_id",
	"node":      "node_id",
}

// routeTemplate renames the parameters of a router pattern after
// paramNames; unknown names stay as they are.
func routeTemplate(pattern string) string {
	segs := strings.Split(pattern, "/")
	for i, s := range segs {
		if name, ok := strings.CutPrefix(s, "{"); ok {
			name = strings.TrimSuffix(name, "}")
			if doc, ok := paramNames[name]; ok {
				segs[i] = "{" + doc + "}"
			}
		}
	}
	return strings.Join(segs, "/")
}
