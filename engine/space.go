package engine

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// DefaultMinFreeSpace is the room Options.MinFreeSpace 0 keeps free on the
// data directory's disk: more than the write-ahead log and the memtables
// take before a flush, so that the writes in flight when the reserve is
// reached, and the flushes and compactions after them, still find room.
const DefaultMinFreeSpace = 256 << 20

// spaceGuard refuses writes while the data directory's disk has less room
// than its reserve. On a full disk the storage engine cannot go on: a
// write-ahead log it cannot close, or a memtable it cannot flush, leaves
// it failed until a restart, and the operating system gives no warning
// before the space runs out. The guard asks the filesystem before each
// write (a statfs, a microsecond), so writes stop while the storage
// engine still has room for what is in flight, and start again once an
// operator frees space, without a restart.
type spaceGuard struct {
	fs      vfs.FS
	dir     string
	reserve int64 // bytes kept free; ≤ 0: no check
}

// check returns why writes are refused now, or nil. A filesystem that
// cannot tell its usage (one in memory) is not checked.
func (g spaceGuard) check() error {
	if g.reserve <= 0 || g.fs == nil {
		return nil
	}
	u, err := g.fs.GetDiskUsage(g.dir)
	if err != nil || u.AvailBytes >= uint64(g.reserve) {
		return nil
	}
	return model.Errorf(model.CodeUnavailable,
		"no space left on device: %s available to the data directory, less than the %s kept free; writes resume once space is freed",
		mib(int64(u.AvailBytes)), mib(g.reserve))
}

// mib writes a byte count in MiB, for messages.
func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
