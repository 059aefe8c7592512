// Package layers reads and shapes the copy-on-write storage of a
// database's branches (DESIGN.md §4): the versioned records and id maps
// of every layer, the bitmaps composed across a branch's lineage (and the
// Pebble merge operator that folds their deltas), ordered posting scans,
// the bitmap changes a command stages before they are written (Pending),
// the bitmap memberships of a record, the copy of a frozen lineage into
// one layer that flattening makes (Materialize), and the copy of one
// database's key range that backups are (WriteRange, ReadRange).
//
// It holds no locks and no state beyond the values it returns, except
// FillSet, a concurrent cache of ranges known to be empty. Callers keep
// the layers they read alive (the engine's lock order says how) and
// decide which lineage a read sees.
package layers
