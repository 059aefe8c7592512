package api

import (
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// authLimiter slows down a client that tries key after key: once a client
// address has failed to authenticate Limits.AuthFailLimit times within a
// window that starts at its first failure, its requests get 429 until the
// window ends, without their keys being looked at. It remembers at most
// maxAuthClients addresses.
type authLimiter struct {
	limit  int // 0: no limit
	window time.Duration

	// size is len(clients): while no address failed, requests pass
	// without taking mu.
	size    atomic.Int64
	mu      sync.Mutex
	clients map[netip.Addr]*authFailures
	swept   time.Time // when windows that ended were last dropped
}

// authFailures are one address's failures in its current window.
type authFailures struct {
	start time.Time
	n     int
}

// maxAuthClients bounds the addresses an authLimiter remembers: about 48
// bytes each.
const maxAuthClients = 1 << 14

// newAuthLimiter returns a limiter of limit failures per window; limit 0
// turns it off.
func newAuthLimiter(limit int, window time.Duration) *authLimiter {
	return &authLimiter{limit: limit, window: window, clients: map[netip.Addr]*authFailures{}}
}

// blocked returns how long addr must wait before its requests are looked
// at again, or 0.
func (a *authLimiter) blocked(addr netip.Addr, now time.Time) time.Duration {
	if a.limit == 0 || !addr.IsValid() || a.size.Load() == 0 {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweep(now)
	f := a.clients[addr]
	if f == nil || f.n < a.limit {
		return 0
	}
	if left := f.start.Add(a.window).Sub(now); left > 0 {
		return left
	}
	a.remove(addr)
	return 0
}

// remove forgets addr. Called with mu held.
func (a *authLimiter) remove(addr netip.Addr) {
	delete(a.clients, addr)
	a.size.Store(int64(len(a.clients)))
}

// fail counts a failed authentication of addr.
func (a *authLimiter) fail(addr netip.Addr, now time.Time) {
	if a.limit == 0 || !addr.IsValid() {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweep(now)
	f := a.clients[addr]
	if f != nil && now.Sub(f.start) >= a.window {
		f = nil
	}
	if f == nil {
		if len(a.clients) >= maxAuthClients {
			a.evict(now)
		}
		f = &authFailures{start: now}
		a.clients[addr] = f
		a.size.Store(int64(len(a.clients)))
	}
	f.n++
}

// sweep drops the windows that ended, once per window, so that the table
// empties when failures stop. Called with mu held.
func (a *authLimiter) sweep(now time.Time) {
	if now.Sub(a.swept) < a.window {
		return
	}
	a.swept = now
	for addr, f := range a.clients {
		if now.Sub(f.start) >= a.window {
			a.remove(addr)
		}
	}
}

// evict makes room in a full table: it drops the windows that ended, and
// when none did, an arbitrary tenth of the table, so that memory stays
// bounded however many addresses fail. Called with mu held.
func (a *authLimiter) evict(now time.Time) {
	a.swept = time.Time{}
	a.sweep(now)
	drop := len(a.clients) - maxAuthClients*9/10
	for addr := range a.clients {
		if drop <= 0 {
			break
		}
		a.remove(addr)
		drop--
	}
}

// authenticateLimited is authenticate within the limit of failed
// authentications of the caller's address: a blocked address gets
// *tooManyFailures without its key being looked at, and a bad key counts
// as a failure.
func (r *request) authenticateLimited() error {
	a := r.s.authFails
	if a.anyFailed() {
		if wait := a.blocked(clientAddr(r.ctx.RemoteAddr()), time.Now()); wait > 0 {
			return &tooManyFailures{wait}
		}
	}
	err := r.authenticate()
	if err == errInvalidKey {
		a.fail(clientAddr(r.ctx.RemoteAddr()), time.Now())
	}
	return err
}

// anyFailed reports whether some address failed lately: while none did,
// blocked has nothing to say, and a request need not ask it (nor read
// its address and the clock for it).
func (a *authLimiter) anyFailed() bool { return a.limit != 0 && a.size.Load() != 0 }

// tooManyFailures is the answer to a request from an address the limiter
// blocks: 429 with the seconds to wait in Retry-After and in the legacy
// SDK's x-ratelimit-reset.
type tooManyFailures struct{ wait time.Duration }

// Error returns the message.
func (e *tooManyFailures) Error() string {
	return "too many failed authentications from this address; retry in " + e.seconds() + " seconds"
}

// seconds is the wait in whole seconds, rounded up.
func (e *tooManyFailures) seconds() string { return strconv.Itoa(int(math.Ceil(e.wait.Seconds()))) }

// write writes the answer.
func (e *tooManyFailures) write(ctx *fasthttp.RequestCtx, reqID string) {
	ctx.Response.Header.Set("Retry-After", e.seconds())
	ctx.Response.Header.Set("X-Ratelimit-Reset", e.seconds())
	writeJSON(ctx, http.StatusTooManyRequests, errorBody(reqID, e.Error()))
}
