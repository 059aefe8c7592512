// Package replica makes a data directory a node of a cluster: the catalog
// is one Raft group (the meta group, id 1) and each database another
// (groupOf), on package consensus, and every replica applies its group's
// log through package apply, the one write path, so that the observers of
// each database (its column, search and vector stores) stay current on
// followers as on the leader.
//
// # Entries and results
//
// An entry is a command of package apply with the id of the request that
// proposed it (entry.go). The state machine (statemachine.go) decodes each
// entry and applies it with apply.ApplyLogged: unsynced (the Raft log is
// the durable record; Sync syncs the storage's log before the library
// compacts its own), with the index of the entry and the request's record
// written in the command's own batch, in the group's own range — the
// counter "applied" and the request kinds of codec/KEYS.md. A command that
// fails changes nothing and fails the same way on every replica: its
// failure is its result, encoded in the entry's result bytes; the proposing
// node's replica hands its result over in memory as well. Node.Propose
// proposes a command whose outcome it could not learn (a leader died with
// it) again as the same request, which a replica that has its record
// answers with the first result instead of applying it twice.
//
// # Snapshots
//
// A database's snapshot is its key range in the format of backups
// (layers.WriteRange), the catalog's the catalog's range; a replica that
// recovers one replaces its range durably and reopens the database, whose
// new observers start afresh (apply.ReplaceDatabase, ReplaceCatalog).
//
// # Placement
//
// The catalog says which nodes hold a replica of each database
// (catalog.Database.Replicas). Every node makes what runs match it
// (placement.go): it starts the groups of the databases placed on it and
// stops and deletes those no longer placed on it, and the leader of each
// group adds and removes members to match. A new database is placed on
// this node and the least loaded others, up to Config.Replicas, through
// the meta group, and then started with its first branch through its own
// group (Node.PlaceDatabase), by the group's leader if the creating node
// dies before; a backup is loaded into a new database the
// same way, in parts (apply.LoadRange). Adding a node and moving replicas
// off one are only catalog commands; a move interrupted by a crash goes on
// when the nodes come back.
package replica
