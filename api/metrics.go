package api

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is the server's Prometheus registry: the HTTP families the
// server records, the Go runtime and process collectors, and whatever other
// parts of the program register. It is the one place that knows
// Prometheus: the engine and the request limits hand their numbers over
// as plain Go values (a counter, a gauge read at scrape time, an event
// callback) and the api registers them here, with GaugeFunc, CounterFunc
// or a Collector of their own through Register. It is safe for concurrent
// use.
//
// Label values stay bounded: routes are templates (never raw paths),
// methods outside the API's set fold to OTHER, and no metric is labelled by
// a record, key or request id.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// active counts the requests being handled: the server's own count,
	// which it keeps anyway, read at scrape time rather than a gauge
	// moved twice per request. nil: none yet.
	active atomic.Pointer[atomic.Int64]
	events *engineEvents // fed by EngineEvent, see metrics_engine.go
	// rejections counts what the limits turn away, see metrics_limits.go.
	rejections *prometheus.CounterVec

	// series are the children of requests and latency in use, which
	// every request looks up.
	series readMostly[seriesKey, *routeSeries]
}

// seriesKey names the series of one route (nil: unmatched), method and
// status.
type seriesKey struct {
	route  *route
	method string
	status int
}

// routeSeries are the metrics children one request updates, looked up
// once per key instead of by label values on every request.
type routeSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// latencyBuckets are the upper bounds of the latency histograms in
// seconds: point reads take well under a millisecond, summaries and
// searches over large tables seconds.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// NewMetrics returns a registry with the HTTP families, the Go runtime and
// process collectors, coppice_build_info and the counters of the engine's
// events (EngineEvent). A Server given it adds the families of its engine.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coppice_http_requests_total",
			Help: "HTTP requests answered, by route template, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "coppice_http_request_duration_seconds",
			Help:    "Time from the start of a request's handling to its response, by route template.",
			Buckets: latencyBuckets,
		}, []string{"route"}),
		events:     newEngineEvents(),
		rejections: newRejections(),
	}
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "coppice_http_requests_in_flight",
		Help: "HTTP requests being handled now.",
	}, func() float64 {
		if n := m.active.Load(); n != nil {
			return float64(n.Load())
		}
		return 0
	})
	bi := ReadBuildInfo()
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "coppice_build_info",
		Help:        "Always 1; the labels describe the running binary.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.Revision, "goversion": bi.GoVersion},
	})
	build.Set(1)
	m.reg.MustRegister(
		m.requests, m.latency, inFlight, build,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.reg.MustRegister(m.events.collectors()...)
	m.reg.MustRegister(m.rejections)
	return m
}

// Register adds collectors to the registry; an error means a collector
// clashes with one registered before (same metric name, different labels).
func (m *Metrics) Register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// GaugeFunc registers a gauge whose value fn returns at each scrape; fn
// must be safe for concurrent use and quick.
func (m *Metrics) GaugeFunc(name, help string, fn func() float64) error {
	return m.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// CounterFunc registers a counter whose value fn returns at each scrape; fn
// must never go down, be safe for concurrent use and quick.
func (m *Metrics) CounterFunc(name, help string, fn func() float64) error {
	return m.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, fn))
}

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// countActive has the in-flight gauge read n, the count of requests a
// server is handling.
func (m *Metrics) countActive(n *atomic.Int64) { m.active.Store(n) }

// observe counts a request that serve has handled; rt is nil when no route
// matched.
func (m *Metrics) observe(rt *route, method string, status int, took time.Duration) {
	s := m.seriesOf(rt, method, status)
	s.requests.Inc()
	s.latency.Observe(took.Seconds())
}

// rejected counts a request fasthttp refused before serve saw it.
func (m *Metrics) rejected(method string, status int) {
	m.seriesOf(nil, method, status).requests.Inc()
}

// seriesOf returns the series of a route, method and status, creating them
// on first use.
func (m *Metrics) seriesOf(rt *route, method string, status int) *routeSeries {
	k := seriesKey{route: rt, status: status}
	if rt != nil {
		k.method = rt.method // a route serves one method: no string kept per request
	} else {
		k.method = methodLabel(method)
	}
	if s := m.series.load()[k]; s != nil {
		return s
	}
	var s *routeSeries
	m.series.update(func(next map[seriesKey]*routeSeries) bool {
		if s = next[k]; s != nil {
			return false // made by another request meanwhile
		}
		label := routeLabel(rt)
		s = &routeSeries{
			requests: m.requests.WithLabelValues(label, k.method, strconv.Itoa(status)),
			latency:  m.latency.WithLabelValues(label),
		}
		next[k] = s
		return true
	})
	return s
}

// ServeMetrics serves m at /metrics on ln until the returned stop is
// called; stop closes the listener and waits for scrapes in flight.
func ServeMetrics(m *Metrics, ln net.Listener, log *slog.Logger) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener", slog.Any("err", err))
		}
	}()
	return func() {
		if err := srv.Close(); err != nil {
			log.Warn("close metrics listener", slog.Any("err", err))
		}
		<-done
	}
}
