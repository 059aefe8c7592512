package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"

	"github.com/coppice-db/coppice/engine"
)

// Run is `coppice serve`: it opens the data directory (bootstrapping a first
// start and printing the credentials to out), serves on opts.Addr until ctx
// ends, then shuts down within Limits.ShutdownTimeout: it cancels the
// requests in flight, waits for them, and closes the engine. ready, if
// not nil, receives the listen address once the server accepts connections.
func Run(ctx context.Context, opts Options, out io.Writer, ready func(addr net.Addr)) (err error) {
	if opts.Logger == nil {
		if opts.Logger, err = NewLoggerTo(os.Stderr, opts.LogLevel, opts.LogFormat); err != nil {
			return err
		}
	}
	if opts.MetricsAddr != "" && opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	log := opts.Logger
	if opts.DataDir == "" {
		return errors.New("api: no data directory")
	}
	first, err := isFirstStart(opts.DataDir)
	if err != nil {
		return err
	}
	if first {
		// Before anything is created: a refused key leaves a first start.
		if err := CheckBootstrapKey(opts.BootstrapKey); err != nil {
			return err
		}
	}
	if err := prepareDataDir(opts.DataDir, log); err != nil {
		return err
	}
	RaiseOpenFileLimit(log)
	eng, err := engine.Open(opts.DataDir, engine.Options{CacheSize: opts.CacheSize})
	if err != nil {
		return err
	}
	engineOpen := true
	defer func() {
		if engineOpen {
			if cerr := eng.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("close engine: %w", cerr)
			}
		}
	}()
	if first {
		info, err := Bootstrap(eng, opts.BootstrapKey)
		if err != nil {
			return err
		}
		info.Print(out)
	}
	srv, err := New(eng, opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return err
	}
	if opts.MetricsAddr != "" {
		mln, err := net.Listen("tcp", opts.MetricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("metrics listener: %w", err)
		}
		defer serveMetrics(opts.Metrics, mln, log)()
		log.Info("serving metrics", slog.String("addr", mln.Addr().String()+"/metrics"))
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	bi := ReadBuildInfo()
	log.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("data", opts.DataDir),
		slog.String("compat", srv.opts.Compat), slog.String("version", bi.Version), slog.String("revision", bi.Revision))
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	engineOpen = false
	shutdown(srv, ln, served, eng, log)
	return nil
}

// shutdown stops srv and closes eng within the server's shutdown timeout.
// When requests still run at the end of it, or the engine does not close
// in time, it logs so and gives up on closing: every acknowledged write is
// already synced, so exiting then is as safe as a crash, which the data
// directory recovers from on the next start.
func shutdown(srv *Server, ln net.Listener, served <-chan error, eng *engine.Engine, log *slog.Logger) {
	timeout := srv.limits.ShutdownTimeout
	log.Info("shutting down", slog.Duration("timeout", timeout))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("shutdown", slog.Any("err", err))
	}
	// Shutdown closes only the listeners Serve registered; a Serve that had
	// not started yet ends on the closed listener instead.
	ln.Close()
	select {
	case err := <-served:
		if err != nil && !errors.Is(err, net.ErrClosed) {
			log.Warn("serve", slog.Any("err", err))
		}
	case <-ctx.Done():
	}
	if n := srv.InFlight(); n > 0 {
		log.Error("requests still running at the end of the shutdown timeout: exiting without closing the data directory",
			slog.Int("requests", n))
		return
	}
	closed := make(chan error, 1)
	go func() { closed <- eng.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			log.Error("close engine", slog.Any("err", err))
		}
	case <-ctx.Done():
		log.Error("the data directory did not close within the shutdown timeout: exiting without it",
			slog.Duration("timeout", timeout))
	}
}
