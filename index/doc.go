// Package index parses, plans and executes filters on roaring bitmaps, walks
// ordered indexes for sort, and builds cursors, projections, summaries and
// aggregations. It reads through the interfaces the engine hands it.
package index
