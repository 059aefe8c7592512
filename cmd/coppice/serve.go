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
	"runtime/debug"
	"sync"
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
	// MemoryLimit is the memory the server may take (engine.Options);
	// the Go runtime's memory limit follows it.
	MemoryLimit int64
	// CacheSize is the storage block cache in bytes, taken from
	// MemoryLimit; 0 means engine.PlanMemory's share.
	CacheSize int64
	// CompactIdle is engine.Options.CompactIdle: the pause in a table's
	// writes after which it is compacted; negative: never.
	CompactIdle time.Duration
	// MinFreeSpace is engine.Options.MinFreeSpace: the room kept free on
	// the data directory's disk; negative: no check.
	MinFreeSpace int64
	// BootstrapKey, when set, is the API key a first start creates instead
	// of a generated one.
	BootstrapKey string
	// MetricsAddr, when set, is the address Prometheus metrics are served
	// on, at /metrics, apart from the API's listener.
	MetricsAddr string
	// API configures the HTTP server.
	API api.Options
	// Cluster, when set, makes the server a node of a cluster.
	Cluster *engine.ClusterOptions
}

// serve is `coppice serve`: it opens the data directory (bootstrapping a
// first start and printing the credentials to out), serves on cfg.Addr until
// ctx ends, then shuts down within the server's shutdown timeout: it cancels
// the requests in flight, waits for them, and closes the engine. ready, if
// not nil, receives the listen address once the server accepts connections.
func serve(ctx context.Context, cfg serveConfig, out io.Writer, ready func(addr net.Addr)) (err error) {
	log, err := serverLogger(&cfg.API)
	if err != nil {
		return err
	}
	if err := api.CheckBootstrapKey(cfg.BootstrapKey); err != nil {
		// A key a first start would refuse is refused before the data
		// directory is made. On one that holds data, the catalog says
		// below whether the key is needed at all.
		fresh, derr := isNewDataDir(cfg.DataDir)
		if derr != nil {
			return derr
		}
		if fresh {
			return err
		}
	}
	if err := prepareDataDir(cfg.DataDir, log); err != nil {
		return err
	}
	api.RaiseOpenFileLimit(log)
	if cfg.MetricsAddr != "" && cfg.API.Metrics == nil {
		cfg.API.Metrics = api.NewMetrics()
	}
	eng, err := openEngine(cfg, log)
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
	// A first start is one whose catalog has no user yet: a data directory
	// left by a crash between opening and bootstrapping holds storage
	// files but still no account.
	switch {
	case eng.Accounts().HasUsers():
		// Bootstrapped before.
	case cfg.Cluster != nil && cfg.Cluster.NodeID == 1 && isFounder(cfg.Cluster):
		// Only the first node of a new cluster bootstraps, once a
		// majority runs; the others receive the accounts through it.
		if err := bootstrapCluster(ctx, eng, cfg.BootstrapKey, out, func(msg string, args ...any) { log.Info(msg, args...) }); err != nil {
			return err
		}
	case cfg.Cluster == nil:
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
	if cfg.MetricsAddr != "" {
		stop, err := serveMetrics(cfg.MetricsAddr, cfg.API.Metrics, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stop()
	}
	bi := api.ReadBuildInfo()
	log.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("data", cfg.DataDir),
		slog.String("compat", cfg.API.Compat), slog.String("version", bi.Version), slog.String("vcs_revision", bi.Revision))
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
	engineOpen = false
	shutdown(srv, ln, served, eng, log)
	return nil
}

// serverLogger returns the logger of opts, making the default one on
// stderr at its level and format when it has none, and leaves it in opts.
func serverLogger(opts *api.Options) (*slog.Logger, error) {
	if opts.Logger == nil {
		log, err := api.NewLoggerTo(os.Stderr, opts.LogLevel, opts.LogFormat)
		if err != nil {
			return nil, err
		}
		opts.Logger = log
	}
	return opts.Logger, nil
}

// openEngine opens the data directory, with records' metadata under the
// key of the server's compatibility mode; the storage engine's log and the
// failures of background work go to log, and its events to the metrics,
// if any.
func openEngine(cfg serveConfig, log *slog.Logger) (*engine.Engine, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("no data directory")
	}
	plan := engine.PlanMemory(cfg.MemoryLimit, cfg.CacheSize)
	if plan.GoLimit > 0 {
		debug.SetMemoryLimit(plan.GoLimit)
	}
	gcPacing.Do(func() {
		headroom := int64(gcHeadroom)
		if plan.Limit > 0 {
			headroom = min(headroom, plan.Reserve)
		}
		paceGC(headroom)
	})
	log.Info("memory", slog.Int64("limit_bytes", plan.Limit), slog.Int64("cache_bytes", plan.CacheSize),
		slog.Int64("memtables_bytes", plan.Memtables), slog.Int64("derived_bytes", plan.Derived), slog.Int64("go_limit_bytes", plan.GoLimit))
	opts := engine.Options{MemoryLimit: cfg.MemoryLimit, CacheSize: cfg.CacheSize, Logger: log,
		Meta: api.MetaKey(cfg.API.Compat), Cluster: cfg.Cluster, CompactIdle: cfg.CompactIdle,
		MinFreeSpace: cfg.MinFreeSpace}
	if m := cfg.API.Metrics; m != nil {
		opts.OnEvent = m.EngineEvent
	}
	if testEngineOptions != nil {
		testEngineOptions(&opts, log)
	}
	return engine.Open(cfg.DataDir, opts)
}

// gcPacing starts the collector's pacer (paceGC) with the memory plan of
// the first engine the process opens.
var gcPacing sync.Once

// testEngineOptions, set only in builds for tests (faultfs.go), changes
// the engine's options.
var testEngineOptions func(o *engine.Options, log *slog.Logger)

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

// serveMetrics serves m at /metrics on addr until the returned stop is
// called.
func serveMetrics(addr string, m *api.Metrics, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	log.Info("serving metrics", slog.String("addr", ln.Addr().String()+"/metrics"))
	return api.ServeMetrics(m, ln, log), nil
}

// shutdown stops srv and closes eng within the server's shutdown timeout.
// When requests still run at the end of it, or the engine does not close
// in time, it logs so and gives up on closing: every acknowledged write is
// already synced, so exiting then is as safe as a crash, which the data
// directory recovers from on the next start.
func shutdown(srv *api.Server, ln net.Listener, served <-chan error, eng *engine.Engine, log *slog.Logger) {
	timeout := srv.ShutdownTimeout()
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
			slog.Int("requests_running", n))
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

// isNewDataDir reports whether dir holds nothing yet: missing or empty.
func isNewDataDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read data directory: %w", err)
	}
	return len(entries) == 0, nil
}
