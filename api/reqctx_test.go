package api

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRequestContextCause: a request whose context ended is answered with
// why it did: its client left, its time limit passed, or the server shuts
// down; other errors, and every error while the context runs, stay.
func TestRequestContextCause(t *testing.T) {
	timeLimit := errors.New("time limit")
	other := errors.New("other")
	f := func(name string, end func(rc *requestCtx, cancel context.CancelFunc, shutdown context.CancelCauseFunc), err, want error) {
		t.Helper()
		base, shutdown := context.WithCancelCause(context.Background())
		defer shutdown(nil)
		ctx, cancel := context.WithDeadlineCause(base, time.Now().Add(time.Hour), timeLimit)
		defer cancel()
		rc := &requestCtx{Context: ctx}
		if end != nil {
			end(rc, cancel, shutdown)
		}
		r := &request{cctx: rc}
		if got := r.contextError(err); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	gone := func(rc *requestCtx, cancel context.CancelFunc, _ context.CancelCauseFunc) {
		rc.gone.Store(true)
		cancel()
	}
	shutdown := func(_ *requestCtx, _ context.CancelFunc, shutdown context.CancelCauseFunc) {
		shutdown(errShuttingDown)
	}
	f("running", nil, context.Canceled, context.Canceled)
	f("client gone", gone, context.Canceled, errClientGone)
	f("client gone, other error", gone, other, other)
	f("shutdown", shutdown, context.Canceled, errShuttingDown)

	base := context.Background()
	ctx, cancel := context.WithDeadlineCause(base, time.Now().Add(-time.Second), timeLimit)
	defer cancel()
	r := &request{cctx: &requestCtx{Context: ctx}}
	if got := r.contextError(context.DeadlineExceeded); got != timeLimit {
		t.Errorf("past the deadline: %v, want the time limit", got)
	}
	if d, ok := r.context().Deadline(); !ok || d.After(time.Now()) {
		t.Errorf("deadline %v %v", d, ok)
	}
}
