package api

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// The families of the request limits (limits.go): requests waiting in the
// admission queue, and requests and connections turned away by a limit,
// by reason.

// Reasons of coppice_http_rejections_total.
const (
	// rejectBusy: the queue was full, or the wait for a slot or for body
	// bytes passed --max-queue-wait, or another load was running (503).
	rejectBusy = "busy"
	// rejectTimeout: the request passed --request-timeout (503).
	rejectTimeout = "timeout"
	// rejectBodyTimeout: the body did not arrive within --request-timeout
	// (408).
	rejectBodyTimeout = "body_timeout"
	// rejectBodyTooLarge: a body over --max-body, or a load over
	// --max-load (413).
	rejectBodyTooLarge = "body_too_large"
	// rejectAuthRateLimited: too many failed authentications from the
	// client's address (429).
	rejectAuthRateLimited = "auth_rate_limited"
	// rejectShuttingDown: the server was shutting down (503).
	rejectShuttingDown = "shutting_down"
	// rejectConnections: a connection over --max-conns or
	// --max-conns-per-ip, refused before its request was read (503).
	rejectConnections = "connections"
)

// rejectReasons lists the reasons, so that every series exists from the
// start.
var rejectReasons = []string{rejectBusy, rejectTimeout, rejectBodyTimeout, rejectBodyTooLarge,
	rejectAuthRateLimited, rejectShuttingDown, rejectConnections}

// newRejections makes the counter of rejections with a series per reason.
func newRejections() *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "coppice_http_rejections_total",
		Help: "Requests and connections a limit turned away, by reason.",
	}, []string{"reason"})
	for _, r := range rejectReasons {
		v.WithLabelValues(r)
	}
	return v
}

// registerMetrics adds the families of this server's engine and limits to
// its Metrics, if any: one Metrics serves one Server.
func (s *Server) registerMetrics() error {
	if s.metrics == nil {
		return nil
	}
	s.metrics.countActive(&s.active)
	if s.eng != nil {
		if err := s.metrics.Register(engineCollector{s.eng}); err != nil {
			return err
		}
	}
	return s.metrics.GaugeFunc("coppice_http_requests_queued",
		"Requests waiting in the admission queue for an execution slot or for body bytes.",
		func() float64 { return float64(s.slots.q.waiting.Load()) })
}

// countRejection counts an answer that a limit gave, if err is one.
func (s *Server) countRejection(err error) {
	if s.metrics == nil {
		return
	}
	if reason := s.rejectionOf(err); reason != "" {
		s.metrics.rejections.WithLabelValues(reason).Inc()
	}
}

// rejectionOf names the limit that answered with err, or "".
func (s *Server) rejectionOf(err error) string {
	var rl *retryLater
	if errors.As(err, &rl) {
		if rl == errShuttingDown {
			return rejectShuttingDown
		}
		return rejectBusy // the queue, or another load running
	}
	var tf *tooManyFailures
	if errors.As(err, &tf) {
		return rejectAuthRateLimited
	}
	var se *statusError
	if errors.As(err, &se) {
		switch {
		case se == s.timeLimit:
			return rejectTimeout
		case se.status == http.StatusRequestEntityTooLarge:
			return rejectBodyTooLarge
		case se.status == http.StatusRequestTimeout:
			return rejectBodyTimeout
		}
	}
	return ""
}

// connRefused counts a connection the listener refused.
func (m *Metrics) connRefused() { m.rejections.WithLabelValues(rejectConnections).Inc() }
