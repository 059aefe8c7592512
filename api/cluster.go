package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/coppice-db/coppice/engine"
)

// In a cluster (engine.Options.Cluster) every node answers every request
// from its own replicas. A request is linearizable by default: before it
// reads anything it passes a barrier of the catalog (users, keys,
// workspaces, databases) and, once it names a database, of that database,
// so that it sees every write acknowledged before it arrived, on any node.
// A query, summarize, aggregate or search with "consistency": "eventual",
// and a point get with ?consistency=eventual, skip both and read this
// node's replicas as they are, and so does the cluster's status. Writes
// are proposed to their group and answered once a majority has them; a
// write of records skips the barriers unless it fails for want of them
// (call). A group without a leader makes a request wait up to the engine's
// bound, then answer 503 with Retry-After: a write answered so may still
// apply later, when its command reached a log, and the message says that
// the outcome is unknown.

// eventualRoutes are the suffixes of the routes whose body may ask for
// "consistency": "eventual".
var eventualRoutes = []string{"/query", "/summarize", "/aggregate", "/search"}

// readsLocally reports whether the request skips the read index: a point
// get with ?consistency=eventual, or a query, summarize, aggregate or search
// whose body says "consistency": "eventual". A consistency value that is
// neither strong nor eventual skips it too: the handler refuses it with a
// 400 without reading anything, which waiting for a majority first would
// turn into a 503 while the group has none. It looks only at the routes
// that take the field, and at a body that mentions it; the handler checks
// the parameter or the body in full.
func (r *request) readsLocally() bool {
	if r.route == nil {
		return false
	}
	if r.route.method == "GET" {
		args := r.ctx.QueryArgs()
		return r.route.pattern == pointGetRoute && args.Has("consistency") && string(args.Peek("consistency")) != "strong"
	}
	if r.route.method != "POST" {
		return false
	}
	ok := false
	for _, suffix := range eventualRoutes {
		ok = ok || strings.HasSuffix(r.route.pattern, suffix)
	}
	body := r.body()
	if !ok || !bytes.Contains(body, []byte(`"consistency"`)) {
		return false
	}
	var b struct {
		Consistency json.RawMessage `json:"consistency"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	v := string(b.Consistency)
	return v != "" && v != "null" && v != `"strong"`
}

// call authenticates the caller and runs fn. In a cluster a request first
// passes the catalog's barrier (and, once it names a database, the
// database's), unless it reads with eventual consistency; a write of
// records passes none unless it fails as a lagging replica could make it
// fail (a key, a database, a table or a column not found yet), and is then
// run again behind them: its command is applied to the group's latest state
// anyway, and a failed one changed nothing.
func (r *request) call(fn func(r *request) error) error {
	if r.s.cluster == nil {
		if err := r.authenticateLimited(); err != nil {
			return err
		}
		return fn(r)
	}
	if r.recordWrite() {
		err := r.authenticateFirst()
		if err == nil {
			err = fn(r)
		}
		if err == nil || !mayBeStale(err) {
			return err
		}
		r.user, r.key, r.resolved = nil, nil, false
		r.strong = true
	} else {
		local := r.readsLocally()
		r.strong = !local && !r.clusterView()
		if local {
			// A local read authenticates with this node's replica of the
			// catalog, which may not hold yet a key created a moment ago
			// through another node: such a key is asked about again
			// behind the catalog's barrier, and the read stays local.
			err := r.authenticateFirst()
			if err != errInvalidKey {
				if err != nil {
					return err
				}
				return fn(r)
			}
			if err := r.s.cluster.CatalogBarrier(r.context()); err != nil {
				return err
			}
			r.user, r.key, r.resolved = nil, nil, false
		}
	}
	if r.strong {
		if err := r.barriers(); err != nil {
			return err
		}
	}
	if err := r.authenticateLimited(); err != nil {
		return err
	}
	return fn(r)
}

// barriers passes the catalog's barrier and, at the same time, the
// barrier of the database the path names, when the workspace is in the
// path and this node's catalog knows the database already: both read
// indexes then cost one round trip. databaseBarrier skips the second
// barrier of the same database; a database the catalog's barrier reveals
// to be another one gets its own.
func (r *request) barriers() error {
	var (
		early    chan error
		core, db string
	)
	if dbb, err := r.param("dbb"); err == nil && dbb != "" && r.wsLabel != "" {
		db, _, _ = strings.Cut(dbb, ":")
		var ok bool
		if core, ok = r.s.workspaceCore(r.wsLabel); ok && db != "" {
			early = make(chan error, 1)
			ctx := r.context()
			go func() {
				id, err := r.s.cluster.DatabaseBarrier(ctx, core, db)
				r.earlyDB = id
				early <- err
			}()
		}
	}
	err := r.s.cluster.CatalogBarrier(r.context())
	if early != nil {
		eerr := <-early
		if err == nil && eerr != nil && r.s.cluster.DatabaseID(core, db) != r.earlyDB {
			// The catalog's barrier found the database deleted (its group
			// stopped under the early barrier) or another one under its
			// name: the request answers from the catalog as it is now.
			eerr, r.earlyDB = nil, 0
		}
		if err == nil {
			err = eerr
		}
	}
	return err
}

// clusterView reports whether the request reads the cluster's status,
// which a node answers from what it knows, also while the catalog's group
// has no leader: when it is most needed.
func (r *request) clusterView() bool {
	return r.route != nil && r.route.method == "GET" && strings.HasPrefix(r.route.pattern, "/admin/cluster")
}

// recordWriteRoutes are the routes of record writes.
var recordWriteRoutes = map[string]bool{
	"/db/{dbb}/tables/{table}/data":      true,
	"/db/{dbb}/tables/{table}/data/{id}": true,
	"/db/{dbb}/tables/{table}/bulk":      true,
	"/db/{dbb}/transaction":              true,
}

// recordWrite reports whether the request writes records.
func (r *request) recordWrite() bool {
	return r.route != nil && r.route.method != "GET" && recordWriteRoutes[r.route.pattern]
}

// authenticateFirst is authenticateLimited without counting a bad key: a
// key this replica does not know yet is asked about again behind the
// catalog's barrier, which counts it then.
func (r *request) authenticateFirst() error {
	if wait := r.s.authFails.blocked(clientAddr(r.ctx.RemoteAddr()), time.Now()); wait > 0 {
		return &tooManyFailures{wait}
	}
	return r.authenticate()
}

// mayBeStale reports whether err is a failure that a replica behind the
// others could give where an up-to-date one would not.
func mayBeStale(err error) bool {
	var oe *engine.OpErrors
	var be *bodyError
	switch {
	case err == errInvalidKey, errors.As(err, &oe):
		return true
	case errors.As(err, &be):
		return be.status == http.StatusBadRequest || be.status == http.StatusNotFound
	}
	switch engine.CodeOf(err) {
	case engine.CodeNotFound, engine.CodeInvalid, engine.CodeUnauthenticated, engine.CodeForbidden:
		return true
	}
	return false
}

// databaseBarrier is the barrier of database db of workspace ws, for a
// request that had the catalog's, unless barriers passed it already.
func (r *request) databaseBarrier(ws, db string) error {
	if r.s.cluster == nil || !r.strong {
		return nil
	}
	if r.earlyDB != 0 && r.s.cluster.DatabaseID(ws, db) == r.earlyDB {
		return nil
	}
	_, err := r.s.cluster.DatabaseBarrier(r.context(), ws, db)
	return err
}

// checkConsistency checks the consistency field of a body: strong,
// eventual, or absent (strong).
func checkConsistency(c *string) error {
	if c != nil && *c != "strong" && *c != "eventual" {
		return invalid("consistency must be strong or eventual, got [%s]", *c)
	}
	return nil
}

// queryConsistency checks the consistency query parameter of a point get
// as checkConsistency checks the body field: strong, eventual, or absent
// (strong); an empty value is neither.
func (r *request) queryConsistency() error {
	args := r.ctx.QueryArgs()
	if !args.Has("consistency") {
		return nil
	}
	switch v := args.Peek("consistency"); string(v) {
	case "strong", "eventual":
		return nil
	default:
		return invalid("query parameter consistency must be strong or eventual, got [%s]", v)
	}
}

// clusterRoutes registers the administration of a cluster. On a single
// server they answer 404.
func (s *Server) clusterRoutes() {
	r := s.router
	r.GET("/admin/cluster", s.handle(s.clusterStatus))
	r.GET("/admin/cluster/node", s.handle(s.clusterNode))
	r.POST("/admin/cluster/nodes", s.handle(s.addClusterNode))
	r.DELETE("/admin/cluster/nodes/{node}", s.handle(s.removeClusterNode))
}

// clusterAdmin checks that the caller administers the server, and that it
// is a node of a cluster.
func (r *request) clusterAdmin() error {
	if err := r.accountKey("administer the server"); err != nil {
		return err
	}
	if !r.user.Admin {
		return engine.Errorf(engine.CodeForbidden, "only the server administrator may manage the cluster")
	}
	if r.s.cluster == nil {
		return engine.Errorf(engine.CodeNotFound, "this server is not a node of a cluster")
	}
	return nil
}

// nodeView is one node's view of its groups, as GET /admin/cluster/node
// answers it.
type nodeView struct {
	Node      uint64      `json:"node"`
	RaftAddr  string      `json:"raftAddr"`
	APIAddr   string      `json:"apiAddr"`
	Recovered uint64      `json:"snapshotsRecovered"`
	Groups    []groupView `json:"groups"`
}

// groupView is one node's view of one group.
type groupView struct {
	Group      uint64            `json:"group"`
	Database   string            `json:"database"`
	Replica    uint64            `json:"replica"`
	Leader     uint64            `json:"leaderNode"`
	Term       uint64            `json:"term"`
	Applied    uint64            `json:"applied"`
	FirstIndex uint64            `json:"firstIndex"`
	LastIndex  uint64            `json:"lastIndex"`
	MemberOf   map[string]uint64 `json:"members"`
}

// localView is this node's view.
func (s *Server) localView() nodeView {
	st := s.cluster.Status()
	v := nodeView{Node: st.Node, RaftAddr: st.RaftAddr, APIAddr: st.APIAddr, Recovered: st.Recovered, Groups: []groupView{}}
	for _, g := range st.Groups {
		gv := groupView{Group: g.Group, Database: g.Name, Replica: g.Replica, Leader: g.LeaderNode, Term: g.Term,
			Applied: g.Applied, FirstIndex: g.FirstIndex, LastIndex: g.LastIndex, MemberOf: map[string]uint64{}}
		if g.Database == 0 {
			gv.Database = "(catalog)"
		}
		for replica, node := range g.Members {
			gv.MemberOf[strconv.FormatUint(replica, 10)] = node
		}
		v.Groups = append(v.Groups, gv)
	}
	return v
}

// clusterNode: GET /admin/cluster/node → this node's view of its groups,
// read locally.
func (s *Server) clusterNode(r *request) error {
	if err := r.clusterAdmin(); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusOK, s.localView())
	return nil
}

// clusterStatusBody is the answer of GET /admin/cluster.
type clusterStatusBody struct {
	Node   uint64         `json:"node"`
	Nodes  []nodeStatus   `json:"nodes"`
	Groups []groupSummary `json:"groups"`
}

// nodeStatus is a node of the cluster and whether it answered.
type nodeStatus struct {
	ID        uint64 `json:"id"`
	RaftAddr  string `json:"raftAddr"`
	APIAddr   string `json:"apiAddr"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
}

// groupSummary is one group over the nodes that answered: its leader, and
// each replica's applied index and lag behind the leader's.
type groupSummary struct {
	Group    uint64           `json:"group"`
	Database string           `json:"database"`
	Leader   uint64           `json:"leaderNode"`
	Term     uint64           `json:"term"`
	Replicas []replicaSummary `json:"replicas"`
}

// replicaSummary is one replica of a group.
type replicaSummary struct {
	Node    uint64 `json:"node"`
	Replica uint64 `json:"replica"`
	Applied uint64 `json:"applied"`
	Lag     uint64 `json:"lag"`
}

// clusterStatus: GET /admin/cluster → every node, whether it answered,
// and every group with its leader and each replica's lag (entries its
// leader applied that it has not). It asks each node for its view with the
// caller's key, each within two seconds.
func (s *Server) clusterStatus(r *request) error {
	if err := r.clusterAdmin(); err != nil {
		return err
	}
	nodes := s.cluster.Nodes()
	views := make([]*nodeView, len(nodes))
	errs := make([]error, len(nodes))
	auth := string(r.ctx.Request.Header.Peek("Authorization"))
	self := s.cluster.NodeID()
	// The request's context is made on first use, which is not safe for
	// concurrent use: make it here, before the goroutines share it.
	ctx := r.context()
	var wg sync.WaitGroup
	for i, nd := range nodes {
		if nd.ID == self {
			v := s.localView()
			views[i] = &v
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			views[i], errs[i] = fetchNodeView(ctx, nd.APIAddr, auth)
		}()
	}
	wg.Wait()
	out := clusterStatusBody{Node: self, Nodes: []nodeStatus{}, Groups: []groupSummary{}}
	byGroup := map[uint64]*groupSummary{}
	leaderApplied := map[uint64]uint64{}
	for i, nd := range nodes {
		ns := nodeStatus{ID: nd.ID, RaftAddr: nd.RaftAddr, APIAddr: nd.APIAddr, Reachable: views[i] != nil}
		if errs[i] != nil {
			ns.Error = errs[i].Error()
		}
		out.Nodes = append(out.Nodes, ns)
		if views[i] == nil {
			continue
		}
		for _, g := range views[i].Groups {
			gs := byGroup[g.Group]
			if gs == nil {
				gs = &groupSummary{Group: g.Group, Database: g.Database}
				byGroup[g.Group] = gs
			}
			if g.Term >= gs.Term && g.Leader != 0 {
				gs.Leader, gs.Term = g.Leader, g.Term
			}
			if g.Leader == nd.ID {
				leaderApplied[g.Group] = g.Applied
			}
			gs.Replicas = append(gs.Replicas, replicaSummary{Node: nd.ID, Replica: g.Replica, Applied: g.Applied})
		}
	}
	for _, gs := range byGroup {
		top := leaderApplied[gs.Group]
		for i := range gs.Replicas {
			top = max(top, gs.Replicas[i].Applied)
		}
		for i := range gs.Replicas {
			gs.Replicas[i].Lag = top - gs.Replicas[i].Applied
		}
		out.Groups = append(out.Groups, *gs)
	}
	slices.SortFunc(out.Groups, func(a, b groupSummary) int { return cmpU64(a.Group, b.Group) })
	writeJSON(r.ctx, http.StatusOK, out)
	return nil
}

// cmpU64 orders two numbers.
func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// peerClient asks the other nodes for their views.
var peerClient = &http.Client{Timeout: 2 * time.Second}

// fetchNodeView asks the node at addr for its view.
func fetchNodeView(ctx context.Context, addr, auth string) (*nodeView, error) {
	if addr == "" {
		return nil, fmt.Errorf("the node has not registered its API address")
	}
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/admin/cluster/node", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", auth)
	resp, err := peerClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	v := &nodeView{}
	return v, json.Unmarshal(body, v)
}

