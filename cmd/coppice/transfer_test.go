package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/coppice-db/coppice/cmd/coppice/internal/transfer"
)

func TestImportOptions(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	f := func(args []string, want transfer.ImportOptions) {
		t.Helper()
		got, err := importOptions(args, getenv, os.Stderr)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		got.Log = nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v with %v:\n got %+v\nwant %+v", args, env, got, want)
		}
	}
	lines := transfer.Progress{Mode: transfer.ProgressLines, Every: transfer.DefaultProgressEvery}
	f([]string{"in.csv"}, transfer.ImportOptions{
		Target:    transfer.Target{URL: "http://127.0.0.1:8080", Branch: "main"},
		InputName: "in.csv", Delimiter: ',', InferRows: 1000, BatchSize: 1000, Concurrency: 4, MaxErrors: 1000, Progress: lines,
	})
	env = map[string]string{"COPPICE_URL": "http://db:1", "COPPICE_API_KEY": "k", "COPPICE_WORKSPACE": "w-abc123",
		"COPPICE_DB": "app", "COPPICE_BRANCH": "dev", "COPPICE_TABLE": "t"}
	f([]string{"-"}, transfer.ImportOptions{
		Target:    transfer.Target{URL: "http://db:1", APIKey: "k", Workspace: "w-abc123", Database: "app", Branch: "dev", Table: "t"},
		InputName: "-", Delimiter: ',', InferRows: 1000, BatchSize: 1000, Concurrency: 4, MaxErrors: 1000, Progress: lines,
	})
	// Flags win over the environment; --data leaves the URL unused.
	f([]string{"--api-key", "k2", "--db", "d", "--branch", "b", "--table", "u", "--data", "/dir", "--format", "csv",
		"--delimiter", ";", "--create", "--infer-rows", "10", "--skip", "7", "--batch", "50", "--concurrency", "2",
		"--max-errors", "0", "--progress", "off", "--progress-every", "5", "x.txt"},
		transfer.ImportOptions{
			Target:    transfer.Target{URL: "http://db:1", APIKey: "k2", Workspace: "w-abc123", DataDir: "/dir", Database: "d", Branch: "b", Table: "u"},
			InputName: "x.txt", Format: "csv", Delimiter: ';', Create: true, InferRows: 10, Skip: 7, BatchSize: 50, Concurrency: 2,
			Progress: transfer.Progress{Mode: transfer.ProgressOff, Every: 5},
		})
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "want one input file"},
		{[]string{"a", "b"}, "want one input file"},
		{[]string{"--data", "/d", "--url", "http://x", "a"}, "--data and --url exclude each other"},
		{[]string{"--delimiter", "ab", "a"}, "--delimiter must be one character"},
		{[]string{"--progress", "loud", "a"}, "--progress must be auto, bar, lines or off"},
		{[]string{"--progress-every", "0", "a"}, "--progress-every must be positive"},
		{[]string{"--skip", "x", "a"}, "invalid value"},
	} {
		if _, err := importOptions(c.args, getenv, os.Stderr); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}

	o, out, err := exportOptions([]string{"--filter", `{"a":1}`, "--columns", "a, b.c", "--sort", "a:desc", "--out", "f.ndjson", "--progress", "bar"}, getenv, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	o.Log = nil
	want := transfer.ExportOptions{
		Target: transfer.Target{URL: "http://db:1", APIKey: "k", Workspace: "w-abc123", Database: "app", Branch: "dev", Table: "t"},
		Filter: `{"a":1}`, Sort: "a:desc", Columns: []string{"a", "b.c"},
		Progress: transfer.Progress{Mode: transfer.ProgressBar, Every: transfer.DefaultProgressEvery},
	}
	if !reflect.DeepEqual(o, want) || out != "f.ndjson" {
		t.Errorf("export options:\n got %+v %q\nwant %+v", o, out, want)
	}
	if _, _, err := exportOptions([]string{"extra"}, getenv, os.Stderr); err == nil {
		t.Error("export with an argument: no error")
	}

	// Help lists the flags and never the key from the environment.
	for _, cmd := range []string{"import", "export"} {
		var help bytes.Buffer
		if code := run([]string{cmd, "-h"}, getenv, &help, &help); code != 0 || !strings.Contains(help.String(), "-table") {
			t.Errorf("%s -h: exit %d\n%s", cmd, code, help.String())
		}
		if strings.Contains(help.String(), `"k"`) {
			t.Errorf("%s -h shows the API key:\n%s", cmd, help.String())
		}
	}
}

