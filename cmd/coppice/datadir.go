package main

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// prepareDataDir creates the data directory, readable by its owner only
// (0700): it holds every record and the hashes of the API keys. A
// directory that exists keeps its mode; one that others may read is
// logged.
func prepareDataDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		log.Warn("the data directory is open to other users; chmod 700 it", slog.String("data_dir", dir),
			slog.String("file_mode", fs.FileMode(perm).String()))
	}
	return nil
}
