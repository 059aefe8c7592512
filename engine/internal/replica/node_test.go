package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/engine/internal/catalog"
	"github.com/coppice-db/coppice/engine/internal/consensus"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// testNode is one node of an in-process cluster: a data directory that
// outlives its Node across restarts.
type testNode struct {
	id   uint64
	dir  string
	pdb  *pebble.DB
	ap   *apply.Applier
	node *Node
	// rows counts the rows its databases' observers were told of.
	rows *atomic.Int64
}

// testCluster is an in-process cluster on one consensus.Network.
type testCluster struct {
	t     *testing.T
	net   *consensus.Network
	join  []string
	nodes map[uint64]*testNode
	cfg   consensus.Config
}

// rowCounter is an observer that counts the rows of applied commands.
type rowCounter struct{ n *atomic.Int64 }

// Prepare counts the rows of tx once it is applied.
func (o rowCounter) Prepare(tx *apply.Tx) func(bool) {
	rows := len(tx.Rows())
	return func(ok bool) {
		if ok {
			o.n.Add(int64(rows))
		}
	}
}

// Dropped has nothing to forget.
func (rowCounter) Dropped() {}

// testLogger shows the Raft library's and the nodes' log only with
// COPPICE_RAFT_LOG set.
func testLogger() *slog.Logger {
	level := slog.LevelError + 1
	if os.Getenv("COPPICE_RAFT_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// patience bounds the waits of the tests and of their requests
// (consensus.Config.MaxWait): long enough for elections, and for a node to
// start its replica of a new database's group, on a loaded machine, so
// that only a hang reaches it.
const patience = 30 * time.Second

// newTestCluster starts n founding nodes.
func newTestCluster(t *testing.T, n int, snapshotEvery uint64) *testCluster {
	c := &testCluster{t: t, net: consensus.NewNetwork(), nodes: map[uint64]*testNode{},
		cfg: consensus.Config{Tick: 10 * time.Millisecond, HeartbeatTicks: 2, ElectionTicks: 20, MaxWait: patience,
			SnapshotEvery: snapshotEvery, KeepEntries: snapshotEvery / 2, Logger: testLogger()}}
	for i := 1; i <= n; i++ {
		c.join = append(c.join, fmt.Sprintf("node%d", i))
	}
	base := t.TempDir()
	for i := 1; i <= n; i++ {
		c.nodes[uint64(i)] = &testNode{id: uint64(i), dir: filepath.Join(base, fmt.Sprintf("n%d", i)), rows: &atomic.Int64{}}
		c.start(uint64(i))
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			c.stop(nd.id)
		}
	})
	return c
}

// start opens node id's data directory and starts its Node.
func (c *testCluster) start(id uint64) {
	c.t.Helper()
	nd := c.nodes[id]
	pdb, err := pebble.Open(nd.dir, &pebble.Options{Merger: layers.Merger, Logger: quietPebble{}})
	if err != nil {
		c.t.Fatal(err)
	}
	ap, err := apply.Open(pdb, apply.Options{Replicated: true, Observe: func(*apply.DB) []apply.Observer {
		return []apply.Observer{rowCounter{nd.rows}}
	}})
	if err != nil {
		c.t.Fatal(err)
	}
	cfg := Config{NodeID: id, RaftAddr: fmt.Sprintf("node%d", id), Join: c.join, Dir: filepath.Join(nd.dir, "raft"),
		Consensus: c.cfg, Logger: testLogger()}
	cfg.Consensus.Network = c.net
	node, err := Start(cfg, ap, pdb)
	if err != nil {
		c.t.Fatal(err)
	}
	nd.pdb, nd.ap, nd.node = pdb, ap, node
}

// stop closes node id, as a crash would leave it but for what the
// storage had not written yet.
func (c *testCluster) stop(id uint64) {
	nd := c.nodes[id]
	if nd.node == nil {
		return
	}
	nd.node.Close()
	nd.pdb.Close()
	nd.node, nd.pdb, nd.ap = nil, nil, nil
}

