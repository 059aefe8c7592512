package api

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestAuthFailureLimit: after the limit of failed authentications in the
// window, an address's requests get 429 with Retry-After, a good key
// included; after the window they are looked at again.
func TestAuthFailureLimit(t *testing.T) {
	ts := startServer(t, Options{Limits: Limits{AuthFailLimit: 3, AuthFailWindow: 2 * time.Second}})
	for range 3 {
		ts.expect(401, "GET", ts.url+"/user", nil, withKey("cpk_guess"))
	}
	start := time.Now()
	for _, key := range []string{"cpk_guess", testKey, ""} {
		r := ts.expect(429, "GET", ts.url+"/user", nil, withKey(key))
		if ra := r.header.Get("Retry-After"); (ra != "1" && ra != "2") || r.header.Get("X-Ratelimit-Reset") != ra ||
			!strings.Contains(errMessage(r), "too many failed authentications") {
			t.Errorf("429: %v %s", r.header, r.raw)
		}
	}
	// Health checks need no key and stay open.
	ts.key = ""
	ts.expect(200, "GET", ts.url+"/healthz", nil)
	time.Sleep(2*time.Second - time.Since(start))
	ts.expect(200, "GET", ts.url+"/user", nil, withKey(testKey))
	ts.expect(401, "GET", ts.url+"/user", nil, withKey("cpk_guess"))
}

// TestAuthLimiterBounded: the table of failing addresses stays within its
// bound however many addresses fail.
func TestAuthLimiterBounded(t *testing.T) {
	a := newAuthLimiter(2, time.Hour)
	now := time.Now()
	for i := range 3 * maxAuthClients {
		addr := netipAddr(i)
		a.fail(addr, now)
		if len(a.clients) > maxAuthClients {
			t.Fatalf("%d addresses remembered", len(a.clients))
		}
	}
	last := netipAddr(3*maxAuthClients - 1)
	a.fail(last, now)
	if a.blocked(last, now) == 0 {
		t.Error("the latest address is not blocked")
	}
	// A window after the failures stop, the table is empty again.
	a.blocked(last, now.Add(2*time.Hour))
	if n := a.size.Load(); n != 0 || len(a.clients) != 0 {
		t.Errorf("%d addresses remembered after their windows", n)
	}
}

// netipAddr returns the i-th of a run of distinct IPv4 addresses.
func netipAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
}
