//go:build unix

package main

import "syscall"

// limitOpenFiles sets this process's open-file limit, soft and hard, to n.
func limitOpenFiles(n uint64) error {
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n})
}