// addClusterNode: POST /admin/cluster/nodes {"id", "raftAddr"} → 204 once
// the node, started with --join, is a member and has replicas of the
// databases that had too few.
func (s *Server) addClusterNode(r *request) error {
	if err := r.clusterAdmin(); err != nil {
		return err
	}
	var body struct {
		ID       uint64 `json:"id"`
		RaftAddr string `json:"raftAddr"`
	}
	if err := r.decode(&body, false); err != nil {
		return err
	}
	if body.ID == 0 || body.RaftAddr == "" {
		return invalid("id (≥ 1) and raftAddr are required")
	}
	if err := s.cluster.AddNode(r.context(), body.ID, body.RaftAddr); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusNoContent, nil)
	return nil
}

// removeClusterNode: DELETE /admin/cluster/nodes/{node} → 204 once every
// replica moved off the node and it left the cluster.
func (s *Server) removeClusterNode(r *request) error {
	if err := r.clusterAdmin(); err != nil {
		return err
	}
	raw, err := r.param("node")
	if err != nil {
		return err
	}
	id, err := strconv.ParseUint(raw, 10, 64)
	if err != nil || id == 0 {
		return invalid("node must be a node id ≥ 1, got [%s]", raw)
	}
	if err := s.cluster.RemoveNode(r.context(), id); err != nil {
		return err
	}
	writeJSON(r.ctx, http.StatusNoContent, nil)
	return nil
}

