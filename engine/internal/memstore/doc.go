// Package memstore holds the structures derived in memory from each
// database's keys: column stores (the values of a table's columns by row,
// with their orders, dictionaries and trigram indexes), search stores
// (vocabularies and field lengths), vector stores, the bitmap caches of
// composed postings and the record cache. Each is rebuilt from the keys
// on demand, never the other way round.
//
// Each open database's structures hang off one DB, which is the
// database's observer on the write path (apply.Observer): told of every
// command before its batch becomes visible and after, it makes cache
// epochs odd while a write is in flight and applies the rows written to
// the stores under its store lock, so that a reader's snapshot and the
// stores it reads always agree. A Registry holds the DB of every open
// database.
package memstore
