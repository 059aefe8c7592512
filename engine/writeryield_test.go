package engine

import (
	"context"
	"fmt"
	"testing"
)

// A bulk insert calls OnWriterYield's function where its writer yields
// under the writer lock: every few records it applies, and every few
// hundred bitmaps it stages.
func TestBulkInsertWriterYield(t *testing.T) {
	db := openTestDB(t, Options{})
	const n = 800
	recs := make([]map[string]any, n)
	for i := range recs {
		recs[i] = map[string]any{"name": fmt.Sprint("name", i), "n": i,
			"note": fmt.Sprintf("word%d other%d third%d", i, i%97, i%13)}
	}
	calls := 0
	ctx := OnWriterYield(context.Background(), func() { calls++ })
	if _, err := db.e.BulkInsert(ctx, db.ref("main"), "items", recs); err != nil {
		t.Fatal(err)
	}
	// The records alone make n/8 yields; the thousands of bitmaps of
	// their words make more.
	if calls <= n/8 {
		t.Fatalf("writer yields = %d, want more than %d", calls, n/8)
	}
	calls = 0
	if _, err := db.e.BulkInsert(context.Background(), db.ref("main"), "items", recs[:16]); err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Fatalf("writer yields without OnWriterYield = %d", calls)
	}
}
