package consensus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lni/dragonboat/v4"
)

// Propose replicates cmd through the group and returns the result the
// state machine's Update gave it on this node. It returns only after a
// majority of the group has the command in its log and this node has
// applied it; a follower passes the command to the leader and answers with
// its own result once it applies the entry, which Update's determinism makes
// equal to the leader's. Concurrent proposals to one group share log writes
// and Update calls: the library writes and applies all that is ready at once.
//
// While the group has no leader, Propose waits for one up to ctx's deadline
// (Config.MaxWait when ctx has none) and then fails with an
// *UnavailableError; its Maybe field says whether the command could still
// apply. The caller owns the returned slice; cmd may be reused at once.
func (h *Host) Propose(ctx context.Context, group uint64, cmd []byte) ([]byte, error) {
	g, err := h.group(group)
	if err != nil {
		return nil, err
	}
	if len(cmd)+16 > h.cfg.MaxEntryBytes {
		return nil, ErrTooLarge
	}
	ctx, cancel := h.bound(ctx)
	defer cancel()
	return h.proposeEntry(ctx, g, encodeOne(cmd))
}

// proposeEntry proposes one framed entry and waits for it to apply here. It
// proposes again only when the library reports the entry dropped before it
// reached any log, so a command never applies twice.
//
// Some commands get no answer from the library at all: one passed on to a
// leader that then fails or that drops it, one whose message to the leader
// is lost (the library's transport drops messages to a node for a while
// after a failed connection), and one proposed on a follower that catches
// up from a snapshot already holding it (applied, but not here, so no
// result). proposeEntry notices each case and gives up at once, with Maybe
// set, instead of waiting for its deadline:
//   - a later proposal made through this node has applied first: the
//     library passes a node's proposals on in order and the leader appends
//     them in order, so this one is not in the log before it;
//   - the leader's term changed or the replica recovered from a snapshot,
//     and after a read barrier the command has still not applied.
func (h *Host) proposeEntry(ctx context.Context, g *group, payload []byte) ([]byte, error) {
	start := time.Now()
	for {
		var p proposal
		rs, term, err := h.submit(ctx, g, "propose", start, func(timeout time.Duration) (*dragonboat.RequestState, error) {
			p.rec = g.sm.recovered.Load()
			p.before = h.clock()
			rs, err := h.nh.Propose(g.session, payload, timeout)
			p.after = h.clock()
			return rs, err
		})
		if err != nil {
			return nil, err
		}
		p.term = term
		res, again, err := h.await(ctx, g, rs, p, start)
		if !again {
			return res, err
		}
	}
}

// proposal describes one proposal in flight: the leader's term and the
// count of snapshot recoveries when it was made, and the host's clock just
// before and just after the library queued it.
type proposal struct {
	term, rec     uint64
	before, after int64
}

// applied is the newest proposal made through this node known to have
// applied here, by its term and the clock before it was queued.
type applied struct {
	term   uint64
	before int64
}

// markApplied records that p applied, if it is newer than the mark.
func (g *group) markApplied(p proposal) {
	for {
		old := g.lastApplied.Load()
		if old != nil && (old.term > p.term || old.term == p.term && old.before >= p.before) {
			return
		}
		if g.lastApplied.CompareAndSwap(old, &applied{term: p.term, before: p.before}) {
			return
		}
	}
}

// overtaken reports whether a proposal queued after p has applied.
func (g *group) overtaken(p proposal) bool {
	last := g.lastApplied.Load()
	return last != nil && (last.term > p.term || last.term == p.term && last.before > p.after)
}

// await waits for a proposal's outcome; again means it was dropped and may
// be proposed again.
func (h *Host) await(ctx context.Context, g *group, rs *dragonboat.RequestState, p proposal, start time.Time) (res []byte, again bool, err error) {
	tick := time.NewTicker(h.cfg.Tick)
	defer tick.Stop()
	// outcome answers with a result that has arrived.
	outcome := func(r dragonboat.RequestResult) (res []byte, again bool, err error) {
		rs.Release()
		switch {
		case r.Completed():
			g.markApplied(p)
			return r.GetResult().Data, false, nil
		case r.Dropped():
			return nil, true, nil
		case r.Timeout():
			return nil, false, h.unavailable(ctx, g, "propose", start, true, context.DeadlineExceeded)
		case r.Terminated():
			return nil, false, fmt.Errorf("%w: group %d stopped while proposing (outcome unknown)", ErrClosed, g.id)
		}
		return nil, false, fmt.Errorf("consensus: group %d: proposal refused", g.id)
	}
	// gaveUp answers with the result if it arrived after all, else with
	// an outcome unknown.
	gaveUp := func() ([]byte, bool, error) {
		select {
		case r := <-rs.ResultC():
			return outcome(r)
		default:
			return nil, false, h.unavailable(ctx, g, "propose", start, true, context.DeadlineExceeded)
		}
	}
	barrier := false
	for {
		select {
		case r := <-rs.ResultC():
			return outcome(r)
		case <-ctx.Done():
			return nil, false, h.unavailable(ctx, g, "propose", start, true, ctx.Err())
		case <-tick.C:
			if g.overtaken(p) {
				return gaveUp()
			}
			if barrier {
				continue
			}
			_, term, ok, err := h.nh.GetLeaderID(g.id)
			if err != nil || !ok || (term <= p.term && g.sm.recovered.Load() == p.rec) {
				continue
			}
			barrier = true
			if err := h.ReadIndex(ctx, g.id); err != nil {
				return nil, false, h.unavailable(ctx, g, "propose", start, true, err)
			}
			return gaveUp()
		}
	}
}

