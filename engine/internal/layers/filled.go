package layers

import (
	"bytes"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Point reads walk a branch's lineage top-down, and a fresh child's own
// layer is usually empty: without help, every read of a child pays a miss
// in it. fillSet remembers which (layer, table, kind) ranges are known to
// be empty so that readers skip them. Writers mark a range filled before
// their batch becomes visible; readers learn emptiness with one seek and
// record it only if no writer has marked the range meanwhile.
type FillSet struct {
	m sync.Map // fillKey → bool (true: may hold keys)
}

// fillKey names one range of a FillSet: a kind of key of a table in a
// layer.
type fillKey struct {
	layer, table uint32
	kind         byte
}

// MarkFilled records that a range may hold keys from now on.
func (f *FillSet) MarkFilled(layer, table uint32, kind byte) {
	f.m.Store(fillKey{layer, table, kind}, true)
}

// empty reports whether a range is known, or found, to hold no keys.
func (f *FillSet) empty(r pebble.Reader, db, layer, table uint32, kind byte) bool {
	k := fillKey{layer, table, kind}
	if v, ok := f.m.Load(k); ok {
		return !v.(bool)
	}
	prefix := codec.TablePrefix(nil, db, layer, kind, table)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return false
	}
	has := it.First()
	if has && !bytes.HasPrefix(it.Key(), prefix) {
		has = false
	}
	it.Close()
	v, _ := f.m.LoadOrStore(k, has)
	return !v.(bool)
}

// Prune returns the lineage without the levels whose range of kind is
// known to be empty for a table; point reads of it find the same versions.
func (f *FillSet) Prune(r pebble.Reader, db uint32, lin model.Lineage, table uint32, kind byte) model.Lineage {
	var out model.Lineage
	for i, lr := range lin {
		if f.empty(r, db, lr.Layer, table, kind) {
			if out == nil {
				out = append(make(model.Lineage, 0, len(lin)-1), lin[:i]...)
			}
			continue
		}
		if out != nil {
			out = append(out, lr)
		}
	}
	if out == nil {
		return lin
	}
	return out
}
