package layers

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestSeekReaderGetsWhatGetGets reads keys of the store, keys of an
// indexed batch over it (one that replaces a stored key, one that deletes
// one) and keys held by neither, in increasing order, in decreasing order
// and one twice, and compares each answer with the batch's own Get.
func TestSeekReaderGetsWhatGetGets(t *testing.T) {
	db, err := pebble.Open(t.TempDir(), &pebble.Options{Merger: Merger})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := func(i int) []byte { return fmt.Appendf(nil, "k%03d", i) }
	for i := 0; i < 100; i += 2 {
		if err := db.Set(key(i), []byte(fmt.Sprint("stored", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	b := db.NewIndexedBatch()
	defer b.Close()
	for _, i := range []int{11, 20, 51} {
		if err := b.Set(key(i), []byte(fmt.Sprint("batch", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete(key(30), nil); err != nil {
		t.Fatal(err)
	}
	get := func(r pebble.Reader, k []byte) string {
		v, closer, err := r.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			return "not found"
		}
		if err != nil {
			t.Fatal(err)
		}
		s := string(v)
		closer.Close()
		return s
	}
	var order []int
	for i := range 101 {
		order = append(order, i)
	}
	for i := 100; i >= 0; i -= 7 {
		order = append(order, i, i)
	}
	r := NewSeekReader(b)
	defer r.Close()
	for _, i := range order {
		if got, want := get(r, key(i)), get(b, key(i)); got != want {
			t.Fatalf("key %d: %q, want %q", i, got, want)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}
