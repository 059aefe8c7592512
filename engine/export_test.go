package engine

// BitmapCacheCounts returns the counters of the engine's bitmap caches
// since it opened: lookups that hit and missed, commands noted, commands
// that changed more bitmaps than a cache follows one by one, and entries
// kept up to date across a command.
func BitmapCacheCounts(e *Engine) (hits, misses, writes, overflows, kept int64) {
	n := e.mem.BitmapCacheCounts()
	return n.Hits.Load(), n.Misses.Load(), n.Writes.Load(), n.Overflows.Load(), n.Kept.Load()
}
