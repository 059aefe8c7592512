package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The OpenAPI 3.1 document of both planes, served at GET /openapi.json.
// It is written out here, endpoint by endpoint, from the two API documents
// (spec/service-interface.md, spec/compat-api.md) rather than derived from
// the handlers, so that it can be checked against them:
// TestOpenAPICoversEveryRoute fails when a route the router serves is
// missing from it or a documented one is not served, and the examples and
// real responses are validated against its schemas. Paths use the route
// templates of routes.go, the names logs and metrics use too. The record
// metadata key follows the server's mode.

// apiOp is one documented endpoint.
type apiOp struct {
	method, path string // path: a route template
	tag          string
	summary      string
	desc         string
	query        []obj // query parameters
	body         obj   // request body, nil for none
	responses    obj   // success responses by status
	errors       []int // error statuses besides 5XX (and 413 with a body)
	public       bool  // no API key
}

// openAPIJSON renders the document of the server's mode.
func (s *Server) openAPIJSON() ([]byte, error) {
	b, err := json.Marshal(openAPIDocument(s.meta, s.opts.Compat, ReadBuildInfo().Version))
	if err != nil {
		return nil, fmt.Errorf("api: openapi document: %w", err)
	}
	return b, nil
}

// openAPIDocument builds the document: meta is the record metadata key.
func openAPIDocument(meta, compat, version string) obj {
	paths := obj{}
	for _, op := range apiOps(meta) {
		item, _ := paths[op.path].(obj)
		if item == nil {
			item = obj{}
			if isDataPlane(op.path) {
				item["servers"] = dataPlaneServers()
			}
			if params := pathParams(op.path); len(params) > 0 {
				item["parameters"] = params
			}
			paths[op.path] = item
		}
		item[strings.ToLower(op.method)] = op.render()
	}
	mode := "default mode: the record metadata key is svc"
	if compat == CompatXata {
		mode = "--compat xata: the record metadata key is xata, query pages go up to 1000 records and offsets up to 49000"
	}
	return obj{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
		"info": obj{
			"title":   "Coppice",
			"version": version,
			"summary": "A self-hosted database service: workspaces, databases, branches, tables and records, with queries, summaries and full-text search.",
			"description": "Both planes of the API on one listener. The control plane (users, API keys, workspaces, members, invites, databases) " +
				"lives under /user, /admin and /workspaces; the data plane (branches, tables, records, queries, search, files, schema edits) " +
				"under /db and /dbs, with the workspace in a /ws/{workspace_id} prefix, a {workspace}.{region}.{domain} Host header, " +
				"or the API key's scope. Every request carries Authorization: Bearer <API key> except the health endpoints, this document " +
				"and the file access URLs. Every response carries x-request-id; every error is JSON {id, message}. This server runs in " + mode + ".",
		},
		"servers":  []any{obj{"url": "/", "description": "this server"}},
		"security": []any{obj{"bearerAuth": []any{}}},
		"tags":     tags(),
		"paths":    paths,
		"components": obj{
			"schemas":         schemas(meta),
			"parameters":      parameters(),
			"responses":       errorResponses(),
			"securitySchemes": obj{"bearerAuth": obj{"type": "http", "scheme": "bearer", "description": "an API key"}},
			"headers": obj{"RequestID": obj{"description": "the request id, also in error bodies",
				"schema": obj{"type": "string"}}},
		},
	}
}

// render is the operation object of op.
func (op apiOp) render() obj {
	o := obj{
		"operationId": operationID(op.method, op.path),
		"tags":        []any{op.tag},
		"summary":     op.summary,
	}
	if op.desc != "" {
		o["description"] = op.desc
	}
	if len(op.query) > 0 {
		params := make([]any, len(op.query))
		for i, q := range op.query {
			params[i] = q
		}
		o["parameters"] = params
	}
	if op.body != nil {
		o["requestBody"] = op.body
	}
	responses := obj{}
	for k, v := range op.responses {
		responses[k] = v
	}
	errs := append([]int(nil), op.errors...)
	if !op.public {
		errs = append(errs, http.StatusUnauthorized)
	}
	if op.body != nil {
		errs = append(errs, http.StatusRequestEntityTooLarge)
	}
	for _, st := range errs {
		responses[strconv.Itoa(st)] = obj{"$ref": "#/components/responses/" + errorResponseName(st)}
	}
	responses["5XX"] = obj{"$ref": "#/components/responses/InternalError"}
	o["responses"] = responses
	if op.public {
		o["security"] = []any{}
	}
	return o
}

