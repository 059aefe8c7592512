package engine

import (
	"context"
	"strings"
	"testing"
)

// TestBlocksUncompressed: the tables the store writes hold their blocks
// uncompressed, so that a point read outside the block cache decompresses
// nothing (blockCompression).
func TestBlocksUncompressed(t *testing.T) {
	e, main := cacheItems(t)
	text := strings.Repeat("a block of text that compresses well ", 20)
	for i := range 200 {
		if _, err := e.WriteOne(main, Op{Kind: OpInsert, Table: "items", ID: cacheItemID(i), Values: map[string]any{"s": text}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := e.pdb.Metrics().Table
	if m.CompressedCountNone == 0 || m.CompressedCountSnappy+m.CompressedCountZstd+m.CompressedCountMinLZ > 0 {
		t.Errorf("tables by compression: none %d, snappy %d, zstd %d, minlz %d; want none only",
			m.CompressedCountNone, m.CompressedCountSnappy, m.CompressedCountZstd, m.CompressedCountMinLZ)
	}
}
