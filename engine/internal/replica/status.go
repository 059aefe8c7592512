package replica

import (
	"slices"
)

// GroupStatus is this node's view of one group, read locally: a node cut
// off from the others may report a leader that is gone.
type GroupStatus struct {
	// Group is the group's id; Database is its database, 0 for the meta
	// group, and Name the database's name.
	Group    uint64
	Database uint32
	Name     string
	// Replica is this node's replica id in the group.
	Replica uint64
	// Leader is the leader's replica id, 0 when none is known, and
	// LeaderNode the node it runs on.
	Leader, LeaderNode uint64
	Term               uint64
	// Applied is the index of the last entry applied here; FirstIndex and
	// LastIndex are the first and last in this node's log.
	Applied, FirstIndex, LastIndex uint64
	// Members are the group's voting members by replica id, each with its
	// node.
	Members map[uint64]uint64
}

// Status is this node's view of the cluster.
type Status struct {
	Node     uint64
	RaftAddr string
	APIAddr  string
	// Groups are the groups with a replica here, the meta group first.
	Groups []GroupStatus
	// Recovered counts the snapshots this node's replicas caught up from.
	Recovered uint64
}

// Status returns this node's view of its groups.
func (n *Node) Status() Status {
	st := Status{Node: n.cfg.NodeID, RaftAddr: n.cfg.RaftAddr, APIAddr: n.cfg.APIAddr, Recovered: n.recovered.Load()}
	nodeOf := map[uint32]map[uint64]uint64{} // database → replica → node
	names := map[uint32]string{}
	for _, p := range n.cat.Placements() {
		names[p.ID] = p.Name
		m := map[uint64]uint64{}
		for _, r := range p.Replicas {
			m[r.ID] = r.Node
		}
		nodeOf[p.ID] = m
	}
	for _, gi := range n.host.Groups() {
		db := DatabaseOf(gi.Group)
		gs := GroupStatus{Group: gi.Group, Database: db, Name: names[db], Replica: gi.Replica, Leader: gi.Leader,
			Term: gi.Term, Applied: gi.Applied, FirstIndex: gi.FirstIndex, LastIndex: gi.LastIndex, Members: map[uint64]uint64{}}
		for id := range gi.Members {
			if db == 0 {
				gs.Members[id] = id
			} else {
				gs.Members[id] = nodeOf[db][id]
			}
		}
		if gi.Leader != 0 {
			gs.LeaderNode = gs.Members[gi.Leader]
			if db == 0 {
				gs.LeaderNode = gi.Leader
			}
		}
		st.Groups = append(st.Groups, gs)
	}
	slices.SortFunc(st.Groups, func(a, b GroupStatus) int {
		switch {
		case a.Group < b.Group:
			return -1
		case a.Group > b.Group:
			return 1
		}
		return 0
	})
	return st
}
