package consensus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/lni/dragonboat/v4"
)

// AddReplica makes replica, reachable at addr, a voting member of the
// group. It returns once the change is committed and applied here; the new
// member then has to be started on its node with StartGroup and Join, and
// catches up from the log or a snapshot. A replica id removed before is
// refused with ErrRejected. Adding a current member again changes nothing.
// Without a leader it waits up to ctx's deadline like Propose.
func (h *Host) AddReplica(ctx context.Context, group, replica uint64, addr string) error {
	return h.changeMembers(ctx, group, func(timeout time.Duration) (*dragonboat.RequestState, error) {
		return h.nh.RequestAddReplica(group, replica, addr, 0, timeout)
	})
}

// RemoveReplica takes replica out of the group. It returns once the change
// is committed and applied here. The removed replica stops taking part; its
// node should then stop it (StopGroup) and delete its data
// (RemoveGroupData). Removing the leader makes the others elect a new one.
func (h *Host) RemoveReplica(ctx context.Context, group, replica uint64) error {
	return h.changeMembers(ctx, group, func(timeout time.Duration) (*dragonboat.RequestState, error) {
		return h.nh.RequestDeleteReplica(group, replica, 0, timeout)
	})
}

// changeMembers runs one membership request until it is applied, refused or
// out of time. The library allows one pending change per group; a change
// made while another is pending is dropped and retried here.
func (h *Host) changeMembers(ctx context.Context, group uint64, req func(time.Duration) (*dragonboat.RequestState, error)) error {
	g, err := h.group(group)
	if err != nil {
		return err
	}
	ctx, cancel := h.bound(ctx)
	defer cancel()
	start := time.Now()
	for {
		rs, _, err := h.submit(ctx, g, "membership", start, req)
		if err != nil {
			return err
		}
		select {
		case r := <-rs.ResultC():
			rs.Release()
			switch {
			case r.Completed():
				return nil
			case r.Rejected():
				return ErrRejected
			case r.Dropped():
				if err := h.pause(ctx); err != nil {
					return h.unavailable(ctx, g, "membership", start, false, err)
				}
				continue
			case r.Timeout():
				return h.unavailable(ctx, g, "membership", start, true, context.DeadlineExceeded)
			case r.Terminated():
				return fmt.Errorf("%w: group %d stopped", ErrClosed, g.id)
			}
			return fmt.Errorf("consensus: group %d: membership change refused", g.id)
		case <-ctx.Done():
			return h.unavailable(ctx, g, "membership", start, true, ctx.Err())
		}
	}
}

// GroupInfo is this node's view of one group, for a status page. It is
// local knowledge, read without contacting the other nodes: a partitioned
// node may report a leader that is gone.
type GroupInfo struct {
	// Group and Replica identify the group and this node's replica in it.
	Group, Replica uint64
	// Leader is the replica id of the leader this node knows of, 0 if none;
	// Term is that leader's term.
	Leader, Term uint64
	// Members maps the voting members' replica ids to their addresses, as of
	// the last membership change this node applied.
	Members map[uint64]string
	// Applied is the index of the last entry this node's state machine
	// applied. Across nodes, the leader's Applied minus a follower's is the
	// follower's lag (the library does not expose the leader's view of its
	// followers).
	Applied uint64
	// LastIndex is the last index in this node's log; LastIndex − Applied
	// entries are waiting to be committed or applied here.
	LastIndex uint64
	// FirstIndex is the first entry this node's log still has: a
	// follower that misses an earlier one catches up from a snapshot.
	FirstIndex uint64
	// Ready is false until the replica has loaded its state and heard of
	// its membership.
	Ready bool
}

// GroupInfo returns this node's view of a started group.
func (h *Host) GroupInfo(group uint64) (GroupInfo, error) {
	g, err := h.group(group)
	if err != nil {
		return GroupInfo{}, err
	}
	for _, si := range h.shards() {
		if si.ShardID == group {
			return h.info(g, si), nil
		}
	}
	return GroupInfo{}, ErrUnknownGroup
}

// Groups returns this node's view of every started group, by group id.
func (h *Host) Groups() []GroupInfo {
	h.mu.Lock()
	groups := maps.Clone(h.groups)
	h.mu.Unlock()
	var out []GroupInfo
	for _, si := range h.shards() {
		if g, ok := groups[si.ShardID]; ok {
			out = append(out, h.info(g, si))
		}
	}
	return out
}

// shards returns the library's view of the replicas on this node, none
// once the host is closed.
func (h *Host) shards() []dragonboat.ShardInfo {
	nhi := h.nh.GetNodeHostInfo(dragonboat.NodeHostInfoOption{SkipLogInfo: true})
	if nhi == nil {
		return nil
	}
	return nhi.ShardInfoList
}

// info combines the library's shard info with the applied and log indexes.
func (h *Host) info(g *group, si dragonboat.ShardInfo) GroupInfo {
	gi := GroupInfo{
		Group: g.id, Replica: g.replica, Leader: si.LeaderID, Term: si.Term,
		Members: maps.Clone(si.Replicas), Ready: !si.Pending,
	}
	if g.sm != nil {
		gi.Applied = g.sm.applied.Load()
	}
	if lr, err := h.nh.GetLogReader(g.id); err == nil {
		gi.FirstIndex, gi.LastIndex = lr.GetRange()
	} else if !errors.Is(err, dragonboat.ErrLogDBNotCreatedOrClosed) {
		gi.Ready = false
	}
	return gi
}
