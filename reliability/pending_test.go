package reliability

import "testing"

// TestDiskFull will fill the disk through an error-injecting filesystem
// under the engine: writes must then get 503, reads still answer,
// /healthz answer 503, SIGTERM exit 0 within the timeout, and a restart
// find every acknowledged write (Ledger.Verify).
func TestDiskFull(t *testing.T) {
	t.Skip("waits for the engine's storage-fault degraded mode and an error-injecting Pebble vfs in engine.Options")
}

// TestManyBranchMemory will read, summarize and aggregate each of 2,000
// branches of a 100,000-row table twice, then again after a restart, with
// --memory-limit 1GiB, sampling the process's RSS (/proc/PID/status VmHWM,
// harness.Server.Pid): the peak must stay within the limit + 300 MiB.
func TestManyBranchMemory(t *testing.T) {
	t.Skip("waits for the memory budget (--memory-limit) and branches sharing their parent's derived structures")
}
