package codec

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"time"
)

// A backup of a server is a directory: the files of a storage checkpoint
// (a data directory as of one moment) and BackupManifestName, which lists
// every other file with its size and SHA-256:
//
//	{"format":"coppice-backup","version":1,"createdAt":"…","server":"v1.2.0",
//	 "files":[{"name":"000005.sst","size":1024,"sha256":"…"},…]}
//
// Names are slash-separated paths inside the directory. Over HTTP a backup
// travels as a tar stream of the same files, the manifest last, so that a
// stream cut short lacks it.
const (
	BackupFormat  = "coppice-backup"
	BackupVersion = 1
	// BackupManifestName is the manifest's file name in the directory.
	BackupManifestName = "coppice-backup.json"
	// MaxBackupManifest bounds the manifest's size.
	MaxBackupManifest = 16 << 20
)

// BackupManifest lists the files of a backup.
type BackupManifest struct {
	Format    string       `json:"format"`
	Version   int          `json:"version"`
	CreatedAt time.Time    `json:"createdAt"`
	Server    string       `json:"server,omitempty"`
	Files     []BackupFile `json:"files"`
}

// BackupFile is one file of a backup.
type BackupFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	// SHA256 is the hex SHA-256 of the content.
	SHA256 string `json:"sha256"`
}

// BackupFiles lists the files a backup of dir holds: the regular files
// under it but the manifest, as slash-separated relative names, sorted.
func BackupFiles(dir string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); rel != BackupManifestName {
			names = append(names, rel)
		}
		return nil
	})
	slices.Sort(names)
	return names, err
}

// EncodeBackupManifest encodes m with the format and the current version,
// indented for people who read it.
func EncodeBackupManifest(m BackupManifest) []byte {
	m.Format, m.Version = BackupFormat, BackupVersion
	if m.Files == nil {
		m.Files = []BackupFile{}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		panic(err) // strings, numbers and times always encode
	}
	return append(b, '\n')
}

// DecodeBackupManifest decodes and checks a manifest: its format and
// version, and that every name is a clean relative path, listed once,
// that is not the manifest's, with a size and a SHA-256.
func DecodeBackupManifest(b []byte) (BackupManifest, error) {
	var m BackupManifest
	if err := json.Unmarshal(b, &m); err != nil || m.Format != BackupFormat {
		return BackupManifest{}, errors.New("not a Coppice backup manifest")
	}
	if m.Version != BackupVersion {
		return BackupManifest{}, fmt.Errorf("backup format version %d is not supported (this program reads version %d)", m.Version, BackupVersion)
	}
	seen := make(map[string]bool, len(m.Files))
	for _, f := range m.Files {
		if !BackupFileName(f.Name) || f.Name == BackupManifestName {
			return BackupManifest{}, fmt.Errorf("backup manifest: bad file name %q", f.Name)
		}
		if seen[f.Name] {
			return BackupManifest{}, fmt.Errorf("backup manifest: %s is listed twice", f.Name)
		}
		seen[f.Name] = true
		if sum, err := hex.DecodeString(f.SHA256); f.Size < 0 || err != nil || len(sum) != 32 {
			return BackupManifest{}, fmt.Errorf("backup manifest: %s has no valid size and SHA-256", f.Name)
		}
	}
	return m, nil
}

// BackupFileName reports whether name may name a file of a backup: a
// slash-separated relative path without empty, "." or ".." elements, so
// that it stays inside the directory.
func BackupFileName(name string) bool {
	return name != "." && fs.ValidPath(name)
}
