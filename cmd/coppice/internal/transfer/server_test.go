package transfer

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/api"
	"github.com/coppice-db/coppice/engine"
)

// testKey is the API key of the test servers.
const testKey = "cpk_transfer_test_key_0123456789"

// testServer is a real server on a loopback port over a data directory.
type testServer struct {
	t    testing.TB
	dir  string
	eng  *engine.Engine
	url  string
	ws   string // public workspace id
	core string // workspace core id
	stop func()
}

// startServer serves dir on 127.0.0.1. An empty dir is bootstrapped with
// the test key and gets database "app"; for another, the caller sets ws
// and core. sync selects synced writes, as in production.
func startServer(t testing.TB, dir string, sync bool) *testServer {
	t.Helper()
	return startServerWith(t, dir, sync, api.Options{})
}

// startServerWith is startServer with server options (a logger is set).
func startServerWith(t testing.TB, dir string, sync bool, opts api.Options) *testServer {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	first := len(entries) == 0
	eng, err := engine.Open(dir, engine.Options{NoSync: !sync})
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{t: t, dir: dir, eng: eng}
	if first {
		info, err := api.Bootstrap(eng, testKey)
		if err != nil {
			t.Fatal(err)
		}
		ts.ws, ts.core = info.WorkspaceID, info.Workspace
		if _, err := eng.CreateDatabase(engine.CreateDatabaseRequest{Workspace: ts.core, Name: "app", Region: "local"}); err != nil {
			t.Fatal(err)
		}
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := api.New(eng, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ts.url = "http://" + ln.Addr().String()
	stopped := false
	ts.stop = func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		ln.Close()
		<-served
		if err := eng.Close(); err != nil {
			t.Errorf("close engine: %v", err)
		}
	}
	t.Cleanup(ts.stop)
	return ts
}

// ref is the main branch of database app.
func (ts *testServer) ref() engine.Ref {
	return engine.Ref{Workspace: ts.core, Database: "app", Branch: "main"}
}

// target addresses a table of app over HTTP.
func (ts *testServer) target(table string) Target {
	return Target{URL: ts.url, APIKey: testKey, Workspace: ts.ws, Database: "app", Table: table}
}

// createTable makes a table with columns through the engine.
func (ts *testServer) createTable(name string, cols []engine.ColumnDef) {
	ts.t.Helper()
	if _, err := ts.eng.Schema().CreateTable(ts.ref(), name); err != nil {
		ts.t.Fatal(err)
	}
	if _, err := ts.eng.Schema().SetTableColumns(ts.ref(), name, cols); err != nil {
		ts.t.Fatal(err)
	}
}

// ids returns the ids of a table's records in id order.
func (ts *testServer) ids(table string) []string {
	ts.t.Helper()
	var out []string
	size := 200
	in := engine.QueryRequest{Page: engine.PageInput{Size: &size}}
	for {
		res, err := ts.eng.Query(context.Background(), ts.ref(), table, in, engine.QueryOptions{})
		if err != nil {
			ts.t.Fatal(err)
		}
		for _, d := range res.Records {
			out = append(out, d.ID)
		}
		if !res.More {
			return out
		}
		cursor := res.Cursor
		in = engine.QueryRequest{Page: engine.PageInput{Size: &size, After: &cursor}}
	}
}

// importText imports text with o (its Input and Log are set here) and
// returns the summary and the log.
func importText(t *testing.T, o ImportOptions, text string) (*ImportSummary, string) {
	t.Helper()
	var log bytes.Buffer
	o.Input = strings.NewReader(text)
	o.InputSize = int64(len(text))
	o.Log = &log
	sum, err := Import(context.Background(), o)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, log.String())
	}
	return sum, log.String()
}

// exportText exports with o and returns the NDJSON; the log goes to
// o.Log if set.
func exportText(t *testing.T, o ExportOptions) string {
	t.Helper()
	var out, log bytes.Buffer
	o.Out = &out
	if o.Log == nil {
		o.Log = &log
	}
	sum, err := Export(context.Background(), o)
	if err != nil {
		t.Fatalf("export: %v\n%s", err, log.String())
	}
	if sum.Stopped != nil {
		t.Fatalf("export stopped: %v\n%s", sum.Stopped, log.String())
	}
	return out.String()
}
