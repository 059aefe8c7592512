package api

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// Streams: backups and dumps are answered with bodies of any size, and
// loads send one. They cannot fit the request's time limit, so the limit
// applies to their progress instead: each read or write of the stream must
// go through within Limits.RequestTimeout. A stream ends at a shutdown
// like any request. A response stream that fails midway closes the
// connection before its last chunk, so that the client sees it cut off
// rather than complete.

// streamResponse answers r with status 200 and a body that write produces
// after the handler returns. The stream counts as a request in flight
// until it ends; done, if not nil, runs then, whatever the outcome.
func (s *Server) streamResponse(r *request, contentType string, write func(w io.Writer) error, done func()) {
	conn := r.ctx.Conn()
	timeout := s.limits.RequestTimeout
	base, log, id := s.base, s.log, r.requestID()
	s.active.Add(1)
	r.ctx.SetStatusCode(http.StatusOK)
	r.ctx.SetContentType(contentType)
	r.ctx.SetBodyStreamWriter(func(bw *bufio.Writer) {
		// A shutdown cuts the stream, even a write blocked on a slow
		// client.
		stopCut := context.AfterFunc(base, func() { _ = conn.Close() })
		defer stopCut()
		w := &progressWriter{w: bw, conn: conn, timeout: timeout, ctx: base}
		err := write(w)
		if err == nil {
			err = bw.Flush()
		}
		if done != nil {
			done()
		}
		// The stream is done with the engine: a shutdown waiting for the
		// connection may close the engine once the connection closes.
		s.active.Add(-1)
		if err != nil {
			log.Warn("response stream ended early", slog.String("request", id), slog.Any("err", err))
			_ = conn.Close()
		}
	})
}

// progressWriter writes a response stream: each write may take up to
// timeout, and writes fail once ctx (the server's) has ended.
type progressWriter struct {
	w       *bufio.Writer
	conn    net.Conn
	timeout time.Duration
	ctx     context.Context
}

// Write writes p, giving the connection timeout from now.
func (p *progressWriter) Write(b []byte) (int, error) {
	if err := p.ctx.Err(); err != nil {
		return 0, context.Cause(p.ctx)
	}
	_ = p.conn.SetWriteDeadline(time.Now().Add(p.timeout))
	return p.w.Write(b)
}

// streamBody returns the body of a request admitted without it (see
// streamsBody; admission closes its connection after it): a reader of at most limit bytes, each read of which may
// take up to the request timeout, and which fails once the server shuts
// down. A body announced larger than limit is refused at once with 413.
func (s *Server) streamBody(r *request, limit int64, what string) (*progressReader, error) {
	tooLarge := &statusError{http.StatusRequestEntityTooLarge, what + " exceeds the limit of " + strconv.FormatInt(limit, 10) + " bytes"}
	n := r.ctx.Request.Header.ContentLength()
	if int64(n) > limit {
		return nil, tooLarge
	}
	var rd io.Reader = r.ctx.RequestBodyStream()
	if rd == nil {
		rd = bytes.NewReader(r.ctx.PostBody())
	}
	conn := r.ctx.Conn()
	// A shutdown cuts the body short, even a read blocked on a slow client.
	stop := context.AfterFunc(s.base, func() { _ = conn.SetReadDeadline(time.Now()) })
	return &progressReader{r: rd, conn: conn, timeout: s.limits.RequestTimeout, ctx: s.base,
		left: limit, tooLarge: tooLarge, stop: stop}, nil
}

// progressReader reads a request body: each read may take up to timeout,
// reads fail once ctx (the server's) has ended, and more than left bytes
// are refused. Its first failure stays in err, for the answer: whoever
// reads the body may wrap it in its own words.
type progressReader struct {
	r        io.Reader
	conn     net.Conn
	timeout  time.Duration
	ctx      context.Context
	left     int64
	tooLarge error
	err      error
	stop     func() bool // ends the watch for a shutdown; the handler calls it
}

// Read reads into b, giving the connection timeout from now.
func (p *progressReader) Read(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	if err := p.ctx.Err(); err != nil {
		return 0, p.fail(context.Cause(p.ctx))
	}
	if int64(len(b)) > p.left+1 {
		b = b[:p.left+1]
	}
	_ = p.conn.SetReadDeadline(time.Now().Add(p.timeout))
	if err := p.ctx.Err(); err != nil {
		// A shutdown that came after the check above: its deadline may
		// have been overwritten.
		return 0, p.fail(context.Cause(p.ctx))
	}
	n, err := p.r.Read(b)
	p.left -= int64(n)
	if p.left < 0 {
		return n, p.fail(p.tooLarge)
	}
	if err != nil && err != io.EOF {
		return n, p.fail(bodyReadError(err))
	}
	return n, err
}

// fail keeps err as the reader's failure. (The rest of the body stays
// unread: admission closes the connections of streamed bodies.)
func (p *progressReader) fail(err error) error {
	p.err = err
	return err
}

// bodySizes are the bytes_in and bytes_out of a request's log line. A body
// that is still a stream is not read for it: asking fasthttp for such a
// body would read all of it into memory, be it a request body left unread
// (refused, or streamed by its handler) or a response streamed after the
// handler. Such a body counts 0 bytes, and streamed=true marks a streamed
// response.
func bodySizes(ctx *fasthttp.RequestCtx) []slog.Attr {
	in, out := 0, 0
	if !ctx.Request.IsBodyStream() {
		in = len(ctx.Request.Body())
	}
	if ctx.Response.IsBodyStream() {
		return []slog.Attr{slog.Int("bytes_in", in), slog.Int("bytes_out", out), slog.Bool("streamed", true)}
	}
	out = len(ctx.Response.Body())
	return []slog.Attr{slog.Int("bytes_in", in), slog.Int("bytes_out", out)}
}
