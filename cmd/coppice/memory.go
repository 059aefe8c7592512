package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// The memory budget's default (--memory-limit) is half of the memory the
// process may have: the machine's, or the container's when its control
// group limits it to less. The other half is left to the page cache,
// which the storage engine reads through, and to other processes.

// minDefaultMemoryLimit is the smallest default, for very small machines.
const minDefaultMemoryLimit = 256 << 20

// unknownMemoryLimit is the default when the memory the process may have
// cannot be read.
const unknownMemoryLimit = 4 << 30

// minMemoryLimit is the smallest --memory-limit accepted: the storage
// engine, the runtime and a few requests need about that much.
const minMemoryLimit = 128 << 20

// defaultMemoryLimit returns half of availableMemory(), at least
// minDefaultMemoryLimit; unknownMemoryLimit when the memory cannot be
// read.
func defaultMemoryLimit() int64 {
	return defaultLimitOf(availableMemory())
}

// defaultLimitOf returns the default memory limit of a process that may
// have n bytes (0: unknown).
func defaultLimitOf(n int64) int64 {
	if n <= 0 {
		return unknownMemoryLimit
	}
	return max(n/2, minDefaultMemoryLimit)
}

// availableMemory returns the memory the process may use: the machine's
// (MemTotal of /proc/meminfo), or the limit of its control group (v2
// memory.max, v1 memory.limit_in_bytes) when lower; 0 when unknown.
func availableMemory() int64 {
	total := memTotal()
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}

// memTotal reads MemTotal from /proc/meminfo, in bytes; 0 when unknown.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
