// Package api is the HTTP front end of Coppice: a thin translation of the
// JSON API of spec/service-interface.md and spec/compat-api.md to calls of
// the engine package. It is the only importer of fasthttp,
// fasthttp/router and the Prometheus client.
//
// One file per endpoint family (databases.go, branches.go, git.go,
// tables.go, records.go, transactions.go, query.go, summarize.go, search.go,
// explain.go for the plans of those three, vector.go, files.go, schema.go
// for the schema edit endpoints, stats.go for branch stats and the 501
// answers of SQL and ask, users.go, workspaces.go, members.go, invites.go;
// dump.go for database dumps and loads, admin_backup.go for online
// backups, both streamed (stream.go); console.go serves the web console of
// package console at /console); metrics_engine.go exports the engine's
// numbers; errors.go holds the one
// table from engine error codes to HTTP statuses; render.go and docjson.go
// turn the engine's projected records into JSON. routes.go keeps the
// route template of every endpoint, which accesslog.go (access and
// slow-request logs), metrics.go (Prometheus) and openapi*.go (the OpenAPI
// document at /openapi.json) name requests by; health.go answers /healthz
// and /readyz. Handlers return errors;
// the adapter in server.go authenticates the caller and writes every error
// as JSON {id, message}, id being the request id that every response also
// carries in x-request-id.
//
// Decisions the specs leave open:
//
//   - Routing matches the raw path. Runs of '/' collapse to one, a leading
//     /ws/{id} is stripped and names the workspace, and every path parameter
//     is percent-decoded on its own, so an encoded '/' or ':' stays inside
//     its segment. {db}:{branch} splits on the first colon.
//   - Data-plane workspace: the /ws/{id} prefix, else a Host header
//     {label}.{region}[.upload].{domain} for a configured domain (default
//     "localhost"; the port is ignored), else the workspace the API key is
//     scoped to, else the only workspace of the key's user, else the only
//     one of the user's workspaces holding a database of the path's name.
//     Unknown workspaces and workspaces the caller may not use are the same
//     401. Under a Host, a database of another region than the Host's is a
//     404, as on the legacy service's regional hosts.
//   - A key scoped to a workspace reaches only that workspace, and only while
//     its user is a member; it may not act on the account (delete the user,
//     revoke other keys, create workspaces, administer: 403). The bootstrap
//     key is not scoped: it is the administrator's key and reaches every
//     workspace the administrator joins; create a scoped key for clients
//     that use the plain base URL.
//   - Limits (limits.go): every request has a context (reqctx.go) that ends
//     at its deadline, when its client closes the connection, or at
//     Shutdown, and handlers pass it to the engine's long calls. Admission
//     (admission.go) reads a body within the budget of body bytes, then
//     takes an execution slot; both wait in one bounded queue, and beyond
//     it answer 503 with Retry-After. A write waiting for its group commit
//     gives its slot back (Limits.MaxSyncWaiting). While reads are served,
//     bulk inserts compute in turns on fewer processors than the CPUs
//     (Limits.MaxBulkDuringReads), so that a read finds one free, and
//     make the scheduler poll the network between records (pollnudge.go).
//     Connections are counted and capped by
//     the listener (conns.go), which also rides out running out of
//     descriptors. Failed authentications are rate-limited per client
//     address (authlimit.go). Transport errors are answered and logged
//     without quoting the request (translog.go): no API key reaches a log
//     or a response.
//   - Request bodies: unknown keys are a 400 (except in record bodies, whose
//     keys are column names, and there the engine rejects unknown columns);
//     null is the same as absent. Bodies above Options.MaxBody are a JSON 413.
//     Bulk and transaction bodies are decoded one element at a time.
//     Record bodies, single and bulk, are read by one scan
//     (recordbody.go); a body the scan declines, every malformed one
//     among them, is decoded by encoding/json, whose errors it answers.
//   - Records: null columns are omitted, links are {"id"}, datetimes are RFC
//     3339 UTC with milliseconds, json columns are JSON text. Selection and
//     link expansion are the engine's (Engine.Project for records of writes
//     and reads, Engine.Query for queries); the api only renders. The
//     `columns` parameter is passed to the engine as a JSON array and checked
//     against the schema before any write, so a bad list writes nothing.
//   - Queries: filter, sort and columns reach the engine as the raw JSON the
//     client sent, since cursors carry them. Page limits are the spec's
//     (size ≤ 200, offset ≤ 800, size + offset ≤ 1000) or, in compat mode,
//     size ≤ 1000 and offset ≤ 49000. consistency (strong or eventual, also on
//     summarize, aggregate and search, and a query parameter of a point get)
//     matters in a cluster only (cluster.go).
//   - Bulk failures answer 400 with {"errors":[{message, status}]} unless
//     every failure has the same status (e.g. all 422 for existing ids).
//   - Files: file URLs are Options.PublicURL (default http://{listen
//     address}) + /file/{accessId}. An access id names one version of one
//     file on one branch and is not secret; private files need a signature
//     (?verify=), an HMAC with a server secret of the purpose (read or
//     upload), the access id and the expiry. Reading through a URL needs the
//     version it names; an upload URL writes the file at any version.
//     F/{fileId} on a file column and F on a file[] column are 400.
//   - Schema edits: an operation that fails inside a list (apply, update,
//     push) is a 400 naming it, whatever its status on its own endpoint.
//     A removeColumn followed by an addColumn of the same path, which is
//     how compare writes a changed column, keeps the column's values when
//     its type stays (engine/columnsettings.go). Edits applied with another
//     sourceMigrationID than the head carry over to the branch, or are a
//     409 naming the conflict (engine/rebase.go). compare with an empty
//     schema and schemaOperations builds its target from the operations.
//     History pages are cut at migration ids: meta.cursor is the last id of
//     the page, for page.after. Push checks every checksum and parent before
//     applying anything, then applies each migration as its own command.
//   - Stats: one successful record read or write request counts once; the
//     counters live in memory since the server started.
//   - Logs and metrics name a request by its route template with the
//     parameter names of the API documents ({db_branch_name}, not {dbb});
//     requests no route matches are "unmatched". Log lines carry no header,
//     query argument or body, and fasthttp's own errors leave the request's
//     bytes out, so no API key reaches the log.
package api
