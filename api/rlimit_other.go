//go:build !unix

package api

import "log/slog"

// RaiseOpenFileLimit does nothing where the system has no soft limit on
// open files to raise.
func RaiseOpenFileLimit(*slog.Logger) {}

// openFileLimit returns 1024, the limit assumed when it is unknown.
func openFileLimit() uint64 { return 1024 }
