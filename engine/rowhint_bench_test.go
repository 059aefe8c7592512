package engine

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkRowOf is the column store's answer to a point read's question
// (which row holds this id), once per op over 1e4 records of main: "serial"
// in one goroutine, "parallel" from as many as GOMAXPROCS, as an HTTP
// server's connections ask it, where every lock the question takes is a
// cache line the cores pass between them.
func BenchmarkRowOf(b *testing.B) {
	const n = 10_000
	db := openTestDB(b, Options{})
	e, main := db.e, db.ref("main")
	ids := make([]string, n)
	batch := make([]map[string]any, 0, 1000)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%05d", i)
		batch = append(batch, map[string]any{"id": ids[i], "n": i})
		if len(batch) == cap(batch) {
			if _, err := e.BulkInsert(context.Background(), main, "items", batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	buildColumnStore(b, e, main, "items")
	d, err := e.database(main.Workspace, main.Database)
	if err != nil {
		b.Fatal(err)
	}
	_, br, tb, err := e.resolveTable(main, "items")
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range ids { // the id index is built on first use
		if _, ok := d.RowOf(br, tb, id); !ok {
			b.Fatalf("no row for %s", id)
		}
	}
	b.Run("serial", func(b *testing.B) {
		i := 0
		for b.Loop() {
			d.RowOf(br, tb, ids[i*7919%n])
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				d.RowOf(br, tb, ids[i*7919%n])
				i++
			}
		})
	})
}
