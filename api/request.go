package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
)

// request is one API call in flight. It lives only as long as the handler:
// ctx must not escape it.
type request struct {
	ctx *fasthttp.RequestCtx
	s   *Server
	// seq is the number of the request, which its request id spells
	// (Server.setRequestID); id is that id once requestID made it.
	seq     uint64
	id      string
	wsLabel string // workspace label of a /ws/{id} path prefix
	user    *engine.User
	key     *engine.APIKey

	// params are the path parameters (name, raw value) when serve matched
	// the route itself; nil when the router did, which keeps them in the
	// context's user values.
	params   [][2]string
	paramBuf [3][2]string
	// rawID is the {id} parameter of a point read that servePointGet
	// matched, as the request's path holds it (nothing to decode): valid
	// only while the handler runs.
	rawID []byte

	// branch is what branchRef resolved, once resolved is set.
	branch    dbRef
	resolved  bool
	branchErr error

	// cctx is the request's context once context made it; stop releases
	// it.
	cctx *requestCtx
	stop func()
	// slot, heavySlot and bodyBytes are what admission took: an
	// execution slot, a heavy request's slot and bytes of the body budget.
	slot      bool
	heavySlot bool
	bodyBytes int64
	// bulkTurn is set while a bulk request holds a turn to compute
	// (bulkGate); reading while a read is counted as one.
	bulkTurn bool
	reading  bool
	// syncWaiting is set once the request, a write waiting for its sync,
	// gave its execution slot back for a place among Server.syncWaiting.
	syncWaiting bool
	// route is the endpoint the router matched; nil until then.
	route *route
	// plan is what the handler ran, for the slow-request log; see setPlan.
	plan PlanSummary
	// strong is set, in a cluster, for a request that reads linearizably:
	// it passes barriers (cluster.go); earlyDB is the database whose
	// barrier it passed with the catalog's, 0 for none.
	strong  bool
	earlyDB uint32
}

// requestID returns the request's id, as its response's X-Request-Id
// header says it.
func (r *request) requestID() string {
	if r.id == "" && r.seq != 0 {
		r.id = r.s.requestIDString(r.seq)
	}
	return r.id
}

// authenticate resolves the Bearer key to a user and key.
func (r *request) authenticate() error {
	header := r.ctx.Request.Header.PeekBytes(headerAuthorization)
	secret, ok := r.s.secrets.get(header)
	if !ok {
		scheme, s, found := strings.Cut(strings.TrimSpace(string(header)), " ")
		s = strings.TrimSpace(s)
		if !found || !strings.EqualFold(scheme, "Bearer") || s == "" {
			return errInvalidKey
		}
		secret = s
	}
	u, k, err := r.s.eng.Accounts().Authenticate(secret)
	if err != nil {
		if engine.CodeOf(err) == engine.CodeUnauthenticated {
			if ok {
				r.s.secrets.forget(header) // revoked
			}
			return errInvalidKey
		}
		return err
	}
	if !ok {
		r.s.secrets.put(header, secret)
	}
	r.user, r.key = u, k
	return nil
}

// headerAuthorization is the request header of API keys.
var headerAuthorization = []byte("Authorization")

// secretHeaders maps Authorization header values that authenticated to the
// secrets they carry, so that a client sending the same header on every
// request costs no copy of it. The secret is still authenticated on every
// request (a revoked key fails at once): this only spares parsing and
// copying the header. It is safe for concurrent use and holds at most
// maxSecretHeaders headers.
type secretHeaders struct {
	m readMostly[string, string] // every request reads it
}

// maxSecretHeaders bounds the headers secretHeaders holds.
const maxSecretHeaders = 1024

// get returns the secret of a header seen before.
func (sh *secretHeaders) get(header []byte) (string, bool) {
	secret, ok := sh.m.load()[string(header)]
	return secret, ok
}

// put remembers the secret of a header that authenticated, while there is
// room.
func (sh *secretHeaders) put(header []byte, secret string) {
	sh.m.put(string(header), strings.Clone(secret), maxSecretHeaders)
}

// forget drops a header whose secret no longer authenticates.
func (sh *secretHeaders) forget(header []byte) {
	sh.m.remove(string(header))
}

// canAccess reports whether the caller may use a workspace (core id): the
// user is a member, and a key scoped to a workspace reaches only that one.
func (r *request) canAccess(core string) bool {
	if r.key.Workspace != "" && r.key.Workspace != core {
		return false
	}
	_, ok := r.s.eng.Accounts().MemberRole(core, r.user.ID)
	return ok
}

