package consensus

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/lni/dragonboat/v4/logger"
)

// dragonboat logs through one process-wide factory, installed once. Its
// messages go to the Logger of the most recent NewHost that set one, so
// several hosts in one process (tests) share a sink. Its debug and info
// messages, a few per election, snapshot and connection, go out at slog's
// Debug level; warnings and errors at Warn and Error (see Warningf).
var (
	logSink     atomic.Pointer[slog.Logger]
	installOnce sync.Once
)

// useLogger routes dragonboat's log to l (nil keeps the current sink, at
// first slog's default logger).
func useLogger(l *slog.Logger) {
	installOnce.Do(func() {
		logger.SetLoggerFactory(func(pkg string) logger.ILogger { return &dbLogger{pkg: pkg} })
	})
	if l != nil {
		logSink.Store(l)
	}
}

// dbLogger is dragonboat's logger for one of its packages.
type dbLogger struct{ pkg string }

// SetLevel is ignored: the slog handler's level decides.
func (*dbLogger) SetLevel(logger.LogLevel) {}

func (d *dbLogger) log(level slog.Level, format string, args []any) {
	l := logSink.Load()
	if l == nil {
		l = slog.Default()
	}
	ctx := context.Background()
	if !l.Enabled(ctx, level) {
		return
	}
	l.Log(ctx, level, fmt.Sprintf(format, args...), slog.String("raft", d.pkg))
}

// Debugf logs at Debug.
func (d *dbLogger) Debugf(format string, args ...any) { d.log(slog.LevelDebug, format, args) }

// Infof logs at Debug: dragonboat's informational messages are routine.
func (d *dbLogger) Infof(format string, args ...any) { d.log(slog.LevelDebug, format, args) }

// Warningf logs at Warn, except for the Raft core's and the configuration
// checker's warnings: elections, votes, dropped proposals while there is no
// leader, and the fixed choices of this package are routine, at Info.
func (d *dbLogger) Warningf(format string, args ...any) {
	level := slog.LevelWarn
	if d.pkg == "raft" || d.pkg == "config" {
		level = slog.LevelInfo
	}
	d.log(level, format, args)
}

// Errorf logs at Error.
func (d *dbLogger) Errorf(format string, args ...any) { d.log(slog.LevelError, format, args) }

// Panicf logs at Error and panics, as dragonboat expects of it.
func (d *dbLogger) Panicf(format string, args ...any) {
	d.log(slog.LevelError, format, args)
	panic(fmt.Sprintf(format, args...))
}
