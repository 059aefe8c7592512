package api

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine"
)

// Online backup: POST /admin/backup takes a checkpoint of the whole data
// directory (engine.Checkpoint: a consistent copy as of one moment, table
// files hard-linked, writes held back only while it is noted) on the
// server's disk, under the data directory, and streams it to the caller as
// a tar of its files followed by the backup manifest (codec/backupmanifest.go)
// with every file's size and SHA-256. The checkpoint is removed when the
// stream ends, however it ends. It is for the server administrator only,
// with an unscoped key, as every /admin route: a backup holds every
// workspace's data and the hashes of every API key. A node of a cluster
// answers 501: its data directory is one replica without the Raft logs
// that make it one, which neither a cluster nor a single server could
// start from; dumps of its databases move them instead.
//
// One backup runs at a time. A checkpoint keeps the table files of its
// moment alive while it streams, so a long stream on a busy server holds
// disk space that compactions would otherwise free.

// opsState is what the server knows of the backups and loads in progress.
type opsState struct {
	backup  sync.Mutex // held from a backup's checkpoint to its stream's end
	loading sync.Mutex // held by the load in progress
}

// backupRoutes registers the backup endpoint.
func (s *Server) backupRoutes() {
	s.router.POST("/admin/backup", s.handle(s.adminBackup))
}

// adminBackup: POST /admin/backup; 200 with an application/x-tar stream.
func (s *Server) adminBackup(r *request) error {
	if err := r.accountKey("administer the server"); err != nil {
		return err
	}
	if !r.user.Admin {
		return engine.Errorf(engine.CodeForbidden, "only the server administrator may back up the server")
	}
	if s.cluster != nil {
		return engine.Errorf(engine.CodeUnsupported, "a backup of a whole server is not supported in a cluster: "+
			"dump each database instead (GET /dbs/{db}/dump, coppice dump) and load the dumps into a cluster or a single server "+
			"(POST /dbs/{db}/load, coppice load)")
	}
	if !s.ops.backup.TryLock() {
		return engine.Errorf(engine.CodeConflict, "a backup is already running; retry when it ends")
	}
	dir, err := s.eng.Checkpoint(r.context(), "")
	if err != nil {
		s.ops.backup.Unlock()
		return err
	}
	// Backups run one at a time: any other checkpoint there is one an
	// interrupted backup (a crash, a kill) left behind.
	removeOtherCheckpoints(dir, s.log)
	files, err := codec.BackupFiles(dir)
	if err != nil {
		os.RemoveAll(dir)
		s.ops.backup.Unlock()
		return err
	}
	log := s.log
	r.ctx.Response.Header.Set("Content-Disposition", `attachment; filename="coppice-backup.tar"`)
	s.streamResponse(r, "application/x-tar", func(w io.Writer) error {
		return writeBackupTar(w, dir, files)
	}, func() {
		if err := os.RemoveAll(dir); err != nil {
			log.Warn("remove checkpoint", slog.String("dir", dir), slog.Any("err", err))
		}
		s.ops.backup.Unlock()
	})
	return nil
}

// removeOtherCheckpoints removes the directories beside dir.
func removeOtherCheckpoints(dir string, log *slog.Logger) {
	parent := filepath.Dir(dir)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if p := filepath.Join(parent, e.Name()); p != dir {
			if err := os.RemoveAll(p); err != nil {
				log.Warn("remove a checkpoint left behind", slog.String("dir", p), slog.Any("err", err))
			}
		}
	}
}

// writeBackupTar writes the files of dir as a tar stream, then the
// manifest that lists them with their sizes and SHA-256 sums.
func writeBackupTar(w io.Writer, dir string, names []string) error {
	tw := tar.NewWriter(w)
	m := codec.BackupManifest{CreatedAt: time.Now().UTC(), Server: ReadBuildInfo().Version}
	buf := make([]byte, 256<<10)
	for _, name := range names {
		f, err := addTarFile(tw, filepath.Join(dir, filepath.FromSlash(name)), name, buf)
		if err != nil {
			return err
		}
		m.Files = append(m.Files, f)
	}
	manifest := codec.EncodeBackupManifest(m)
	hdr := &tar.Header{Name: codec.BackupManifestName, Mode: 0o600, Size: int64(len(manifest)), ModTime: m.CreatedAt, Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := tw.Write(manifest); err != nil {
		return err
	}
	return tw.Close()
}

// addTarFile writes the file at path to tw under name and returns its
// manifest entry.
func addTarFile(tw *tar.Writer, path, name string, buf []byte) (codec.BackupFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return codec.BackupFile{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return codec.BackupFile{}, err
	}
	hdr := &tar.Header{Name: name, Mode: 0o600, Size: fi.Size(), ModTime: fi.ModTime(), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return codec.BackupFile{}, err
	}
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(tw, h), io.LimitReader(f, fi.Size()), buf)
	if err != nil {
		return codec.BackupFile{}, err
	}
	if n != fi.Size() {
		return codec.BackupFile{}, fmt.Errorf("checkpoint file %s shrank while read", name)
	}
	return codec.BackupFile{Name: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