// workspaceByLabel checks access to the workspace a public id or host label
// names and returns its core id.
func (r *request) workspaceByLabel(label string) (string, error) {
	core, ok := r.s.workspaceCore(label)
	if !ok || !r.canAccess(core) {
		return "", noAccess(label)
	}
	return core, nil
}

// workspaceCore is engine.WorkspaceCore, remembered for the first
// maxWorkspaceLabels valid labels: every data-plane request names one.
func (s *Server) workspaceCore(label string) (string, bool) {
	if core, ok := s.labels.load()[label]; ok {
		return core, true
	}
	core, ok := engine.WorkspaceCore(label)
	if ok {
		s.labels.put(strings.Clone(label), core, maxWorkspaceLabels)
	}
	return core, ok
}

// maxWorkspaceLabels bounds the labels workspaceCore remembers.
const maxWorkspaceLabels = 4096

// dataWorkspace resolves the workspace of a data-plane request that
// addresses database db (compat-api.md §2.2): the /ws/{id} prefix, else the
// Host header, else the key's scope or the user's only workspace, else the
// only one of the user's workspaces that holds a database named db. The
// host form also names a region: a database of another region is not
// found there, as on the legacy service's regional hosts.
func (r *request) dataWorkspace(db string) (string, error) {
	if r.wsLabel != "" {
		return r.workspaceByLabel(r.wsLabel)
	}
	if label, region := r.s.hostLabel(string(r.ctx.Host())); label != "" {
		core, err := r.workspaceByLabel(label)
		if err != nil {
			return "", err
		}
		if info, err := r.s.eng.GetDatabase(core, db); err == nil && !strings.EqualFold(info.Region, region) {
			return "", engine.Errorf(engine.CodeNotFound, "database [%s] not found in region [%s]", db, region)
		}
		return core, nil
	}
	if r.key.Workspace != "" {
		return r.workspaceByLabel(r.key.Workspace)
	}
	ws := r.s.eng.Accounts().UserWorkspaces(r.user.ID)
	if len(ws) == 1 {
		return ws[0], nil
	}
	// Clients whose HTTP stack drops the Host header (Node's fetch) reach
	// here with the host form lost; the database name still tells.
	holder := ""
	for _, core := range ws {
		if _, err := r.s.eng.GetDatabase(core, db); err == nil {
			if holder != "" {
				holder = ""
				break
			}
			holder = core
		}
	}
	if holder != "" {
		return holder, nil
	}
	return "", invalid("workspace cannot be determined; use /ws/{id} or a workspace host name")
}

// hostLabel returns the workspace label and the region of a host name of
// the form {label}.{region}.{domain} or {label}.{region}.upload.{domain},
// or "" and "".
func (s *Server) hostLabel(host string) (label, region string) {
	host = strings.ToLower(host)
	cands := []string{host}
	if h, _, err := splitHostPort(host); err == nil && h != host {
		cands = append(cands, h)
	}
	for _, d := range s.domains {
		for _, h := range cands {
			rest, ok := strings.CutSuffix(h, "."+d)
			if !ok {
				continue
			}
			parts := strings.Split(rest, ".")
			if len(parts) == 2 || len(parts) == 3 && parts[2] == "upload" {
				if parts[0] != "" && parts[1] != "" {
					return parts[0], parts[1]
				}
			}
		}
	}
	return "", ""
}

// splitHostPort splits "host:port" without the bracket rules of net for the
// plain host names used here.
func splitHostPort(h string) (string, string, error) {
	i := strings.LastIndexByte(h, ':')
	if i < 0 || strings.Contains(h[i:], "]") {
		return h, "", errors.New("no port")
	}
	return h[:i], h[i+1:], nil
}

// setParams makes dbb, table and id the path parameters of a point read
// that serve matched itself.
func (r *request) setParams(dbb, table, id string) {
	r.paramBuf = [3][2]string{{"dbb", dbb}, {"table", table}, {"id", id}}
	r.params = r.paramBuf[:]
}

