package engine

import (
	"runtime"
	"strings"
	"testing"
)

// TestLargeValueReadCopiesOnce: reading a record with a 10 MB value
// allocates about the value once (the decoded string), not once more for
// a copy of the stored bytes.
func TestLargeValueReadCopiesOnce(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{"docs": {{Name: "body", Type: TypeText}}})
	const size = 10 << 20
	big := strings.Repeat("0123456789abcdef", size/16)
	if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", ID: "big", Values: map[string]any{"body": big}}); err != nil {
		t.Fatal(err)
	}
	read := func() uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		v, err := e.GetView(nil, ref, "docs", "big")
		if err != nil || len(v.Fields) != 1 || len(v.Fields[0].Value.Str) != size {
			t.Fatalf("get: %v", err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	read() // warm the block cache
	if n := read(); n > size*3/2 {
		t.Fatalf("a read of a %d-byte value allocated %d bytes", size, n)
	}
}
