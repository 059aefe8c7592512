package engine

import (
	"os"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// DiskFull is a filesystem for tests of storage faults (Options.FS): the
// operating system's, on a disk that fills up after a number of writes,
// from when on every write fails with ENOSPC, as a full disk's do. Reads
// go on.
type DiskFull struct {
	fs   vfs.FS
	left atomic.Int64 // writes before the disk is full
}

// NewDiskFull returns a filesystem whose disk is full after the given
// number of file writes (negative: not until Fill).
func NewDiskFull(writes int64) *DiskFull {
	d := &DiskFull{}
	if writes < 0 {
		writes = 1 << 62
	}
	d.left.Store(writes)
	d.fs = errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(d.maybeError))
	return d
}

// FS is the filesystem, for Options.FS.
func (d *DiskFull) FS() vfs.FS { return d.fs }

// Fill makes the disk full now.
func (d *DiskFull) Fill() { d.left.Store(0) }

// Full reports whether the disk is full.
func (d *DiskFull) Full() bool { return d.left.Load() <= 0 }

// maybeError fails the operations that take space on a full disk, and
// counts the writes until it is.
func (d *DiskFull) maybeError(op errorfs.Op) error {
	switch op.Kind {
	case errorfs.OpFileWrite, errorfs.OpFileWriteAt:
		if d.left.Add(-1) >= 0 {
			return nil
		}
	case errorfs.OpCreate, errorfs.OpFilePreallocate, errorfs.OpReuseForWrite, errorfs.OpLink,
		errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo, errorfs.OpFileFlush:
		if d.left.Load() > 0 {
			return nil
		}
	default:
		return nil
	}
	return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
}