// TestImportExportCommands runs the commands against `coppice serve` in
// another process: a CSV import with a bad line, an export, the refusal
// of the served data directory, then an import and an export of the data
// directory once the server has stopped.
func TestImportExportCommands(t *testing.T) {
	const key = "cpk_transfer_commands_key"
	p := startServe(t, key)
	base := "http://" + p.addr
	call := func(method, path, body string, want int, out any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: status %d, want %d", method, path, resp.StatusCode, want)
		}
		if out != nil {
			if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
				t.Fatal(err)
			}
		}
	}
	var list struct {
		Workspaces []struct{ ID string } `json:"workspaces"`
	}
	call("GET", "/workspaces", "", 200, &list)
	ws := list.Workspaces[0].ID
	call("PUT", "/workspaces/"+ws+"/dbs/app", `{"region":"local"}`, 201, nil)

	dir := t.TempDir()
	in := filepath.Join(dir, "people.csv")
	os.WriteFile(in, []byte("id,name,age,score\na,Ann,34,1.5\nb,Bob,x,2.25\nc,Cid,27,0.5\n"), 0o644)
	// The plain base URL reaches the key's only workspace: no --workspace.
	env := map[string]string{"COPPICE_URL": base, "COPPICE_API_KEY": key, "COPPICE_DB": "app"}
	getenv := func(k string) string { return env[k] }
	var stdout, stderr bytes.Buffer
	exec := func(args ...string) int {
		stdout.Reset()
		stderr.Reset()
		code := run(args, getenv, &stdout, &stderr)
		if strings.Contains(stdout.String()+stderr.String(), key) {
			t.Errorf("%v printed the API key", args)
		}
		return code
	}
	// One sampled record makes age an int; line 3 then fails.
	if code := exec("import", "--table", "people", "--create", "--infer-rows", "1", in); code != 1 ||
		!strings.Contains(stderr.String(), `line 3: column [age]: "x" is not an integer`) ||
		!strings.Contains(stderr.String(), "import: read 3 records, imported 2, failed 1") {
		t.Errorf("import: exit %d\n%s", code, stderr.String())
	}
	out := filepath.Join(dir, "people.ndjson")
	if code := exec("export", "--table", "people", "--out", out); code != 0 {
		t.Errorf("export: exit %d\n%s", code, stderr.String())
	}
	exported, _ := os.ReadFile(out)
	const want = `{"id":"a","age":34,"name":"Ann","score":1.5}` + "\n" + `{"id":"c","age":27,"name":"Cid","score":0.5}` + "\n"
	if string(exported) != want {
		t.Errorf("export:\n%s\nwant\n%s", exported, want)
	}
	if code := exec("export", "--table", "people", "--sort", "score", "--columns", "name"); code != 0 ||
		stdout.String() != `{"id":"c","name":"Cid"}`+"\n"+`{"id":"a","name":"Ann"}`+"\n" {
		t.Errorf("export to stdout: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}

	// A data directory a server holds is refused, whichever process it is.
	if code := exec("import", "--data", p.data, "--workspace", ws, "--table", "copy", "--create", out); code != 1 ||
		!strings.Contains(stderr.String(), "in use by a running server (or another process): stop it first, or go through the running server with --url") {
		t.Errorf("import into the served directory: exit %d\n%s", code, stderr.String())
	}
	p.stop(t)
	if code := exec("import", "--data", p.data, "--workspace", ws, "--table", "copy", "--create", out); code != 0 ||
		!strings.Contains(stderr.String(), "created table [copy] with columns: age int, name string, score float") {
		t.Errorf("import into the directory: exit %d\n%s", code, stderr.String())
	}
	if code := exec("export", "--data", p.data, "--workspace", ws, "--table", "copy"); code != 0 || stdout.String() != want {
		t.Errorf("export of the directory: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
}
