package consensus

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestProposeOnEveryNode writes through each node, leader and followers
// alike, sequentially and concurrently, and checks the results and that every
// node then reads every write.
func TestProposeOnEveryNode(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, fastConfig())
	c.leader(testGroup, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	want := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id := uint64(1); id <= 3; id++ {
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 10 {
					k, v := fmt.Sprintf("n%d-w%d-%d", id, w, i), fmt.Sprintf("v%d", i)
					res, err := c.nodes[id].h().Propose(ctx, testGroup, putCmd(k, v))
					if err != nil {
						t.Errorf("node %d: propose: %v", id, err)
						return
					}
					if len(res) < 8 || binary.BigEndian.Uint64(res) == 0 || string(res[8:]) != k {
						t.Errorf("node %d: result %q, want the applying index and %s", id, res, k)
					}
					mu.Lock()
					want[k] = v
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	c.mustHave(want)
	// A write acknowledged by one node is visible to a linearizable read on
	// any other at once.
	for id := uint64(1); id <= 3; id++ {
		if err := c.put(ctx, id, "last", fmt.Sprint(id)); err != nil {
			t.Fatal(err)
		}
		for other := uint64(1); other <= 3; other++ {
			got, _, err := c.read(ctx, other, "last")
			if err != nil || got != fmt.Sprint(id) {
				t.Fatalf("node %d read %q, %v after node %d wrote %d", other, got, err, id, id)
			}
		}
	}
	kv := c.nodes[1].kv(testGroup)
	t.Logf("%d commands in %d Update calls on node 1", kv.commands.Load(), kv.updates.Load())
}

// TestNoLeaderFailsWithinBound starts one replica of a three-member group:
// without a quorum there is no leader, and Propose and ReadIndex fail with
// the typed error once their context's deadline passes, not before and not
// long after.
func TestNoLeaderFailsWithinBound(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	net := NewNetwork()
	cfg.NodeID, cfg.RaftAddr, cfg.Dir, cfg.Network = 1, "solo1", t.TempDir(), net
	h, err := NewHost(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	dir := t.TempDir()
	err = h.StartGroup(GroupConfig{
		Group:           testGroup,
		Members:         map[uint64]string{1: "solo1", 2: "solo2", 3: "solo3"},
		NewStateMachine: func(uint64, uint64) StateMachine { return &kvSM{dir: dir} },
	})
	if err != nil {
		t.Fatal(err)
	}
	const bound = 400 * time.Millisecond
	check := func(op string, call func(context.Context) error) {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		start := time.Now()
		err := call(ctx)
		took := time.Since(start)
		var ue *UnavailableError
		if !errors.Is(err, ErrUnavailable) || !errors.As(err, &ue) {
			t.Fatalf("%s: %v, want ErrUnavailable", op, err)
		}
		if ue.Maybe {
			t.Errorf("%s: Maybe set, but no leader ever took the command", op)
		}
		if ue.RetryAfter < time.Second {
			t.Errorf("%s: RetryAfter %v", op, ue.RetryAfter)
		}
		if took < bound-20*time.Millisecond || took > bound+time.Second {
			t.Errorf("%s failed after %v, bound %v", op, took, bound)
		}
		t.Logf("%s: %v", op, err)
	}
	check("propose", func(ctx context.Context) error {
		_, err := h.Propose(ctx, testGroup, putCmd("k", "v"))
		return err
	})
	check("read index", func(ctx context.Context) error { return h.ReadIndex(ctx, testGroup) })
	if _, err := h.Propose(context.Background(), 99, putCmd("k", "v")); !errors.Is(err, ErrUnknownGroup) {
		t.Errorf("unknown group: %v", err)
	}
}

// TestUnavailableMaybe checks that a call that gives up because an inner
// call did reports its own Maybe: a proposal whose read barrier found no
// leader may still apply, although the barrier itself changed nothing.
func TestUnavailableMaybe(t *testing.T) {
	h := &Host{}
	g := &group{id: testGroup}
	inner := &UnavailableError{Group: testGroup, Op: "read index"}
	err := h.unavailable(context.Background(), g, "propose", time.Now(), true, fmt.Errorf("wrapped: %w", inner))
	var ue *UnavailableError
	if !errors.As(err, &ue) || !ue.Maybe || ue.Op != "propose" {
		t.Fatalf("%#v, want a propose UnavailableError with Maybe", err)
	}
	if err := h.unavailable(context.Background(), g, "propose", time.Now(), true, context.Canceled); err != context.Canceled {
		t.Fatalf("canceled: %v", err)
	}
}
