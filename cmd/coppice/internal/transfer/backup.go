package transfer

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine"
)

// Backups (codec/backupmanifest.go): a directory holding a storage
// checkpoint of a whole data directory, as of one moment, and a manifest
// of its files with their SHA-256 sums. Backup takes one from a running
// server (POST /admin/backup streams it) or from a data directory no
// server holds; Restore checks one and makes a data directory of it.

// BackupOptions configure Backup.
type BackupOptions struct {
	// Source is a server (URL and the administrator's APIKey) or a data
	// directory (DataDir); the other fields are not used.
	Source Target
	// To is the backup's directory: missing or empty.
	To string
	// Program names the program taking a backup of a data directory, for
	// the manifest.
	Program string
}

// BackupSummary is what Backup wrote.
type BackupSummary struct {
	Files int
	Bytes int64
	Took  time.Duration
}

// Backup takes a backup into o.To. On failure it leaves o.To as it found
// it: missing, or empty.
func Backup(ctx context.Context, o BackupOptions) (*BackupSummary, error) {
	start := time.Now()
	if o.To == "" {
		return nil, errors.New("no backup directory: set --to")
	}
	if o.Source.DataDir == "" && o.Source.URL == "" {
		return nil, errors.New("no server: set --url, or --data for a data directory")
	}
	created, err := claimEmptyDir(o.To)
	if err != nil {
		return nil, err
	}
	var m codec.BackupManifest
	if o.Source.DataDir != "" {
		m, err = backupDir(ctx, o)
	} else {
		m, err = backupHTTP(ctx, o)
	}
	if err == nil {
		err = writeFileSync(filepath.Join(o.To, codec.BackupManifestName), codec.EncodeBackupManifest(m))
	}
	if err == nil {
		err = syncDirs(o.To)
	}
	if err != nil {
		emptyDir(o.To, created)
		return nil, err
	}
	sum := &BackupSummary{Files: len(m.Files), Took: time.Since(start)}
	for _, f := range m.Files {
		sum.Bytes += f.Size
	}
	return sum, nil
}

// claimEmptyDir makes sure dir is a directory that is empty, creating it
// (mode 0700: a backup holds every record and the hashes of the API keys)
// when it is missing; created says so.
func claimEmptyDir(dir string) (created bool, err error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, os.MkdirAll(dir, 0o700)
	case err != nil:
		return false, err
	case len(entries) > 0:
		return false, fmt.Errorf("%s is not empty", dir)
	}
	return false, nil
}

// emptyDir undoes what a failed backup or restore wrote into dir: it
// removes dir when created, else empties it.
func emptyDir(dir string, created bool) {
	if created {
		os.RemoveAll(dir)
		return
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// backupDir checkpoints a data directory no server holds into o.To and
// lists the files.
func backupDir(ctx context.Context, o BackupOptions) (codec.BackupManifest, error) {
	eng, err := openDataDir(o.Source.DataDir)
	if err != nil {
		return codec.BackupManifest{}, err
	}
	defer eng.Close()
	// The storage engine creates the checkpoint's directory itself, and
	// removes it when it fails: the empty directory then comes back.
	if err := os.Remove(o.To); err != nil {
		return codec.BackupManifest{}, err
	}
	if _, err := eng.Checkpoint(ctx, o.To); err != nil {
		os.MkdirAll(o.To, 0o700)
		return codec.BackupManifest{}, err
	}
	if err := os.Chmod(o.To, 0o700); err != nil {
		return codec.BackupManifest{}, err
	}
	m := codec.BackupManifest{CreatedAt: time.Now().UTC(), Server: o.Program}
	names, err := codec.BackupFiles(o.To)
	if err != nil {
		return m, err
	}
	for _, name := range names {
		f, err := hashFile(filepath.Join(o.To, filepath.FromSlash(name)))
		if err != nil {
			return m, err
		}
		f.Name = name
		m.Files = append(m.Files, f)
	}
	return m, nil
}

// backupHTTP unpacks the tar stream of a server's backup into o.To,
// checking every file against the manifest that ends the stream.
func backupHTTP(ctx context.Context, o BackupOptions) (codec.BackupManifest, error) {
	s, err := newHTTPStore(&o.Source, 1)
	if err != nil {
		return codec.BackupManifest{}, err
	}
	defer s.close()
	body, err := s.stream(ctx, "POST", "/admin/backup", nil, 0, http.StatusOK)
	if err != nil {
		return codec.BackupManifest{}, err
	}
	defer body.Close()
	got := map[string]codec.BackupFile{}
	var manifest []byte
	tr := tar.NewReader(body)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return codec.BackupManifest{}, incomplete(err)
		}
		if manifest != nil {
			return codec.BackupManifest{}, fmt.Errorf("the backup has %s after its manifest", hdr.Name)
		}
		if hdr.Name == codec.BackupManifestName {
			if manifest, err = io.ReadAll(io.LimitReader(tr, codec.MaxBackupManifest)); err != nil {
				return codec.BackupManifest{}, incomplete(err)
			}
			continue
		}
		if hdr.Typeflag != tar.TypeReg || !codec.BackupFileName(hdr.Name) {
			return codec.BackupManifest{}, fmt.Errorf("the backup holds an unexpected entry %q", hdr.Name)
		}
		if _, dup := got[hdr.Name]; dup {
			return codec.BackupManifest{}, fmt.Errorf("the backup holds %s twice", hdr.Name)
		}
		f, err := writeFrom(filepath.Join(o.To, filepath.FromSlash(hdr.Name)), tr)
		if err != nil {
			return codec.BackupManifest{}, incomplete(err)
		}
		f.Name = hdr.Name
		got[hdr.Name] = f
	}
	if manifest == nil {
		return codec.BackupManifest{}, errors.New("the backup ended without its manifest: the stream was cut short")
	}
	m, err := codec.DecodeBackupManifest(manifest)
	if err != nil {
		return m, err
	}
	if len(m.Files) != len(got) {
		return m, fmt.Errorf("the backup's manifest lists %d files, the stream held %d", len(m.Files), len(got))
	}
	for _, want := range m.Files {
		if f, ok := got[want.Name]; !ok || f != want {
			return m, fmt.Errorf("%s does not match the backup's manifest", want.Name)
		}
	}
	return m, nil
}

