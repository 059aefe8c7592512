package transfer

import (
	"archive/tar"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine"
)

// TestBackupRestore backs up a running server over HTTP and a data
// directory no server holds, restores both, and refuses what would
// overwrite or what is damaged, leaving the directories as they were.
func TestBackupRestore(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, true)
	ts.createTable("people", peopleColumns)
	importText(t, ImportOptions{Target: ts.target("people"), InputName: "people.csv"}, peopleCSV)
	server := Target{URL: ts.url, APIKey: testKey}
	ctx := t.Context()

	to := filepath.Join(t.TempDir(), "nested", "backup")
	sum, err := Backup(ctx, BackupOptions{Source: server, To: to})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files == 0 || sum.Bytes == 0 {
		t.Errorf("summary %+v", sum)
	}
	if fi, err := os.Stat(to); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("backup directory: %v %v", fi, err)
	}
	data := filepath.Join(t.TempDir(), "restored")
	rs, err := Restore(ctx, to, data)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Files != sum.Files || rs.Bytes != sum.Bytes || rs.Databases != 1 {
		t.Errorf("restore %+v after backup %+v", rs, sum)
	}
	want := exportText(t, ExportOptions{Target: ts.target("people")})
	restored := Target{DataDir: data, Workspace: ts.ws, Database: "app", Table: "people"}
	if got := exportText(t, ExportOptions{Target: restored}); got != want {
		t.Errorf("restored records:\n%s\nwant\n%s", got, want)
	}

	// Refusals leave the directories as they were.
	if _, err := Backup(ctx, BackupOptions{Source: server, To: to}); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("backup into a backup: %v", err)
	}
	if _, err := Restore(ctx, to, data); err == nil || !strings.Contains(err.Error(), "must be missing or empty") {
		t.Errorf("restore over a data directory: %v", err)
	}
	if _, err := Backup(ctx, BackupOptions{Source: Target{URL: ts.url, APIKey: "cpk_wrong_key_0123456789"}, To: t.TempDir()}); err == nil ||
		!strings.Contains(err.Error(), "401") {
		t.Errorf("a wrong key: %v", err)
	}
	if _, err := Restore(ctx, t.TempDir(), filepath.Join(t.TempDir(), "d")); err == nil || !strings.Contains(err.Error(), "is not a backup") {
		t.Errorf("restore of a directory without a manifest: %v", err)
	}
	m, _ := codec.DecodeBackupManifest(must(os.ReadFile(filepath.Join(to, codec.BackupManifestName))))
	victim := filepath.Join(to, filepath.FromSlash(m.Files[0].Name))
	b := must(os.ReadFile(victim))
	b[len(b)/2] ^= 1
	os.WriteFile(victim, b, 0o600)
	empty := t.TempDir()
	if _, err := Restore(ctx, to, empty); err == nil || !strings.Contains(err.Error(), "the backup is damaged") {
		t.Errorf("a damaged backup: %v", err)
	}
	if left, _ := os.ReadDir(empty); len(left) != 0 {
		t.Errorf("a failed restore left %v", left)
	}

	// A data directory: refused while the server holds it, then taken.
	if _, err := Backup(ctx, BackupOptions{Source: Target{DataDir: dir}, To: t.TempDir()}); !errors.Is(err, ErrDirInUse) {
		t.Errorf("backup of a served directory: %v", err)
	}
	ts.stop()
	offline := filepath.Join(t.TempDir(), "offline")
	if _, err := Backup(ctx, BackupOptions{Source: Target{DataDir: dir}, To: offline, Program: "test"}); err != nil {
		t.Fatal(err)
	}
	data2 := t.TempDir()
	if _, err := Restore(ctx, offline, data2); err != nil {
		t.Fatal(err)
	}
	restored.DataDir = data2
	if got := exportText(t, ExportOptions{Target: restored}); got != want {
		t.Errorf("restored offline backup:\n%s\nwant\n%s", got, want)
	}
}

// TestBackupCutShort: a backup stream that ends before its manifest, or
// whose files do not match it, is an error, and the backup directory is
// removed.
func TestBackupCutShort(t *testing.T) {
	f := func(name string, write func(tw *tar.Writer), want string) {
		t.Helper()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tw := tar.NewWriter(w)
			write(tw)
			tw.Flush()
		}))
		defer srv.Close()
		to := filepath.Join(t.TempDir(), "b")
		_, err := Backup(t.Context(), BackupOptions{Source: Target{URL: srv.URL}, To: to})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
		if _, err := os.Stat(to); !os.IsNotExist(err) {
			t.Errorf("%s: the backup directory is left: %v", name, err)
		}
	}
	file := func(tw *tar.Writer, name, content string) {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(content)), Typeflag: tar.TypeReg})
		tw.Write([]byte(content))
	}
	f("no manifest", func(tw *tar.Writer) { file(tw, "000001.sst", "data") }, "ended without its manifest")
	f("a lying manifest", func(tw *tar.Writer) {
		file(tw, "000001.sst", "data")
		file(tw, codec.BackupManifestName, string(codec.EncodeBackupManifest(codec.BackupManifest{
			Files: []codec.BackupFile{{Name: "000001.sst", Size: 4, SHA256: strings.Repeat("0", 64)}}})))
	}, "does not match the backup's manifest")
	f("a file outside", func(tw *tar.Writer) { file(tw, "../escape", "x") }, "unexpected entry")
	f("cut in a file", func(tw *tar.Writer) {
		tw.WriteHeader(&tar.Header{Name: "000001.sst", Mode: 0o600, Size: 100, Typeflag: tar.TypeReg})
		tw.Write([]byte("short"))
	}, "failed before its end")
}

// must returns v, failing on err.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// openRestored opens a data directory for a test's reads.
func openRestored(t *testing.T, dir string) *engine.Engine {
	t.Helper()
	e, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
