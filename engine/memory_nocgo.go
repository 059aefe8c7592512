//go:build !cgo

package engine

// manualStorageMemory says whether the storage engine's block cache and
// memtables live outside the Go heap: without cgo, they are Go memory.
const manualStorageMemory = false
