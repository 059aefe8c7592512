package consensus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/coppice-db/coppice/internal/lincheck"
)

// TestLinearizable runs a register workload — concurrent writes and
// linearizable reads of a few keys through random nodes — while the leader
// is killed and restarted, and checks the history with porcupine. A write
// that failed with Maybe set, or whose node closed under it, counts as
// unknown: it may or may not have applied.
func TestLinearizable(t *testing.T) {
	t.Parallel()
	run, kills := 3*time.Second, 2
	if !testing.Short() {
		run, kills = 30*time.Second, 12
	}
	seed := rand.Uint64()
	c := newCluster(t, 3, fastConfig())
	c.leader(testGroup, 10*time.Second)
	rec := lincheck.NewRecorder()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const clients, keys = 8, 4
	for cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(cl)))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ids := c.running()
				if len(ids) == 0 {
					continue
				}
				id := ids[rng.IntN(len(ids))]
				key := fmt.Sprintf("r%d", rng.IntN(keys))
				if rng.IntN(2) == 0 {
					linWrite(c, rec, cl, id, key, fmt.Sprintf("c%d-%d", cl, i))
				} else {
					linRead(c, rec, cl, id, key)
				}
			}
		}()
	}
	pause := run / time.Duration(2*kills+1)
	for range kills {
		time.Sleep(pause)
		old := c.leader(testGroup, 10*time.Second)
		c.stop(old)
		time.Sleep(pause)
		c.restart(old)
	}
	time.Sleep(pause)
	close(stop)
	wg.Wait()
	res := rec.Check(time.Minute, filepath.Join(t.TempDir(), "history.html"))
	t.Logf("seed %d: %d leader kills; %v; linearizable: %v", seed, kills, rec.Counts(), res)
	if res != porcupine.Ok {
		t.Fatalf("history not linearizable (%v); reproduce the workload with seed %d", res, seed)
	}
	if n := rec.Counts(); n.WritesOk == 0 || n.ReadsOk == 0 {
		t.Fatalf("workload made no progress: %v", n)
	}
}

// linWrite writes through node id and records the outcome.
func linWrite(c *testCluster, rec *lincheck.Recorder, client int, id uint64, key, value string) {
	h := c.nodes[id].h()
	if h == nil {
		return
	}
	op := rec.Write(client, key, value)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := h.Propose(ctx, testGroup, putCmd(key, value))
	var ue *UnavailableError
	switch {
	case err == nil:
		op.Ok("")
	case errors.As(err, &ue) && !ue.Maybe:
		op.Failed()
	default:
		op.Unknown()
	}
}

// linRead reads through node id, after its read barrier, and records it.
func linRead(c *testCluster, rec *lincheck.Recorder, client int, id uint64, key string) {
	h, kv := c.nodes[id].replica(testGroup)
	if h == nil || kv == nil {
		return
	}
	op := rec.Read(client, key)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := h.ReadIndex(ctx, testGroup); err != nil {
		op.Failed()
		return
	}
	v, _, err := kv.get(key)
	if err != nil {
		op.Failed()
		return
	}
	op.Ok(v)
}
