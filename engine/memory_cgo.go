//go:build cgo

package engine

// manualStorageMemory says whether the storage engine's block cache and
// memtables live outside the Go heap: with cgo, Pebble allocates them with
// malloc.
const manualStorageMemory = true
