package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
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

// TestBlockLayout: the tables the store writes hold data blocks of about
// dataBlockSize, and an index of one block (indexBlockSize), so that a
// point read outside the block cache reads a small block after one index
// search.
func TestBlockLayout(t *testing.T) {
	e, main := cacheItems(t)
	text := strings.Repeat("words of a record ", 40) // about 700 bytes, as a record of the benchmark dataset
	for start := 0; start < 2000; start += MaxBulkRecords {
		var batch []map[string]any
		for i := start; i < start+MaxBulkRecords; i++ {
			batch = append(batch, map[string]any{"id": fmt.Sprintf("b%05d", i), "s": text})
		}
		if _, err := e.BulkInsert(context.Background(), main, "items", batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	levels, err := e.pdb.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var data, blocks, tables uint64
	for _, level := range levels {
		for _, tab := range level {
			p := tab.Properties
			if p.IndexPartitions != 0 {
				t.Errorf("table %v: index of %d partitions, want one block", tab.FileNum, p.IndexPartitions)
			}
			data, blocks, tables = data+p.DataSize, blocks+p.NumDataBlocks, tables+1
		}
	}
	if blocks < 200 {
		t.Fatalf("%d data blocks in %d tables: too few to judge", blocks, tables)
	}
	// A block closes at the first record past its size.
	if avg := data / blocks; avg > dataBlockSize+uint64(len(text)) {
		t.Errorf("data blocks of %d bytes on average, want about %d", avg, dataBlockSize)
	}
}