// operationID names an operation after its method and path:
// get /db/{db_branch_name}/tables/{table_name}/query → post_db_tables_query.
func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, seg := range strings.Split(path, "/") {
		if seg == "" || strings.HasPrefix(seg, "{") {
			continue
		}
		b.WriteByte('_')
		b.WriteString(strings.NewReplacer(".", "_", "-", "_").Replace(seg))
	}
	if strings.HasSuffix(path, "}") {
		b.WriteString("_by_" + strings.Trim(path[strings.LastIndexByte(path, '{'):], "{}"))
	}
	if strings.HasSuffix(path, "/") {
		b.WriteString("_empty")
	}
	return b.String()
}

// isDataPlane reports whether a path belongs to the data plane, whose
// workspace comes from a /ws/{workspace_id} prefix, the Host header or the
// API key.
func isDataPlane(path string) bool {
	return strings.HasPrefix(path, "/db/") || strings.HasPrefix(path, "/dbs/")
}

// dataPlaneServers are the base URL forms of the data plane.
func dataPlaneServers() []any {
	return []any{
		obj{"url": "/ws/{workspace_id}", "description": "the workspace in a path prefix",
			"variables": obj{"workspace_id": obj{"default": "workspace-abc123", "description": "the workspace id ({slug}-{core} or the 6-character core)"}}},
		obj{"url": "/", "description": "the workspace from a Host header {workspace}.{region}.{domain} (--domains), " +
			"else the workspace the API key is scoped to, else the caller's only workspace"},
	}
}

// pathParams lists the parameters of a template, in order.
func pathParams(path string) []any {
	var out []any
	for _, seg := range strings.Split(path, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			out = append(out, obj{"$ref": "#/components/parameters/" + strings.TrimSuffix(name, "}")})
		}
	}
	return out
}

// parameters are the path parameters of every template (components).
func parameters() obj {
	p := func(name, desc string, schema obj) obj {
		return obj{"name": name, "in": "path", "required": true, "description": desc, "schema": schema}
	}
	nameSchema := obj{"type": "string", "pattern": patternName, "minLength": 1, "maxLength": 255}
	return obj{
		"workspace_id": p("workspace_id", "workspace id: {slug}-{core} or the bare 6-character core", obj{"type": "string", "pattern": patternWorkspace}),
		"db_name":      p("db_name", "database name", nameSchema),
		"db_branch_name": p("db_branch_name", "{db_name}:{branch_name}, split on the first colon",
			obj{"type": "string", "pattern": `^[a-zA-Z0-9_\-~]+:[a-zA-Z0-9_\-~]+$`}),
		"table_name":  p("table_name", "table name", nameSchema),
		"record_id":   p("record_id", "record id", obj{"type": "string", "pattern": patternRecordID, "maxLength": 255}),
		"column_name": p("column_name", "column name; a dotted path names a sub-column of an object column", obj{"type": "string", "minLength": 1}),
		"file_id":     p("file_id", "id of a file[] item; empty (…/file/) for a new item, or for the file of a file column", obj{"type": "string"}),
		"access_id":   p("access_id", "the access id of a file URL", obj{"type": "string", "minLength": 1}),
		"branch_name": p("branch_name", "the branch to compare with ({db_name}:{branch_name} or {branch_name})", obj{"type": "string", "minLength": 1}),
		"invite_id":   p("invite_id", "invite id; for accept, the invite key (ik_…) of the create response", obj{"type": "string", "minLength": 1}),
		"user_id":     p("user_id", "user id of a member", obj{"type": "string", "minLength": 1}),
		"key_name":    p("key_name", "API key name", nameSchema),
		"session_id":  p("session_id", "chat session", obj{"type": "string"}),
		"node_id":     p("node_id", "a cluster node's id", obj{"type": "integer", "minimum": 1}),
	}
}

// errorResponseName names the shared response of an error status.
func errorResponseName(status int) string {
	return strings.ReplaceAll(http.StatusText(status), " ", "")
}

// errorStatuses are the error statuses operations use, each a shared
// response with the error body.
var errorStatuses = []int{400, 401, 403, 404, 405, 409, 413, 422, 423, 501, 503}

