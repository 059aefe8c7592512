package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/coppice-db/coppice/api"
	"github.com/coppice-db/coppice/engine"
)

// clusterFlags declares the flags of `coppice serve` that make the server
// a node of a cluster, and returns what turns them into the engine's
// options once parsed: nil without --node-id.
func clusterFlags(fs *flag.FlagSet, env func(name, def string) string) func(apiAddr string) (*engine.ClusterOptions, error) {
	var nodeID, raftAddr, raftListen, join, replicas, wait string
	fs.StringVar(&nodeID, "node-id", env("COPPICE_NODE_ID", ""),
		"make this server node N (≥ 1) of a cluster; with --raft-addr and --join. Without it the server runs alone (env COPPICE_NODE_ID)")
	fs.StringVar(&raftAddr, "raft-addr", env("COPPICE_RAFT_ADDR", ""),
		"host:port the other nodes replicate with this node at; it must not change (env COPPICE_RAFT_ADDR)")
	fs.StringVar(&raftListen, "raft-listen", env("COPPICE_RAFT_LISTEN", ""),
		"address to listen on for replication when it differs from --raft-addr, e.g. 0.0.0.0:7001 (env COPPICE_RAFT_LISTEN)")
	fs.StringVar(&join, "join", env("COPPICE_JOIN", ""),
		"comma-separated raft addresses of the cluster's founding nodes, node 1 first (or id@host:port each); a node not in the list waits for `coppice cluster add-node` (env COPPICE_JOIN)")
	fs.StringVar(&replicas, "replicas", env("COPPICE_REPLICAS", "3"),
		"replicas of each new database in a cluster (all the nodes, when fewer) (env COPPICE_REPLICAS)")
	fs.StringVar(&wait, "cluster-wait", env("COPPICE_CLUSTER_WAIT", "5s"),
		"how long a request waits for a group without a leader before it gets 503 with Retry-After (env COPPICE_CLUSTER_WAIT)")
	return func(apiAddr string) (*engine.ClusterOptions, error) {
		if nodeID == "" {
			if raftAddr != "" || join != "" {
				return nil, errors.New("--raft-addr and --join need --node-id")
			}
			return nil, nil
		}
		id, err := strconv.ParseUint(nodeID, 10, 64)
		if err != nil || id == 0 {
			return nil, fmt.Errorf("--node-id must be a number ≥ 1, got %q", nodeID)
		}
		if _, _, err := net.SplitHostPort(raftAddr); err != nil || raftAddr == "" {
			return nil, fmt.Errorf("--raft-addr must be host:port, got %q", raftAddr)
		}
		peers := splitList(join)
		if len(peers) == 0 {
			return nil, errors.New("--join must list the founding nodes' raft addresses")
		}
		n, err := strconv.Atoi(replicas)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--replicas must be a number ≥ 1, got %q", replicas)
		}
		d, err := time.ParseDuration(strings.TrimSpace(wait))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("--cluster-wait must be a duration such as 5s, got %q", wait)
		}
		return &engine.ClusterOptions{NodeID: id, RaftAddr: raftAddr, ListenAddr: raftListen, APIAddr: advertised(apiAddr, raftAddr),
			Join: peers, Replicas: n, MaxWait: d}, nil
	}
}

// advertised returns the API address the other nodes are told: --addr,
// with the host of --raft-addr when --addr listens on every interface
// (0.0.0.0, ::, or no host), since the nodes reach each other there.
func advertised(apiAddr, raftAddr string) string {
	host, port, err := net.SplitHostPort(apiAddr)
	if err != nil {
		return apiAddr
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return apiAddr
	}
	rhost, _, err := net.SplitHostPort(raftAddr)
	if err != nil {
		return apiAddr
	}
	return net.JoinHostPort(rhost, port)
}

