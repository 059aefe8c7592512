package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// timeLayout is how the API writes datetimes: RFC 3339 in UTC with
// milliseconds. Exports from a data directory write them the same way.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// ErrDirInUse is the error of opening a data directory that a server (or
// another process) holds. Its advice suits every command that takes
// --data: each of them also works through a server with --url.
var ErrDirInUse = errors.New("the data directory is in use by a running server (or another process): " +
	"stop it first, or go through the running server with --url")

// dirStore writes and reads a data directory through the engine.
type dirStore struct {
	eng *engine.Engine
	ref engine.Ref
}

// openDir opens an existing data directory (see openDataDir) for a
// branch of a database of a workspace.
func openDir(dir, workspace, db, branch string) (*dirStore, error) {
	core, err := workspaceCore(workspace)
	if err != nil {
		return nil, err
	}
	eng, err := openDataDir(dir)
	if err != nil {
		return nil, err
	}
	return &dirStore{eng: eng, ref: engine.Ref{Workspace: core, Database: db, Branch: branch}}, nil
}

// workspaceCore returns the core id of a workspace id given with --data.
func workspaceCore(workspace string) (string, error) {
	core, ok := engine.WorkspaceCore(workspace)
	if !ok {
		return "", fmt.Errorf("--workspace %q is not a workspace id", workspace)
	}
	return core, nil
}

// openDataDir opens an existing data directory with the engine. It
// refuses a directory that is missing or empty (the engine would make a
// new one) and one whose lock another process or engine holds.
func openDataDir(dir string) (*engine.Engine, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil, fmt.Errorf("%s is not a data directory: it is missing or empty", dir)
	}
	if err != nil {
		return nil, err
	}
	eng, err := engine.Open(dir, engine.Options{})
	if err != nil {
		if isLockError(err) {
			return nil, fmt.Errorf("%s: %w", dir, ErrDirInUse)
		}
		return nil, err
	}
	return eng, nil
}

// isLockError reports whether err is Pebble's refusal to lock a directory
// that is locked: by another process (fcntl's EAGAIN or EACCES) or by an
// engine of this one.
func isLockError(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) ||
		strings.Contains(err.Error(), "lock held by current process")
}

// tables reads the branch schema from the engine.
func (s *dirStore) tables(context.Context) ([]tableDef, error) {
	d, err := s.eng.Branches().Details(s.ref)
	if err != nil {
		return nil, err
	}
	out := make([]tableDef, len(d.Schema.Tables))
	for i, t := range d.Schema.Tables {
		out[i] = tableDef{Name: t.Name, Columns: t.Columns}
	}
	return out, nil
}

// createTable creates the table, then sets its columns: two migrations,
// as over HTTP.
func (s *dirStore) createTable(_ context.Context, name string, cols []engine.ColumnDef) error {
	if _, err := s.eng.Schema().CreateTable(s.ref, name); err != nil {
		return err
	}
	_, err := s.eng.Schema().SetTableColumns(s.ref, name, cols)
	return err
}

// insert is one engine bulk insert; the engine names the failing records.
func (s *dirStore) insert(ctx context.Context, table string, recs [][]byte) error {
	maps := make([]map[string]any, len(recs))
	for i, r := range recs {
		d := json.NewDecoder(bytes.NewReader(r))
		d.UseNumber()
		if err := d.Decode(&maps[i]); err != nil {
			return &recordErrors{byIndex: map[int]string{i: "invalid JSON: " + err.Error()}}
		}
		// A null id asks for a generated one, as over HTTP.
		if v, ok := maps[i]["id"]; ok && v == nil {
			delete(maps[i], "id")
		}
	}
	_, err := s.eng.BulkInsert(ctx, s.ref, table, maps)
	var oe *engine.OpErrors
	if errors.As(err, &oe) && len(oe.Errors) > 0 {
		re := &recordErrors{byIndex: map[int]string{}}
		for _, e := range oe.Errors {
			re.byIndex[e.Index] = e.Err.Message
		}
		return re
	}
	return err
}

// query runs one page through the engine and renders it as the API would.
func (s *dirStore) query(ctx context.Context, table string, q queryRequest) (queryPage, error) {
	in := engine.QueryRequest{Page: engine.PageInput{Size: &q.Size}}
	if q.After != "" {
		in.Page.After = &q.After
	} else {
		var err error
		if in.Filter, err = index.ReadFilter(q.Filter); err != nil {
			return queryPage{}, err
		}
		if in.Sort, err = index.ReadSort(q.Sort); err != nil {
			return queryPage{}, err
		}
		if in.Columns, err = index.ReadColumns(q.Columns); err != nil {
			return queryPage{}, err
		}
	}
	res, err := s.eng.Query(ctx, s.ref, table, in, engine.QueryOptions{})
	if err != nil {
		return queryPage{}, err
	}
	page := queryPage{records: make([]map[string]any, len(res.Records)), cursor: res.Cursor, more: res.More}
	for i, d := range res.Records {
		page.records[i] = renderDoc(d)
	}
	return page, nil
}

// count summarizes the matching records into one group.
func (s *dirStore) count(ctx context.Context, table string, filter json.RawMessage) (int64, error) {
	f, err := index.ReadFilter(filter)
	if err != nil {
		return 0, err
	}
	res, err := s.eng.Summarize(ctx, s.ref, table, engine.SummarizeRequest{
		Filter:    f,
		Columns:   []string{},
		Summaries: []engine.Summary{{Name: "total", Function: "count", Column: "*"}},
	})
	if err != nil {
		return 0, err
	}
	if len(res.Rows) != 1 || len(res.Rows[0].Summaries) != 1 {
		return 0, errors.New("summarize: unexpected answer")
	}
	n, ok := res.Rows[0].Summaries[0].(int64)
	if !ok {
		return 0, errors.New("summarize: unexpected count")
	}
	return n, nil
}

// close closes the engine, releasing the directory.
func (s *dirStore) close() error { return s.eng.Close() }

// renderDoc turns a projected record into the JSON shape the API answers
// with (without the metadata): links as {"id"}, datetimes in timeLayout,
// json columns as their JSON text.
func renderDoc(d *engine.Doc) map[string]any {
	m := renderValues(d.Values)
	m["id"] = d.ID
	return m
}

// renderValues renders one level of a record; nulls are left out.
func renderValues(values map[string]any) map[string]any {
	out := make(map[string]any, len(values)+1)
	for k, v := range values {
		if r := renderValue(v); r != nil {
			out[k] = r
		}
	}
	return out
}

// renderValue renders one value; nil for a null.
func renderValue(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format(timeLayout)
	case engine.Link:
		return map[string]any{"id": x.ID}
	case *engine.Doc:
		if x == nil {
			return nil
		}
		return renderDoc(x)
	case engine.JSONText:
		return string(x)
	case map[string]any:
		return renderValues(x)
	}
	return v
}
