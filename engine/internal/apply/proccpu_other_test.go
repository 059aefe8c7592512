//go:build !unix

package apply

import (
	"testing"
	"time"
)

// processCPU is not measured on this system: benchmarks report 0.
func processCPU(*testing.B) time.Duration { return 0 }
