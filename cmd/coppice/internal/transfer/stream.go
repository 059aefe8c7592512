package transfer

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// streamIdle is how long a stream (a backup, a dump, a load) may go
// without a byte moving before it is given up, the wait for the answer to
// a load included. The whole of it may take any time.
var streamIdle = 5 * time.Minute

// stream sends a request whose body (nil: none) and answer may be of any
// size. On status want it returns the answer's body, which the caller
// reads and closes; on another status the server's error. Requests the
// server refused for load, or that could not connect, are sent again when
// the body can be read again from its start (nil, or an io.Seeker).
// Reading the answer fails when it stalls for streamIdle, or ctx ends.
func (s *httpStore) stream(ctx context.Context, method, path string, body io.Reader, size int64, want int) (io.ReadCloser, error) {
	wait := firstBackoff
	for attempt := 1; ; attempt++ {
		res, err := s.streamOnce(ctx, method, path, body, size)
		status := 0
		if err == nil {
			status = res.StatusCode
			if status == want {
				return res.Body, nil
			}
		}
		var serr error = err
		retryAfter := time.Duration(0)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
			res.Body.Close()
			serr = newServerError(status, b)
			retryAfter = retryAfterOf(res)
		}
		if !retryable(status, err) || attempt == maxAttempts || !rewind(body) || !backoff(ctx, &wait, retryAfter) {
			return nil, serr
		}
	}
}

// rewind makes a request body readable again from its start, when it can.
func rewind(body io.Reader) bool {
	if body == nil {
		return true
	}
	sk, ok := body.(io.Seeker)
	if !ok {
		return false
	}
	_, err := sk.Seek(0, io.SeekStart)
	return err == nil
}

// streamOnce sends one streaming request. Its context ends when the
// answer's body stalls for streamIdle (or at the caller's end), which
// fails the read in progress.
func (s *httpStore) streamOnce(ctx context.Context, method, path string, body io.Reader, size int64) (*http.Response, error) {
	ctx, cancel := context.WithCancel(ctx)
	stall := time.AfterFunc(streamIdle, cancel)
	var rd io.Reader
	if body != nil {
		rd = &idleReader{r: body, stall: stall}
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		cancel()
		return nil, err
	}
	if body != nil {
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	res, err := s.streams.Do(req)
	if err != nil {
		stall.Stop()
		cancel()
		return nil, err
	}
	stall.Reset(streamIdle)
	res.Body = &idleBody{idleReader: idleReader{r: res.Body, stall: stall}, body: res.Body, cancel: cancel}
	return res, nil
}

// idleReader reads r, putting off stall by streamIdle after every read.
type idleReader struct {
	r     io.Reader
	stall *time.Timer
}

// Read reads from r and resets the stall timer.
func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	ir.stall.Reset(streamIdle)
	return n, err
}

// idleBody is an answer's body whose reads put off its stall timer;
// closing it releases the request's context.
type idleBody struct {
	idleReader
	body   io.Closer
	cancel context.CancelFunc
	once   sync.Once
}

// Close closes the body and ends its request.
func (b *idleBody) Close() error {
	err := b.body.Close()
	b.once.Do(func() {
		b.stall.Stop()
		b.cancel()
	})
	return err
}
