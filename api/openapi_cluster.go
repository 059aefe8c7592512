package api

// clusterOps are the administration of a cluster (cluster.go).
func clusterOps() []apiOp {
	adminOnly := " Anyone but the server administrator gets a 403; a single server answers 404."
	return []apiOp{
		{method: "GET", path: "/admin/cluster", tag: "Cluster", summary: "Show the cluster (administrator only)",
			desc: "Every node, and whether it answered within two seconds; every group (the catalog's, then one per database) " +
				"with its leader and, for each replica, the last entry it applied and how many the leader applied beyond it." + adminOnly,
			responses: obj{"200": reply("the cluster", "ClusterStatus", obj{
				"node":  1,
				"nodes": []any{obj{"id": 1, "raftAddr": "127.0.0.1:7001", "apiAddr": "127.0.0.1:8081", "reachable": true}},
				"groups": []any{obj{"group": 1, "database": "(catalog)", "leaderNode": 1, "term": 2,
					"replicas": []any{obj{"node": 1, "replica": 1, "applied": 42, "lag": 0}}}},
			})},
			errors: []int{403, 404}},
		{method: "GET", path: "/admin/cluster/node", tag: "Cluster", summary: "Show this node's groups (administrator only)",
			desc:      "This node's own view of its groups, read without asking the others: what GET /admin/cluster gathers." + adminOnly,
			responses: obj{"200": reply("the node's view", "ClusterNodeView", nil)},
			errors:    []int{403, 404}},
		{method: "POST", path: "/admin/cluster/nodes", tag: "Cluster", summary: "Add a node (administrator only)",
			desc: "Makes a node started with --join (and not listed in it) a member, and gives it a replica of every database with " +
				"fewer than three. A node id removed before is refused with 409: a node that comes back needs a new id." + adminOnly,
			body:      jsonBody("AddNodeRequest", obj{"id": 4, "raftAddr": "127.0.0.1:7004"}),
			responses: obj{"204": noContent("the node is a member")},
			errors:    []int{400, 403, 404, 409}},
		{method: "DELETE", path: "/admin/cluster/nodes/{node_id}", tag: "Cluster", summary: "Remove a node (administrator only)",
			desc: "Moves every replica off the node, each new replica joining before the old one goes, then takes the node out " +
				"of the cluster. Run again after a failure, it goes on where it stopped. A node cannot remove itself." + adminOnly,
			responses: obj{"204": noContent("the node left the cluster")},
			errors:    []int{400, 403, 404}},
	}
}

// clusterSchemas are the schemas of clusterOps.
func clusterSchemas() obj {
	replicaView := object(obj{
		"node":    integer("the node"),
		"replica": integer("the replica's id in the group"),
		"applied": integer("the last entry of the group's log it applied"),
		"lag":     integer("entries the leader (or the furthest replica) applied beyond it"),
	}, "node", "replica", "applied", "lag")
	groupView := object(obj{
		"group":      integer("the group's id: 1 is the catalog's"),
		"database":   strDesc("the database's name; (catalog) for the catalog"),
		"replica":    integer("this node's replica id"),
		"leaderNode": integer("the node that leads the group as this node knows it; 0: none"),
		"term":       integer("the leader's term"),
		"applied":    integer("the last entry applied here"),
		"firstIndex": integer("the first entry this node's log still has: a replica missing an earlier one catches up from a snapshot"),
		"lastIndex":  integer("the last entry in this node's log"),
		"members":    obj{"type": "object", "description": "replica id → node", "additionalProperties": obj{"type": "integer"}},
	}, "group", "database", "replica", "leaderNode", "term", "applied", "firstIndex", "lastIndex", "members")
	return obj{
		"ClusterStatus": object(obj{
			"node": integer("the node that answered"),
			"nodes": arrayOf(object(obj{
				"id":        integer("the node's id"),
				"raftAddr":  strDesc("where the nodes replicate with it"),
				"apiAddr":   strDesc("where it serves the API"),
				"reachable": boolean("whether it answered"),
				"error":     strDesc("why it did not"),
			}, "id", "raftAddr", "apiAddr", "reachable")),
			"groups": arrayOf(object(obj{
				"group":      integer("the group's id: 1 is the catalog's"),
				"database":   strDesc("the database's name; (catalog) for the catalog"),
				"leaderNode": integer("the leader's node, as the node with the newest term knows it; 0: none"),
				"term":       integer("that leader's term"),
				"replicas":   arrayOf(replicaView),
			}, "group", "database", "leaderNode", "term", "replicas")),
		}, "node", "nodes", "groups"),
		"ClusterNodeView": object(obj{
			"node":               integer("this node"),
			"raftAddr":           strDesc("where the nodes replicate with it"),
			"apiAddr":            strDesc("where it serves the API"),
			"snapshotsRecovered": integer("snapshots its replicas caught up from since it started"),
			"groups":             arrayOf(groupView),
		}, "node", "raftAddr", "apiAddr", "snapshotsRecovered", "groups"),
		"AddNodeRequest": object(obj{
			"id":       integer("the new node's id (its --node-id), ≥ 1"),
			"raftAddr": strDesc("its --raft-addr"),
		}, "id", "raftAddr"),
	}
}
