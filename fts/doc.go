// Package fts is full-text search without storage: analysis, the term
// dictionary, scoring, highlighting and the search of a table. It reads
// through a Source the engine implements (postings, field lengths, the
// vocabulary, and the planner's index.Source), as the planner of package
// index reads through index.Source.
//
//   - Analysis (analyze.go): Tokenize splits text on everything that is not
//     a letter, digit or combining mark, and Fold lowercases and strips
//     accents; tokens keep byte offsets into the source for highlighting.
//     Indexing and querying both go through Tokenize, so they agree.
//   - Dictionary (dict.go, levenshtein.go, lexicon.go): Dict maps sorted
//     terms to dense ids in a vellum FST and answers exact, prefix and
//     typo-tolerant (Levenshtein distance ≤ 2, a transposition being one
//     edit) lookups by walking only the states an automaton can still
//     accept; the edit-distance automaton computes its rows along the walk
//     instead of being built for each word. Terms of at most two
//     characters match exactly only, and expansions are capped by the
//     caller's limit. A Lexicon adds the terms written since its Dict was
//     built.
//   - Scoring (score.go): BM25 per column (k1 = 1.2, b = 0.75), a typo
//     counting 1/(1+distance) of an exact match and a prefix completion ½,
//     multiplied by the column's target weight; then the value, numeric and
//     date boosters are added.
//   - Highlighting (highlight.go): matched words of a returned value wrapped
//     in <em>…</em>, HTML-escaped on request; whole values up to 100
//     characters, fragments around the matches beyond.
//   - Search (search.go, scorer.go, prune.go, phrase.go, top.go,
//     boost.go): Search binds a request's target, filter and boosters (read
//     by request.go) to a table, expands the query words, reads their
//     postings and counts the matches, checks phrases on the records that
//     hold every word (until the count's cap, then on the rest only while
//     they may reach the k best), scores column by column from the term and frequency
//     bitmaps the candidates that may reach the k best (MaxScore over
//     per-term bounds, then a bound per record from its partial score:
//     the same hits and scores as scoring every match),
//     adds the boosters and keeps the k best in a bounded heap; Ranked
//     orders the hits of several tables.
//
// testdata/search shows each operation with its inputs and outputs.
package fts
