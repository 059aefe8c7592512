package memstore

import (
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
