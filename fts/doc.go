// Package fts holds full-text search: analysis, postings, the term
// dictionary (exact, prefix and fuzzy lookups), scoring and highlighting.
package fts