// ReadIndex is a linearizable read barrier: when it returns nil, this
// node's state machine has applied every entry committed before the call
// began, so a local read sees every write acknowledged before ReadIndex was
// called, on any node. It confirms with a majority that the leader still
// leads, then waits for this node to apply up to the leader's commit index.
// While the group has no leader it waits up to ctx's deadline, then fails
// with an *UnavailableError.
//
// The library sends a read request to the leader once and never again: a
// request lost on the way, or dropped by a leader that just took over, gets
// no answer. Reads change nothing, so ReadIndex asks again after two
// election timeouts, then four, and so on, until its deadline.
func (h *Host) ReadIndex(ctx context.Context, group uint64) error {
	g, err := h.group(group)
	if err != nil {
		return err
	}
	ctx, cancel := h.bound(ctx)
	defer cancel()
	start := time.Now()
	attempt := 2 * h.cfg.electionTimeout()
	for {
		rs, _, err := h.submit(ctx, g, "read index", start, func(timeout time.Duration) (*dragonboat.RequestState, error) {
			return h.nh.ReadIndex(g.id, min(attempt, timeout))
		})
		if err != nil {
			return err
		}
		select {
		case r := <-rs.ResultC():
			rs.Release()
			switch {
			case r.Completed():
				return nil
			case r.Dropped():
				continue
			case r.Timeout():
				attempt *= 2
				continue
			case r.Terminated():
				return fmt.Errorf("%w: group %d stopped", ErrClosed, g.id)
			}
			return fmt.Errorf("consensus: group %d: read index refused", g.id)
		case <-ctx.Done():
			return h.unavailable(ctx, g, "read index", start, false, ctx.Err())
		}
	}
}

// Leader returns the group's leader as this node last heard of it: its
// replica id, and false when no leader is known.
func (h *Host) Leader(group uint64) (uint64, bool) {
	id, _, ok, err := h.nh.GetLeaderID(group)
	return id, ok && err == nil && id != 0
}

// submit waits for a leader, then makes a request with req, given the time
// left; while the library turns the request away for now (busy, not ready)
// it tries again each tick. It returns the request and the leader's term
// when it was made.
func (h *Host) submit(ctx context.Context, g *group, op string, start time.Time,
	req func(timeout time.Duration) (*dragonboat.RequestState, error)) (*dragonboat.RequestState, uint64, error) {
	for {
		term, err := h.waitLeader(ctx, g)
		if err != nil {
			return nil, 0, h.unavailable(ctx, g, op, start, false, err)
		}
		rs, err := req(time.Until(deadline(ctx)))
		if err == nil {
			return rs, term, nil
		}
		if !retryable(err) {
			return nil, 0, h.mapErr(ctx, g, op, start, err)
		}
		if err := h.pause(ctx); err != nil {
			return nil, 0, h.unavailable(ctx, g, op, start, false, err)
		}
	}
}

// waitLeader returns the term once this node knows a leader of g, or ctx's
// error.
func (h *Host) waitLeader(ctx context.Context, g *group) (uint64, error) {
	for {
		id, term, ok, err := h.nh.GetLeaderID(g.id)
		if err != nil {
			return 0, err
		}
		if ok && id != 0 {
			return term, nil
		}
		if err := h.pause(ctx); err != nil {
			return 0, err
		}
	}
}

// pause waits one tick, or returns ctx's error first.
func (h *Host) pause(ctx context.Context) error {
	t := time.NewTimer(h.cfg.Tick)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retryable reports errors that leave nothing behind: the request was not
// accepted, and the same request may be made again.
func retryable(err error) bool {
	return errors.Is(err, dragonboat.ErrSystemBusy) || errors.Is(err, dragonboat.ErrShardNotReady) ||
		errors.Is(err, dragonboat.ErrShardNotInitialized)
}

// unavailable builds the error for a call that ran out of time, also when
// cause is an inner call's *UnavailableError (maybe is this call's own), or
// returns cause itself when the caller canceled ctx or the host or group
// went away.
func (h *Host) unavailable(ctx context.Context, g *group, op string, start time.Time, maybe bool, cause error) error {
	switch {
	case errors.Is(cause, context.Canceled):
		return cause
	case errors.Is(cause, context.DeadlineExceeded), errors.Is(cause, dragonboat.ErrTimeoutTooSmall),
		errors.Is(cause, ErrUnavailable):
		return &UnavailableError{Group: g.id, Op: op, Waited: time.Since(start), Maybe: maybe, RetryAfter: h.RetryAfter()}
	}
	return h.mapErr(ctx, g, op, start, cause)
}

// mapErr translates the library's immediate errors into this package's.
func (h *Host) mapErr(ctx context.Context, g *group, op string, start time.Time, err error) error {
	switch {
	case errors.Is(err, dragonboat.ErrTimeoutTooSmall), errors.Is(err, dragonboat.ErrTimeout):
		return h.unavailable(ctx, g, op, start, false, context.DeadlineExceeded)
	case errors.Is(err, dragonboat.ErrPayloadTooBig):
		return ErrTooLarge
	case errors.Is(err, dragonboat.ErrShardNotFound):
		return ErrUnknownGroup
	case errors.Is(err, dragonboat.ErrClosed), errors.Is(err, dragonboat.ErrShardClosed):
		return ErrClosed
	case errors.Is(err, dragonboat.ErrRejected):
		return ErrRejected
	}
	return fmt.Errorf("consensus: group %d: %s: %w", g.id, op, err)
}

// deadline returns ctx's deadline; bound has given every context one.
func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}
