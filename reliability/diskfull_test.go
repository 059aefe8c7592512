//go:build unix

package reliability

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coppice-db/coppice/internal/harness"
)

// TestDiskFull fills the disk under a server while 20 writers write: the
// suite's build of coppice puts its data on a disk that fills up at SIGUSR1
// (COPPICE_TEST_DISK_FULL=signal, an error-injecting filesystem under the
// storage engine). Writes then get 503 naming the cause, reads still
// answer, /healthz and /readyz answer 503, SIGTERM ends the process with status 0
// within the shutdown timeout, and a restart, on a disk with room again,
// finds every acknowledged write, each request the fault cut off applied
// entirely or not at all.
func TestDiskFull(t *testing.T) {
	run := 2 * time.Second
	if testing.Short() {
		run = 700 * time.Millisecond
	}
	s := startServer(t, harness.Config{Env: []string{"COPPICE_TEST_DISK_FULL=signal"},
		Args: []string{"--shutdown-timeout", shutdownTimeout.String()}})
	c := client(s)
	l := harness.NewLedger("full", "items", 20)
	must(t, l.Setup(c, s.WS))
	r, err := c.Do("GET", "/healthz", nil)
	if err != nil || r.Status != 200 {
		t.Fatalf("/healthz before: %v %v", r, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, c, 7)
	}()
	time.Sleep(run)
	before := l.Stats().Acked
	must(t, s.Signal(syscall.SIGUSR1))
	// Writers stop at their first failed request; the rest end here.
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("writers still acknowledged after the disk was full")
	}
	cancel()
	<-done
	full := time.Now()

	path := "/db/full:main/tables/items"
	r, err = c.Do("POST", path+"/data", map[string]any{"v": "late", "n": 1, "pad": "x"})
	if err != nil || r.Status != 503 || !strings.Contains(string(r.Body), "no space left on device") {
		t.Errorf("a write on the full disk: %v %v", r, err)
	}
	refused := time.Since(full)
	r, err = c.Do("POST", path+"/query", map[string]any{"page": map[string]any{"size": 5}})
	if err != nil || r.Status != 200 {
		t.Errorf("a query on the full disk: %v %v", r, err)
	}
	for _, health := range []string{"/healthz", "/readyz"} {
		r, err = c.Do("GET", health, nil)
		if err != nil || r.Status != 503 || !strings.Contains(string(r.Body), "no space left on device") {
			t.Errorf("%s on the full disk: %v %v", health, r, err)
		}
	}
	exit := s.Terminate(shutdownTimeout + 5*time.Second)
	if exit.Code != 0 || exit.Took > shutdownTimeout {
		t.Errorf("SIGTERM on the full disk: exit %d after %v\n%s", exit.Code, exit.Took, s.LastLog())
	}

	s.Start() // the disk has room again: it fills only at SIGUSR1
	bad, err := l.Verify(c)
	must(t, err)
	if len(bad) > 0 {
		t.Errorf("after the restart:\n%s", strings.Join(bad[:min(len(bad), 20)], "\n"))
	}
	r, err = c.Do("GET", "/healthz", nil)
	if err != nil || r.Status != 200 {
		t.Errorf("/healthz after the restart: %v %v", r, err)
	}
	st := l.Stats()
	report(t, "requests acknowledged, disk full", fmt.Sprintf("%d, then %d", before, st.Acked-before), "")
	report(t, "answers lost (applied / not)", fmt.Sprintf("%d (%d / %d)", st.Uncertain, st.Applied, st.NotApplied), "")
	report(t, "write on the full disk", fmt.Sprintf("503 in %v", refused.Round(time.Millisecond)), "503")
	report(t, "SIGTERM on the full disk", fmt.Sprintf("exit %d after %v", exit.Code, exit.Took.Round(time.Millisecond)), "0, ≤ "+shutdownTimeout.String())
	report(t, "lost writes / torn", fmt.Sprintf("%d / %d", st.Lost, st.Torn), "0 / 0")
	if st.Acked == 0 {
		t.Error("no write was acknowledged before the disk was full")
	}
	if st.Lost+st.Torn+st.Unexpected+st.Rejected > 0 {
		t.Errorf("lost %d, torn %d, unexpected %d, rejected %d %v", st.Lost, st.Torn, st.Unexpected, st.Rejected, l.Rejections())
	}
}