// param returns a path parameter, percent-decoded.
func (r *request) param(name string) (string, error) {
	if name == "id" && r.rawID != nil {
		return string(r.rawID), nil // servePointGet checked it needs no decoding
	}
	var raw string
	if r.params != nil {
		for _, p := range r.params {
			if p[0] == name {
				raw = p[1]
			}
		}
	} else {
		raw, _ = r.ctx.UserValue(name).(string)
	}
	v, err := decodeSegment(raw)
	if err != nil {
		return "", invalid("invalid path segment [%s]: %s", raw, err.Error())
	}
	return v, nil
}

// decodeSegment percent-decodes one path segment; '+' stays '+'.
func decodeSegment(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	return url.PathUnescape(s)
}

// dbRef is a resolved {db}:{branch} path segment of the data plane.
type dbRef struct {
	engine.Ref
	// Raw is the decoded {db}:{branch} text, as responses echo it.
	Raw string
}

// branchRef resolves the workspace and the {dbb} parameter, once per
// request.
func (r *request) branchRef() (dbRef, error) {
	if !r.resolved {
		r.branch, r.branchErr = r.resolveBranch()
		r.resolved = true
	}
	return r.branch, r.branchErr
}

// resolveBranch is branchRef's work.
func (r *request) resolveBranch() (dbRef, error) {
	raw, perr := r.param("dbb")
	db, branch, ok := strings.Cut(raw, ":")
	// The workspace is checked first: a caller without access learns
	// nothing from the rest of the path.
	ws, err := r.dataWorkspace(db)
	if err != nil {
		return dbRef{}, err
	}
	if perr != nil {
		return dbRef{}, perr
	}
	if !ok {
		return dbRef{}, invalid("invalid database branch [%s]: expected {db}:{branch}", raw)
	}
	if db == "" || branch == "" {
		return dbRef{}, invalid("invalid database branch [%s]: database and branch names must not be empty", raw)
	}
	if err := r.databaseBarrier(ws, db); err != nil {
		return dbRef{}, err
	}
	return dbRef{Ref: engine.Ref{Workspace: ws, Database: db, Branch: branch}, Raw: raw}, nil
}

// tableRef resolves the workspace, {dbb} and {table} parameters.
func (r *request) tableRef() (dbRef, string, error) {
	ref, err := r.branchRef()
	if err != nil {
		return ref, "", err
	}
	table, err := r.param("table")
	return ref, table, err
}

// dataDB resolves the workspace and the {db} parameter of /dbs/{db} paths.
func (r *request) dataDB() (ws, db string, err error) {
	db, perr := r.param("db")
	if ws, err = r.dataWorkspace(db); err != nil {
		return "", "", err
	}
	if perr != nil {
		return ws, db, perr
	}
	return ws, db, r.databaseBarrier(ws, db)
}

// controlWorkspace resolves the {ws} parameter of /workspaces/{ws} paths for
// database operations: a workspace the caller cannot use is a 401.
func (r *request) controlWorkspace() (string, error) {
	label, err := r.param("ws")
	if err != nil {
		return "", err
	}
	return r.workspaceByLabel(label)
}

// query returns a query argument and whether it was present.
func (r *request) query(name string) (string, bool) {
	args := r.ctx.QueryArgs()
	if !args.Has(name) {
		return "", false
	}
	return string(args.Peek(name)), true
}

// queryBool parses a boolean query argument; absent or empty is false. It
// takes every spelling strconv.ParseBool does (1, t, T, TRUE, true, True and
// their false counterparts): the Python SDK writes True and False.
func (r *request) queryBool(name string) (bool, error) {
	v, ok := r.query(name)
	if !ok || v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, invalid("query parameter %s must be a boolean (true or false), got [%s]", name, v)
	}
	return b, nil
}

// queryVersion parses the ifVersion query argument.
func (r *request) queryVersion() (*uint64, error) {
	v, ok := r.query("ifVersion")
	if !ok || v == "" {
		return nil, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return nil, invalid("query parameter ifVersion must be a non-negative integer, got [%s]", v)
	}
	return &n, nil
}

// columns returns the `columns` query parameter: comma-separated, repeated
// or both, joined in order; nil when absent or empty.
func (r *request) columns() []string {
	var out []string
	for _, v := range r.ctx.QueryArgs().PeekMulti("columns") {
		for _, c := range strings.Split(string(v), ",") {
			if c = strings.TrimSpace(c); c != "" {
				out = append(out, c)
			}
		}
	}
	return out
}

// body returns the request body with surrounding whitespace removed.
func (r *request) body() []byte { return bytes.TrimSpace(r.ctx.PostBody()) }