// errorResponses are the shared error responses (components).
func errorResponses() obj {
	desc := map[int]string{
		400: "bad input: what is wrong, in message; nothing was changed",
		401: "a missing, malformed, unknown or revoked API key (message: invalid API key), or a workspace the caller may not use on the data plane and database endpoints",
		403: "a workspace the caller may not use, or a role that may not do this (workspace, member and invite endpoints)",
		404: "the resource does not exist",
		405: "the path exists with other methods",
		409: "a conflict with the current state",
		413: "the request body is larger than --max-body",
		422: "the name exists already, or a condition (ifVersion, createOnly) is not met",
		423: "the resource is locked",
		501: "a feature this server does not implement",
		503: "the server cannot answer now",
	}
	examples := map[int]string{
		400: "column [email]: value is not unique", 401: "invalid API key", 403: "no access to workspace [acme-abc123]",
		404: "table [users] not found", 405: "method PATCH is not allowed on /user/keys", 409: "cannot delete the last branch of database [app]",
		413: "request body exceeds the limit of 33554432 bytes", 422: "version condition not met",
		423: "database [app] is locked", 501: "sql is not supported by this server", 503: "service unavailable",
	}
	out := obj{}
	for _, st := range errorStatuses {
		out[errorResponseName(st)] = errorResponse(desc[st], examples[st])
	}
	out["InternalError"] = errorResponse("an unexpected failure; the message names the request id, which the server log has the details for",
		"internal error (request req_1a2b3c4d7)")
	return out
}

// errorResponse is a response with the error body.
func errorResponse(desc, example string) obj {
	return obj{
		"description": desc,
		"headers":     obj{"x-request-id": obj{"$ref": "#/components/headers/RequestID"}},
		"content": obj{"application/json": obj{
			"schema":  ref("Error"),
			"example": obj{"id": "req_1a2b3c4d7", "message": example},
		}},
	}
}

// reply is a JSON success response.
func reply(desc, schema string, example any) obj {
	media := obj{"schema": ref(schema)}
	if example != nil {
		media["example"] = example
	}
	return obj{
		"description": desc,
		"headers":     obj{"x-request-id": obj{"$ref": "#/components/headers/RequestID"}},
		"content":     obj{"application/json": media},
	}
}

// noContent is a 204 response.
func noContent(desc string) obj {
	return obj{"description": desc, "headers": obj{"x-request-id": obj{"$ref": "#/components/headers/RequestID"}}}
}

// bytesReply is a response with a file's bytes.
func bytesReply(desc string) obj {
	return obj{"description": desc, "content": obj{"*/*": obj{"schema": obj{"type": "string", "contentMediaType": "application/octet-stream"}}}}
}

// jsonBody is a required JSON request body.
func jsonBody(schema string, example any) obj {
	media := obj{"schema": ref(schema)}
	if example != nil {
		media["example"] = example
	}
	return obj{"required": true, "content": obj{"application/json": media}}
}

// optionalBody is a JSON request body that may be empty (the same as {}).
func optionalBody(schema string, example any) obj {
	b := jsonBody(schema, example)
	b["required"] = false
	return b
}

// bytesBody is a request body of raw bytes.
func bytesBody(desc string) obj {
	return obj{"required": true, "description": desc, "content": obj{"*/*": obj{"schema": obj{"type": "string", "contentMediaType": "application/octet-stream"}}}}
}

// queryParam is a query parameter.
func queryParam(name, desc string, schema obj, required bool) obj {
	return obj{"name": name, "in": "query", "description": desc, "schema": schema, "required": required}
}

// columnsParam is the columns query parameter of record endpoints.
func columnsParam(meta string) obj {
	p := queryParam("columns", "columns of the record to return, comma-separated or repeated (* for all); "+
		"without it a write answers {id, "+meta+"} only", arrayOf(obj{"type": "string"}), false)
	p["style"], p["explode"] = "form", false
	return p
}

// tags are the document's tags, in the order a reader meets them.
func tags() []any {
	var out []any
	for _, t := range [][2]string{
		{"Users", "the caller's account, API keys, and user administration"},
		{"Workspaces", "workspaces, members and invites"},
		{"Databases", "databases and regions"},
		{"Branches", "branches, their metadata and stats, and the git branch mapping"},
		{"Tables", "tables and columns"},
		{"Records", "record writes and reads, bulk inserts and transactions"},
		{"Queries", "queries, summaries, aggregations, full-text and vector search"},
		{"Files", "file contents and file access URLs"},
		{"Schema", "schema comparison, migrations and their history"},
		{"Unsupported", "endpoints of the legacy API this server answers with 501"},
		{"Operations", "backups, dumps and loads, health, readiness and this document"},
	} {
		out = append(out, obj{"name": t[0], "description": t[1]})
	}
	return out
}
