package memstore

import (
	"fmt"
	"testing"

	"github.com/coppice-db/coppice/engine/internal/model"
)

// TestRecordCacheKeepsLaterEntry checks that a record read at an earlier
// epoch does not replace the entry of the same record read at a later
// one (a page on an older snapshot finishing after a newer read), while a
// later read does replace it.
func TestRecordCacheKeepsLaterEntry(t *testing.T) {
	bc, _ := newTestCache(maxCachedBytes)
	tab := &model.Table{}
	c := NewRecordCache[string](1 << 20)
	c.Put(bc, "r1", 7, 4, tab, "at 4", 10)
	c.Put(bc, "r1", 7, 2, tab, "at 2", 10)
	for _, get := range []func() (string, bool){
		func() (string, bool) { return c.Get(bc, "r1", 4, tab) },
		func() (string, bool) { return c.GetRow(bc, 7, 4, tab) },
	} {
		if v, ok := get(); !ok || v != "at 4" {
			t.Fatalf("at epoch 4 after a put at 2: %q, %v; want the entry read at 4", v, ok)
		}
	}
	c.Put(bc, "r1", 7, 6, tab, "at 6", 10)
	if v, ok := c.Get(bc, "r1", 6, tab); !ok || v != "at 6" {
		t.Fatalf("at epoch 6 after a put at 6: %q, %v", v, ok)
	}
	// Another table object (a schema change) replaces the entry whatever
	// its epoch: entries are used only with their own table object.
	tab2 := &model.Table{}
	c.Put(bc, "r1", 7, 2, tab2, "schema 2", 10)
	if v, ok := c.Get(bc, "r1", 2, tab2); !ok || v != "schema 2" {
		t.Fatalf("with the new table object: %q, %v", v, ok)
	}
}

// TestRecordCacheAdmit: a record is admitted when it is read again, of the
// same table cache, until the doorkeeper's window has passed; the byte
// form of an id finds what its string form put.
func TestRecordCacheAdmit(t *testing.T) {
	bc, _ := newTestCache(maxCachedBytes)
	other, _ := newTestCache(maxCachedBytes)
	bc.salt, other.salt = 1, 2 // as made for two tables
	c := NewRecordCache[string](1 << 20)
	if c.Admit(bc, "r1") {
		t.Fatal("admitted at its first read")
	}
	if !c.Admit(bc, "r1") || !c.Admit(bc, "r1") {
		t.Fatal("not admitted when read again")
	}
	if c.Admit(other, "r1") {
		t.Fatal("admitted at its first read of another table cache")
	}
	// A window of other records clears the doorkeeper: most records read
	// before it are new again, and few of those never read are taken for
	// ones that were.
	const n = 1000
	for i := range n {
		c.Admit(bc, fmt.Sprint("old", i))
	}
	i := 0
	for cleared := false; !cleared; i++ {
		before := c.door.added.Load()
		c.Admit(bc, fmt.Sprint("other", i))
		cleared = c.door.added.Load() < before
	}
	for range c.door.window / 2 {
		c.Admit(bc, fmt.Sprint("other", i))
		i++
	}
	again, fresh := 0, 0
	for i := range n {
		if c.Admit(bc, fmt.Sprint("old", i)) {
			again++
		}
		if c.Admit(bc, fmt.Sprint("new", i)) {
			fresh++
		}
	}
	if again > n/5 || fresh > n/10 {
		t.Fatalf("after a window: %d of %d records read before admitted, %d of %d never read", again, n, fresh, n)
	}

	tab := &model.Table{}
	c.Put(bc, "r1", 7, 2, tab, "v", 10)
	if v, ok := LookupRecord(c, bc, []byte("r1"), 2, tab); !ok || v != "v" {
		t.Fatalf("looked up by bytes: %q, %v", v, ok)
	}
	if _, ok := LookupRecord(c, bc, []byte("r2"), 2, tab); ok {
		t.Fatal("another id found by bytes")
	}
}

// TestRecordCacheKeepsFrequentEntries: a full cache keeps the records read
// often over records read once, and takes a record once it is read more
// often than what it would evict.
func TestRecordCacheKeepsFrequentEntries(t *testing.T) {
	bc, _ := newTestCache(maxCachedBytes)
	tab := &model.Table{}
	// Room for about 1,600 entries of views of ten bytes.
	c := NewRecordCache[string](recordCacheShards * 100 * (10 + entrySize[string]("hot000")))
	const hot = 1000
	for i := range hot {
		id := fmt.Sprint("hot", i)
		if !c.Put(bc, id, uint32(i), 2, tab, id, 10) {
			t.Fatalf("%s not cached in a cache with room", id)
		}
		for range 3 {
			if _, ok := c.Get(bc, id, 2, tab); !ok {
				t.Fatalf("%s not found", id)
			}
		}
	}
	taken := 0
	for i := range 10 * hot {
		id := fmt.Sprint("cold", i)
		if c.Put(bc, id, uint32(hot+i), 2, tab, id, 10) {
			taken++
		}
	}
	kept := 0
	for i := range hot {
		if _, ok := c.Get(bc, fmt.Sprint("hot", i), 2, tab); ok {
			kept++
		}
	}
	// The cold records fill what the hot ones leave, about half the
	// cache, and evict few of them.
	if kept < hot*9/10 || taken > 2*hot {
		t.Fatalf("after %d records read once: %d of %d records read often kept, %d of the others taken", 10*hot, kept, hot, taken)
	}
	rising := 0
	for i := range 100 {
		id := fmt.Sprint("rising", i)
		for range 10 {
			if c.Put(bc, id, uint32(20*hot+i), 2, tab, id, 10) {
				rising++
				break
			}
		}
	}
	if rising < 90 {
		t.Fatalf("records read ten times over: %d of 100 taken", rising)
	}
}
