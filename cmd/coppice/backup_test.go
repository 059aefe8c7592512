package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// loadTarget is where one writer of the backup test writes.
type loadTarget struct{ db, branch string }

// TestBackupUnderLoad backs up a running server with `coppice backup` while
// writers insert records, each in its own sequence, on several databases
// and branches; restores it with `coppice restore`; and checks that the
// copy is of one moment: of every writer, a gap-free prefix of its records
// that holds every record acknowledged before the backup began. Then,
// with the writers stopped, a second backup restored elsewhere dumps
// every database to the same bytes as the server does, and `coppice dump`
// and `coppice load` copy a database on the server.
func TestBackupUnderLoad(t *testing.T) {
	const key = "cpk_backup_under_load_key"
	p := startServe(t, key)
	base := "http://" + p.addr
	client := &http.Client{Timeout: 30 * time.Second}
	call := func(method, path string, body any, want int) []byte {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, out)
		}
		return out
	}
	var list struct {
		Workspaces []struct{ ID string } `json:"workspaces"`
	}
	json.Unmarshal(call("GET", "/workspaces", nil, 200), &list)
	ws := list.Workspaces[0].ID
	targets := []loadTarget{{"app", "main"}, {"app", "dev"}, {"logs", "main"}}
	for _, db := range []string{"app", "logs"} {
		call("PUT", "/workspaces/"+ws+"/dbs/"+db, map[string]any{"region": "local"}, 201)
		call("PUT", "/db/"+db+":main/tables/events", nil, 201)
		call("PUT", "/db/"+db+":main/tables/events/schema", map[string]any{"columns": []any{
			map[string]any{"name": "n", "type": "int"}, map[string]any{"name": "note", "type": "string"}}}, 200)
	}
	call("PUT", "/db/app:dev", map[string]any{"from": "main"}, 201)

	// Writers, and records the first writes before the backup starts.
	writers, warmup := 6, int64(300)
	if testing.Short() {
		writers, warmup = 3, 20
	}
	var acked = make([]atomic.Int64, writers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tg := targets[w%len(targets)]
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"n":%d,"note":"writer %d"}`, n, w)
				req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/db/%s:%s/tables/events/data/w%d-%06d", base, tg.db, tg.branch, w, n), strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := client.Do(req)
				if err != nil {
					failed.Store(err.Error())
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 201 {
					failed.Store(fmt.Sprintf("write: %d", resp.StatusCode))
					return
				}
				acked[w].Store(int64(n + 1))
			}
		}()
	}
	stopWriters := func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}
	defer stopWriters()
	for acked[0].Load() < warmup {
		if f := failed.Load(); f != nil {
			t.Fatal(f)
		}
		time.Sleep(5 * time.Millisecond)
	}

	env := map[string]string{"COPPICE_URL": base, "COPPICE_API_KEY": key}
	getenv := func(k string) string { return env[k] }
	var stderr bytes.Buffer
	exec := func(args ...string) {
		t.Helper()
		stderr.Reset()
		if code := run(args, getenv, io.Discard, &stderr); code != 0 {
			t.Fatalf("coppice %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
		}
		if strings.Contains(stderr.String(), key) {
			t.Errorf("coppice %s printed the API key", args[0])
		}
	}
	before := make([]int64, writers)
	for w := range before {
		before[w] = acked[w].Load()
	}
	backup := filepath.Join(t.TempDir(), "backup")
	exec("backup", "--to", backup)
	after := make([]int64, writers)
	for w := range after {
		after[w] = acked[w].Load()
	}
	// Writes go on after the backup.
	for acked[0].Load() < after[0]+10 {
		if f := failed.Load(); f != nil {
			t.Fatal(f)
		}
		time.Sleep(5 * time.Millisecond)
	}
	stopWriters()
	if f := failed.Load(); f != nil {
		t.Fatal(f)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	exec("restore", "--from", backup, "--data", restored)
	if !strings.Contains(stderr.String(), "it opens with 2 databases") {
		t.Errorf("restore: %s", stderr.String())
	}

	e, err := engine.Open(restored, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	core, _ := engine.WorkspaceCore(ws)
	for w := range writers {
		tg := targets[w%len(targets)]
		ref := engine.Ref{Workspace: core, Database: tg.db, Branch: tg.branch}
		has := func(n int64) bool {
			_, err := e.Get(ref, "events", fmt.Sprintf("w%d-%06d", w, n))
			return err == nil
		}
		n := int64(0)
		for has(n) {
			n++
		}
		if n < before[w] || n > after[w]+1 {
			t.Errorf("writer %d: the backup holds %d records; %d were acknowledged before it, %d after", w, n, before[w], after[w])
		}
		for k := n + 1; k < n+10; k++ {
			if has(k) {
				t.Errorf("writer %d: the backup holds record %d but not %d", w, k, n)
			}
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	// At rest: a backup restored elsewhere dumps every database to the
	// bytes the server dumps.
	quiet := filepath.Join(t.TempDir(), "quiet")
	exec("backup", "--to", quiet)
	copyDir := filepath.Join(t.TempDir(), "copy")
	exec("restore", "--from", quiet, "--data", copyDir)
	dumps := t.TempDir()
	dumpBody := func(name string, args ...string) []byte {
		t.Helper()
		out := filepath.Join(dumps, name)
		exec(append([]string{"dump", "--out", out}, args...)...)
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := bytes.Cut(b, []byte("\n"))
		return body
	}
	for _, db := range []string{"app", "logs"} {
		live := dumpBody(db+".live", "--db", db)
		fromCopy := dumpBody(db+".copy", "--db", db, "--data", copyDir, "--workspace", ws)
		if len(live) == 0 || !bytes.Equal(live, fromCopy) {
			t.Errorf("database %s: the restored backup dumps %d bytes unlike the server's %d", db, len(fromCopy), len(live))
		}
	}
	// And a dump loads under another name on the same server.
	exec("load", "--db", "app2", filepath.Join(dumps, "app.live"))
	if !strings.Contains(stderr.String(), "created database app2 in region local") {
		t.Errorf("load: %s", stderr.String())
	}
	if again := dumpBody("app2", "--db", "app2"); !bytes.Equal(again, dumpBody("app.again", "--db", "app")) {
		t.Error("the loaded copy dumps to other bytes")
	}
	call("GET", "/db/app2:dev/tables/events/data/w1-000000", nil, 200)
}

// TestBackupDataDirectory backs up a data directory with one database:
// refused, with advice that suits backup, while an engine holds it; then
// backed up and restored, and the restore counts one database.
func TestBackupDataDirectory(t *testing.T) {
	dir := t.TempDir()
	e, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase(engine.CreateDatabaseRequest{Name: "app", Region: "local"}); err != nil {
		t.Fatal(err)
	}
	getenv := func(string) string { return "" }
	var stderr bytes.Buffer
	exec := func(want int, args ...string) string {
		t.Helper()
		stderr.Reset()
		if code := run(args, getenv, io.Discard, &stderr); code != want {
			t.Fatalf("coppice %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, stderr.String())
		}
		return stderr.String()
	}
	backup := filepath.Join(t.TempDir(), "backup")
	if out := exec(1, "backup", "--data", dir, "--to", backup); !strings.Contains(out,
		"in use by a running server (or another process): stop it first, or go through the running server with --url") {
		t.Errorf("backup of a held directory: %s", out)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	exec(0, "backup", "--data", dir, "--to", backup)
	out := exec(0, "restore", "--from", backup, "--data", filepath.Join(t.TempDir(), "restored"))
	if !strings.HasSuffix(out, "; it opens with 1 database\n") {
		t.Errorf("restore: %s", out)
	}
}
