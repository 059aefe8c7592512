package transfer

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestDataDirectory imports into and exports from a data directory with
// the engine: refused while a server holds the directory, then the same
// outcome as over HTTP once it is free.
func TestDataDirectory(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, false)
	ws, core := ts.ws, ts.core
	ts.createTable("people", peopleColumns)
	target := func(table string) Target {
		return Target{DataDir: dir, Workspace: ws, Database: "app", Table: table}
	}
	o := ImportOptions{Target: target("people"), InputName: "people.csv", Input: strings.NewReader(peopleCSV)}
	if _, err := Import(t.Context(), o); !errors.Is(err, ErrDirInUse) || !strings.Contains(err.Error(), "in use by a running server") {
		t.Fatalf("import into a served directory: %v", err)
	}
	ts.stop()

	// The engine names the bad records of a refused batch (line 7) where
	// the HTTP answer does not; the outcome is the same.
	sum, log := importText(t, o, peopleCSV)
	checkSummary(t, sum, log, 8, 5, 3, []int64{4, 7, 9})
	if !strings.Contains(log, "line 7: column [born]: invalid value: expected an RFC 3339 datetime") {
		t.Errorf("log:\n%s", log)
	}
	sum, log = importText(t, ImportOptions{Target: target("events"), InputName: "-", Create: true, InferRows: 3}, eventsNDJSON)
	checkSummary(t, sum, log, 7, 4, 3, []int64{4, 5, 6})
	fromDir := exportText(t, ExportOptions{Target: target("people")})
	eventsDir := exportText(t, ExportOptions{Target: target("events"), Sort: "age:desc"})

	// The same directory served again exports the same lines.
	ts = startServer(t, dir, false)
	ts.ws, ts.core = ws, core
	if got, want := ts.ids("people"), []string{"p1", "p2", "p4", "p6", "p8"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
	if fromHTTP := exportText(t, ExportOptions{Target: ts.target("people")}); fromHTTP != fromDir {
		t.Errorf("export over HTTP:\n%s\nfrom the directory:\n%s", fromHTTP, fromDir)
	}
	if fromHTTP := exportText(t, ExportOptions{Target: ts.target("events"), Sort: "age:desc"}); fromHTTP != eventsDir || strings.Count(eventsDir, "\n") != 4 {
		t.Errorf("export over HTTP:\n%s\nfrom the directory:\n%s", fromHTTP, eventsDir)
	}

	for _, c := range []struct {
		t    Target
		want string
	}{
		{Target{DataDir: filepath.Join(t.TempDir(), "none"), Workspace: ws, Database: "app", Table: "t"}, "is not a data directory: it is missing or empty"},
		{Target{DataDir: t.TempDir(), Workspace: ws, Database: "app", Table: "t"}, "is not a data directory: it is missing or empty"},
		{Target{DataDir: dir, Database: "app", Table: "t"}, "--workspace is required with --data"},
		{Target{DataDir: dir, Workspace: "nope", Database: "app", Table: "t"}, `--workspace "nope" is not a workspace id`},
	} {
		o := ImportOptions{Target: c.t, InputName: "-", Input: strings.NewReader("{}\n")}
		if _, err := Import(t.Context(), o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.t, err, c.want)
		}
	}
}
