package index

import (
	"fmt"
	"testing"
)

// BenchmarkBindFirstPage binds a first page's filter and sort to a table:
// "bind" as every first page did, "kept" through cursorQueries when an
// earlier page of the same text kept its binding, and "miss" for text
// never seen before, which binds and keeps it.
func BenchmarkBindFirstPage(b *testing.B) {
	tbl, _, _ := filterTestTables("svc")
	rawFilter := `{"price":{"$gt":2},"tags":{"$includes":"y"},"name":"n%d"}`
	sort, err := ReadSort([]byte(`{"price":"desc"}`))
	if err != nil {
		b.Fatal(err)
	}
	read := func(i int) Filter {
		f, err := ReadFilter(fmt.Appendf(nil, rawFilter, i))
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	b.Run("bind", func(b *testing.B) {
		f := read(0)
		for b.Loop() {
			if _, err := bindQuery(tbl, f, sort); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kept", func(b *testing.B) {
		f := read(0)
		for b.Loop() {
			if _, err := bindFirstPage(tbl, f, sort); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		fs := make([]Filter, 4*maxCursorQueries)
		for i := range fs {
			fs[i] = read(i + 1)
		}
		i := 0
		for b.Loop() {
			if _, err := bindFirstPage(tbl, fs[i%len(fs)], sort); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
