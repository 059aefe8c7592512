package consensus

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/coppice-db/coppice/internal/testnet"
)

// TestTCP runs a 3-node group over the library's own TCP transport on
// loopback ports, as the server will: writes through each node, a
// linearizable read on each.
func TestTCP(t *testing.T) {
	t.Parallel()
	addrs := map[uint64]string{}
	for id := uint64(1); id <= 3; id++ {
		addrs[id] = testnet.FreeAddr(t)
	}
	base := t.TempDir()
	hosts := map[uint64]*Host{}
	sms := map[uint64]*kvSM{}
	for id := uint64(1); id <= 3; id++ {
		cfg := fastConfig()
		cfg.NodeID, cfg.RaftAddr, cfg.Dir = id, addrs[id], filepath.Join(base, fmt.Sprint(id), "raft")
		h, err := NewHost(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		hosts[id] = h
		sms[id] = &kvSM{dir: filepath.Join(base, fmt.Sprint(id), "sm")}
		err = h.StartGroup(GroupConfig{Group: testGroup, Members: addrs,
			NewStateMachine: func(uint64, uint64) StateMachine { return sms[id] }})
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for id, h := range hosts {
		if _, err := h.Propose(ctx, testGroup, putCmd(fmt.Sprint(id), addrs[id])); err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
	}
	for id, h := range hosts {
		if err := h.ReadIndex(ctx, testGroup); err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		for k, want := range addrs {
			if got, _, err := sms[id].get(fmt.Sprint(k)); err != nil || got != want {
				t.Fatalf("node %d: key %d = %q, %v; want %q", id, k, got, err, want)
			}
		}
	}
}
