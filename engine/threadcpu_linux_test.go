package engine_test

import (
	"syscall"
	"time"
	"unsafe"
)

// clockThreadCPU is Linux's CLOCK_THREAD_CPUTIME_ID: the calling thread's
// CPU time, to the nanosecond the scheduler counts it in.
const clockThreadCPU = 3

// threadCPU returns the CPU time (user and system) the calling OS thread
// has used. Callers lock their goroutine to its thread; on a shared
// machine it counts the work itself, where wall time counts the waits for
// a core too. It reads the thread's CPU clock, not its resource usage,
// whose user and system times may advance by whole ticks: a
// query of tens of microseconds would read as 0 or a tick.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPU, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
