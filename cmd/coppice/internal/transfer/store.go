package transfer

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/coppice-db/coppice/engine"
)

// Target names a table and where it lives: a running server (URL and API
// key) or a data directory that no server holds (DataDir).
type Target struct {
	// URL is the server's address, e.g. http://127.0.0.1:8080. Used when
	// DataDir is empty.
	URL string
	// APIKey is sent as a bearer token. It is never written to any output.
	APIKey string
	// Workspace is the workspace id. With a server it may be empty when
	// the key reaches one workspace only; with a data directory it is
	// required.
	Workspace string
	// DataDir, when set, is opened with the engine instead of calling a
	// server.
	DataDir string
	// Database, Branch and Table name the table; Branch defaults to main.
	Database, Branch, Table string
}

// check reports a missing name.
func (t *Target) check() error {
	switch {
	case t.Database == "":
		return errors.New("no database: set --db")
	case t.Table == "":
		return errors.New("no table: set --table")
	case t.DataDir != "" && t.Workspace == "":
		return errors.New("no workspace: --workspace is required with --data")
	case t.DataDir == "" && t.URL == "":
		return errors.New("no server: set --url, or --data for a data directory")
	}
	return nil
}

// branch returns the branch name, main by default.
func (t *Target) branch() string {
	if t.Branch == "" {
		return "main"
	}
	return t.Branch
}

// open connects to the server or opens the data directory. conns is the
// number of requests the caller keeps in flight.
func (t *Target) open(conns int) (store, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if t.DataDir != "" {
		return openDir(t.DataDir, t.Workspace, t.Database, t.branch())
	}
	return newHTTPStore(t, conns)
}

// store is where records go to and come from: a server or a data
// directory. Its methods are safe for concurrent use.
type store interface {
	// tables returns the tables of the branch with their columns.
	tables(ctx context.Context) ([]tableDef, error)
	// createTable creates a table with the given columns.
	createTable(ctx context.Context, name string, cols []engine.ColumnDef) error
	// insert adds records (JSON objects) to a table, all or none. A
	// *recordErrors means the records were refused and nothing was
	// written; any other error leaves the outcome to the error's word.
	insert(ctx context.Context, table string, recs [][]byte) error
	// query returns one page of a query.
	query(ctx context.Context, table string, q queryRequest) (queryPage, error)
	// count returns the number of records that match filter (nil: all).
	count(ctx context.Context, table string, filter json.RawMessage) (int64, error)
	close() error
}

// bodyStore is a store that also takes a bulk insert as a request body
// made beforehand: the records as JSON objects joined by commas between
// bulkPrefix and bulkSuffix. It means what insert of those records does.
type bodyStore interface {
	insertBody(ctx context.Context, table string, body []byte) error
}

// tableDef is a table of a branch's schema.
type tableDef struct {
	Name    string             `json:"name"`
	Columns []engine.ColumnDef `json:"columns"`
}

// findTable returns the table named name, or nil.
func findTable(tables []tableDef, name string) *tableDef {
	for i := range tables {
		if tables[i].Name == name {
			return &tables[i]
		}
	}
	return nil
}

// queryRequest is one page request: the first one carries the query, the
// following ones only the cursor (which carries the query).
type queryRequest struct {
	Filter, Sort, Columns json.RawMessage
	Size                  int
	After                 string
}

// body is the request body of the query endpoint.
func (q *queryRequest) body() map[string]any {
	page := map[string]any{"size": q.Size}
	b := map[string]any{"page": page}
	if q.After != "" {
		page["after"] = q.After
		return b
	}
	for k, v := range map[string]json.RawMessage{"filter": q.Filter, "sort": q.Sort, "columns": q.Columns} {
		if v != nil {
			b[k] = v
		}
	}
	return b
}

// queryPage is one page of records, as the API's JSON decodes with
// UseNumber.
type queryPage struct {
	records []map[string]any
	cursor  string
	more    bool
}

// recordErrors is a refused batch: every record of it is unwritten and
// at least one is bad.
type recordErrors struct {
	// byIndex holds the failing records by position in the batch, when
	// the store can tell them apart.
	byIndex map[int]string
	// messages are the failures in record order, when it cannot.
	messages []string
}

// Error joins the messages in record order.
func (e *recordErrors) Error() string {
	if e.byIndex != nil {
		idx := make([]int, 0, len(e.byIndex))
		for i := range e.byIndex {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		msgs := make([]string, len(idx))
		for j, i := range idx {
			msgs[j] = e.byIndex[i]
		}
		return strings.Join(msgs, "; ")
	}
	return strings.Join(e.messages, "; ")
}
