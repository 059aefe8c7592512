// Package index parses, plans and executes filters on roaring bitmaps, walks
// ordered indexes for sort, and builds cursors, projections, summaries and
// aggregations. It reads through the interfaces the engine hands it. Plans
// describe themselves as trees of steps (ExplainNode), which an explained
// execution fills with rows and times.
package index
