package api

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLimitMetrics scrapes the queue gauge and the rejections by reason
// while limits turn requests and connections away.
func TestLimitMetrics(t *testing.T) {
	m := NewMetrics()
	ts := startServer(t, Options{Metrics: m, MaxBody: 1024, Limits: Limits{MaxInflight: 1, MaxQueue: 2,
		MaxQueueWait: 300 * time.Millisecond, AuthFailLimit: 1, MaxConnsPerIP: 3}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := ServeMetrics(m, ln, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer stop()
	url := "http://" + ln.Addr().String() + "/metrics"
	gauge := func(name string) float64 {
		t.Helper()
		f := scrape(t, url)[name]
		if f == nil {
			t.Fatalf("no %s", name)
		}
		return f.Metric[0].GetGauge().GetValue()
	}
	rejected := func(reason string) float64 {
		t.Helper()
		s := series(scrape(t, url)["coppice_http_rejections_total"], map[string]string{"reason": reason})
		if s == nil {
			t.Fatalf("no rejections series for %s", reason)
		}
		return s.GetCounter().GetValue()
	}
	for _, r := range rejectReasons {
		if v := rejected(r); v != 0 {
			t.Errorf("%s: %v before any rejection", r, v)
		}
	}

	// The only slot taken: a request waits in the queue, then gives up.
	if !ts.srv.slots.tryAcquire() {
		t.Fatal("no free slot")
	}
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("GET", ts.url+"/user", nil)
		setKey(req, testKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	for deadline := time.Now().Add(5 * time.Second); gauge("coppice_http_requests_queued") != 1; {
		if time.Now().After(deadline) {
			t.Fatal("the waiting request never showed in the queue gauge")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := <-done; st != 503 {
		t.Errorf("a request past the queue wait: %d", st)
	}
	ts.srv.slots.release()
	if v := gauge("coppice_http_requests_queued"); v != 0 {
		t.Errorf("queued after the wait: %v", v)
	}
	if v := rejected(rejectBusy); v != 1 {
		t.Errorf("busy: %v", v)
	}

	ts.expect(413, "POST", "/db/x:main/tables/t/data", strings.Repeat("x", 2000))
	if v := rejected(rejectBodyTooLarge); v != 1 {
		t.Errorf("body too large: %v", v)
	}

	// Connections past the limit of one address.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	http.DefaultClient.CloseIdleConnections()
	for range 4 {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	c := conns[3]
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, _ := io.ReadAll(c); !strings.Contains(string(b), "503 Service Unavailable") {
		t.Errorf("the connection past the limit read %q", b)
	}
	if v := rejected(rejectConnections); v < 1 {
		t.Errorf("connections: %v", v)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil

	// Last, since it locks this address out for the window. (The server
	// may not have counted the closed connections out yet: it refuses
	// more for a moment.)
	for deadline := time.Now().Add(5 * time.Second); ; {
		req, _ := http.NewRequest("GET", ts.url+"/user", nil)
		setKey(req, "cpk_wrong_key_000000000000")
		st := 0
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			st = resp.StatusCode
		}
		if st == 429 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 429 after failed authentications: %d", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if v := rejected(rejectAuthRateLimited); v != 1 {
		t.Errorf("auth rate limited: %v", v)
	}

	// The other reasons, by the errors that carry them.
	for err, want := range map[error]string{ts.srv.timeLimit: rejectTimeout, errShuttingDown: rejectShuttingDown,
		bodyReadError(&net.OpError{Op: "read", Err: timeoutErr{}}): rejectBodyTimeout, errClientGone: "",
		&retryLater{"another load is running; retry when it ends"}: rejectBusy} {
		if got := ts.srv.rejectionOf(err); got != want {
			t.Errorf("%v: %q, want %q", err, got, want)
		}
	}
}

// timeoutErr is a network timeout.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
