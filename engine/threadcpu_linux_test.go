package engine_test

import (
	"syscall"
	"time"
)

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's usage.
const rusageThread = 1

// threadCPU returns the CPU time (user and system) the calling OS thread
// has used. Callers lock their goroutine to its thread; on a shared
// machine it counts the work itself, where wall time counts the waits for
// a core too.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
