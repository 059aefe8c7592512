package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// observer hands the engine's background events and failures to the
// embedder: Options.Logger and Options.OnEvent.
type observer struct {
	log     *slog.Logger
	onEvent func(Event)
	// memory reads the memory budget's figures, for the debug log of
	// builds and evictions; set once the budget exists.
	memory atomic.Pointer[func() MemoryStats]
	// fail degrades the engine for a storage failure of its background
	// work (apply.Applier.Fail); set once the write path exists.
	fail atomic.Pointer[func(error) error]
	// failed is set once the storage failed; lastRepeat is when a repeated
	// background failure was last logged since, in Unix nanoseconds.
	failed     atomic.Bool
	lastRepeat atomic.Int64
}

// storageFailed degrades the engine: a flush that cannot write stops
// writes as surely as a failed commit.
func (o *observer) storageFailed(err error) {
	o.failed.Store(true)
	if fail := o.fail.Load(); fail != nil {
		(*fail)(err)
	}
}

// event reports ev, logging it when it is a failure, and logging the
// memory budget's builds and evictions at debug level. Work cancelled (by
// Close, or because what it built went) did not fail: it is logged at
// debug level too.
func (o *observer) event(ev Event) {
	if errors.Is(ev.Err, context.Canceled) {
		o.log.Debug("background work cancelled", slog.String("work", ev.Kind.String()), slog.Any("err", ev.Err))
	} else if ev.Err != nil {
		o.log.Error("background work failed", slog.String("work", ev.Kind.String()), slog.Any("err", ev.Err))
	} else if ev.Kind == EventStoreBuild || ev.Kind == EventEviction {
		if mem := o.memory.Load(); mem != nil && o.log.Enabled(context.Background(), slog.LevelDebug) {
			m := (*mem)()
			o.log.Debug("memory", slog.String("work", ev.Kind.String()), slog.Duration("duration", ev.Duration),
				slog.Int("count", ev.Count), slog.Uint64("bytes", ev.Bytes),
				slog.Int64("used", m.Used), slog.Int64("limit", m.Limit), slog.Int("structures", m.Structures))
		}
	}
	if o.onEvent != nil {
		o.onEvent(ev)
	}
}

// timed runs fn, one piece of background work of kind k, and reports it.
func (o *observer) timed(k EventKind, fn func() error) {
	start := time.Now()
	err := fn()
	o.event(Event{Kind: k, Duration: time.Since(start), Err: err})
}

// repeatEvery is how often a storage engine whose storage failed logs the
// failures of the flushes and compactions it retries.
const repeatEvery = time.Minute

// logFailure reports whether a failure of background work is logged: every
// one while the storage is healthy, then one a minute, as Pebble retries
// its flushes until the restart.
func (o *observer) logFailure() bool {
	if !o.failed.Load() {
		return true
	}
	now, last := time.Now().UnixNano(), o.lastRepeat.Load()
	return now-last >= int64(repeatEvery) && o.lastRepeat.CompareAndSwap(last, now)
}

// pebbleListener turns Pebble's events into Events and its failures into
// log lines. Pebble calls it from its own goroutines.
func (o *observer) pebbleListener() *pebble.EventListener {
	var stalled atomic.Int64 // when the current stall began, in Unix nanoseconds
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			if !o.logFailure() {
				return
			}
			o.log.Error("storage background error", slog.Any("err", err))
			if !errors.Is(err, pebble.ErrCancelledCompaction) {
				o.storageFailed(err)
			}
		},
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			o.log.Error("storage data corruption", slog.String("path", info.Path), slog.Any("err", info.Details))
			o.storageFailed(info.Details)
		},
		DiskSlow: func(info pebble.DiskSlowInfo) {
			o.log.Warn("slow disk", slog.String("path", info.Path), slog.Duration("duration", info.Duration))
		},
		FlushEnd: func(info pebble.FlushInfo) {
			if info.Err != nil && !emptyFlush(info.Err) {
				if o.logFailure() {
					o.log.Error("storage flush failed", slog.Any("err", info.Err))
				}
				o.storageFailed(info.Err)
			}
			var n uint64
			for _, t := range info.Output {
				n += t.Size
			}
			o.event(Event{Kind: EventFlush, Duration: info.TotalDuration, Bytes: n})
		},
		CompactionEnd: func(info pebble.CompactionInfo) {
			if info.Err != nil && !errors.Is(info.Err, pebble.ErrCancelledCompaction) {
				if o.logFailure() {
					o.log.Error("storage compaction failed", slog.Any("err", info.Err))
				}
			}
			var n uint64
			for _, t := range info.Output.Tables {
				n += t.Size
			}
			o.event(Event{Kind: EventCompaction, Duration: info.TotalDuration, Bytes: n})
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			stalled.Store(time.Now().UnixNano())
			o.log.Warn("storage write stall", slog.String("reason", info.Reason))
		},
		WriteStallEnd: func() {
			o.event(Event{Kind: EventWriteStall, Duration: time.Duration(time.Now().UnixNano() - stalled.Load())})
		},
	}
}

// pebbleLogger sends Pebble's log to the engine's logger.
type pebbleLogger struct{ o *observer }

// Infof logs an informational message of Pebble's at debug level: they
// tell of routine work (WALs found, files opened).
func (l pebbleLogger) Infof(format string, args ...any) {
	l.o.log.Debug(fmt.Sprintf(format, args...), slog.String("component", "storage"))
}

// Errorf logs an error of Pebble's.
func (l pebbleLogger) Errorf(format string, args ...any) {
	l.o.log.Error(fmt.Sprintf(format, args...), slog.String("component", "storage"))
}

// Fatalf is a failure Pebble cannot go on from. It is logged and degrades
// the engine (every write refused until a restart). Then, on the write
// path (the applier's storage call is on the stack), it panics, which
// fails the write there: the commit cannot be trusted. Elsewhere, when it
// reports an I/O failure (a full disk under a flush or compaction writing
// its manifest), it returns, and Pebble fails the background work that
// called it: the process stays up, reads going on from what is durable,
// as the engine promises of a full disk. Any other fatal message (a broken
// invariant) panics.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if l.o.logFailure() {
		l.o.log.Error(msg, slog.String("component", "storage"))
	}
	l.o.storageFailed(errors.New(msg))
	if onWritePath() || !ioFailure(args) {
		panic(msg)
	}
}

// onWritePath reports whether the caller runs under the applier's storage
// call, which recovers a panic into a failed write.
func onWritePath() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "internal/apply.(*Applier).storage") {
			return true
		}
		if !more {
			return false
		}
	}
}

// ioFailure reports whether one of args is an error of the operating
// system's file operations (no space left, an I/O error).
func ioFailure(args []any) bool {
	for _, a := range args {
		if err, ok := a.(error); ok {
			var pe *fs.PathError
			var errno syscall.Errno
			if errors.As(err, &pe) || errors.As(err, &errno) {
				return true
			}
		}
	}
	return false
}
