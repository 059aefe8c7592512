// Package model is the engine's data model, the leaf every other part of
// the engine builds on: schemas (tables, columns and their definitions),
// branches and their lineages of layers, migrations and write operations,
// the conversion of input values to stored ones and back (file values
// included), ids, names, errors and events. It reads and writes no
// storage, and holds no state beyond the values it defines.
package model
