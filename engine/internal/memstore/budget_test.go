package memstore

import (
	"slices"
	"testing"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// TestBudgetEvictsLeastRecentlyUsed: past its limit a budget evicts the
// entries used longest ago until it is under fifteen sixteenths of the
// limit; a cache is emptied and stays, a removed entry counts no more.
func TestBudgetEvictsLeastRecentlyUsed(t *testing.T) {
	var events []model.Event
	b := NewBudget(1000, func(ev model.Event) { events = append(events, ev) })
	var evicted []string
	add := func(name string, size int64, cache bool) *Entry {
		var e *Entry
		evict := func() { evicted = append(evicted, name) }
		if cache {
			e = b.AddCache(KindBitmapCache, func() { evict(); e.Resize(0) })
		} else {
			e = b.Add(KindColumnStore, evict)
		}
		e.Resize(size)
		b.Advance()
		return e
	}
	a := add("a", 300, false)
	add("b", 300, true)
	add("c", 300, false)
	a.Touch() // a is now the most recent
	b.Advance()
	d := add("d", 50, false)
	b.Reclaim()
	if len(evicted) != 0 {
		t.Fatalf("evicted %v under the limit", evicted)
	}
	add("e", 200, false) // 1150 > 1000: down to 937
	b.Reclaim()
	if want := []string{"b"}; !slices.Equal(evicted, want) {
		t.Fatalf("evicted %v, want %v", evicted, want)
	}
	if s := b.Stats(); s.Used != 850 || s.Entries != 5 || s.Evictions != 1 || s.EvictedBytes != 300 {
		t.Fatalf("stats %+v", s)
	}
	d.Remove()
	d.Resize(500) // removed: counts no more
	if s := b.Stats(); s.Used != 800 || s.Entries != 4 {
		t.Fatalf("after a removal: %+v", s)
	}
	b.SetLimit(400)
	b.Reclaim() // c, then a (touched after c), then b's 0 bytes are skipped
	if want := []string{"b", "c", "a"}; !slices.Equal(evicted, want) {
		t.Fatalf("evicted %v, want %v", evicted, want)
	}
	s := b.Stats()
	if s.Used != 200 || s.Entries != 2 || s.Evictions != 3 || s.EvictedBytes != 900 {
		t.Fatalf("stats %+v", s)
	}
	if k := s.Kinds["column_store"]; k != (KindStats{Used: 200, Entries: 1, Evictions: 2, EvictedBytes: 600}) {
		t.Fatalf("column stores: %+v", k)
	}
	if k := s.Kinds["bitmap_cache"]; k != (KindStats{Used: 0, Entries: 1, Evictions: 1, EvictedBytes: 300}) {
		t.Fatalf("bitmap caches: %+v", k)
	}
	if len(events) != 2 || events[0].Kind != model.EventEviction || events[1].Count != 2 || events[1].Bytes != 600 {
		t.Fatalf("events %+v", events)
	}
	// A cache that empties itself for holding too many entries counts as
	// evicted, though the budget did not ask.
	b.Overflowed(KindBitmapCache, 70)
	if k := b.Stats().Kinds["bitmap_cache"]; k.Evictions != 2 || k.EvictedBytes != 370 || len(events) != 3 || events[2].Bytes != 70 {
		t.Fatalf("after an overflow: %+v, events %+v", k, events)
	}
}
