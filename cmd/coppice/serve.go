package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/coppice-db/coppice/api"
	"github.com/coppice-db/coppice/engine"
)

// serveConfig is everything `coppice serve` is told: where the data lives
// and how the engine opens it, how a first start is bootstrapped, where to
// listen, and the server's own options.
type serveConfig struct {
	// Addr is the listen address.
	Addr string
	// DataDir is the data directory, created if missing.
	DataDir string
	// CacheSize is the storage block cache in bytes; 0 means
	// engine.DefaultCacheSize.
	CacheSize int64
	// BootstrapKey, when set, is the API key a first start creates instead
	// of a generated one.
	BootstrapKey string
	// API configures the HTTP server.
	API api.Options
}

// shutdownTimeout bounds how long serve waits for requests in flight when
// its context ends.
const shutdownTimeout = 30 * time.Second

// serve is `coppice serve`: it opens the data directory (bootstrapping a
// first start and printing the credentials to out), serves on cfg.Addr until
// ctx ends, then drains the requests in flight and closes the engine. ready,
// if not nil, receives the listen address once the server accepts
// connections.
func serve(ctx context.Context, cfg serveConfig, out io.Writer, ready func(addr net.Addr)) (err error) {
	log, err := serverLogger(&cfg.API)
	if err != nil {
		return err
	}
	first, err := isFirstStart(cfg.DataDir)
	if err != nil {
		return err
	}
	eng, err := openEngine(cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := eng.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close engine: %w", cerr)
		}
	}()
	if first {
		if err := bootstrap(eng, cfg.BootstrapKey, out); err != nil {
			return err
		}
	}
	srv, err := api.New(eng, cfg.API)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	log.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("data", cfg.DataDir),
		slog.String("compat", cfg.API.Compat))
	return serveUntil(ctx, srv, ln, log, ready)
}

// serverLogger returns the logger of opts, making the default one at its
// level when it has none, and leaves it in opts.
func serverLogger(opts *api.Options) (*slog.Logger, error) {
	if opts.Logger == nil {
		log, err := api.NewLogger(opts.LogLevel)
		if err != nil {
			return nil, err
		}
		opts.Logger = log
	}
	return opts.Logger, nil
}

// openEngine opens the data directory; the storage engine's log and the
// failures of background work go to log.
func openEngine(cfg serveConfig, log *slog.Logger) (*engine.Engine, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("no data directory")
	}
	return engine.Open(cfg.DataDir, engine.Options{CacheSize: cfg.CacheSize, Logger: log})
}

// bootstrap creates the first accounts of a new data directory and prints
// their credentials to out.
func bootstrap(eng *engine.Engine, key string, out io.Writer) error {
	info, err := api.Bootstrap(eng, key)
	if err != nil {
		return err
	}
	info.Print(out)
	return nil
}

// serveUntil serves on ln until the server fails or ctx ends, then drains
// the requests in flight for up to shutdownTimeout.
func serveUntil(ctx context.Context, srv *api.Server, ln net.Listener, log *slog.Logger, ready func(addr net.Addr)) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("shutdown", slog.Any("err", err))
	}
	// Shutdown closes only the listeners Serve registered; a Serve that had
	// not started yet ends on the closed listener instead.
	ln.Close()
	if err := <-served; err != nil && !errors.Is(err, net.ErrClosed) {
		log.Warn("serve", slog.Any("err", err))
	}
	return nil
}

// isFirstStart reports whether dir holds no data yet: missing or empty.
func isFirstStart(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read data directory: %w", err)
	}
	return len(entries) == 0, nil
}
