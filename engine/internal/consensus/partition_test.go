package consensus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestPartition cuts one node off, first the leader and then a follower.
// The two others keep serving writes and linearizable reads; the cut-off
// node's Propose and ReadIndex fail with ErrUnavailable within their bound.
// After the cut heals, the node catches up, and a write it was asked for
// during the cut is absent: its leader never had a quorum for it.
func TestPartition(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, fastConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want := map[string]string{}
	n := 0
	put := func(id uint64) {
		t.Helper()
		n++
		k := fmt.Sprintf("k%d", n)
		if err := c.put(ctx, id, k, k); err != nil {
			t.Fatalf("put via %d: %v", id, err)
		}
		want[k] = k
	}
	const bound = time.Second
	for _, cutLeader := range []bool{true, false} {
		lead := c.leader(testGroup, 10*time.Second)
		cut := lead
		if !cutLeader {
			cut = lead%3 + 1
		}
		put(cut)
		var majority []uint64
		for id := uint64(1); id <= 3; id++ {
			if id != cut {
				majority = append(majority, id)
			}
		}
		c.net.Partition(c.nodes[cut].addr)
		newLead := c.leaderAmong(testGroup, majority, 10*time.Second)
		for _, id := range majority {
			put(id)
			if _, _, err := c.read(ctx, id, "k1"); err != nil {
				t.Fatalf("majority node %d: read: %v", id, err)
			}
		}

		bctx, bcancel := context.WithTimeout(ctx, bound)
		start := time.Now()
		_, err := c.nodes[cut].h().Propose(bctx, testGroup, putCmd("lost", "x"))
		took := time.Since(start)
		bcancel()
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("cut-off node %d: propose: %v, want ErrUnavailable", cut, err)
		}
		if took > bound+time.Second {
			t.Errorf("cut-off node %d: propose failed after %v, bound %v", cut, took, bound)
		}
		bctx, bcancel = context.WithTimeout(ctx, bound)
		start = time.Now()
		err = c.nodes[cut].h().ReadIndex(bctx, testGroup)
		rtook := time.Since(start)
		bcancel()
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("cut-off node %d: read index: %v, want ErrUnavailable", cut, err)
		}
		if rtook > bound+time.Second {
			t.Errorf("cut-off node %d: read index failed after %v, bound %v", cut, rtook, bound)
		}
		put(majority[0])

		c.net.Heal()
		c.leaderAmong(testGroup, []uint64{1, 2, 3}, 10*time.Second)
		c.mustHave(want)
		if _, ok, _ := c.nodes[cut].kv(testGroup).get("lost"); ok {
			t.Fatalf("a write proposed only on the cut-off node applied")
		}
		if slices.Contains(majority, newLead) != true {
			t.Fatalf("leader %d elected outside the majority %v", newLead, majority)
		}
		t.Logf("cut leader=%v: node %d cut off; leader %d → %d; minority propose failed after %v, read index after %v: %v",
			cutLeader, cut, lead, newLead, took.Round(time.Millisecond), rtook.Round(time.Millisecond), err)
	}
}
