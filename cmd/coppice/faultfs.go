//go:build coppice_faultfs

package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/coppice-db/coppice/engine"
)

// A build for the reliability suite only, with the tag coppice_faultfs:
// COPPICE_TEST_DISK_FULL=signal puts the data directory on a disk that
// fills up at SIGUSR1 (engine.DiskFull): from then on it has no byte
// available, and a write of the storage engine fails with ENOSPC where a
// full disk's would, until the process restarts.
// The suite fills a real server's disk this way, without a filesystem of
// its own or root. No other build reads the variable: a production binary
// cannot be made to fail its writes from its environment.
func init() {
	testEngineOptions = func(o *engine.Options, log *slog.Logger) {
		if os.Getenv("COPPICE_TEST_DISK_FULL") != "signal" {
			return
		}
		disk := engine.NewDiskFull()
		o.FS = disk.FS()
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGUSR1)
		go func() {
			<-sig
			log.Warn("test build: the disk is full from now on")
			disk.Fill()
		}()
	}
}