// quietPebble keeps Pebble's routine log out of test output.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)           {}
func (quietPebble) Errorf(f string, args ...any)   { fmt.Printf(f+"\n", args...) }
func (quietPebble) Fatalf(f string, args ...any)   { panic(fmt.Sprintf(f, args...)) }
func (c *testCluster) node(id uint64) *Node        { return c.nodes[id].node }
func (c *testCluster) ap(id uint64) *apply.Applier { return c.nodes[id].ap }
func ctxFor(d time.Duration) (context.Context, func()) {
	return context.WithTimeout(context.Background(), d)
}

// dump returns every key and value of a node's storage under prefix.
func dump(t *testing.T, r pebble.Reader, prefix []byte) []byte {
	t.Helper()
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []byte
	for ok := it.First(); ok; ok = it.Next() {
		out = codec.AppendU32(append(out, it.Key()...), uint32(len(it.Value())))
		out = append(out, it.Value()...)
	}
	return out
}

// converge waits until the running nodes hold the same catalog and the
// same copy of every database, and fails after a while.
func (c *testCluster) converge(dbs ...uint32) {
	c.t.Helper()
	prefixes := [][]byte{{codec.NSCatalog}}
	for _, db := range dbs {
		prefixes = append(prefixes, codec.DatabasePrefix(db))
	}
	deadline := time.Now().Add(patience)
	for {
		var diff string
		for _, p := range prefixes {
			var first []byte
			var firstID uint64
			for id, nd := range c.nodes {
				if nd.node == nil {
					continue
				}
				d := dump(c.t, nd.pdb, p)
				if first == nil {
					first, firstID = d, id
				} else if !bytes.Equal(first, d) {
					diff = fmt.Sprintf("nodes %d and %d differ under %x", firstID, id, p)
				}
			}
		}
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatal(diff)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lastIndexes waits until node id's log for database db's group ends
// where every other running node's does, and returns that index.
func (c *testCluster) lastIndexes(db uint32, id uint64) uint64 {
	c.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		last := map[uint64]uint64{}
		for nid, nd := range c.nodes {
			if nd.node == nil {
				continue
			}
			for _, g := range nd.node.Status().Groups {
				if g.Database == db {
					last[nid] = max(g.Applied, g.LastIndex)
				}
			}
		}
		same := len(last) > 1
		for _, v := range last {
			same = same && v == last[id]
		}
		if same {
			return last[id]
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the logs of database %d's group do not end alike: %v", db, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sameApplied waits until every running node reports the same applied
// index for database db's group, as the cluster's status compares them.
func (c *testCluster) sameApplied(db uint32) {
	c.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		applied := map[uint64]uint64{}
		for id, nd := range c.nodes {
			if nd.node == nil {
				continue
			}
			for _, g := range nd.node.Status().Groups {
				if g.Database == db {
					applied[id] = g.Applied
				}
			}
		}
		same := true
		for _, a := range applied {
			same = same && a == applied[1]
		}
		if same && len(applied) == len(c.nodes) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("applied index of database %d by node: %v", db, applied)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createDB creates a database with a table of a few columns through node
// id and returns its id.
func (c *testCluster) createDB(id uint64, name string) uint32 {
	c.t.Helper()
	ctx, cancel := ctxFor(patience)
	defer cancel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	res, err := c.node(id).PlaceDatabase(ctx, &catalog.PlaceDatabase{
		Database: catalog.Database{Name: name, Region: "local", CreatedAt: now},
		First:    &catalog.FirstBranch{Name: "main", PublicID: "bb_" + name, Now: now},
	})
	if err != nil {
		c.t.Fatalf("create %s: %v", name, err)
	}
	placed := res.(*catalog.Database)
	if len(placed.Replicas) != min(len(c.nodes), 3) {
		c.t.Fatalf("create %s in a cluster of %d nodes: placed on %+v", name, len(c.nodes), placed.Replicas)
	}
	db := placed.ID
	if _, err := c.node(id).Propose(ctx, apply.OnDatabase(db, &apply.Migrate{
		SchemaHeader: apply.SchemaHeader{Branch: "main", ID: "mig_" + name, Now: now},
		Ops: []model.MigrationOp{{AddTable: &model.TableOp{Table: "t"}},
			{AddColumn: &model.AddColumnOp{Table: "t", Column: model.ColumnDef{Name: "n", Type: model.TypeInt}}},
			{AddColumn: &model.AddColumnOp{Table: "t", Column: model.ColumnDef{Name: "s", Type: model.TypeText}}}},
	})); err != nil {
		c.t.Fatalf("schema of %s: %v", name, err)
	}
	return db
}

// describe tells each running node's view of its groups, for a failure's
// message.
func (c *testCluster) describe() string {
	var b strings.Builder
	for id := uint64(1); id <= uint64(len(c.nodes)); id++ {
		nd := c.nodes[id]
		if nd.node == nil {
			fmt.Fprintf(&b, "node %d: stopped\n", id)
			continue
		}
		for _, g := range nd.node.Status().Groups {
			fmt.Fprintf(&b, "node %d group %d: replica %d, leader %d (node %d), term %d, applied %d, log %d–%d\n",
				id, g.Group, g.Replica, g.Leader, g.LeaderNode, g.Term, g.Applied, g.FirstIndex, g.LastIndex)
		}
	}
	return b.String()
}

// write inserts record rec through node id.
func (c *testCluster) write(id uint64, db uint32, rec string, n int) error {
	return c.writeTo(id, db, "main", rec, n)
}

// writeTo inserts record rec on a branch through node id.
func (c *testCluster) writeTo(id uint64, db uint32, branch, rec string, n int) error {
	ctx, cancel := ctxFor(patience)
	defer cancel()
	res, err := c.node(id).Propose(ctx, apply.OnDatabase(db, &apply.WriteRecords{Branch: branch, Now: time.Unix(int64(n), 0).UTC(),
		Ops: []model.Op{{Kind: model.OpInsert, Table: "t", ID: rec, Values: map[string]any{"n": n, "s": "the quick brown fox"}}}}))
	if err != nil {
		return err
	}
	ops := res.([]apply.OpResult)
	if len(ops) != 1 || ops[0].ID != rec || ops[0].Tbl == nil || ops[0].Tbl.Name != "t" {
		return fmt.Errorf("write %s: result %+v", rec, ops)
	}
	return nil
}

// leaderOf returns the node that leads database db's group (0: meta).
func (c *testCluster) leaderOf(db uint32) uint64 {
	c.t.Helper()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		for _, nd := range c.nodes {
			if nd.node == nil {
				continue
			}
			for _, g := range nd.node.Status().Groups {
				if g.Database == db && g.Leader != 0 && g.LeaderNode != 0 && c.nodes[g.LeaderNode].node != nil {
					return g.LeaderNode
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("group of database %d has no leader", db)
	return 0
}

// TestReplicatedWrites writes through every node of a 3-node cluster: each
// write's result comes back to its proposer, every replica ends with the
// same bytes, catalog and database alike, and every replica's observers
// saw every row.
func TestReplicatedWrites(t *testing.T) {
	c := newTestCluster(t, 3, 0)
	db := c.createDB(1, "people")
	var wg sync.WaitGroup
	errs := make(chan error, 90)
	for id := uint64(1); id <= 3; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				if err := c.write(id, db, fmt.Sprintf("r%d-%d", id, i), i); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c.converge(db)
	for id, nd := range c.nodes {
		if got := nd.rows.Load(); got != 90 {
			t.Errorf("node %d's observers saw %d rows, want 90", id, got)
		}
	}
	// A failing command fails on its proposer, as a result, and leaves
	// every replica as it was.
	ctx, cancel := ctxFor(5 * time.Second)
	defer cancel()
	_, err := c.node(2).Propose(ctx, apply.OnDatabase(db, &apply.WriteRecords{Branch: "main",
		Ops: []model.Op{{Kind: model.OpInsert, Table: "t", ID: "r1-0", CreateOnly: true}}}))
	var oe *model.OpErrors
	if !errors.As(err, &oe) || oe.Errors[0].Err.Code != model.CodeAlreadyExists {
		t.Errorf("create-only insert of an existing id: %v", err)
	}
	_, err = c.node(3).Propose(ctx, apply.OnDatabase(db, &apply.WriteRecords{Branch: "nope", Ops: []model.Op{{Kind: model.OpInsert, Table: "t"}}}))
	if model.CodeOf(err) != model.CodeNotFound {
		t.Errorf("write to a missing branch: %v, want not found", err)
	}
	c.converge(db)
}

// TestRequestAppliesOnce proposes the same request twice: the second entry
// answers with the first's result and changes nothing. A proposal whose
// outcome is unknown (its message to the leader may be lost while the
// nodes' connections come up) is proposed again with the same request id,
// as a client retries: that is what the request id makes safe.
func TestRequestAppliesOnce(t *testing.T) {
	c := newTestCluster(t, 3, 0)
	db := c.createDB(2, "once")
	n := c.node(1)
	// Node 1 starts its replica of the new group in the background, once
	// it learns of the placement: propose through it after that.
	for start := time.Now(); !n.Hosts(db); time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("node 1 did not start the database's group (placed on it: %v)\n%s", n.Placed(db), c.describe())
		}
	}
	cmd := apply.OnDatabase(db, &apply.WriteRecords{Branch: "main", Ops: []model.Op{{Kind: model.OpUpdate, Table: "t", ID: "x", Upsert: true,
		Values: map[string]any{"n": map[string]any{"$increment": 1}}}}})
	enc, err := apply.Encode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	payload := encodeEntry(n.ids.next(), enc)
	ctx, cancel := ctxFor(30 * time.Second)
	defer cancel()
	propose := func() []byte {
		for {
			actx, acancel := context.WithTimeout(ctx, proposeAttempt)
			out, err := n.host.Propose(actx, groupOf(db), payload)
			acancel()
			if errors.Is(err, consensus.ErrUnavailable) && ctx.Err() == nil {
				continue
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, c.describe())
			}
			return out
		}
	}
	first, second := propose(), propose()
	if !bytes.Equal(first, second) {
		t.Errorf("results %q and %q", first, second)
	}
	res, err := decodeResult(cmd, second)
	if err != nil {
		t.Fatal(err)
	}
	if rec := res.([]apply.OpResult)[0].Rec; rec == nil || rec.Version != 0 {
		t.Errorf("the record after the one increment: %+v", rec)
	}
	c.converge(db)
}

// TestLostProposalProposedAgain loses a proposal on its way from a
// follower to the leader: the leader's term holds, so nothing reports the
// loss, and the node proposes the request again, which applies once.
func TestLostProposalProposedAgain(t *testing.T) {
	c := newTestCluster(t, 3, 0)
	db := c.createDB(1, "lost")
	leader := c.leaderOf(db)
	follower := leader%3 + 1
	for start := time.Now(); !c.node(follower).Hosts(db); time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("node %d did not start the database's group\n%s", follower, c.describe())
		}
	}
	from, to := fmt.Sprintf("node%d", follower), fmt.Sprintf("node%d", leader)
	c.net.Cut(from, to)
	healed := make(chan struct{})
	go func() {
		defer close(healed)
		time.Sleep(100 * time.Millisecond)
		c.net.Heal()
	}()
	// The request's deadline (patience) bounds it: without a second
	// proposal it fails when that runs out.
	start := time.Now()
	err := c.write(follower, db, "r", 1)
	<-healed
	if err != nil {
		t.Fatalf("write through node %d after %v: %v\n%s", follower, time.Since(start), err, c.describe())
	}
	c.converge(db)
	for id := uint64(1); id <= 3; id++ {
		if got := c.nodes[id].rows.Load(); got != 1 {
			t.Errorf("node %d's observers saw %d rows, want 1", id, got)
		}
	}
}

// TestFollowerCatchesUpFromSnapshot stops a node while the others write
// more than the log keeps: it catches up from a snapshot of the database's
// range (and of the catalog), with its observers started afresh.
func TestFollowerCatchesUpFromSnapshot(t *testing.T) {
	c := newTestCluster(t, 3, 20)
	db := c.createDB(1, "snap")
	for i := range 10 {
		if err := c.write(1, db, fmt.Sprintf("a%d", i), i); err != nil {
			t.Fatal(err)
		}
	}
	c.converge(db)
	// The last entry of the database's group node 3 has, once its log
	// holds all the others have (membership entries may trail the writes'
	// data): node 3 replays its log on restart, so only what lies past it
	// must come from a snapshot.
	gone := c.lastIndexes(db, 3)
	c.stop(3)
	// Until the others' logs no longer have what node 3 misses: snapshots
	// and compactions run in the background.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		if err := c.write(uint64(1+i%2), db, fmt.Sprintf("b%d", i), i); err != nil {
			t.Fatal(err)
		}
		if i < 100 {
			continue
		}
		compacted := 0
		for id := uint64(1); id <= 2; id++ {
			for _, g := range c.node(id).Status().Groups {
				if g.Database == db && g.FirstIndex > gone+1 {
					compacted++
				}
			}
		}
		if compacted == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the logs still hold entry %d after %d writes", gone+1, i)
		}
	}
	// A second database, placed while node 3 was away, reaches it through
	// the catalog's snapshot.
	db2 := c.createDB(2, "later")
	for i := range 30 {
		if err := c.write(2, db2, fmt.Sprintf("c%d", i), i); err != nil {
			t.Fatal(err)
		}
	}
	// The last entries change nothing: a request proposed again and a
	// command that fails. They count as applied all the same.
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	enc, err := apply.Encode(apply.OnDatabase(db, &apply.WriteRecords{Branch: "main", Ops: []model.Op{{Kind: model.OpUpdate, Table: "t", ID: "b0", Values: map[string]any{"n": 7}}}}))
	if err != nil {
		t.Fatal(err)
	}
	payload := encodeEntry(c.node(1).ids.next(), enc)
	for range 2 {
		if _, err := c.node(1).host.Propose(ctx, groupOf(db), payload); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.node(1).Propose(ctx, apply.OnDatabase(db, &apply.WriteRecords{Branch: "nope", Ops: []model.Op{{Kind: model.OpInsert, Table: "t"}}})); model.CodeOf(err) != model.CodeNotFound {
		t.Fatalf("write to a missing branch: %v, want not found", err)
	}
	c.start(3)
	c.converge(db, db2)
	// Node 3 shows the recovered data before the snapshot's index counts
	// as applied, and counts the snapshot in between.
	c.sameApplied(db)
	if c.node(3).Recovered() == 0 {
		t.Errorf("node 3 caught up without a snapshot; gone %d", gone)
		for id := uint64(1); id <= 3; id++ {
			for _, g := range c.node(id).Status().Groups {
				t.Logf("node %d: %+v", id, g)
			}
		}
	}
	if err := c.write(3, db, "after", 1); err != nil {
		t.Fatal(err)
	}
	c.converge(db, db2)
}

// TestLeaderStops stops the leader of a database's group, writes through
// the others, and restarts it: it catches up from the log.
func TestLeaderStops(t *testing.T) {
	c := newTestCluster(t, 3, 0)
	db := c.createDB(1, "lead")
	for round := range 2 {
		leader := c.leaderOf(db)
		c.stop(leader)
		other := leader%3 + 1
		for i := range 20 {
			if err := c.write(other, db, fmt.Sprintf("r%d-%d", round, i), i); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		c.start(leader)
		c.converge(db)
	}
}

// TestFlattenReplicated flattens a deep branch through the log: each
// replica makes the copy when it applies FinishFlatten, and all end with
// the same bytes and the branch's records readable through its new
// lineage.
func TestFlattenReplicated(t *testing.T) {
	c := newTestCluster(t, 3, 0)
	db := c.createDB(1, "deep")
	ctx, cancel := ctxFor(20 * time.Second)
	defer cancel()
	from := "main"
	for i := range 4 {
		if err := c.writeTo(uint64(1+i%3), db, from, fmt.Sprintf("on-%s", from), i); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("b%d", i)
		if _, err := c.node(1).Propose(ctx, apply.OnDatabase(db, &apply.CreateBranch{Name: name, From: from, PublicID: "bb_" + name})); err != nil {
			t.Fatal(err)
		}
		from = name
	}
	c.converge(db)
	b := c.ap(2).DB(db).State().Branches.At(from)
	if len(b.Lineage) != 5 {
		t.Fatalf("lineage of %s: %v", from, b.Lineage)
	}
	frozen := b.Lineage[1:]
	res, err := c.node(2).Propose(ctx, apply.OnDatabase(db, &apply.StartFlatten{Branch: b.ID, Frozen: frozen}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.node(2).Propose(ctx, apply.OnDatabase(db, &apply.FinishFlatten{Branch: b.ID, Frozen: frozen, Layer: res.(uint32)})); err != nil {
		t.Fatal(err)
	}
	c.converge(db)
	for id := uint64(1); id <= 3; id++ {
		d := c.ap(id).DB(db)
		nb := d.State().Branches.At(from)
		if len(nb.Lineage) != 2 {
			t.Errorf("node %d: lineage %v after flattening", id, nb.Lineage)
		}
		tbl, _ := nb.Schema.Table("t")
		for _, rec := range []string{"on-main", "on-b0", "on-b2"} {
			if _, _, ok, err := layers.LookupID(c.nodes[id].pdb, db, nb.Lineage, tbl.ID, rec); err != nil || !ok {
				t.Errorf("node %d: %s on %s: %v %v", id, rec, from, ok, err)
			}
		}
	}
}

// TestLoadReplicated restores a backup as a new database through its
// group, in parts: every replica ends with the same range, the backup's
// records readable and the database writable; a part out of order is
// refused and changes nothing.
func TestLoadReplicated(t *testing.T) {
	c := newTestCluster(t, 3, 0)
	src := c.createDB(1, "src")
	for i := range 20 {
		if err := c.write(1, src, fmt.Sprintf("r%d", i), i); err != nil {
			t.Fatal(err)
		}
	}
	var backup bytes.Buffer
	snap := c.nodes[1].pdb.NewSnapshot()
	err := layers.WriteRange(snap, src, &backup)
	snap.Close()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	res, err := c.node(2).PlaceDatabase(ctx, &catalog.PlaceDatabase{Database: catalog.Database{Name: "copy", Region: "local"}})
	if err != nil {
		t.Fatal(err)
	}
	db := res.(*catalog.Database).ID
	data := backup.Bytes()
	cut := []int{0, len(data) / 3, 2 * len(data) / 3, len(data)}
	if _, err := c.node(3).Propose(ctx, apply.OnDatabase(db, &apply.LoadRange{Part: 1, Data: data[:5]})); model.CodeOf(err) != model.CodeInvalid {
		t.Errorf("a part out of order: %v", err)
	}
	for i := range 3 {
		load := &apply.LoadRange{Part: uint32(i), Data: data[cut[i]:cut[i+1]], Last: i == 2}
		if _, err := c.node(uint64(1+i)).Propose(ctx, apply.OnDatabase(db, load)); err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
	}
	if err := c.write(3, db, "after", 1); err != nil {
		t.Fatal(err)
	}
	c.converge(src, db)
	for id := uint64(1); id <= 3; id++ {
		b := c.ap(id).DB(db).State().Branches.At("main")
		if b == nil {
			t.Fatalf("node %d: the loaded database has no main branch", id)
		}
		tbl, _ := b.Schema.Table("t")
		for _, rec := range []string{"r0", "r19", "after"} {
			if _, _, ok, err := layers.LookupID(c.nodes[id].pdb, db, b.Lineage, tbl.ID, rec); err != nil || !ok {
				t.Errorf("node %d: %s: %v %v", id, rec, ok, err)
			}
		}
	}
}

// TestStartAfterCreatorDied places a database as its creating node would
// and leaves it there, as if that node died before it started the
// database with its first branch: the leader of the database's group
// starts it.
func TestStartAfterCreatorDied(t *testing.T) {
	c := newTestCluster(t, 3, 0)
	c.leaderOf(0) // the catalog's first election, which a loaded machine slows down
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	first := &catalog.FirstBranch{Name: "trunk", PublicID: "bb_orphan", Now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	replicas, err := c.node(1).Placement(ctx)
	if err != nil {
		t.Fatal(err)
	}
	place := &catalog.PlaceDatabase{Database: catalog.Database{Name: "orphan", Region: "local", Replicas: replicas, First: first}, First: first}
	res, err := c.node(1).Propose(ctx, apply.OnCatalog(place))
	if err != nil {
		t.Fatal(err)
	}
	db := res.(*catalog.Database).ID
	deadline := time.Now().Add(10 * time.Second)
	for {
		started := 0
		for id := uint64(1); id <= 3; id++ {
			if d := c.ap(id).DB(db); d != nil && d.State().Branches.At("trunk") != nil {
				started++
			}
		}
		if started == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the database is started on %d nodes of 3", started)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.converge(db)
}
