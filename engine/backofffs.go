package engine

import (
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// backoffFS is the storage engine's filesystem with one change: once the
// storage failed (a full disk, an I/O error), creating a file waits a
// while first. Pebble retries a failed flush at once, without a pause;
// on a full disk every retry fails again, and without the wait the
// retries would spin a core until the restart. The wait holds none of
// Pebble's locks: it creates its files without them.
type backoffFS struct {
	vfs.FS
	failed func() bool
}

// failedCreateDelay is how long a file creation waits once the storage
// failed.
const failedCreateDelay = time.Second

// Create creates a file, after the delay once the storage failed.
func (f backoffFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if f.failed() {
		time.Sleep(failedCreateDelay)
	}
	return f.FS.Create(name, category)
}
