package api

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine"
)

// fetchBackup posts /admin/backup with key and, on 200, unpacks the tar
// into dir, checking every file against the manifest, which must come
// last. It returns the status and the manifest.
func fetchBackup(t *testing.T, ts *testServer, key, dir string) (int, codec.BackupManifest) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.url+"/admin/backup", nil)
	setKey(req, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return resp.StatusCode, codec.BackupManifest{}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-tar" {
		t.Errorf("content type %q", ct)
	}
	sums := map[string]string{}
	var m codec.BackupManifest
	tr := tar.NewReader(resp.Body)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Format != "" {
			t.Fatalf("%s after the manifest", hdr.Name)
		}
		if hdr.Name == codec.BackupManifestName {
			b, _ := io.ReadAll(tr)
			if m, err = codec.DecodeBackupManifest(b); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !codec.BackupFileName(hdr.Name) {
			t.Fatalf("file name %q", hdr.Name)
		}
		p := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		os.MkdirAll(filepath.Dir(p), 0o700)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if _, err := io.Copy(io.MultiWriter(f, h), tr); err != nil {
			t.Fatal(err)
		}
		f.Close()
		sums[hdr.Name] = hex.EncodeToString(h.Sum(nil))
	}
	if m.Format == "" || len(m.Files) != len(sums) {
		t.Fatalf("manifest %+v for files %v", m, sums)
	}
	for _, f := range m.Files {
		if sums[f.Name] != f.SHA256 {
			t.Errorf("%s: sha256 %s, manifest %s", f.Name, sums[f.Name], f.SHA256)
		}
	}
	return 200, m
}

// TestAdminBackup streams a backup of a running server, opens it as a data
// directory and finds the records and the accounts; only the
// administrator's unscoped key may take one, one at a time, and the
// server's checkpoints are gone once the stream ends.
func TestAdminBackup(t *testing.T) {
	ts := startServer(t, Options{})
	ts.createDB("app")
	ts.createTable("app", "users", map[string]any{"name": "name", "type": "string"})
	ts.expect(201, "PUT", "/db/app:main/tables/users/data/ann", map[string]any{"name": "Ann"})
	ts.expect(201, "PUT", "/db/app:dev", map[string]any{"from": "main"})
	ts.expect(201, "PUT", "/db/app:dev/tables/users/data/bob", map[string]any{"name": "Bob"})
	// What an interrupted backup leaves behind goes with the next one.
	stale := filepath.Join(ts.dir, "checkpoints", "stale")
	if err := os.MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}

	admin := ts.admin()
	bob := ts.newUser("bob@example.com")
	scoped := str(ts.call(admin, 201, "POST", "/user/keys/scoped", map[string]any{"workspaceID": ts.info.WorkspaceID}).obj()["key"])
	if st, _ := fetchBackup(t, ts, bob.key, t.TempDir()); st != 403 {
		t.Errorf("a user who is not the administrator: %d", st)
	}
	if st, _ := fetchBackup(t, ts, scoped, t.TempDir()); st != 403 {
		t.Errorf("a scoped key of the administrator: %d", st)
	}
	if st, _ := fetchBackup(t, ts, "", t.TempDir()); st != 401 {
		t.Errorf("no key: %d", st)
	}
	ts.srv.ops.backup.Lock()
	if st, _ := fetchBackup(t, ts, testKey, t.TempDir()); st != 409 {
		t.Errorf("a backup while another runs: %d", st)
	}
	ts.srv.ops.backup.Unlock()

	dir := t.TempDir()
	st, m := fetchBackup(t, ts, testKey, dir)
	if st != 200 || len(m.Files) == 0 || m.CreatedAt.IsZero() {
		t.Fatalf("backup: %d %+v", st, m)
	}
	// The stream counts as a request in flight until its end, after which
	// the checkpoint is gone.
	for deadline := time.Now().Add(5 * time.Second); ts.srv.InFlight() > 0; {
		if time.Now().After(deadline) {
			t.Fatal("the backup stream is still in flight")
		}
		time.Sleep(time.Millisecond)
	}
	left, _ := os.ReadDir(filepath.Join(ts.dir, "checkpoints"))
	if len(left) != 0 {
		t.Errorf("checkpoints left in the data directory: %v", left)
	}
	// Another backup may start.
	if st, _ := fetchBackup(t, ts, testKey, t.TempDir()); st != 200 {
		t.Errorf("second backup: %d", st)
	}

	e, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatalf("open the backup: %v", err)
	}
	defer e.Close()
	core := ts.info.Workspace
	if r, err := e.Get(engine.Ref{Workspace: core, Database: "app", Branch: "main"}, "users", "ann"); err != nil || r.Values["name"] != "Ann" {
		t.Errorf("main/ann: %v %v", r, err)
	}
	if _, err := e.Get(engine.Ref{Workspace: core, Database: "app", Branch: "dev"}, "users", "bob"); err != nil {
		t.Errorf("dev/bob: %v", err)
	}
	if _, _, err := e.Accounts().Authenticate(testKey); err != nil {
		t.Errorf("the administrator's key in the backup: %v", err)
	}
	if strings.Contains(m.Server, " ") {
		t.Errorf("server version %q", m.Server)
	}
}
