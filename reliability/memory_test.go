//go:build unix

package reliability

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coppice-db/coppice/internal/harness"
)

// TestManyBranchMemory reads, summarizes and aggregates every one of many
// branches of a large table, each of the odd ones having written a record
// of its own (so that it needs structures of its own) and the even ones
// sharing main's, twice over, then again after a restart, under
// --memory-limit, while the process's resident memory is sampled: its peak
// must stay within the limit + 300 MiB, and every answer must be right.
// The full form is 2,000 branches of a 100,000-row table under 1 GiB.
func TestManyBranchMemory(t *testing.T) {
	branches, rows, limit := 2000, 100_000, int64(1<<30)
	if testing.Short() {
		branches, rows, limit = 120, 20_000, 256<<20
	}
	const slack = 300 << 20
	s := startServer(t, harness.Config{Args: []string{"--memory-limit", strconv.FormatInt(limit, 10)},
		Env: []string{"COPPICE_LOG_LEVEL=debug"}, ReadyTimeout: time.Minute})
	c := client(s)
	peak := &rssPeak{}
	stop := peak.sample(s)

	start := time.Now()
	table := "/db/mem:main/tables/items"
	_, err := c.Must(201, "PUT", "/workspaces/"+s.WS+"/dbs/mem", `{"region":"local"}`)
	must(t, err)
	_, err = c.Must(201, "PUT", table, nil)
	must(t, err)
	for _, col := range []string{`{"name":"title","type":"string"}`, `{"name":"category","type":"string"}`,
		`{"name":"price","type":"float"}`, `{"name":"views","type":"int"}`, `{"name":"tags","type":"multiple"}`} {
		_, err := c.Must(200, "POST", table+"/columns", col)
		must(t, err)
	}
	var sumViews int64
	for at := 0; at < rows; at += 1000 {
		var recs []map[string]any
		for i := at; i < min(rows, at+1000); i++ {
			views := int64(i % 997)
			sumViews += views
			recs = append(recs, map[string]any{"id": fmt.Sprintf("r%06d", i), "title": fmt.Sprintf("title %d of the items", i),
				"category": fmt.Sprintf("cat%02d", i%20), "price": float64(i%500) / 4, "views": views,
				"tags": []string{"t" + strconv.Itoa(i%7), "u" + strconv.Itoa(i%11)}})
		}
		_, err := c.Must(200, "POST", table+"/bulk", map[string]any{"records": recs})
		must(t, err)
	}
	for b := range branches {
		_, err := c.Must(201, "PUT", fmt.Sprintf("/db/mem:b%04d", b), `{"from":"main"}`)
		must(t, err)
		if b%2 == 1 {
			// r000000 has 0 views: each odd branch adds b.
			_, err := c.Must(200, "PATCH", fmt.Sprintf("/db/mem:b%04d/tables/items/data/r000000", b), map[string]any{"views": b})
			must(t, err)
		}
	}
	report(t, "branches × rows", fmt.Sprintf("%d × %d", branches, rows), "")
	report(t, "load and fork", time.Since(start).Round(time.Second).String(), "")

	var failures atomic.Int64
	pass := func(name string) {
		t.Helper()
		start := time.Now()
		work := make(chan int)
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b := range work {
					if err := checkBranch(c, b, rows, sumViews); err != nil {
						if failures.Add(1) <= 5 {
							t.Errorf("%s, branch %d: %v", name, b, err)
						}
					}
				}
			}()
		}
		for b := range branches {
			work <- b
		}
		close(work)
		wg.Wait()
		report(t, name, time.Since(start).Round(time.Second).String(), "")
	}
	pass("pass 1 (read, summarize, aggregate)")
	pass("pass 2")
	peak.process(s)
	exit := s.Terminate(time.Minute)
	if exit.Code != 0 {
		t.Errorf("SIGTERM: exit %d", exit.Code)
	}
	s.Start()
	pass("pass 3, after a restart")
	stop()

	evictions, used := budgetFigures(s.Logs())
	report(t, "structures evicted, caches emptied", fmt.Sprint(evictions), "")
	report(t, "budget in use at the end", fmt.Sprintf("%.0f MiB", float64(used)/(1<<20)), "")
	target := fmt.Sprintf("≤ %d MiB (limit + 300 MiB)", (limit+slack)>>20)
	report(t, "peak RSS", fmt.Sprintf("%.0f MiB", float64(peak.max())/(1<<20)), target)
	if p := peak.max(); p > limit+slack {
		t.Errorf("peak RSS %d MiB over %s", p>>20, target)
	}
	if evictions == 0 {
		t.Error("no structure was evicted")
	}
}

