package engine

// maybeFlatten starts a background flatten (apply.Flatten) of the named
// branch if its lineage is deeper than Options.FlattenDepth.
func (e *Engine) maybeFlatten(d *database, name string) {
	b := d.State().Branches[name]
	if b == nil || len(b.Lineage) <= e.opts.FlattenDepth {
		return
	}
	// A failed flatten leaves the branch as it was; the next fork retries.
	e.background(func() { e.obs.timed(EventFlatten, func() error { return e.ap.Flatten(d.DB, b.ID) }) })
}
