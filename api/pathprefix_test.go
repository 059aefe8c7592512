package api

import (
	"fmt"
	"sync"
	"testing"
)

// TestPathPrefixes: the prefixes of point read paths answer what parsing
// them answers, first and later, from many goroutines at once, and no more
// than maxPathPrefixes are remembered.
func TestPathPrefixes(t *testing.T) {
	var pp pathPrefixes
	f := func(path string, want *pathPrefix) {
		t.Helper()
		for range 2 { // parsed, then remembered
			got := pp.get([]byte(path))
			if (got == nil) != (want == nil) || got != nil && *got != *want {
				t.Fatalf("get(%q) = %+v, want %+v", path, got, want)
			}
		}
	}
	f("/db/shop:main/tables/items/data/", &pathPrefix{dbb: "shop:main", table: "items"})
	f("/ws/acme/db/shop:dev/tables/t/data/", &pathPrefix{wsLabel: "acme", dbb: "shop:dev", table: "t"})
	f("/db/shop:main/tables/items/", nil)
	f("/db//tables/items/data/", nil)
	f("/ws//db/shop:main/tables/items/data/", nil)

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range maxPathPrefixes {
				path := fmt.Sprintf("/db/d%d:main/tables/t/data/", (i*7+g)%(2*maxPathPrefixes))
				if v := pp.get([]byte(path)); v == nil || v.table != "t" {
					t.Errorf("get(%q) = %+v", path, v)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := len(pp.m.load()); n != maxPathPrefixes {
		t.Fatalf("%d prefixes remembered, want %d", n, maxPathPrefixes)
	}
}
