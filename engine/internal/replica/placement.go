package replica

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/consensus"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// The catalog says where each database's replicas are (its placement);
// every node makes what runs match it, in reconcile: it starts the groups
// of the databases placed on it and stops and deletes those no longer
// placed on it, and the leader of each group adds and removes members to
// match. Changing a placement is therefore only a catalog command, and a
// change interrupted by a crash completes when the nodes come back.

// reconcileLoop reconciles whenever the catalog changes, and every second
// to retry what failed.
func (n *Node) reconcileLoop() {
	defer n.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		n.reconcile()
		select {
		case <-n.stop:
			return
		case <-n.kick:
		case <-tick.C:
		}
	}
}

// reconcile makes the groups that run here, and the members of those this
// node leads, match the catalog's placements.
func (n *Node) reconcile() {
	self := n.cfg.NodeID
	placed := map[uint32]catalog.Database{}
	mine := map[uint32]catalog.Replica{}
	for _, p := range n.cat.Placements() {
		placed[p.ID] = p
		for _, r := range p.Replicas {
			if r.Node == self && !r.Removed {
				mine[p.ID] = r
			}
		}
	}
	n.mu.Lock()
	running := maps.Clone(n.groups)
	n.mu.Unlock()
	for _, db := range sortedKeys(running) {
		if r, ok := mine[db]; !ok || r.ID != running[db] {
			n.stopGroup(db, running[db], placed[db])
		}
	}
	for _, db := range sortedKeys(mine) {
		if _, ok := running[db]; !ok || running[db] != mine[db].ID {
			n.startGroup(placed[db], mine[db])
		}
	}
	for _, db := range sortedKeys(mine) {
		n.fixMembers(placed[db], mine[db])
		n.fixStart(placed[db], mine[db])
	}
}