// bootstrapCluster creates the first accounts of a new cluster through its
// node 1, once a majority of the founding nodes runs; it waits until ctx
// ends. This node's catalog may lag the cluster's (a node restarted after
// a crash), so it bootstraps only when the catalog, caught up through a
// barrier, still has no user. The key is chosen once, before the first
// attempt: an attempt whose answer timed out may still apply, and the
// key then finds the accounts it created, to show them.
func bootstrapCluster(ctx context.Context, eng *engine.Engine, key string, out io.Writer, log func(msg string, args ...any)) error {
	given := key != ""
	if !given {
		key = engine.NewKeySecret()
	}
	proposed := false
	for {
		err := eng.Cluster().CatalogBarrier(ctx)
		if err == nil {
			if eng.Accounts().HasUsers() {
				if info, ok := api.BootstrappedWith(eng, key); ok && proposed {
					info.KeyGiven = given
					info.Print(out)
				}
				return nil
			}
			var info *api.BootstrapInfo
			proposed = true
			if info, err = api.Bootstrap(eng, key); err == nil {
				info.KeyGiven = given
				info.Print(out)
				return nil
			}
		}
		var ue *engine.UnavailableError
		if !errors.As(err, &ue) {
			return err
		}
		log("waiting for a majority of the founding nodes to bootstrap the cluster")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// runCluster runs `coppice cluster`: the status of a cluster and the
// changes of its nodes, through any node's API, and the digest of a data
// directory no server holds.
func runCluster(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("coppice cluster", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	nodeURL := fs.String("url", envOr(getenv)("COPPICE_URL", "http://127.0.0.1:8080"), "URL of any node (env COPPICE_URL)")
	data := fs.String("data", "", "digest: the data directory of a stopped node")
	id := fs.Uint64("id", 0, "add-node: the new node's --node-id")
	raft := fs.String("raft-addr", "", "add-node: the new node's --raft-addr")
	asJSON := fs.Bool("json", false, "status: print the JSON the node answers")
	if len(args) == 0 {
		clusterUsage(stderr)
		return 2
	}
	verb := args[0]
	switch verb {
	case "-h", "--help", "help":
		clusterUsage(stdout)
		return 0
	case "status", "add-node", "remove-node", "digest":
	default:
		fmt.Fprintf(stderr, "coppice cluster: unknown command %q\n\n", verb)
		clusterUsage(stderr)
		return 2
	}
	// Flags may come before or after a command's argument:
	// remove-node 3 --url … as well as remove-node --url … 3.
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		fmt.Fprintf(stderr, "coppice cluster: %v\n", err)
		return 2
	}
	if len(pos) > 0 && verb != "remove-node" {
		fmt.Fprintf(stderr, "coppice cluster %s: takes no argument, got %q\n", verb, pos[0])
		return 2
	}
	c := &clusterClient{url: strings.TrimRight(*nodeURL, "/"), key: getenv("COPPICE_API_KEY")}
	switch verb {
	case "status":
		err = c.status(stdout, *asJSON)
	case "add-node":
		if *id == 0 || *raft == "" {
			err = errors.New("add-node needs --id and --raft-addr")
			break
		}
		err = c.call("POST", "/admin/cluster/nodes", map[string]any{"id": *id, "raftAddr": *raft}, nil)
		if err == nil {
			fmt.Fprintf(stdout, "node %d added\n", *id)
		}
	case "remove-node":
		if len(pos) != 1 {
			err = errors.New("remove-node takes the node's id")
			break
		}
		if n, perr := strconv.ParseUint(pos[0], 10, 64); perr != nil || n == 0 {
			err = fmt.Errorf("remove-node takes the node's id, a number ≥ 1, got %q", pos[0])
			break
		}
		err = c.call("DELETE", "/admin/cluster/nodes/"+pos[0], nil, nil)
		if err == nil {
			fmt.Fprintf(stdout, "node %s removed\n", pos[0])
		}
	case "digest":
		err = digest(*data, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "coppice cluster %s: %v\n", verb, err)
		return 1
	}
	return 0
}

// parseInterspersed parses fs from args wherever its flags are, and
// returns the other arguments in order: the flag package stops at the
// first argument that is not a flag. Everything after "--" is an argument.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// clusterUsage documents `coppice cluster`.
func clusterUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: coppice cluster <command> [flags]

Commands (through any node's API, with an administrator's key in COPPICE_API_KEY):
  status [--json]                         the nodes, and each group with its leader and each replica's lag
  add-node --id N --raft-addr HOST:PORT   add a node started with --node-id N --raft-addr HOST:PORT --join …
  remove-node N                           move node N's replicas to other nodes, then take it out
And offline:
  digest --data DIR                       SHA-256 of the catalog and of each database of a stopped node's
                                          data directory: replicas that applied the same entries match

Flags, before or after a command's argument:
  --url URL   any node (env COPPICE_URL, default http://127.0.0.1:8080)
`)
}

// clusterClient calls the cluster administration of a node.
type clusterClient struct{ url, key string }

// call sends a request and decodes a JSON answer into out, when not nil.
func (c *clusterClient) call(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.url+path, rd)
	if err != nil {
		return err
	}
	if c.key == "" {
		return errors.New("set COPPICE_API_KEY to an administrator's API key")
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := (&http.Client{Timeout: 10 * time.Minute}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct{ Message string }
		json.Unmarshal(raw, &e)
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, e.Message)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// clusterStatus is the answer of GET /admin/cluster.
type clusterStatus struct {
	Node  uint64 `json:"node"`
	Nodes []struct {
		ID        uint64 `json:"id"`
		RaftAddr  string `json:"raftAddr"`
		APIAddr   string `json:"apiAddr"`
		Reachable bool   `json:"reachable"`
		Error     string `json:"error"`
	} `json:"nodes"`
	Groups []struct {
		Group    uint64 `json:"group"`
		Database string `json:"database"`
		Leader   uint64 `json:"leaderNode"`
		Term     uint64 `json:"term"`
		Replicas []struct {
			Node    uint64 `json:"node"`
			Applied uint64 `json:"applied"`
			Lag     uint64 `json:"lag"`
		} `json:"replicas"`
	} `json:"groups"`
}

// status prints the cluster's nodes and groups.
func (c *clusterClient) status(w io.Writer, raw bool) error {
	var st clusterStatus
	var msg json.RawMessage
	if err := c.call("GET", "/admin/cluster", nil, &msg); err != nil {
		return err
	}
	if raw {
		_, err := fmt.Fprintf(w, "%s\n", msg)
		return err
	}
	if err := json.Unmarshal(msg, &st); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tRAFT\tAPI\tSTATE")
	for _, n := range st.Nodes {
		state := "up"
		if !n.Reachable {
			state = "unreachable: " + n.Error
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", n.ID, n.RaftAddr, n.APIAddr, state)
	}
	fmt.Fprintln(tw, "\nGROUP\tDATABASE\tLEADER\tTERM\tREPLICAS (node:applied/lag)")
	for _, g := range st.Groups {
		var reps []string
		for _, r := range g.Replicas {
			reps = append(reps, fmt.Sprintf("%d:%d/%d", r.Node, r.Applied, r.Lag))
		}
		leader := "none"
		if g.Leader != 0 {
			leader = strconv.FormatUint(g.Leader, 10)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", g.Group, g.Database, leader, g.Term, strings.Join(reps, " "))
	}
	return tw.Flush()
}

// digest prints the digests of a stopped node's data directory.
func digest(dir string, w io.Writer) error {
	if dir == "" {
		return errors.New("digest needs --data")
	}
	ds, err := engine.DigestDataDir(dir)
	if err != nil {
		return err
	}
	for _, d := range ds {
		name := "(catalog)"
		if d.Database != "" {
			name = d.Workspace + "/" + d.Database
		}
		fmt.Fprintf(w, "%s %d %s\n", name, d.Keys, d.SHA256)
	}
	return nil
}

// isFounder reports whether this node is one of the founding nodes its
// --join lists.
func isFounder(c *engine.ClusterOptions) bool {
	for i, j := range c.Join {
		id, addr := uint64(i+1), j
		if s, a, ok := strings.Cut(j, "@"); ok {
			id, _ = strconv.ParseUint(s, 10, 64)
			addr = a
		}
		if id == c.NodeID {
			return addr == c.RaftAddr
		}
	}
	return false
}