// incomplete words a failure to read a backup stream.
func incomplete(err error) error {
	return fmt.Errorf("the backup stream failed before its end: %w", err)
}

// writeFrom writes r to a new file at path (its directory made as
// needed), synced, and returns its size and SHA-256.
func writeFrom(path string, r io.Reader) (codec.BackupFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return codec.BackupFile{}, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return codec.BackupFile{}, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return codec.BackupFile{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, err
}

// writeFileSync writes data to a new file at path, synced.
func writeFileSync(path string, data []byte) error {
	_, err := writeFrom(path, bytes.NewReader(data))
	return err
}

// hashFile returns the size and SHA-256 of the file at path.
func hashFile(path string) (codec.BackupFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return codec.BackupFile{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return codec.BackupFile{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, err
}

// syncDirs syncs dir and every directory below it, so that the new
// entries in them survive a crash.
func syncDirs(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

// RestoreSummary is what Restore made.
type RestoreSummary struct {
	Files     int
	Bytes     int64
	Databases int
	Took      time.Duration
}

// Restore makes data directory dataDir, which must be missing or empty,
// from the backup in from: it checks every file against the manifest,
// copies them, and opens the result to make sure it is a data directory.
// On failure it leaves dataDir as it found it.
func Restore(ctx context.Context, from, dataDir string) (*RestoreSummary, error) {
	start := time.Now()
	if from == "" || dataDir == "" {
		return nil, errors.New("set --from (a backup) and --data (the data directory to make)")
	}
	raw, err := os.ReadFile(filepath.Join(from, codec.BackupManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is not a backup: it has no %s", from, codec.BackupManifestName)
	}
	if err != nil {
		return nil, err
	}
	m, err := codec.DecodeBackupManifest(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	created, err := claimEmptyDir(dataDir)
	if err != nil {
		return nil, fmt.Errorf("the data directory must be missing or empty: %w", err)
	}
	sum, err := restoreFiles(ctx, from, dataDir, m)
	if err == nil {
		err = syncDirs(dataDir)
	}
	if err == nil {
		sum.Databases, err = verifyDataDir(dataDir)
	}
	if err != nil {
		emptyDir(dataDir, created)
		return nil, err
	}
	sum.Took = time.Since(start)
	return sum, nil
}

// restoreFiles copies the files of a backup into dir, checking each
// against the manifest.
func restoreFiles(ctx context.Context, from, dir string, m codec.BackupManifest) (*RestoreSummary, error) {
	sum := &RestoreSummary{}
	for _, want := range m.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		src, err := os.Open(filepath.Join(from, filepath.FromSlash(want.Name)))
		if err != nil {
			return nil, fmt.Errorf("the backup lacks a file of its manifest: %w", err)
		}
		got, err := writeFrom(filepath.Join(dir, filepath.FromSlash(want.Name)), src)
		src.Close()
		if err != nil {
			return nil, err
		}
		got.Name = want.Name
		if got != want {
			return nil, fmt.Errorf("%s does not match the backup's manifest (size %d, want %d): the backup is damaged", want.Name, got.Size, want.Size)
		}
		sum.Files++
		sum.Bytes += got.Size
	}
	return sum, nil
}

// verifyDataDir opens a data directory, which reads its catalog and every
// database's metadata, and returns the number of databases.
func verifyDataDir(dir string) (int, error) {
	eng, err := engine.Open(dir, engine.Options{})
	if err != nil {
		return 0, fmt.Errorf("the restored data directory does not open: %w", err)
	}
	st, err := eng.Stats(0)
	if cerr := eng.Close(); err == nil {
		err = cerr
	}
	return st.DatabaseCount, err
}