// decode reads the JSON body into v, rejecting unknown keys and trailing
// data. An empty body is {} when optional, else an error.
func (r *request) decode(v any, optional bool) error {
	b := r.body()
	if len(b) == 0 {
		if optional {
			return nil
		}
		return invalid("a JSON request body is required")
	}
	return decodeStrict(b, v)
}

// decodeStrict decodes one JSON value into v: numbers inside interface
// values stay json.Number, unknown object keys are an error.
func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := d.Token(); err != io.EOF {
		return invalid("invalid JSON body: unexpected data after the JSON value")
	}
	return nil
}

// decodeListBody decodes a body that is a JSON object with the one field
// field, an array, element by element: fn decodes each element from d.
// decodeStrict holds the whole body in the JSON decoder's buffer, a second
// copy of it; this holds one element at a time, for the bodies that can
// carry thousands of records. It reports whether the field is present and
// not null. An empty body is an error, as for decode.
func (r *request) decodeListBody(field string, fn func(d *json.Decoder) error) (bool, error) {
	b := r.body()
	if len(b) == 0 {
		return false, invalid("a JSON request body is required")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	tok, err := d.Token()
	if err != nil {
		return false, jsonError(err)
	}
	present, seen := false, false
	switch tok {
	case nil: // a null body has no fields
	case json.Delim('{'):
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return false, jsonError(err)
			}
			if k != field {
				return false, invalid("invalid JSON body: unknown field [%s]", k)
			}
			if seen {
				return false, invalid("invalid JSON body: field [%s] appears twice", field)
			}
			seen = true
			if present, err = decodeList(d, field, fn); err != nil {
				return false, err
			}
		}
		if _, err := d.Token(); err != nil {
			return false, jsonError(err)
		}
	default:
		return false, invalid("invalid JSON body: expected an object, got %s", tokenKind(tok))
	}
	if _, err := d.Token(); err != io.EOF {
		return false, invalid("invalid JSON body: unexpected data after the JSON value")
	}
	return present, nil
}

// decodeList decodes the array value of field with fn, element by element;
// false for null.
func decodeList(d *json.Decoder, field string, fn func(d *json.Decoder) error) (bool, error) {
	tok, err := d.Token()
	if err != nil {
		return false, jsonError(err)
	}
	switch tok {
	case nil:
		return false, nil
	case json.Delim('['):
		for d.More() {
			if err := fn(d); err != nil {
				return false, err
			}
		}
		if _, err := d.Token(); err != nil {
			return false, jsonError(err)
		}
		return true, nil
	}
	return false, invalid("invalid JSON body: field [%s] must be an array, got %s", field, tokenKind(tok))
}

// tokenKind names the JSON value a token starts, as decoding errors do.
func tokenKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "array"
		}
		return "object"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "bool"
	}
	return "null"
}

// jsonError turns a decoding error into a 400 that names the problem.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return invalid("invalid JSON body: field [%s] must be %s, got %s", te.Field, jsonKind(te.Type), te.Value)
		}
		return invalid("invalid JSON body: expected %s, got %s", jsonKind(te.Type), te.Value)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return invalid("invalid JSON body: unknown field [%s]", strings.Trim(f, `"`))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return invalid("invalid JSON body: unexpected end of input")
	}
	return invalid("invalid JSON body: %s", strings.TrimPrefix(msg, "json: "))
}

// jsonKind names a Go type the way a JSON client thinks of it.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Map, reflect.Struct, reflect.Pointer:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a " + t.String()
}

// recordBody decodes the body of a record write: a JSON object of column
// values, numbers kept as json.Number. The scan reads plain bodies in one
// pass (recordbody.go); decodeStrict reads the others.
func (r *request) recordBody() (map[string]any, error) {
	b := r.body()
	if len(b) == 0 {
		return map[string]any{}, nil
	}
	v, ok := scanRecord(b)
	if !ok {
		v = nil
		if err := decodeStrict(b, &v); err != nil {
			return nil, err
		}
	}
	if v == nil {
		return nil, invalid("invalid JSON body: expected an object of column values")
	}
	dropNullID(v)
	return v, nil
}

// dropNullID removes an "id": null from record values: null is the same as
// absent.
func dropNullID(values map[string]any) {
	if v, ok := values["id"]; ok && v == nil {
		delete(values, "id")
	}
}