// checkBranch reads a record of branch b, summarizes its table by category
// and aggregates its views, and checks the answers: the odd branches
// changed the views of r000000 from 0 to b.
func checkBranch(c *harness.Client, b, rows int, sumViews int64) error {
	ref := fmt.Sprintf("/db/mem:b%04d/tables/items", b)
	want := sumViews
	if b%2 == 1 {
		want += int64(b)
	}
	r, err := c.Must(200, "GET", ref+"/data/r000000?columns=views", nil)
	if err != nil {
		return err
	}
	wantViews := 0
	if b%2 == 1 {
		wantViews = b
	}
	if !strings.Contains(string(r.Body), fmt.Sprintf(`"views":%d`, wantViews)) {
		return fmt.Errorf("read: %s", r)
	}
	r, err = c.Must(200, "POST", ref+"/summarize", map[string]any{"columns": []string{"category"},
		"summaries": map[string]any{"n": map[string]any{"count": "*"}, "v": map[string]any{"sum": "views"}}, "page": map[string]any{"size": 50}})
	if err != nil {
		return err
	}
	var total, count int64
	for _, m := range regexp.MustCompile(`"n":(\d+),"v":(\d+)`).FindAllStringSubmatch(string(r.Body), -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		v, _ := strconv.ParseInt(m[2], 10, 64)
		count, total = count+n, total+v
	}
	if count != int64(rows) || total != want {
		return fmt.Errorf("summarize: %d records, views %d; want %d, %d: %s", count, total, rows, want, r)
	}
	r, err = c.Must(200, "POST", ref+"/aggregate", map[string]any{"aggs": map[string]any{
		"views": map[string]any{"sum": map[string]any{"column": "views"}},
		"price": map[string]any{"max": map[string]any{"column": "price"}}}})
	if err != nil {
		return err
	}
	if !strings.Contains(string(r.Body), fmt.Sprintf(`"views":%d`, want)) {
		return fmt.Errorf("aggregate: want views %d: %s", want, r)
	}
	return nil
}

// rssPeak is the highest resident memory seen of a server's processes.
type rssPeak struct {
	mu   sync.Mutex
	peak int64
}

func (p *rssPeak) max() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}

func (p *rssPeak) note(n int64) {
	p.mu.Lock()
	p.peak = max(p.peak, n)
	p.mu.Unlock()
}

// process notes the peak of the current process (VmHWM), which sampling
// may have missed; call it before the process ends.
func (p *rssPeak) process(s *harness.Server) {
	p.note(procStatus(s.Pid(), "VmHWM:"))
}

// sample samples the resident memory of the server's current process every
// 50 ms until the returned stop is called.
func (p *rssPeak) sample(s *harness.Server) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if s.Running() {
				p.note(procStatus(s.Pid(), "VmHWM:"))
			}
		}
	}()
	return func() {
		p.process(s)
		close(done)
		<-ended
	}
}

// procStatus reads a memory figure (VmRSS:, VmHWM:) of a process, in bytes;
// 0 when it cannot.
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// budgetFigures reads the memory budget's debug lines in a server's logs:
// the structures evicted, and the budget in use at the last line.
func budgetFigures(logs string) (evictions int, used int64) {
	count := regexp.MustCompile(`work=eviction .*count=(\d+)`)
	inUse := regexp.MustCompile(`msg=memory .*used=(\d+)`)
	for _, line := range strings.Split(logs, "\n") {
		if m := count.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			evictions += n
		}
		if m := inUse.FindStringSubmatch(line); m != nil {
			used, _ = strconv.ParseInt(m[1], 10, 64)
		}
	}
	return evictions, used
}
