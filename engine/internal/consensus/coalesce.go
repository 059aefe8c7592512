package consensus

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// maxInflight is how many combined entries of one group may be on their way
// through Raft at once. Commands that arrive meanwhile wait and go together
// in the next entry: group commit, at the cost of a queueing delay that only
// exists when the pipeline is full anyway.
const maxInflight = 4

// coalescer combines concurrent proposals to one group into few entries:
// N commands waiting together become one entry holding N commands, applied
// by one Update call, and get N results. The library already writes all the
// entries of one step with one fsync; combining them also saves the
// per-entry costs of the log store, the transport and request tracking.
type coalescer struct {
	h *Host
	g *group

	mu sync.Mutex
	// queue holds the commands not yet proposed; inflight counts entries
	// proposed and not yet answered. Guarded by mu.
	queue    []*waiter
	inflight int
	closed   bool
}

// waiter is one Propose call waiting in a coalescer.
type waiter struct {
	cmd      []byte
	deadline time.Time
	// taken is set, under the coalescer's mu, once cmd is in an entry;
	// proposed, shared by the waiters of that entry, once the entry has
	// been handed to Raft and so may apply.
	taken    bool
	proposed *atomic.Bool
	// done closes when res and err are set.
	done chan struct{}
	res  []byte
	err  error
}

// newCoalescer returns an idle coalescer for g.
func newCoalescer(h *Host, g *group) *coalescer { return &coalescer{h: h, g: g} }

// submit queues cmd, proposes a batch itself if the pipeline has room, and
// waits for cmd's result or ctx's end.
func (c *coalescer) submit(ctx context.Context, cmd []byte) ([]byte, error) {
	w := &waiter{cmd: cmd, deadline: deadline(ctx), done: make(chan struct{})}
	start := time.Now()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.queue = append(c.queue, w)
	batch := c.takeLocked()
	c.mu.Unlock()
	if batch != nil {
		c.run(batch)
	}
	select {
	case <-w.done:
		return w.res, w.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	maybe := w.taken && w.proposed.Load()
	if !w.taken {
		c.removeLocked(w)
	}
	c.mu.Unlock()
	return nil, c.h.unavailable(ctx, c.g, "propose", start, maybe, ctx.Err())
}

// takeLocked returns the next batch to propose, or nil when the queue is
// empty or the pipeline full. A batch is at most MaxBatchBytes of commands,
// and at least one command.
func (c *coalescer) takeLocked() []*waiter {
	if len(c.queue) == 0 || c.inflight >= maxInflight {
		return nil
	}
	n, size := 0, 0
	proposed := new(atomic.Bool)
	for n < len(c.queue) && (n == 0 || size+len(c.queue[n].cmd) <= c.h.cfg.MaxBatchBytes) {
		size += len(c.queue[n].cmd)
		c.queue[n].taken = true
		c.queue[n].proposed = proposed
		n++
	}
	batch := c.queue[:n:n]
	c.queue = append([]*waiter(nil), c.queue[n:]...)
	c.inflight++
	return batch
}

// removeLocked drops a waiter that gave up before its command was taken.
func (c *coalescer) removeLocked(w *waiter) {
	for i, q := range c.queue {
		if q == w {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			return
		}
	}
}

// run proposes batch and answers its waiters; then, while the queue is not
// empty, it hands the next batch to a new goroutine, so that the caller
// returns with its own result.
func (c *coalescer) run(batch []*waiter) {
	c.propose(batch)
	c.mu.Lock()
	c.inflight--
	next := c.takeLocked()
	c.mu.Unlock()
	if next != nil {
		go c.run(next)
	}
}

// propose proposes the batch as one entry, waiting up to the latest deadline
// of its waiters, and answers each of them.
func (c *coalescer) propose(batch []*waiter) {
	last := batch[0].deadline
	for _, w := range batch[1:] {
		if w.deadline.After(last) {
			last = w.deadline
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), last)
	defer cancel()
	var payload []byte
	if len(batch) == 1 {
		payload = encodeOne(batch[0].cmd)
	} else {
		cmds := make([][]byte, len(batch))
		for i, w := range batch {
			cmds[i] = w.cmd
		}
		payload = encodeBatch(cmds)
	}
	res, err := c.h.proposeEntry(ctx, c.g, payload, batch[0].proposed)
	var results [][]byte
	if err == nil && len(batch) > 1 {
		if results, err = decodeList(res); err == nil && len(results) != len(batch) {
			err = fmt.Errorf("%w: %d results for %d commands", errCorrupt, len(results), len(batch))
		}
	}
	for i, w := range batch {
		switch {
		case err != nil:
			w.err = err
		case results != nil:
			w.res = results[i]
		default:
			w.res = res
		}
		close(w.done)
	}
}

// close fails the commands still queued; entries in flight finish normally.
func (c *coalescer) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, w := range c.queue {
		w.err = fmt.Errorf("%w: group %d stopped before the command was proposed", ErrClosed, c.g.id)
		close(w.done)
	}
	c.queue = nil
}
