package consensus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// writers proposes unique writes through random running nodes until stop
// closes, and records the acknowledged ones.
type writers struct {
	c     *testCluster
	mu    sync.Mutex
	acked map[string]string
	fails atomic.Int64
	wg    sync.WaitGroup
	stop  chan struct{}
}

// startWriters starts n writer goroutines.
func startWriters(c *testCluster, n int, seed uint64) *writers {
	w := &writers{c: c, acked: map[string]string{}, stop: make(chan struct{})}
	for i := range n {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for j := 0; ; j++ {
				select {
				case <-w.stop:
					return
				default:
				}
				ids := c.running()
				if len(ids) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				id := ids[rng.IntN(len(ids))]
				h := c.nodes[id].h()
				if h == nil {
					continue
				}
				k, v := fmt.Sprintf("w%d-%d", i, j), fmt.Sprintf("%d@%d", j, id)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, err := h.Propose(ctx, testGroup, putCmd(k, v))
				cancel()
				if err != nil {
					if !errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrUnknownGroup) {
						c.t.Errorf("node %d: unexpected error: %v", id, err)
					}
					w.fails.Add(1)
					continue
				}
				w.mu.Lock()
				w.acked[k] = v
				w.mu.Unlock()
			}
		}()
	}
	return w
}

// count returns the number of acknowledged writes so far.
func (w *writers) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// finish stops the writers and returns the acknowledged writes.
func (w *writers) finish() map[string]string {
	close(w.stop)
	w.wg.Wait()
	return w.acked
}

