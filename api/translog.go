package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/valyala/fasthttp"
)

// What the HTTP transport says about requests it could not parse never
// quotes them: a malformed or half-sent request may carry an
// Authorization header, and an API key must reach no log line and no
// response. The transport's log messages and errors keep their fixed
// descriptions and drop the rest.

// fasthttpLogger sends fasthttp's own messages to the server log, without
// the request bytes some of them quote.
type fasthttpLogger struct{ log *slog.Logger }

// Printf logs one fasthttp message as a warning: the fixed text of its
// format, network addresses, numbers, and errors as their safe text.
func (l fasthttpLogger) Printf(format string, args ...any) {
	attrs := make([]any, 0, len(args))
	for i, a := range args {
		key := fmt.Sprintf("arg%d", i)
		switch v := a.(type) {
		case net.Addr:
			attrs = append(attrs, slog.String(key, v.String()))
		case error:
			attrs = append(attrs, slog.String(key, safeErrorText(v)))
		case int, int64, uint, uint64, uint32, int32:
			attrs = append(attrs, slog.Any(key, v))
		}
	}
	l.log.Warn("http: "+safeText(format), attrs...)
}

// safeErrorText returns the part of a transport error's text before any
// quoted or appended request content: fasthttp puts what it read after a
// colon or between quotes.
func safeErrorText(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return safeText(err.Error())
}

// safeText cuts s at its first colon, quote or format verb.
func safeText(s string) string {
	if i := strings.IndexAny(s, `:"'%`+"`"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "malformed"
	}
	return s
}

// transportError answers requests fasthttp rejects before a handler runs.
// The message names the kind of failure only.
func (s *Server) transportError(ctx *fasthttp.RequestCtx, err error) {
	id := s.requestIDString(s.setRequestID(ctx))
	status, msg := http.StatusBadRequest, "malformed request ("+safeErrorText(err)+")"
	var small *fasthttp.ErrSmallBuffer
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		status, msg = http.StatusRequestEntityTooLarge, s.errBodyTooLarge().Error()
		markUnreadBody(ctx.Conn())
	case errors.As(err, &small):
		status, msg = http.StatusRequestHeaderFieldsTooLarge, "request headers are too large"
	case errors.Is(err, fasthttp.ErrTimeout), errors.As(err, &ne) && ne.Timeout():
		status, msg = http.StatusRequestTimeout, "request timed out"
	}
	writeJSON(ctx, status, errorBody(id, msg))
	s.finishRejected(ctx, id)
}