// forwardedHeader marks a request one node passed to another, which
// answers it itself or not at all.
const forwardedHeader = "X-Coppice-Forwarded"

// forward passes a request this node cannot serve, because it holds no
// replica of its database (engine.UnavailableError.Forward), to a node that
// can, and answers with that node's answer; it reports whether it did. A
// request passed on once is not passed on again, and one whose body the
// handler streams (a load) is not passed on: both get the 503.
func (s *Server) forward(r *request, err error) bool {
	var ue *engine.UnavailableError
	if s.cluster == nil || !errors.As(err, &ue) || ue.Forward == "" || r.route != nil && r.route.pattern == loadRoute ||
		len(r.ctx.Request.Header.Peek(forwardedHeader)) > 0 {
		return false
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	r.ctx.Request.CopyTo(req)
	req.UseHostHeader = true // the workspace may be in the Host header
	req.Header.Set(forwardedHeader, strconv.FormatUint(s.cluster.NodeID(), 10))
	deadline, _ := r.context().Deadline()
	if err := s.peer(ue.Forward).DoDeadline(req, resp, deadline); err != nil {
		s.log.Warn("cannot pass a request on to a node with a replica", "request", r.requestID(), "node", ue.Forward, "err", err)
		return false
	}
	resp.CopyTo(&r.ctx.Response)
	r.ctx.Response.Header.SetCanonical(headerRequestID, []byte(r.requestID()))
	return true
}

// peer returns the client of the node at addr, made on first use.
func (s *Server) peer(addr string) *fasthttp.HostClient {
	s.peers.Lock()
	defer s.peers.Unlock()
	if s.peers.m == nil {
		s.peers.m = map[string]*fasthttp.HostClient{}
	}
	c := s.peers.m[addr]
	if c == nil {
		c = &fasthttp.HostClient{Addr: addr, MaxConns: 256, MaxIdleConnDuration: time.Minute}
		s.peers.m[addr] = c
	}
	return c
}
