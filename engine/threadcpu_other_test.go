//go:build !linux

package engine_test

import "time"

// threadCPU is not measured on this system: benchmarks report 0.
func threadCPU() time.Duration { return 0 }
