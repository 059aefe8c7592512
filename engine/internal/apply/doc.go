// Package apply is the one write path of a data directory. Every change,
// of a database and of the global catalog, is a command value (a closed
// set: the DBCommand kinds of codec.go and the commands of package
// catalog), and Applier.Apply is the only thing that applies one.
//
// Determinism. A command holds everything it needs: record ids,
// timestamps, `now` defaults, generated ids and the hashes of generated
// secrets are resolved by the caller before it is made. Applying it reads
// no clock, no randomness and no flags, never depends on map order, and
// allocates row ids, layers, tables, branches and versions from counters
// stored in the database's own key range. So the same commands, in the
// same order, on the same state, write the same bytes, and every command
// has a versioned encoding (Encode, Decode) that keeps it so;
// codec_test.go checks both for every kind. Where nothing replays them (no
// replication), concurrent single-record writes are applied together as
// one command, with one batch and one sync (group.go).
//
// The seam for replication. A replicated deployment (Options.Replicated,
// package replica) proposes the encoded command instead of applying it;
// each replica's state machine decodes the entries of its log and applies
// them in log order with ApplyLogged, which writes the entry's bookkeeping
// in the command's batch and does not sync, and EncodeResult carries the
// result back to the proposer. Flattening a deep branch is two commands
// around a copy that depends only on the first (Flatten, Materialize); a
// replica makes the copy as it applies the second. Dropping the layers a
// command unreferences is its deterministic consequence. A replicated
// catalog places a database empty, its first branch (or a backup, in
// parts: LoadRange) coming through the database's own log, and a replica
// catches up from another's range (ReplaceDatabase, ReplaceCatalog)
// (replicated.go).
//
// Observers. The structures derived from a database's keys register an
// Observer when the database opens (Options.Observe) and are told of every
// command: prepared before its batch becomes visible, told after whether
// it was applied, and told when the database is dropped. The commit path
// names none of them.
//
// Lock order. These are all the engine's locks; one may be taken while
// holding only locks above it in this list:
//
//  1. Applier.catMu serializes catalog commands. A command that drops a
//     database takes that database's writer lock under it.
//  2. DB.mu is a database's writer lock: it serializes its commands.
//     Observers run under it.
//  3. DB.gcMu is held for reading by readers (DB.Pin) from loading a
//     lineage to their last read, and for writing while layers are
//     dropped, which happens after the command that unreferenced them,
//     without DB.mu.
//  4. The store lock of a database's derived structures (memstore.DB's
//     storeMu): written by its observer from before the batch of a
//     command that changes branches is visible until the structures are
//     brought in line with it, and when the database is dropped; read by
//     everyone who takes a table's lock (5).
//  5. The lock of one table of a database, on every branch (memstore's
//     tableLock), under storeMu held for reading: written by the observer
//     of a command that writes the table's rows from before its batch is
//     visible until its changes are queued on the structures (several
//     tables in increasing id), and by builds registering a structure of
//     the table, opening it, and evictions dropping one; read by readers
//     of the table while they pick its structures and take their
//     snapshot, never while they read, and to make the table's bitmap
//     cache. A reader only tries the locks of
//     the tables its links reach, never waits for them.
//  6. The lock of one derived structure (memstore's slot.mu): read by
//     the readers of the structure for as long as they use it, written
//     by whoever applies changes to it (writers and readers only ever
//     try it, never wait) and by its builder while it builds.
//  7. catalog.Catalog's mu guards the catalog's in-memory maps: readers,
//     and catalog commands publishing their changes (catalog.Tx.Publish),
//     which also open and forget the databases they place and drop.
//  8. Leaves, under which nothing is taken: the maps of open databases
//     (Applier.dbMu) and of their derived structures (memstore's
//     Registry.mu), the bitmap caches' locks (BitmapCache.mu, its write
//     log's, DB.cachesMu), the column indexes' (colIndex.mu), a
//     structure's queue of changes (slot.bmu), the record cache's shard
//     and row locks and its once-lock, the memory budget's and its
//     entries' (Budget.mu, Entry.mu), a database's write marks
//     (DB.marksMu) and its queue of single-record writes waiting to be
//     applied in a group (DB.gmu, taken alone or under DB.mu), the
//     words it remembers as stored (DB.knownMu, written under DB.mu and
//     read by writers preparing their records before it), the
//     catalog's key-hash cache, layers.FillSet, a schema's cache of
//     index tables (model.Schema.itMu), and the idle compactor's table
//     counts (idleCompactor.mu).
//
// Outside the list: the memory budget evicts structures holding none of
// these (memstore's Budget.Reclaim); its reclaimMu lets one evicting
// goroutine run at a time, and evictions under it take the locks of 4-6
// like any writer of the table. The cluster's locks sit
// above the engine's: consensus.Host.mu is held while a group starts,
// when its state machine may open the database (Applier.dbMu), and replica.Node.mu
// and the in-memory transport's locks are taken alone.
//
// Readers therefore never take catMu: the server's secrets, which a read
// may need to sign a URL, are made when the engine opens.
package apply
