package api

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape fetches a metrics endpoint and parses it with the Prometheus
// text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return fams
}

// series returns the metric of a family whose labels include want, or
// nil.
func series(fam *dto.MetricFamily, want map[string]string) *dto.Metric {
	if fam == nil {
		return nil
	}
	for _, m := range fam.Metric {
		n := 0
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				n++
			}
		}
		if n == len(want) {
			return m
		}
	}
	return nil
}

// TestMetricsScrape runs a short workload against a server with metrics,
// scrapes its metrics listener and checks the families.
func TestMetricsScrape(t *testing.T) {
	m := NewMetrics()
	ts := startServer(t, Options{Metrics: m})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := ServeMetrics(m, ln, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer stop()
	var budget float64 = 1 << 20
	if err := m.GaugeFunc("coppice_test_budget_bytes", "A number another part hands over.", func() float64 { return budget }); err != nil {
		t.Fatal(err)
	}
	if err := m.GaugeFunc("coppice_test_budget_bytes", "twice", func() float64 { return 0 }); err == nil {
		t.Error("registering a name twice: no error")
	}

	ts.createDB("app")
	ts.createTable("app", "users", map[string]any{"name": "name", "type": "string"})
	ts.expect(201, "PUT", "/db/app:main/tables/users/data/ann", map[string]any{"name": "Ann"})
	const gets, queries = 7, 3
	for range gets {
		ts.expect(200, "GET", "/db/app:main/tables/users/data/ann", nil)
	}
	for range queries {
		ts.expect(200, "POST", "/db/app:main/tables/users/query", map[string]any{})
	}
	ts.expect(404, "GET", "/db/app:main/tables/users/data/bob", nil)
	ts.expect(404, "GET", ts.url+"/no/such/path", nil)
	ts.expect(401, "GET", ts.url+"/user", nil, withKey("cpk_wrong"))
	ts.do("BREW", ts.url+"/coffee", nil)

	fams := scrape(t, "http://"+ln.Addr().String()+"/metrics")
	reqs := fams["coppice_http_requests_total"]
	counter := func(route, method, status string) float64 {
		t.Helper()
		s := series(reqs, map[string]string{"route": route, "method": method, "status": status})
		if s == nil {
			t.Errorf("no coppice_http_requests_total{route=%q,method=%q,status=%q}", route, method, status)
			return -1
		}
		return s.GetCounter().GetValue()
	}
	get := "/db/{db_branch_name}/tables/{table_name}/data/{record_id}"
	query := "/db/{db_branch_name}/tables/{table_name}/query"
	if n := counter(get, "GET", "200"); n != gets {
		t.Errorf("point gets counted %v, want %d", n, gets)
	}
	if n := counter(get, "GET", "404"); n != 1 {
		t.Errorf("missing record counted %v", n)
	}
	if n := counter(query, "POST", "200"); n != queries {
		t.Errorf("queries counted %v, want %d", n, queries)
	}
	counter(unmatchedRoute, "GET", "404")
	counter("/user", "GET", "401")
	counter(unmatchedRoute, "OTHER", "404")
	for _, m := range reqs.GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "route" && strings.Contains(l.GetValue(), "ann") {
				t.Errorf("a raw path as a route label: %s", l.GetValue())
			}
		}
	}

	lat := series(fams["coppice_http_request_duration_seconds"], map[string]string{"route": query})
	if lat == nil || lat.GetHistogram().GetSampleCount() != queries || len(lat.GetHistogram().GetBucket()) < 10 {
		t.Errorf("query latency histogram: %v", lat)
	}
	if fl := fams["coppice_http_requests_in_flight"]; fl == nil || fl.GetType() != dto.MetricType_GAUGE || fl.Metric[0].GetGauge().GetValue() != 0 {
		t.Errorf("in flight: %v", fl)
	}
	if b := series(fams["coppice_build_info"], map[string]string{"goversion": ReadBuildInfo().GoVersion}); b == nil || b.GetGauge().GetValue() != 1 {
		t.Errorf("build info: %v", fams["coppice_build_info"])
	}
	if g := fams["coppice_test_budget_bytes"]; g == nil || g.Metric[0].GetGauge().GetValue() != budget {
		t.Errorf("registered gauge: %v", g)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "process_open_fds"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
}

// TestNoMetricsByDefault checks that a server without Metrics records
// nothing and serves no /metrics on the API listener.
func TestNoMetricsByDefault(t *testing.T) {
	ts := startServer(t, Options{})
	if ts.srv.metrics != nil {
		t.Fatal("metrics without Options.Metrics")
	}
	ts.expect(404, "GET", ts.url+"/metrics", nil)
}

// The in-flight gauge reads the requests the server is handling at the
// time of the scrape.
func TestMetricsInFlight(t *testing.T) {
	m := NewMetrics()
	s, err := New(nil, Options{Metrics: m, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	inFlight := func() float64 {
		t.Helper()
		fams, err := m.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() == "coppice_http_requests_in_flight" {
				return f.Metric[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no coppice_http_requests_in_flight")
		return 0
	}
	if n := inFlight(); n != 0 {
		t.Errorf("idle: %v in flight, want 0", n)
	}
	s.active.Add(3)
	if n := inFlight(); n != 3 {
		t.Errorf("%v in flight, want 3", n)
	}
	s.active.Add(-3)
	if n := inFlight(); n != 0 {
		t.Errorf("after: %v in flight, want 0", n)
	}
}