// waitProgress waits until n more writes are acknowledged.
func (w *writers) waitProgress(t testing.TB, n int, within time.Duration) {
	t.Helper()
	target := w.count() + n
	end := time.Now().Add(within)
	for w.count() < target {
		if time.Now().After(end) {
			t.Fatalf("writes stalled: %d acknowledged, waiting for %d", w.count(), target)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLeaderKill closes the leader's host while writers propose through
// every node, sees a new leader elected among the others and writes go on,
// restarts the old leader, and checks that no acknowledged write is lost on
// any node. The long form kills the leader 8 times.
func TestLeaderKill(t *testing.T) {
	t.Parallel()
	kills := 1
	if !testing.Short() {
		kills = 8
	}
	seed := rand.Uint64()
	c := newCluster(t, 3, fastConfig())
	c.leader(testGroup, 10*time.Second)
	w := startWriters(c, 8, seed)
	var failover []time.Duration
	for range kills {
		w.waitProgress(t, 100, 10*time.Second)
		old := c.leader(testGroup, 10*time.Second)
		start := time.Now()
		c.stop(old)
		others := c.running()
		nl := c.leaderAmong(testGroup, others, 10*time.Second)
		failover = append(failover, time.Since(start))
		if nl == old {
			t.Fatalf("node %d still leads after it stopped", old)
		}
		w.waitProgress(t, 100, 10*time.Second)
		c.restart(old)
	}
	w.waitProgress(t, 100, 10*time.Second)
	acked := w.finish()
	c.mustHave(acked)
	t.Logf("seed %d: %d kills, %d writes acknowledged and present on all 3 nodes, %d failed, 0 lost; new leader after %v",
		seed, kills, len(acked), w.fails.Load(), failover)
}

// TestSnapshotCatchUp stops a follower, writes past several snapshots so the
// log it needs is compacted away, restarts it, and checks that it caught up
// from a snapshot streamed by the leader.
func TestSnapshotCatchUp(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.SnapshotEvery, cfg.KeepEntries = 20, 5
	c := newCluster(t, 3, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lead := c.leader(testGroup, 10*time.Second)
	lag := uint64(1)
	if lag == lead {
		lag = 2
	}
	want := map[string]string{}
	put := func(n int) {
		for i := range n {
			k := fmt.Sprintf("k%d", len(want))
			if err := c.put(ctx, lead, k, fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
			want[k] = fmt.Sprint(i)
		}
	}
	put(10)
	c.stop(lag)
	put(150)
	c.restartWith(lag, GroupConfig{Group: testGroup, Members: c.members})
	put(10)
	c.mustHave(want)
	if n := c.nodes[lag].kv(testGroup).recovered.Load(); n == 0 {
		t.Fatalf("node %d caught up without a snapshot", lag)
	}
	info, err := c.nodes[lag].h().GroupInfo(testGroup)
	if err != nil {
		t.Fatal(err)
	}
	if info.Applied < 170 || info.Leader == 0 || len(info.Members) != 3 {
		t.Fatalf("group info after catch-up: %+v", info)
	}
	t.Logf("node %d recovered from %d snapshot(s); leader streamed %d; %+v", lag,
		c.nodes[lag].kv(testGroup).recovered.Load(), c.nodes[lead].kv(testGroup).saved.Load(), info)
}

// TestAddRemoveReplica adds a fourth node to a running group, which catches
// up from a snapshot, removes an original member and deletes its data, and
// checks that the removed replica id cannot come back.
func TestAddRemoveReplica(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.SnapshotEvery, cfg.KeepEntries = 20, 5
	c := newCluster(t, 3, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.leader(testGroup, 10*time.Second)
	want := map[string]string{}
	put := func(via uint64, n int) {
		for range n {
			k := fmt.Sprintf("k%d", len(want))
			if err := c.put(ctx, via, k, k); err != nil {
				t.Fatalf("put via %d: %v", via, err)
			}
			want[k] = k
		}
	}
	put(3, 60)
	c.addNode(4)
	if err := c.nodes[2].h().AddReplica(ctx, testGroup, 4, "node4"); err != nil {
		t.Fatal(err)
	}
	c.startGroup(4, GroupConfig{Group: testGroup, Join: true})
	c.caughtUp(4, 30*time.Second)
	put(4, 20)
	c.mustHave(want)
	if c.nodes[4].kv(testGroup).recovered.Load() == 0 {
		t.Errorf("the new replica caught up without a snapshot")
	}
	c.stop(4)
	c.restartWith(4, GroupConfig{Group: testGroup, Join: true})
	c.caughtUp(4, 30*time.Second)

	if err := c.nodes[4].h().RemoveReplica(ctx, testGroup, 1); err != nil {
		t.Fatal(err)
	}
	h1 := c.nodes[1].h()
	if err := h1.StopGroup(testGroup); err != nil {
		t.Fatal(err)
	}
	if err := h1.RemoveGroupData(ctx, testGroup, 1); err != nil {
		t.Fatal(err)
	}
	c.stop(1)
	c.leaderAmong(testGroup, []uint64{2, 3, 4}, 10*time.Second)
	put(2, 20)
	c.mustHave(want)
	info, err := c.nodes[3].h().GroupInfo(testGroup)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.Members[1]; ok || len(info.Members) != 3 || info.Leader == 1 || info.Leader == 0 {
		t.Fatalf("members after removing 1: %+v", info)
	}
	if err := c.nodes[2].h().AddReplica(ctx, testGroup, 1, "node1"); !errors.Is(err, ErrRejected) {
		t.Fatalf("re-adding removed replica 1: %v, want ErrRejected", err)
	}
	t.Logf("after add 4 and remove 1: %+v", info)
}

// TestProposeWhileCatchingUp proposes through a follower that was cut off
// while the log it misses was compacted: when the cut heals, the follower
// catches up from a snapshot and the proposal completes, or, if the
// snapshot already held it, fails at once with Maybe set — it does not wait
// for its deadline either way.
func TestProposeWhileCatchingUp(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.SnapshotEvery, cfg.KeepEntries = 20, 5
	c := newCluster(t, 3, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lead := c.leader(testGroup, 10*time.Second)
	lag := lead%3 + 1
	c.net.Partition(c.nodes[lag].addr)
	for i := range 100 {
		if err := c.put(ctx, lead, fmt.Sprintf("k%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
		defer pcancel()
		_, err := c.nodes[lag].h().Propose(pctx, testGroup, putCmd("late", "v"))
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	c.net.Heal()
	err := <-done
	took := time.Since(start)
	var ue *UnavailableError
	if err != nil && !(errors.As(err, &ue) && ue.Maybe) {
		t.Fatalf("propose on the catching-up follower: %v", err)
	}
	if took > 10*time.Second {
		t.Fatalf("propose on the catching-up follower took %v", took)
	}
	c.mustHave(map[string]string{"k99": "v"})
	if err == nil {
		c.mustHave(map[string]string{"late": "v"})
	}
	t.Logf("follower %d: propose answered after %v (%v); %d snapshot(s) recovered", lag, took.Round(time.Millisecond), err,
		c.nodes[lag].kv(testGroup).recovered.Load())
}
