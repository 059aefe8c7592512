package api

import (
	"strconv"
	"sync"
	"testing"
)

// A read-mostly map holds what was put up to its limit, forgets what was
// removed, and reads while others write.
func TestReadMostly(t *testing.T) {
	var m readMostly[string, int]
	if v, ok := m.load()["a"]; ok || v != 0 {
		t.Fatalf("empty map: %v, %v", v, ok)
	}
	m.put("a", 1, 2)
	m.put("b", 2, 2)
	m.put("c", 3, 2) // full
	m.put("a", 4, 2) // a key held is replaced even when full
	if got := m.load(); len(got) != 2 || got["a"] != 4 || got["b"] != 2 {
		t.Fatalf("after puts: %v, want map[a:4 b:2]", got)
	}
	if n := testing.AllocsPerRun(10, func() { m.put("d", 5, 2) }); n != 0 {
		t.Fatalf("a put the full map refused allocated %v times: copied the map", n)
	}
	before := m.load()
	m.remove("a")
	m.remove("nope")
	if got := m.load(); len(got) != 1 || got["b"] != 2 {
		t.Fatalf("after remove: %v, want map[b:2]", got)
	}
	if before["a"] != 4 {
		t.Fatal("a map once loaded changed")
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				k := strconv.Itoa(g*1000 + i)
				m.put(k, i, 1<<20)
				if v, ok := m.load()[k]; !ok || v != i {
					t.Errorf("%s: %v, %v after its put", k, v, ok)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := len(m.load()); n != 801 {
		t.Errorf("%d keys, want 801", n)
	}
}
