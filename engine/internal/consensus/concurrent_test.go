package consensus

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestConcurrentResults sends 64 concurrent proposals through the leader
// and through a follower and checks that each proposer got its own
// command's result back, and that the state machine applied them in fewer
// Update calls than commands.
func TestConcurrentResults(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, fastConfig())
	lead := c.leader(testGroup, 10*time.Second)
	follower := lead%3 + 1
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kv := c.nodes[lead].kv(testGroup)
	cmds0, updates0 := kv.commands.Load(), kv.updates.Load()
	want := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range []uint64{lead, follower} {
		for p := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 5 {
					k := fmt.Sprintf("n%d-p%d-%d", id, p, i)
					res, err := c.nodes[id].h().Propose(ctx, testGroup, putCmd(k, k))
					if err != nil {
						t.Errorf("propose %s: %v", k, err)
						return
					}
					if len(res) < 8 || string(res[8:]) != k || binary.BigEndian.Uint64(res) == 0 {
						t.Errorf("propose %s: got the result %q", k, res)
					}
					mu.Lock()
					want[k] = k
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
	cmds, updates := kv.commands.Load()-cmds0, kv.updates.Load()-updates0
	if cmds != int64(len(want)) || updates >= cmds {
		t.Fatalf("%d commands in %d Update calls: not batched", cmds, updates)
	}
	t.Logf("%d commands in %d Update calls (%.1f per call)", cmds, updates, float64(cmds)/float64(updates))
}

// TestProposeTooLarge refuses a command larger than an entry may be and
// takes one just below.
func TestProposeTooLarge(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.MaxEntryBytes = 1 << 20
	c := newCluster(t, 3, cfg)
	lead := c.leader(testGroup, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.nodes[lead].h().Propose(ctx, testGroup, putCmd("big", string(make([]byte, 1<<20)))); err != ErrTooLarge {
		t.Fatalf("1 MiB command: %v, want ErrTooLarge", err)
	}
	big := string(make([]byte, 1<<20-100))
	if err := c.put(ctx, lead, "big", big); err != nil {
		t.Fatalf("1 MiB - 100 B command: %v", err)
	}
	c.mustHave(map[string]string{"big": big})
}
