//go:build !unix

package engine_test

import (
	"testing"
	"time"
)

// processCPU is not measured on this system: benchmarks report 0.
func processCPU(*testing.B) time.Duration { return 0 }
