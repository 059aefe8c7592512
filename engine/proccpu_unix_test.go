//go:build unix

package engine_test

import (
	"syscall"
	"testing"
	"time"
)

// processCPU returns the CPU time the process has used, user and system,
// its garbage collection and background work included: on a shared
// machine it drifts less than the wall clock.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
