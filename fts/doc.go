// Package fts holds the engine-independent parts of full-text search:
// analysis, the term dictionary, scoring and highlighting. Its functions are
// pure: the engine reads postings and column values and hands them in.
//
//   - Analysis (analyze.go): Tokenize splits text on everything that is not
//     a letter, digit or combining mark, and Fold lowercases and strips
//     accents; tokens keep byte offsets into the source for highlighting.
//     Indexing and querying both go through Tokenize, so they agree.
//   - Dictionary (dict.go): Dict maps sorted terms to dense ids in a vellum
//     FST and answers exact, prefix and typo-tolerant (Levenshtein distance
//     ≤ 2, a transposition being one edit) lookups by walking only the
//     states an automaton can still accept. Terms of at most two characters
//     match exactly only, and expansions are capped by the caller's limit.
//   - Scoring (score.go): BM25 per column (k1 = 1.2, b = 0.75), a typo
//     counting 1/(1+distance) of an exact match and a prefix completion ½,
//     multiplied by the column's target weight; then the value, numeric and
//     date boosters are added.
//   - Highlighting (highlight.go): matched words of a returned value wrapped
//     in <em>…</em>, HTML-escaped on request; whole values up to 100
//     characters, fragments around the matches beyond.
//
// testdata/search shows each operation with its inputs and outputs.
package fts
