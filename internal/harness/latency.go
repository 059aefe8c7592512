package harness

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Latencies are the durations of a series of requests.
type Latencies struct {
	d      []time.Duration
	Errors int // requests that failed or were not answered 200
}

// Quantile returns the q-quantile (0 < q ≤ 1), nearest rank.
func (l *Latencies) Quantile(q float64) time.Duration {
	if len(l.d) == 0 {
		return 0
	}
	s := slices.Clone(l.d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// N is the number of requests answered.
func (l *Latencies) N() int { return len(l.d) }

// String is the count and the median, p99 and maximum.
func (l *Latencies) String() string {
	return fmt.Sprintf("n=%d p50=%v p99=%v max=%v errors=%d", l.N(), Ms(l.Quantile(0.5)), Ms(l.Quantile(0.99)), Ms(l.Quantile(1)), l.Errors)
}

// Ms formats d in milliseconds with two decimals, for tables of figures.
func Ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// Probe sends GET path one request at a time, every interval, until ctx
// ends, on a connection of its own kept alive, and returns the latency of
// each as the client sees it.
func Probe(ctx context.Context, c *Client, path string, interval time.Duration) *Latencies {
	probe := *c
	probe.HTTP = &http.Client{Transport: &http.Transport{Proxy: nil, MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}, Timeout: 30 * time.Second}
	defer probe.HTTP.CloseIdleConnections()
	lat := &Latencies{}
	probe.Do("GET", path, nil) // opens the connection
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return lat
		case <-tick.C:
		}
		start := time.Now()
		r, err := probe.Do("GET", path, nil)
		if err != nil || r.Status != 200 {
			lat.Errors++
			continue
		}
		lat.d = append(lat.d, time.Since(start))
	}
}
