package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/coppice-db/coppice/engine"
)

// ShutdownTimeout bounds how long Run waits for requests in flight when its
// context ends.
const ShutdownTimeout = 30 * time.Second

// Run is `coppice serve`: it opens the data directory (bootstrapping a first
// start and printing the credentials to out), serves on opts.Addr until ctx
// ends, then drains the requests in flight and closes the engine. ready, if
// not nil, receives the listen address once the server accepts connections.
func Run(ctx context.Context, opts Options, out io.Writer, ready func(addr net.Addr)) (err error) {
	if opts.Logger == nil {
		if opts.Logger, err = NewLogger(opts.LogLevel); err != nil {
			return err
		}
	}
	log := opts.Logger
	if opts.DataDir == "" {
		return errors.New("api: no data directory")
	}
	first, err := isFirstStart(opts.DataDir)
	if err != nil {
		return err
	}
	eng, err := engine.Open(opts.DataDir, engine.Options{CacheSize: opts.CacheSize, Meta: MetaKey(opts.Compat)})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := eng.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close engine: %w", cerr)
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
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("data", opts.DataDir),
		slog.String("compat", srv.opts.Compat))
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
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
