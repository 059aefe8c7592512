// Package codec holds pure functions: order-preserving value encoding, key
// families, record encoding and bitmap formats. Nothing here does I/O or keeps
// state; every byte layout is documented next to its code and in KEYS.md, and
// every decoder rejects input its encoder would not have produced.
package codec
