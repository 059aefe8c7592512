//go:build !unix

package api

import "time"

// processCPU is not measured on this system: benchmarks report 0.
func processCPU() time.Duration { return 0 }
