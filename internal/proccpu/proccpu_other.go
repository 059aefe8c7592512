//go:build !unix

package proccpu

import "time"

// Process is not measured on this system: it returns 0.
func Process() time.Duration { return 0 }
