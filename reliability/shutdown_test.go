//go:build unix

package reliability

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/internal/harness"
)

// shutdownTimeout is the --shutdown-timeout of the SIGTERM scenarios.
const shutdownTimeout = 10 * time.Second

// TestSIGTERMUnderWriteLoad sends SIGTERM while 20 writers write: the
// process exits with status 0 within the shutdown timeout, and a restart
// finds every acknowledged write.
func TestSIGTERMUnderWriteLoad(t *testing.T) {
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	s := startServer(t, harness.Config{Args: []string{"--shutdown-timeout", shutdownTimeout.String()}})
	c := client(s)
	l := harness.NewLedger("term", "items", 20)
	must(t, l.Setup(c, s.WS))
	var worst time.Duration
	for i := range rounds {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			l.Run(ctx, c, uint64(i))
		}()
		time.Sleep(time.Second)
		exit := s.Terminate(shutdownTimeout + 5*time.Second)
		cancel()
		<-done
		worst = max(worst, exit.Took)
		if exit.Code != 0 || exit.Took > shutdownTimeout {
			t.Errorf("SIGTERM under load: exit %d after %v\n%s", exit.Code, exit.Took, s.LastLog())
		}
		s.Start()
		bad, err := l.Verify(c)
		must(t, err)
		if len(bad) > 0 {
			t.Errorf("after SIGTERM %d:\n%s", i+1, strings.Join(bad[:min(len(bad), 20)], "\n"))
		}
	}
	st := l.Stats()
	report(t, "SIGTERMs under 20 writers", fmt.Sprint(rounds), "")
	report(t, "slowest exit (status 0)", worst.Round(time.Millisecond).String(), "≤ "+shutdownTimeout.String())
	report(t, "acknowledged requests", fmt.Sprint(st.Acked), "")
	report(t, "lost writes / torn", fmt.Sprintf("%d / %d", st.Lost, st.Torn), "0 / 0")
	if st.Lost+st.Torn+st.Unexpected+st.Rejected > 0 {
		t.Errorf("lost %d, torn %d, unexpected %d, rejected %d %v", st.Lost, st.Torn, st.Unexpected, st.Rejected, l.Rejections())
	}
}

// TestSIGTERMDuringLongQuery sends SIGTERM while a pattern query that
// would run until its 60 s deadline is running: the query is answered 503,
// the process exits with status 0 within the shutdown timeout and without
// leaking a snapshot, and a restart finds every acknowledged write.
func TestSIGTERMDuringLongQuery(t *testing.T) {
	s := startServer(t, harness.Config{Args: []string{"--shutdown-timeout", shutdownTimeout.String(), "--request-timeout", "60s"}})
	c := client(s)
	l := harness.NewLedger("longq", "items", 4)
	must(t, l.Setup(c, s.WS))
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	l.Run(ctx, c, 1)
	cancel()
	big := bigTextTable(t, c, s.WS, "longq2", 4<<20)
	answer := make(chan harness.Response, 1)
	start := time.Now()
	go func() {
		r, err := c.Do("POST", big+"/query", slowPattern)
		if err != nil {
			r.Status = -1
		}
		answer <- r
	}()
	time.Sleep(time.Second)
	exit := s.Terminate(shutdownTimeout + 5*time.Second)
	r := <-answer
	if exit.Code != 0 || exit.Took > shutdownTimeout {
		t.Errorf("exit %d after %v", exit.Code, exit.Took)
	}
	if r.Status != 503 || !strings.Contains(string(r.Body), "shutting down") {
		t.Errorf("the query was answered %s after %v", r, time.Since(start))
	}
	if log := s.LastLog(); strings.Contains(log, "leaked") || strings.Contains(log, "level=ERROR") {
		t.Errorf("log:\n%s", log)
	}
	s.Start()
	bad, err := l.Verify(c)
	must(t, err)
	if len(bad) > 0 {
		t.Errorf("after SIGTERM:\n%s", strings.Join(bad, "\n"))
	}
	report(t, "exit during a 60 s query", fmt.Sprintf("status %d after %v", exit.Code, exit.Took.Round(time.Millisecond)), "0 within "+shutdownTimeout.String())
	report(t, "the query's answer", fmt.Sprint(r.Status), "503 shutting down")
	report(t, "acknowledged requests / lost", fmt.Sprintf("%d / %d", l.Stats().Acked, l.Stats().Lost), "lost 0")
}
