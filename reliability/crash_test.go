//go:build unix

package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/coppice-db/coppice/internal/harness"
)

// TestSIGKILLLoop kills the server with SIGKILL while 20 writers insert,
// update, bulk insert and run transactions, restarts it, and checks after
// every restart that each acknowledged write is there with its content and
// that each request whose answer the kill cut off was applied entirely or
// not at all.
func TestSIGKILLLoop(t *testing.T) {
	kills, seed := 20, uint64(time.Now().UnixNano())
	minRun, maxRun := 400*time.Millisecond, 2*time.Second
	if testing.Short() {
		kills, minRun, maxRun = 3, 300*time.Millisecond, 900*time.Millisecond
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	s := startServer(t, harness.Config{})
	c := client(s)
	l := harness.NewLedger("crash", "items", 20)
	must(t, l.Setup(c, s.WS))
	var restart time.Duration
	for i := range kills {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			l.Run(ctx, c, seed+uint64(i))
		}()
		time.Sleep(minRun + time.Duration(rng.Int64N(int64(maxRun-minRun))))
		s.Kill()
		<-done
		cancel()
		start := time.Now()
		s.Start()
		restart += time.Since(start)
		bad, err := l.Verify(c)
		must(t, err)
		if len(bad) > 0 {
			t.Errorf("after kill %d:\n%s", i+1, strings.Join(bad[:min(len(bad), 20)], "\n"))
		}
	}
	st := l.Stats()
	if rej := l.Rejections(); len(rej) > 0 {
		t.Errorf("%d writes rejected with 4xx:\n%s", len(rej), strings.Join(rej[:min(len(rej), 10)], "\n"))
	}
	report(t, "kills (SIGKILL)", fmt.Sprint(kills), "")
	report(t, "acknowledged requests", fmt.Sprint(st.Acked), "")
	report(t, "acknowledged record writes", fmt.Sprint(st.AckedRecords), "")
	report(t, "answers lost (applied / not)", fmt.Sprintf("%d (%d / %d)", st.Uncertain, st.Applied, st.NotApplied), "")
	report(t, "record reads checked", fmt.Sprint(st.Checked), "")
	report(t, "mean restart to ready", (restart / time.Duration(kills)).Round(time.Millisecond).String(), "")
	report(t, "lost writes", fmt.Sprint(st.Lost), "0")
	report(t, "torn bulks/transactions", fmt.Sprint(st.Torn), "0")
	report(t, "writes present, never made", fmt.Sprint(st.Unexpected), "0")
	if st.Acked == 0 {
		t.Error("no write was acknowledged")
	}
	if st.Lost+st.Torn+st.Unexpected > 0 {
		t.Errorf("lost %d, torn %d, unexpected %d", st.Lost, st.Torn, st.Unexpected)
	}
}
