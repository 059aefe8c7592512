package codec

import (
	"strings"
	"testing"
	"time"
)

// TestDumpHeader round-trips a dump header and refuses other files and
// other versions.
func TestDumpHeader(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 20, 30, 0, time.UTC)
	h := DumpHeader{Database: "app", Region: "local", CreatedAt: at, DumpedAt: at.Add(time.Hour), Server: "v1"}
	line := AppendDumpHeader(nil, h)
	if line[len(line)-1] != '\n' || strings.Count(string(line), "\n") != 1 {
		t.Fatalf("not one line: %q", line)
	}
	got, err := DecodeDumpHeader(line)
	h.Format, h.Version = DumpFormat, DumpVersion
	if err != nil || got != h {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	f := func(line, want string) {
		t.Helper()
		_, err := DecodeDumpHeader([]byte(line))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", line, err, want)
		}
	}
	f("", "not a Coppice dump")
	f("coppice-backup-1\n", "not a Coppice dump")
	f(`{"format":"other","version":1,"database":"a"}`, "not a Coppice dump")
	f(`{"format":"coppice-dump","version":2,"database":"a"}`, "dump format version 2 is not supported (this program reads version 1)")
	f(`{"format":"coppice-dump","version":1}`, "names no database")
	f(`{"format":"coppice-dump",`, "not a Coppice dump")
}

// TestBackupManifest round-trips a manifest and refuses names that leave
// the directory, repeated names and missing sums.
func TestBackupManifest(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	m := BackupManifest{CreatedAt: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), Server: "v1",
		Files: []BackupFile{{Name: "000001.sst", Size: 10, SHA256: sum}, {Name: "wal/000002.log", Size: 0, SHA256: sum}}}
	got, err := DecodeBackupManifest(EncodeBackupManifest(m))
	if err != nil || len(got.Files) != 2 || got.Files[1] != m.Files[1] || !got.CreatedAt.Equal(m.CreatedAt) || got.Version != BackupVersion {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if _, err := DecodeBackupManifest(EncodeBackupManifest(BackupManifest{})); err != nil {
		t.Errorf("empty manifest: %v", err)
	}
	f := func(files, want string) {
		t.Helper()
		_, err := DecodeBackupManifest([]byte(`{"format":"coppice-backup","version":1,"files":[` + files + `]}`))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", files, err, want)
		}
	}
	file := func(name string) string { return `{"name":"` + name + `","size":1,"sha256":"` + sum + `"}` }
	for _, bad := range []string{"", ".", "..", "../x", "/etc/passwd", "a/../b", "a//b", "a/", "./a", BackupManifestName} {
		f(file(bad), "bad file name")
	}
	f(file("a")+","+file("a"), "listed twice")
	f(`{"name":"a","size":1,"sha256":"00"}`, "no valid size and SHA-256")
	f(`{"name":"a","size":-1,"sha256":"`+sum+`"}`, "no valid size and SHA-256")
	if _, err := DecodeBackupManifest([]byte(`{"format":"coppice-backup","version":9,"files":[]}`)); err == nil ||
		!strings.Contains(err.Error(), "version 9 is not supported") {
		t.Errorf("version 9: %v", err)
	}
	if _, err := DecodeBackupManifest([]byte(`[]`)); err == nil {
		t.Error("an array is a manifest")
	}
}
