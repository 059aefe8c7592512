package model

import (
	"fmt"
	"time"
)

// EventKind names what an Event reports.
type EventKind uint8

// The kinds of Event.
const (
	// EventFlush is a memtable written out to a table file.
	EventFlush EventKind = iota + 1
	// EventCompaction is table files merged into new ones.
	EventCompaction
	// EventWriteStall is writes held back while storage caught up;
	// Duration is how long.
	EventWriteStall
	// EventStoreBuild is an in-memory structure of a table (a column,
	// search or vector store) built from storage.
	EventStoreBuild
	// EventEviction is in-memory data dropped to stay within the memory
	// budget or a cache's bound; Count is how many structures went (a
	// cache emptied counts as one), Bytes how much memory.
	EventEviction
	// EventFlatten is a branch's frozen ancestors copied into one layer.
	EventFlatten
	// EventIdleCompaction is the key ranges of a table compacted once its
	// bulk writes went idle; Bytes is what they took on disk before.
	EventIdleCompaction
)

// String names the kind as metrics label it.
func (k EventKind) String() string {
	switch k {
	case EventFlush:
		return "flush"
	case EventCompaction:
		return "compaction"
	case EventWriteStall:
		return "write_stall"
	case EventStoreBuild:
		return "store_build"
	case EventEviction:
		return "eviction"
	case EventFlatten:
		return "flatten"
	case EventIdleCompaction:
		return "idle_compaction"
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event reports one piece of work the engine did on its own, for metrics:
// storage flushes and compactions, write stalls, builds of in-memory
// structures, evictions and flattens. Failures are logged as well.
type Event struct {
	Kind EventKind
	// Duration is how long the work took.
	Duration time.Duration
	// Bytes is what a flush or compaction wrote, or what an eviction
	// freed.
	Bytes uint64
	// Count is the structures an eviction dropped, a cache emptied
	// counting as one.
	Count int
	// Err is why the work failed; nil when it succeeded.
	Err error
}
