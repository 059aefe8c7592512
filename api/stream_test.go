package api

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// endless is a request body that never ends, sent slowly.
type endless struct{}

// Read gives a little more, later.
func (endless) Read(p []byte) (int, error) {
	time.Sleep(10 * time.Millisecond)
	n := copy(p, "0123456789abcdef")
	return n, nil
}

// TestUnreadBodyAnsweredAtOnce sends bodies the server leaves unread (over
// --max-body; over --max-load) that never end: the answer comes at once,
// the access log reading no more of them.
func TestUnreadBodyAnsweredAtOnce(t *testing.T) {
	ts := startServer(t, Options{MaxBody: 1024, Limits: Limits{MaxLoad: 1024}})
	for _, path := range []string{"/db/app:main/tables/t/data", "/dbs/app/load"} {
		req, _ := http.NewRequest("POST", ts.base+path, io.MultiReader(io.LimitReader(endless{}, 4096), endless{}))
		setKey(req, ts.key)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 413 {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
		// Read to its end, the body would hold the answer until the request
		// timeout; refused unread, the answer comes once the limit is
		// passed, which on a loaded machine can take seconds of the slow
		// body.
		if took := time.Since(start); took > DefaultRequestTimeout/2 {
			t.Errorf("%s: answered after %v, the request timeout being %v", path, took, DefaultRequestTimeout)
		}
	}
}
