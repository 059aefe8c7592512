package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// observer hands the engine's background events and failures to the
// embedder: Options.Logger and Options.OnEvent.
type observer struct {
	log     *slog.Logger
	onEvent func(Event)
}

// event reports ev, logging it when it is a failure.
func (o *observer) event(ev Event) {
	if ev.Err != nil {
		o.log.Error("background work failed", slog.String("work", ev.Kind.String()), slog.Any("err", ev.Err))
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

// pebbleListener turns Pebble's events into Events and its failures into
// log lines. Pebble calls it from its own goroutines.
func (o *observer) pebbleListener() *pebble.EventListener {
	var stalled atomic.Int64 // when the current stall began, in Unix nanoseconds
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			o.log.Error("storage background error", slog.Any("err", err))
		},
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			o.log.Error("storage data corruption", slog.String("path", info.Path), slog.Any("err", info.Details))
		},
		DiskSlow: func(info pebble.DiskSlowInfo) {
			o.log.Warn("slow disk", slog.String("path", info.Path), slog.Duration("duration", info.Duration))
		},
		FlushEnd: func(info pebble.FlushInfo) {
			if info.Err != nil && !emptyFlush(info.Err) {
				o.log.Error("storage flush failed", slog.Any("err", info.Err))
			}
			var n uint64
			for _, t := range info.Output {
				n += t.Size
			}
			o.event(Event{Kind: EventFlush, Duration: info.TotalDuration, Bytes: n})
		},
		CompactionEnd: func(info pebble.CompactionInfo) {
			if info.Err != nil && !errors.Is(info.Err, pebble.ErrCancelledCompaction) {
				o.log.Error("storage compaction failed", slog.Any("err", info.Err))
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

// pebbleLogger sends Pebble's log to the engine's logger; a fatal message
// is logged, then panics, as Pebble expects.
type pebbleLogger struct{ log *slog.Logger }

// Infof logs an informational message of Pebble's at debug level: they
// tell of routine work (WALs found, files opened).
func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...), slog.String("component", "storage"))
}

// Errorf logs an error of Pebble's.
func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...), slog.String("component", "storage"))
}

// Fatalf logs a fatal error of Pebble's and panics: Pebble cannot go on.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error(msg, slog.String("component", "storage"))
	panic(msg)
}
