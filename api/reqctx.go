package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
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
// its client closes the connection, or when the server shuts down;
// r.cause says what to answer then. Handlers pass it to every engine call
// that can run long. Requests that never ask pay nothing for it.
func (r *request) context() context.Context {
	if r.cctx == nil {
		r.cctx, r.stop = r.s.requestContext(r)
	}
	return r.cctx
}

// requestCtx is a request's context: the deadline's, which the server's
// base context ends too, and whether the client left. One context and one
// timer a request: the client's leaving cancels the deadline's context
// rather than a context of its own, and gone keeps its cause.
type requestCtx struct {
	context.Context
	gone atomic.Bool
}

// requestContext makes a request's context and the function that releases
// it.
func (s *Server) requestContext(r *request) (*requestCtx, func()) {
	deadline := r.ctx.Time().Add(s.limits.RequestTimeout)
	ctx, cancel := context.WithDeadlineCause(s.base, deadline, s.timeLimit)
	rc := &requestCtx{Context: ctx}
	stopWatch := watchClient(rc, r.ctx.Conn(), cancel)
	return rc, func() {
		stopWatch()
		cancel()
	}
}

// cause returns why the request's context ended (nil while it has not):
// errClientGone, the server's time limit, or the shutdown's cause.
func (r *request) cause() error {
	rc := r.cctx
	if rc == nil || rc.Err() == nil {
		return nil
	}
	if rc.gone.Load() {
		return errClientGone
	}
	return context.Cause(rc)
}

// contextError returns what a request whose context ended is answered
// with, when err is that context's error; else err.
func (r *request) contextError(err error) error {
	cause := r.cause()
	if cause == nil {
		return err
	}
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return cause
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

// watchClient watches c for its client closing it, marking rc gone and
// calling cancel when it does, until the returned function is called or rc
// ends. Connections that are not sockets are not watched. Nothing is
// allocated for the watch until the request has run for watchAfter.
func watchClient(rc *requestCtx, c net.Conn, cancel context.CancelFunc) func() {
	if tc, ok := c.(*trackedConn); ok {
		c = tc.Conn
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return func() {}
	}
	t := time.AfterFunc(watchAfter, func() {
		raw, err := sc.SyscallConn()
		if err != nil {
			return
		}
		tick := time.NewTicker(watchEvery)
		defer tick.Stop()
		for {
			if peerClosed(raw) {
				rc.gone.Store(true)
				cancel()
				return
			}
			select {
			case <-rc.Done():
				return
			case <-tick.C:
			}
		}
	})
	return func() { t.Stop() }
}
