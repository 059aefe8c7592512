//go:build unix

package api

import (
	"log/slog"
	"syscall"
)

// RaiseOpenFileLimit raises the soft limit on open files to the hard
// limit, so that connections and the data directory's files have all the
// descriptors the system allows this process, and logs both. Failing to
// raise it is logged and otherwise ignored: the server still runs, with
// fewer connections.
func RaiseOpenFileLimit(log *slog.Logger) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("open-file limit unknown", slog.Any("err", err))
		return
	}
	soft := lim.Cur
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			log.Warn("open-file limit not raised", slog.Uint64("soft", soft), slog.Uint64("hard", lim.Max), slog.Any("err", err))
			return
		}
	}
	log.Info("open-file limit", slog.Uint64("was", soft), slog.Uint64("now", lim.Cur), slog.Uint64("hard", lim.Max))
}

// openFileLimit returns the soft limit on open files, or 1024 when it is
// unknown.
func openFileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 1024
	}
	return lim.Cur
}
