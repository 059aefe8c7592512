// Package consensus replicates a state machine through Raft groups. It keeps
// the Raft library (github.com/lni/dragonboat/v4) behind a small interface
// of its own — propose, read index, membership, and a state machine kept on
// disk that can stream and restore snapshots — so that another library, such
// as go.etcd.io/raft/v3, could take its place without the engine noticing.
// It imports no other package of this module, and no other package imports
// the library.
//
// # Shape
//
// One Host runs per process: a node id, a Raft address and a directory for
// the logs. It starts any number of groups, each identified by a group id
// the same on every node, with this node's replica of it identified by a
// replica id (the node id unless said otherwise). Each replica has its own
// StateMachine, which keeps its state on disk itself.
//
// # Guarantees
//
//   - Propose returns a command's result only after a majority of the group
//     has the command in its log and this node has applied it. On a follower
//     the command goes to the leader and the result is this node's own
//     Update result for it, equal to the leader's because Update is
//     deterministic. A command is never proposed twice: Propose retries only
//     when the library reports the command dropped before any log took it.
//   - ReadIndex is a linearizable barrier: after it returns, this node's
//     state machine has applied every write acknowledged (anywhere) before
//     the call, so a local read that follows is linearizable. Reads that can
//     be stale skip it and read the local state machine directly. The
//     library never resends a read request that a lost message or a new
//     leader swallowed; ReadIndex asks again after two election timeouts,
//     then four, and so on.
//   - While a group has no leader, or its leader no quorum, Propose,
//     ReadIndex and membership changes wait up to their context's deadline
//     (Config.MaxWait without one), then fail with an *UnavailableError
//     (errors.Is ErrUnavailable) carrying RetryAfter, for a 503. Its Maybe
//     field tells a command that may still apply (it reached a leader's log)
//     from one that never will. Some commands get no answer from the
//     library at all: one passed to a leader that then fails or drops it,
//     one whose message to the leader is lost (the library's transport drops
//     messages to a node for up to a second after a failed connection), one
//     proposed on a follower that then catches up from a snapshot already
//     holding it. Propose gives up on them with Maybe set as soon as it can
//     tell — a later proposal through the same node applied first (the
//     library keeps a node's proposals in order), or a new leader's term or
//     a snapshot recovery followed by a read barrier left it unapplied —
//     rather than wait for the deadline. A lone proposal lost on its way
//     still waits for its deadline.
//   - Concurrent proposals to one group are batched by the library: each
//     step writes all the entries ready, across the groups of a log shard,
//     with one fsync, a leader sends entries to its followers before its own
//     fsync so that theirs overlap, and Update receives every entry
//     committed since its last call. A replicated write costs about one log
//     fsync per batch on each node. (Combining commands into shared entries
//     on top of that was measured and made throughput no better, often
//     worse: it limits the entries in flight that the library pipelines.)
//
// # The state machine contract
//
// StateMachine mirrors the library's on-disk state machine:
//
//   - Open returns the index of the last entry applied durably. The state
//     machine stores that index itself, in the same atomic write as the
//     entries' effects; entries after it are applied again from the log.
//   - Update applies a batch of entries in order and must be deterministic.
//     It need not sync: the Raft log is the durable record, and the host
//     calls Sync before it compacts the log past the applied index (at each
//     snapshot, and every three minutes). An error from Update panics the
//     process: a command the state machine refuses must say so in its
//     result, not as an error.
//   - Snapshots: the periodic snapshots taken every SnapshotEvery entries
//     record only metadata and the applied index, after a Sync; they let the
//     log be truncated, keeping KeepEntries behind. A full snapshot is
//     produced only when a follower needs entries the log no longer has:
//     PrepareSnapshot captures a consistent view (it never overlaps Update),
//     SaveSnapshot streams it to the follower while Update goes on, and the
//     follower's RecoverFromSnapshot replaces its whole state, makes it
//     durable and returns the index it holds. For a database that is its
//     key range, with the applied index inside.
//
// # Configuration
//
// The library runs in its small-memory mode, sized for a 2-core machine:
//
//   - Logs: the tiny LogDB configuration (Pebble v1 with 4 MiB write
//     buffers, four at most) on two log shards, 32 MiB of memtables in all,
//     and two workers per stage instead of sixteen; groups are spread over
//     the shards by id. The shard count is recorded in the directory and
//     must never change.
//   - Timing: a 10 ms tick, heartbeats every 5 ticks and elections after 50
//     to 100 ticks (0.5–1 s): quick failover on loopback or a LAN, yet slack
//     for fsync stalls and a busy CPU, and for the library's transport,
//     which drops all messages to a node for 0.25–1 s after a connection to
//     it failed. CheckQuorum makes a leader cut off from the majority step
//     down, so the minority fails fast; PreVote keeps a node that restarts
//     or rejoins after a partition from deposing a healthy leader.
//   - Snapshots every 2000 entries, keeping 1000 entries of log behind them;
//     snapshot streams compressed with Snappy, entries not compressed.
//   - Bounds: 64 MiB of unapplied entries per group (beyond it proposals
//     wait), 64 MiB per peer send and receive queue, entries up to 60 MiB
//     (the library's messages carry at most 64 MiB): the engine must split
//     larger commands.
//   - The library's log goes to Config.Logger: elections and votes at Info,
//     real warnings and errors at Warn and Error.
//
// Many groups share one Host, its log shards, workers and connections; the
// library batches the messages of all groups bound for one node. Each group
// heartbeats on its own, so thousands of groups per node would call for a
// longer heartbeat or the library's quiesce mode. A replica id that
// RemoveReplica took out of a group never returns to it: a node that
// rejoins a group needs a new replica id.
//
// # Tests
//
// Network is an in-process transport for tests that can cut links between
// chosen nodes; the tests run 3-node groups on it (and one over TCP
// loopback), a toy register state machine on Pebble, and a porcupine check
// of linearizability through leader kills (internal/lincheck).
package consensus