// fixStart starts p's database with its first branch when this node's
// replica r leads its group and the database has none yet: the node that
// created it died before it could. Starting it twice is harmless: the
// second InitDatabase fails.
func (n *Node) fixStart(p catalog.Database, r catalog.Replica) {
	f := p.First
	if f == nil {
		return // a database that comes from a backup, or of a single server
	}
	if leader, ok := n.host.Leader(groupOf(p.ID)); !ok || leader != r.ID {
		return
	}
	if d := n.ap.DB(p.ID); d == nil || d.State().Branches.Len() > 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := n.Propose(ctx, apply.OnDatabase(p.ID, &apply.InitDatabase{Branch: f.Name, PublicID: f.PublicID, Now: f.Now, Metadata: f.Metadata}))
	if err != nil && model.CodeOf(err) != model.CodeAlreadyExists {
		n.log.Warn("cannot start a database with its first branch", "database", p.Name, "err", err)
	}
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[uint32]V) []uint32 {
	out := make([]uint32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// startGroup starts this node's replica r of p's group: a founding member
// with the founding members, or a member added later, which joins.
func (n *Node) startGroup(p catalog.Database, r catalog.Replica) {
	gc := consensus.GroupConfig{Group: groupOf(p.ID), Replica: r.ID, NewStateMachine: n.newStateMachine(p.ID), Join: r.Join}
	if !r.Join {
		gc.Members = map[uint64]string{}
		for _, f := range p.Replicas {
			if !f.Join {
				gc.Members[f.ID] = f.Addr
			}
		}
	}
	err := n.host.StartGroup(gc)
	if err != nil && !errors.Is(err, consensus.ErrGroupExists) {
		n.log.Error("cannot start a database's replica", "database", p.Name, "group", gc.Group, "err", err)
		return
	}
	n.mu.Lock()
	n.groups[p.ID] = r.ID
	n.mu.Unlock()
}

// stopGroup stops this node's replica of database db, no longer placed
// here, and deletes its log and its copy of the database, unless the
// database is placed here again under another replica id (then only the
// old replica's log goes).
func (n *Node) stopGroup(db uint32, replica uint64, p catalog.Database) {
	if err := n.host.StopGroup(groupOf(db)); err != nil && !errors.Is(err, consensus.ErrUnknownGroup) {
		n.log.Error("cannot stop a database's replica", "group", groupOf(db), "err", err)
		return
	}
	n.mu.Lock()
	delete(n.groups, db)
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.host.RemoveGroupData(ctx, groupOf(db), replica); err != nil {
		n.log.Warn("cannot delete a removed replica's log", "group", groupOf(db), "err", err)
	}
	if err := n.ap.ForgetDatabase(db); err != nil {
		n.log.Error("cannot delete a removed replica's data", "database", p.Name, "err", err)
	}
}

// fixMembers makes the members of p's group match its placement, when this
// node's replica r leads the group: it adds the replicas placed but not
// members and removes those marked removed.
func (n *Node) fixMembers(p catalog.Database, r catalog.Replica) {
	group := groupOf(p.ID)
	if leader, ok := n.host.Leader(group); !ok || leader != r.ID {
		return
	}
	gi, err := n.host.GroupInfo(group)
	if err != nil || !gi.Ready {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, x := range p.Replicas {
		_, member := gi.Members[x.ID]
		switch {
		case !x.Removed && !member:
			err = n.host.AddReplica(ctx, group, x.ID, x.Addr)
		case x.Removed && member:
			err = n.host.RemoveReplica(ctx, group, x.ID)
		default:
			continue
		}
		if err != nil {
			n.log.Warn("cannot change a database group's members", "database", p.Name, "replica", x.ID, "err", err)
			return
		}
	}
}

// Members returns the cluster's nodes as the meta group knows them: node id
// → Raft address.
func (n *Node) Members() map[uint64]string {
	gi, err := n.host.GroupInfo(MetaGroup)
	if err != nil {
		return nil
	}
	return gi.Members
}

// Placement returns the replicas of a new database: this node's, then the
// members with the fewest replicas, up to Config.Replicas. Right after the
// node starts, the library may not know the meta group's members yet: a
// placement made then would leave every other node out, so Placement
// waits for them as long as ctx lasts.
func (n *Node) Placement(ctx context.Context) ([]catalog.Replica, error) {
	members, err := n.knownMembers(ctx)
	if err != nil {
		return nil, err
	}
	load := map[uint64]int{}
	for _, p := range n.cat.Placements() {
		for _, r := range p.Replicas {
			if !r.Removed {
				load[r.Node]++
			}
		}
	}
	var others []uint64
	for id := range members {
		if id != n.cfg.NodeID {
			others = append(others, id)
		}
	}
	sort.Slice(others, func(i, j int) bool {
		a, b := others[i], others[j]
		return load[a] < load[b] || load[a] == load[b] && a < b
	})
	out := []catalog.Replica{{ID: 1, Node: n.cfg.NodeID, Addr: n.cfg.RaftAddr}}
	for _, id := range others {
		if len(out) == n.cfg.Replicas {
			break
		}
		out = append(out, catalog.Replica{ID: uint64(len(out) + 1), Node: id, Addr: members[id]})
	}
	return out, nil
}

// knownMembers returns Members once the library knows them, waiting up to
// ctx's deadline.
func (n *Node) knownMembers(ctx context.Context) (map[uint64]string, error) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if gi, err := n.host.GroupInfo(MetaGroup); err == nil && gi.Ready && len(gi.Members) > 0 {
			return gi.Members, nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, fmt.Errorf("the cluster's members are not known yet: %w", consensus.ErrUnavailable)
		}
	}
}

// AddNode makes node id, reachable at raftAddr and started to join, a
// member of the cluster, and gives it a replica of every database with
// fewer than Config.Replicas.
func (n *Node) AddNode(ctx context.Context, id uint64, raftAddr string) error {
	if id == 0 || raftAddr == "" {
		return model.Invalidf("a node needs an id ≥ 1 and a raft address")
	}
	actx, cancel := n.bound(ctx)
	defer cancel()
	if err := n.host.AddReplica(actx, MetaGroup, id, raftAddr); err != nil {
		if errors.Is(err, consensus.ErrRejected) {
			return model.Errorf(model.CodeConflict, "node [%d] was removed from the cluster: a node that comes back needs a new id", id)
		}
		return err
	}
	if !n.knownNode(id) {
		// The node registers its API address itself once it runs.
		if _, err := n.Propose(ctx, apply.OnCatalog(&catalog.SetNode{Node: catalog.Node{ID: id, RaftAddr: raftAddr}})); err != nil {
			return err
		}
	}
	for _, p := range n.cat.Placements() {
		if active(p.Replicas) >= n.cfg.Replicas || hasNode(p.Replicas, id) {
			continue
		}
		next := append(slices.Clone(p.Replicas), catalog.Replica{ID: p.NextReplicaID(), Node: id, Addr: raftAddr, Join: true})
		if _, err := n.Propose(ctx, apply.OnCatalog(&catalog.SetReplicas{DB: p.ID, Prev: p.Replicas, Replicas: next})); err != nil {
			return fmt.Errorf("place a replica of database %s: %w", p.Name, err)
		}
	}
	return nil
}

// RemoveNode moves every replica off node id (to a node that has none of
// the database, when there is one), waiting for each new replica to catch
// up before the old one goes, then takes the node out of the cluster. It
// may be run again after a failure: it goes on where it stopped.
func (n *Node) RemoveNode(ctx context.Context, id uint64) error {
	if id == n.cfg.NodeID {
		return model.Invalidf("a node cannot remove itself: ask another node")
	}
	members := n.Members()
	if _, ok := members[id]; !ok && !n.knownNode(id) {
		return model.NotFoundf("node [%d] not found", id)
	}
	for _, p := range n.cat.Placements() {
		if !hasNode(p.Replicas, id) {
			continue
		}
		if err := n.moveOff(ctx, p, id, members); err != nil {
			return fmt.Errorf("move database %s off node %d: %w", p.Name, id, err)
		}
	}
	if _, ok := members[id]; ok {
		rctx, cancel := n.bound(ctx)
		err := n.host.RemoveReplica(rctx, MetaGroup, id)
		cancel()
		if err != nil {
			return err
		}
	}
	if n.knownNode(id) {
		if _, err := n.Propose(ctx, apply.OnCatalog(&catalog.RemoveNode{ID: id})); err != nil {
			return err
		}
	}
	return nil
}

// knownNode reports whether the catalog lists node id.
func (n *Node) knownNode(id uint64) bool {
	for _, nd := range n.cat.Nodes() {
		if nd.ID == id {
			return true
		}
	}
	return false
}

// moveOff moves database p's replica off node id: it adds one on the
// least loaded node without one, waits until it has caught up, and marks
// the old one removed.
func (n *Node) moveOff(ctx context.Context, p catalog.Database, id uint64, members map[uint64]string) error {
	replicas := slices.Clone(p.Replicas)
	target := uint64(0)
	for _, m := range sortedNodes(members) {
		if m != id && !hasNode(replicas, m) {
			target = m
			break
		}
	}
	if target != 0 {
		next := append(slices.Clone(replicas), catalog.Replica{ID: p.NextReplicaID(), Node: target, Addr: members[target], Join: true})
		if _, err := n.Propose(ctx, apply.OnCatalog(&catalog.SetReplicas{DB: p.ID, Prev: replicas, Replicas: next})); err != nil {
			return err
		}
		if err := n.waitCaughtUp(ctx, p.ID, p.NextReplicaID()); err != nil {
			return err
		}
		replicas = next
	}
	next := slices.Clone(replicas)
	for i := range next {
		if next[i].Node == id {
			next[i].Removed = true
		}
	}
	_, err := n.Propose(ctx, apply.OnCatalog(&catalog.SetReplicas{DB: p.ID, Prev: replicas, Replicas: next}))
	return err
}

// waitCaughtUp waits until replica of database db's group is a member and,
// as far as this node can tell, has applied what this node has: this node
// asks through the group's status of every node (its own view suffices
// when it hosts the database: the new member's progress shows in its
// commit). It waits at most a minute.
func (n *Node) waitCaughtUp(ctx context.Context, db uint32, replica uint64) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if gi, err := n.host.GroupInfo(groupOf(db)); err == nil {
			if _, ok := gi.Members[replica]; ok {
				return nil
			}
		} else if !n.Hosts(db) {
			// Not hosted here: give the leader time to add it.
			select {
			case <-time.After(3 * time.Second):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("replica %d of group %d did not join within a minute", replica, groupOf(db))
}

// active counts the replicas not removed.
func active(rs []catalog.Replica) int {
	k := 0
	for _, r := range rs {
		if !r.Removed {
			k++
		}
	}
	return k
}

// hasNode reports whether node holds a replica, not removed, among rs.
func hasNode(rs []catalog.Replica, node uint64) bool {
	for _, r := range rs {
		if r.Node == node && !r.Removed {
			return true
		}
	}
	return false
}

// sortedNodes returns the ids of members in order.
func sortedNodes(members map[uint64]string) []uint64 {
	out := make([]uint64, 0, len(members))
	for id := range members {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// PlaceDatabase creates a database in the cluster: it places it on the
// nodes Placement picks, through the meta group, then starts it with its
// first branch through its own group. The result is the *catalog.Database.
func (n *Node) PlaceDatabase(ctx context.Context, cmd *catalog.PlaceDatabase) (any, error) {
	place := *cmd
	pctx, cancel := n.bound(ctx)
	replicas, err := n.Placement(pctx)
	cancel()
	if err != nil {
		return nil, err
	}
	place.Database.Replicas = replicas
	place.Database.First = cmd.First
	res, err := n.Propose(ctx, apply.OnCatalog(&place))
	if err != nil {
		return nil, err
	}
	p := res.(*catalog.Database)
	if f := cmd.First; f != nil {
		_, err := n.Propose(ctx, apply.OnDatabase(p.ID, &apply.InitDatabase{Branch: f.Name, PublicID: f.PublicID, Now: f.Now, Metadata: f.Metadata}))
		if err != nil && model.CodeOf(err) != model.CodeAlreadyExists {
			return nil, fmt.Errorf("start database %s: %w", p.Name, err)
		}
	}
	return p, nil
}
