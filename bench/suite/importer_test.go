package main

import (
	"strings"
	"testing"
	"time"
)

// TestProgressLog checks that the import's output is kept whole, and that
// each progress line, however the writes cut it, gives one slice whose
// rate counts the records since the line before.
func TestProgressLog(t *testing.T) {
	out := "import: 100000 records, 118.2 MiB, 9000 records/s, 10%, eta 1m0s\n" +
		"line 7: not a JSON object\n" +
		"import: 200000 records, 236.4 MiB, 9000 records/s, 20%, eta 50s\n" +
		"import: read 200000 records, imported 199999, failed 1 in 20s\n"
	w := &progressLog{slices: sliceRates{at: time.Now().Add(-10 * time.Second)}}
	for chunk := range strings.SplitSeq(out, "MiB") {
		w.Write([]byte(chunk))
		if !strings.HasSuffix(chunk, "\n") {
			w.Write([]byte("MiB"))
		}
	}
	if w.all.String() != out {
		t.Fatalf("kept %q, want %q", w.all.String(), out)
	}
	if len(w.slices.rates) != 2 {
		t.Fatalf("slices %v, want 2", w.slices.rates)
	}
	// The first 100k took about 10 s; the second next to nothing.
	if r := w.slices.rates[0]; r < 9_000 || r > 11_000 {
		t.Errorf("first slice at %.0f docs/s, want about 10000", r)
	}
	if r := w.slices.rates[1]; r < 1e6 {
		t.Errorf("second slice at %.0f docs/s, want far above the first", r)
	}
}
