package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
	"github.com/coppice-db/coppice/index"
)

// statusByCode is the one place that turns engine error codes into HTTP
// statuses. Handlers never pick a status for an engine failure themselves.
var statusByCode = map[engine.Code]int{
	engine.CodeInvalid:         http.StatusBadRequest,
	engine.CodeNotFound:        http.StatusNotFound,
	engine.CodeAlreadyExists:   http.StatusUnprocessableEntity,
	engine.CodePrecondition:    http.StatusUnprocessableEntity,
	engine.CodeConflict:        http.StatusConflict,
	engine.CodeLocked:          http.StatusLocked,
	engine.CodeUnauthenticated: http.StatusUnauthorized,
	engine.CodeForbidden:       http.StatusForbidden,
	engine.CodeUnsupported:     http.StatusNotImplemented,
	engine.CodeInternal:        http.StatusInternalServerError,
}

// statusOf returns the HTTP status of an engine error code.
func statusOf(code engine.Code) int {
	if st, ok := statusByCode[code]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// statusError is a failure of the HTTP layer itself (routing, transport
// limits) that no engine code describes.
type statusError struct {
	status  int
	message string
}

// Error returns the message.
func (e *statusError) Error() string { return e.message }

// retryLater is a 503 of a server at one of its limits, or shutting down:
// the request was not executed, and may be sent again after Retry-After.
type retryLater struct{ message string }

// Error returns the message.
func (e *retryLater) Error() string { return e.message }

// bodyError is a failure whose body has its own shape: the per-record errors
// of a bulk insert and the per-operation errors of a transaction.
type bodyError struct {
	status int
	body   map[string]any
}

// Error returns the status text; the body carries the details.
func (e *bodyError) Error() string { return http.StatusText(e.status) }

// invalid returns a CodeInvalid engine error: bad input found by the HTTP
// layer maps to a status through the same table as the engine's own.
func invalid(format string, args ...any) error {
	return engine.Errorf(engine.CodeInvalid, format, args...)
}

// errInvalidKey is the answer to a missing, malformed or unknown API key.
var errInvalidKey = engine.Errorf(engine.CodeUnauthenticated, "invalid API key")

// noAccess is the answer for a workspace that does not exist or that the
// caller may not use; the two are indistinguishable on purpose.
func noAccess(label string) error {
	return engine.Errorf(engine.CodeUnauthenticated, "no access to workspace [%s]", label)
}

// writeError writes err as a JSON error response: {id, message} with the
// status of its code, or the body of a bodyError. Internal errors are logged
// with the request id and answered without details.
func (s *Server) writeError(ctx *fasthttp.RequestCtx, reqID string, err error) {
	s.countRejection(err)
	var be *bodyError
	if errors.As(err, &be) {
		writeJSON(ctx, be.status, be.body)
		return
	}
	var tf *tooManyFailures
	if errors.As(err, &tf) {
		tf.write(ctx, reqID)
		return
	}
	var ue *engine.UnavailableError
	if errors.As(err, &ue) {
		secs := int((ue.RetryAfter + time.Second - 1) / time.Second)
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(max(secs, 1)))
		writeJSON(ctx, http.StatusServiceUnavailable, errorBody(reqID, ue.Message))
		return
	}
	var rl *retryLater
	if errors.As(err, &rl) {
		ctx.Response.Header.Set("Retry-After", "1")
		writeJSON(ctx, http.StatusServiceUnavailable, errorBody(reqID, rl.message))
		return
	}
	var se *statusError
	if errors.As(err, &se) {
		writeJSON(ctx, se.status, errorBody(reqID, se.message))
		return
	}
	var ee *engine.Error
	if errors.As(err, &ee) && ee.Code != engine.CodeInternal {
		writeJSON(ctx, statusOf(ee.Code), errorBody(reqID, ee.Message))
		return
	}
	// The request parsers of index and fts, which handlers call before the
	// engine, report bad input as the engine does.
	var ie *index.InputError
	if errors.As(err, &ie) {
		writeJSON(ctx, statusOf(engine.CodeInvalid), errorBody(reqID, ie.Message))
		return
	}
	s.log.Error("internal error", slog.String("request", reqID), slog.String("method", string(ctx.Method())),
		slog.String("path", string(ctx.Path())), slog.Any("err", err))
	writeJSON(ctx, http.StatusInternalServerError, errorBody(reqID, "internal error (request "+reqID+")"))
}

// errorBody is the error body of every failure without its own shape.
func errorBody(reqID, message string) map[string]any {
	return map[string]any{"id": reqID, "message": message}
}
