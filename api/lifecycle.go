package api

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"
)

// initLimits sets up the limits of Options.Limits and their state.
func (s *Server) initLimits() {
	l := s.opts.Limits.withDefaults(s.opts.MaxBody)
	s.limits = l
	q := &queue{maxQueue: int64(l.MaxQueue), maxWait: l.MaxQueueWait}
	s.slots = newSlots(l.MaxInflight, q)
	s.heavy = newSlots(l.MaxInflightHeavy, q)
	s.syncWaiting = &counter{limit: int64(l.MaxSyncWaiting)}
	s.bodies = &bodyBudget{q: q, limit: l.MaxBodyInflight}
	s.bulk = newBulkGate(l.MaxBulkDuringReads)
	s.authFails = newAuthLimiter(l.AuthFailLimit, l.AuthFailWindow)
	s.base, s.cancelBase = context.WithCancelCause(context.Background())
	s.timeLimit = &statusError{http.StatusServiceUnavailable, "request exceeded its time limit of " + l.RequestTimeout.String()}
}

// transportLimits sets the connection timeouts of the HTTP server. A new
// connection must send its first request's headers within
// ReadHeaderTimeout, a kept-alive one its next request within IdleTimeout
// and then its headers within ReadHeaderTimeout; a body and a response
// each have RequestTimeout. Bodies are streamed to the handler, which
// reads them within the body budget (admission.go).
func (s *Server) transportLimits(h *fasthttp.Server) {
	l := s.limits
	h.ReadTimeout = l.ReadHeaderTimeout
	h.IdleTimeout = l.IdleTimeout
	h.WriteTimeout = l.RequestTimeout
	h.Concurrency = l.MaxConns
	h.StreamRequestBody = true
	// A request without a body reads nothing more: its deadline stays the
	// headers' until the response, and the connection's timer is not
	// moved once more per request.
	h.HeaderReceived = func(rh *fasthttp.RequestHeader) fasthttp.RequestConfig {
		if rh.ContentLength() == 0 {
			return fasthttp.RequestConfig{}
		}
		return fasthttp.RequestConfig{ReadTimeout: l.RequestTimeout}
	}
	h.ConnState = func(c net.Conn, st fasthttp.ConnState) {
		if tc, ok := c.(*trackedConn); ok && st == fasthttp.StateIdle {
			tc.busy.Store(false)
		}
	}
}

// starting marks the connection of a request whose handler starts as
// busy, so that Shutdown leaves it open until the response is out, and
// reports whether the server still takes requests. Shutdown sets stopping
// before it looks at busy flags, and a handler sets busy before it looks
// at stopping: either the handler sees stopping, or Shutdown sees busy.
func (s *Server) starting(ctx *fasthttp.RequestCtx) bool {
	if tc, ok := ctx.Conn().(*trackedConn); ok {
		tc.busy.Store(true)
	}
	return !s.stopping.Load()
}

// Shutdown stops accepting connections, cancels the requests in flight and
// those waiting for a slot (they answer 503), closes every connection that
// serves no request, and waits for the requests in flight to end, or for
// ctx to end: then it closes the remaining connections and returns ctx's
// error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.health.draining()
	s.stopping.Store(true)
	s.cancelBase(errShuttingDown)
	defer s.bulk.poll.close()
	done := make(chan error, 1)
	go func() { done <- s.http.ShutdownWithContext(ctx) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s.eachListener((*connLimiter).closeIdle)
		select {
		case err := <-done:
			if err != nil {
				s.eachListener((*connLimiter).closeAll)
				return err
			}
			return s.waitStreams(ctx, tick.C)
		case <-tick.C:
		}
	}
}

// waitStreams waits for the response streams (stream.go), which count as
// requests in flight and may end just after their connection, or for ctx
// to end.
func (s *Server) waitStreams(ctx context.Context, tick <-chan time.Time) error {
	for s.active.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
		}
	}
	return nil
}

// InFlight returns the number of requests being handled.
func (s *Server) InFlight() int { return int(s.active.Load()) }

// ShutdownTimeout is how long the server's owner should give Shutdown and
// closing the engine: Limits.ShutdownTimeout, or its default.
func (s *Server) ShutdownTimeout() time.Duration { return s.limits.ShutdownTimeout }

// eachListener calls fn on the listeners Serve accepts on.
func (s *Server) eachListener(fn func(*connLimiter)) {
	s.connsMu.Lock()
	list := append([]*connLimiter(nil), s.conns...)
	s.connsMu.Unlock()
	for _, l := range list {
		fn(l)
	}
}
