// Package memstore holds the structures derived in memory from each
// database's keys: column stores (the values of a table's columns by row,
// with their orders, dictionaries and trigram indexes), search stores
// (vocabularies and field lengths), vector stores, the bitmap caches of
// composed postings, the record cache, and the live-row counts of branches
// whose rows cannot change (counts.go). Each is rebuilt from the keys on
// demand, never the other way round.
//
// Each open database's structures hang off one DB, which is the
// database's observer on the write path (apply.Observer): told of every
// command before its batch becomes visible and after, it makes cache
// epochs odd while a write is in flight and queues the rows written on
// the structures of their tables, holding back meanwhile only the
// readers of those tables (DB says which lock covers what). A structure
// lives in a slot (slot.go) that readers hold for as long as they use it,
// without holding back any write, and that always shows exactly the
// snapshot its reader took (view.go). A branch that has not written a table since its fork reads
// its parent's structures (share.go), decided from the lineages and the
// write marks stored with the data, so also after a restart.
//
// One memory budget covers all of them (budget.go): past it the least
// recently used structures are evicted, and rebuilt when a reader needs
// them again. A Registry holds the DB of every open database and the
// budget.
package memstore
