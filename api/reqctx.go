package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"syscall"
	"time"
)

// Why a request's context ended, as the error the request is answered
// with. The deadline's error, which names the limit, is the server's
// timeLimit.
var (
	errShuttingDown = &retryLater{"the server is shutting down; retry in a moment"}
	errClientGone   = &statusError{http.StatusServiceUnavailable, "request cancelled: the client closed its connection"}
)

// context returns the request's context, made on first use: it ends at
// the request's deadline (Limits.RequestTimeout after its arrival), when
// its client closes the connection, or when the server shuts down; its
// cause is the error to answer with. Handlers pass it to every engine call
// that can run long. Requests that never ask pay nothing for it.
func (r *request) context() context.Context {
	if r.cctx == nil {
		r.cctx, r.stop = r.s.requestContext(r)
	}
	return r.cctx
}

// requestContext makes a request's context and the function that releases
// it.
func (s *Server) requestContext(r *request) (context.Context, func()) {
	deadline := r.ctx.Time().Add(s.limits.RequestTimeout)
	gone, cancel := context.WithCancelCause(s.base)
	ctx, cancelDeadline := context.WithDeadlineCause(gone, deadline, s.timeLimit)
	stopWatch := watchClient(r.ctx.Conn(), cancel)
	return ctx, func() {
		stopWatch()
		cancelDeadline()
		cancel(nil)
	}
}

// contextError returns what a request whose context ended is answered
// with, when err is that context's error; else err.
func (r *request) contextError(err error) error {
	if r.cctx == nil || r.cctx.Err() == nil {
		return err
	}
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return context.Cause(r.cctx)
}

// Client watching: a request that has run for watchAfter looks at its
// connection every watchEvery; a client that closed it cancels the
// request. Between requests nothing reads the connection, so a peek tells
// a closed one from an open one without taking any bytes of a pipelined
// next request.
const (
	watchAfter = 100 * time.Millisecond
	watchEvery = 100 * time.Millisecond
)

// watchClient watches c for its client closing it, calling cancel with
// errClientGone when it does, until the returned function is called.
// Connections that are not sockets are not watched.
func watchClient(c net.Conn, cancel context.CancelCauseFunc) func() {
	if tc, ok := c.(*trackedConn); ok {
		c = tc.Conn
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return func() {}
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return func() {}
	}
	done := make(chan struct{})
	t := time.AfterFunc(watchAfter, func() {
		tick := time.NewTicker(watchEvery)
		defer tick.Stop()
		for {
			if peerClosed(raw) {
				cancel(errClientGone)
				return
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() {
		t.Stop()
		close(done)
	}
}
