package consensus

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkPropose measures put throughput at 1, 16 and 64 concurrent
// proposers, in one run, two ways:
//
//	local: the toy state machine alone, concurrent puts group-committed with
//	       one synced Pebble write per batch (single-node mode);
//	raft:  a 3-node in-process group with synced logs, puts proposed on the
//	       leader.
//
// Each reports cmds/s; raft also cmds/update, the commands the leader's
// state machine applied per Update call. Compare raft against local at the
// same concurrency.
func BenchmarkPropose(b *testing.B) {
	for _, conc := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("c=%d/local", conc), func(b *testing.B) {
			s := &kvSM{dir: filepath.Join(b.TempDir(), "sm"), syncEach: true}
			if _, err := s.Open(nil); err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			lc := &localCommitter{sm: s}
			runProposers(b, conc, func(cmd []byte) error { return lc.apply(cmd) })
		})
		b.Run(fmt.Sprintf("c=%d/raft", conc), func(b *testing.B) {
			c := newCluster(b, 3, fastConfig())
			lead := c.leader(testGroup, 10*time.Second)
			h := c.nodes[lead].h()
			kv := c.nodes[lead].kv(testGroup)
			cmds0, updates0 := kv.commands.Load(), kv.updates.Load()
			runProposers(b, conc, func(cmd []byte) error {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err := h.Propose(ctx, testGroup, cmd)
				return err
			})
			if n := kv.updates.Load() - updates0; n > 0 {
				b.ReportMetric(float64(kv.commands.Load()-cmds0)/float64(n), "cmds/update")
			}
		})
	}
}

// runProposers runs b.N puts of 100-byte values from conc goroutines and
// reports cmds/s.
func runProposers(b *testing.B, conc int, put func([]byte) error) {
	var next atomic.Int64
	value := string(make([]byte, 100))
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := put(putCmd(fmt.Sprintf("k%d", i), value)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "cmds/s")
}

// localCommitter group-commits puts into a kvSM: whoever finds it idle
// applies everything queued with one synced write, while later callers
// queue behind, as the engine's single-node write path does.
type localCommitter struct {
	sm *kvSM

	mu    sync.Mutex
	queue []*localReq
	busy  bool
	index uint64
}

// localReq is one queued put.
type localReq struct {
	cmd  []byte
	done chan error
}

// apply applies cmd and returns once it is durable.
func (l *localCommitter) apply(cmd []byte) error {
	r := &localReq{cmd: cmd, done: make(chan error, 1)}
	l.mu.Lock()
	l.queue = append(l.queue, r)
	if l.busy {
		l.mu.Unlock()
		return <-r.done
	}
	l.busy = true
	for len(l.queue) > 0 {
		batch := l.queue
		l.queue = nil
		l.index++
		idx := l.index
		l.mu.Unlock()
		ents := make([]Entry, len(batch))
		for i, q := range batch {
			ents[i] = Entry{Index: idx, Cmd: q.cmd}
		}
		err := l.sm.Update(ents)
		for _, q := range batch {
			q.done <- err
		}
		l.mu.Lock()
	}
	l.busy = false
	l.mu.Unlock()
	return <-r.done
}
