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
// codec_test.go checks both for every kind.
//
// The seam for replication. A replicated deployment proposes the encoded
// command instead of applying it; each replica's state machine decodes
// the entries of its log and calls Apply(decoded) on them in log order,
// and EncodeResult carries the result back to the proposer. Flattening a
// deep branch is two commands around a copy that depends only on the
// first (Flatten, Materialize); dropping the layers a command unreferences
// is its deterministic consequence.
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
//  2. DB.mu is a database's writer lock: it serializes its commands, and
//     derived structures take it (DB.LockWriter) to make a bitmap cache,
//     build a store or lend one. Observers run under it.
//  3. DB.gcMu is held for reading by readers (DB.Pin) from loading a
//     lineage to their last read, and for writing while layers are
//     dropped, which happens after the command that unreferenced them,
//     without DB.mu.
//  4. The store lock of a database's derived structures (the engine's
//     database.storeMu): written by its observer around a commit and by
//     store builds, read by queries for as long as they read their
//     snapshot.
//  5. catalog.Catalog's mu guards the catalog's in-memory maps: readers,
//     and catalog commands publishing their changes (catalog.Tx.Publish),
//     which also open and forget the databases they place and drop.
//  6. Applier.dbMu and Engine.dbMu guard the maps of open databases.
//  7. Leaves, under which nothing is taken: the bitmap caches' and column
//     indexes' locks, the record cache's shard locks, the catalog's
//     key-hash cache and layers.FillSet.
//
// Readers therefore never take catMu: the server's secrets, which a read
// may need to sign a URL, are made when the engine opens.
package apply
