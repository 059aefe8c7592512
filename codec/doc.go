// Package codec holds pure functions: order-preserving value encoding, key
// families, record encoding and bitmap formats, and the header of a dump
// and the manifest of a backup (dumpheader.go, backupmanifest.go), which
// the server and the command line share. Nothing here does I/O or keeps
// state; every byte layout is documented next to its code and in KEYS.md, and
// every decoder rejects input its encoder would not have produced.
package codec
