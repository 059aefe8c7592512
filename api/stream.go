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
	base, log, id := s.base, s.log, r.id
	s.active.Add(1)
	r.ctx.SetStatusCode(http.StatusOK)
	r.ctx.SetContentType(contentType)
	r.ctx.SetBodyStreamWriter(func(bw *bufio.Writer) {
		defer s.active.Add(-1)
		if done != nil {
			defer done()
		}
		w := &progressWriter{w: bw, conn: conn, timeout: timeout, ctx: base}
		err := write(w)
		if err == nil {
			err = bw.Flush()
		}
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
// streamsBody): a reader of at most limit bytes, each read of which may
// take up to the request timeout, and which fails once the server shuts
// down. A body announced larger than limit is refused at once with 413.
func (s *Server) streamBody(r *request, limit int64, what string) (*progressReader, error) {
	tooLarge := &statusError{http.StatusRequestEntityTooLarge, what + " exceeds the limit of " + strconv.FormatInt(limit, 10) + " bytes"}
	n := r.ctx.Request.Header.ContentLength()
	if int64(n) > limit {
		r.ctx.SetConnectionClose()
		return nil, tooLarge
	}
	var rd io.Reader = r.ctx.RequestBodyStream()
	if rd == nil {
		rd = bytes.NewReader(r.ctx.PostBody())
	}
	return &progressReader{r: rd, conn: r.ctx.Conn(), timeout: s.limits.RequestTimeout, ctx: s.base,
		left: limit, tooLarge: tooLarge, req: r}, nil
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
	req      *request
	err      error
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

// fail keeps err as the reader's failure. The rest of the body stays
// unread, so the connection takes no further request.
func (p *progressReader) fail(err error) error {
	p.err = err
	p.req.ctx.SetConnectionClose()
	return err
}
