package engine

import (
	"os"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// DiskFull is a filesystem for tests of storage faults (Options.FS): the
// operating system's, on a disk that fills up at Fill. It models what a
// full ext4 or XFS disk does, not a harsher one:
//   - a write fails with ENOSPC unless it lands in blocks the file holds
//     already: written before the disk filled, preallocated (Pebble
//     preallocates its write-ahead logs ahead of their writes), or
//     recycled with the file (a reused write-ahead log keeps its blocks);
//   - creating, linking, renaming and removing files, syncing and reading
//     go on (they take no data blocks);
//   - the disk's usage says no byte is available.
//
// A disk that failed syncs of blocks already allocated, or the creation of
// empty files, would fail Pebble where it panics instead of returning an
// error (closing a write-ahead log as it rotates), which no real full disk
// makes it do.
type DiskFull struct {
	full atomic.Bool
}

// NewDiskFull returns a filesystem with room until Fill.
func NewDiskFull() *DiskFull { return &DiskFull{} }

// FS is the filesystem, for Options.FS.
func (d *DiskFull) FS() vfs.FS { return fullFS{FS: vfs.Default, d: d} }

// Fill makes the disk full now.
func (d *DiskFull) Fill() { d.full.Store(true) }

// Free gives the disk room again, as an operator deleting files does.
func (d *DiskFull) Free() { d.full.Store(false) }

// Full reports whether the disk is full.
func (d *DiskFull) Full() bool { return d.full.Load() }

// fullFS is DiskFull's filesystem.
type fullFS struct {
	vfs.FS
	d *DiskFull
}

// Create creates a file that holds no blocks yet.
func (fs fullFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	return &fullFile{File: f, d: fs.d, name: name}, nil
}

// ReuseForWrite recycles a file, with its blocks.
func (fs fullFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return holding(f, fs.d, newname)
}

// OpenReadWrite opens a file that holds the blocks of its size.
func (fs fullFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	if err != nil {
		return nil, err
	}
	return holding(f, fs.d, name)
}

// GetDiskUsage reports no byte available once the disk is full.
func (fs fullFS) GetDiskUsage(path string) (vfs.DiskUsage, error) {
	u, err := fs.FS.GetDiskUsage(path)
	if err == nil && fs.d.Full() {
		u.UsedBytes += u.AvailBytes
		u.AvailBytes = 0
	}
	return u, err
}

// Unwrap returns the operating system's filesystem.
func (fs fullFS) Unwrap() vfs.FS { return fs.FS }

// holding wraps f, whose blocks up to its size are allocated.
func holding(f vfs.File, d *DiskFull, name string) (vfs.File, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	ff := &fullFile{File: f, d: d, name: name}
	ff.held.Store(st.Size())
	return ff, nil
}

// fullFile is a file of DiskFull's filesystem: it knows how far its
// blocks go.
type fullFile struct {
	vfs.File
	d    *DiskFull
	name string
	off  atomic.Int64 // where the next Write goes
	held atomic.Int64 // the file's blocks end here
}

// room reports whether the bytes up to end can be written: always while
// the disk has room (the blocks they take are then held), and within the
// blocks held once it is full.
func (f *fullFile) room(end int64) error {
	if !f.d.Full() {
		f.hold(end)
		return nil
	}
	if end <= f.held.Load() {
		return nil
	}
	return &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
}

// hold records that the file's blocks reach end.
func (f *fullFile) hold(end int64) {
	for {
		h := f.held.Load()
		if end <= h || f.held.CompareAndSwap(h, end) {
			return
		}
	}
}

// Write writes at the file's offset, if it has room.
func (f *fullFile) Write(p []byte) (int, error) {
	if err := f.room(f.off.Load() + int64(len(p))); err != nil {
		return 0, err
	}
	n, err := f.File.Write(p)
	f.off.Add(int64(n))
	return n, err
}

// WriteAt writes at off, if the file has room there.
func (f *fullFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.room(off + int64(len(p))); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

// Preallocate allocates the file's blocks up to offset+length, which on a
// full disk it can only do for blocks it holds already.
func (f *fullFile) Preallocate(offset, length int64) error {
	if err := f.room(offset + length); err != nil {
		return err
	}
	return f.File.Preallocate(offset, length)
}
