//go:build unix

package api

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system, every thread) this
// process has used: on a shared machine a benchmark's CPU time per op
// counts its own work, where wall time counts the waits for a core too.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
