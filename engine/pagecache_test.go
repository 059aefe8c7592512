package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coppice-db/coppice/engine/internal/memstore"
	"github.com/coppice-db/coppice/index"
)

// TestPagesThroughRecordCache reads pages of records through a record
// cache while writers insert, update and delete records of the same table
// on two branches (main and a child forked from it) and point reads fill
// the cache too, and checks every page against the same rows read from
// storage at the same snapshot: a page served from the cache must be the
// page storage holds, for every projection, whole records or some columns.
// Once the writers are done, a page read twice comes from the cache the
// second time, and holds the very views point reads get.
func TestPagesThroughRecordCache(t *testing.T) {
	e, main := recFixture(t, map[string][]ColumnDef{
		"items": {
			{Name: "s", Type: TypeString},
			{Name: "n", Type: TypeInt},
			{Name: "m", Type: TypeMultiple},
		},
	})
	const ids = 60
	words := []string{"red", "green", "blue", "grey"}
	values := func(rng *rand.Rand) map[string]any {
		v := map[string]any{"s": words[rng.IntN(len(words))], "n": json.Number(fmt.Sprint(rng.IntN(10)))}
		if rng.IntN(3) > 0 {
			v["m"] = []any{words[rng.IntN(len(words))]}
		}
		return v
	}
	idOf := func(i int) string { return fmt.Sprintf("r%02d", i) }
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range ids {
		if _, err := e.WriteOne(main, Op{Kind: OpInsert, Table: "items", ID: idOf(i), Values: values(rng)}); err != nil {
			t.Fatal(err)
		}
	}
	dev := Ref{Workspace: main.Workspace, Database: main.Database, Branch: "dev"}
	if err := e.Branches().Create(dev, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	refs := []Ref{main, dev}
	var projections []*index.Projection
	for _, cols := range []string{`null`, `["s"]`, `["n","m"]`, `["svc.version","s"]`} {
		c, err := index.ReadColumns([]byte(cols))
		if err != nil {
			t.Fatal(err)
		}
		src, release, err := e.openSource(context.Background(), main, "items", memstore.Need{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := index.ParseColumns(src.it, c, e.opts.Meta, src.tableByName)
		release()
		if err != nil {
			t.Fatalf("columns %s: %v", cols, err)
		}
		projections = append(projections, p)
	}

	// Small enough that pages and point reads evict each other.
	c := NewRecordCache(16 << 10)
	writes, pages := 300, 400
	if testing.Short() {
		writes, pages = 120, 150
	}
	var failed atomic.Bool
	fail := func(format string, args ...any) {
		if failed.CompareAndSwap(false, true) {
			t.Errorf(format, args...)
		}
	}
	var wg sync.WaitGroup
	var writing atomic.Int32
	writing.Store(2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer writing.Add(-1)
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for range writes {
				if failed.Load() {
					return
				}
				ref, id := refs[rng.IntN(2)], idOf(rng.IntN(ids))
				var err error
				switch rng.IntN(4) {
				case 0:
					_, err = e.WriteOne(ref, Op{Kind: OpDelete, Table: "items", ID: id})
				case 1:
					_, err = e.WriteOne(ref, Op{Kind: OpInsert, Table: "items", ID: id, Values: values(rng)})
				default:
					_, err = e.WriteOne(ref, Op{Kind: OpUpdate, Table: "items", ID: id, Values: values(rng)})
				}
				if err != nil && CodeOf(err) != CodeNotFound && CodeOf(err) != CodeAlreadyExists && CodeOf(err) != CodeConflict {
					fail("write %s on %s: %v", id, ref.Branch, err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(5, 6))
		for writing.Load() > 0 && !failed.Load() {
			ref := refs[rng.IntN(2)]
			if _, err := e.GetView(c, ref, "items", idOf(rng.IntN(ids))); err != nil && CodeOf(err) != CodeNotFound {
				fail("point read on %s: %v", ref.Branch, err)
			}
		}
	}()
	var checked, cached atomic.Int64
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 13))
			for range pages {
				if failed.Load() {
					return
				}
				ref := refs[rng.IntN(2)]
				p := projections[rng.IntN(len(projections))]
				got, want, n, err := pageBothWays(e, c, ref, p, rng)
				if err != nil {
					fail("page on %s: %v", ref.Branch, err)
					return
				}
				if msg := sameViews(got, want); msg != "" {
					fail("page of %d rows on %s: through the cache %s", n, ref.Branch, msg)
					return
				}
				checked.Add(1)
				for _, v := range got {
					if v.Cached() {
						cached.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		return
	}
	if checked.Load() == 0 || cached.Load() == 0 {
		t.Fatalf("%d pages checked, %d whole cached views among them", checked.Load(), cached.Load())
	}

	// Quiet now: a page read twice is served from the cache, and its
	// views are those point reads get.
	big := NewRecordCache(1 << 20)
	for _, ref := range refs {
		first, _, _, err := pageBothWays(e, big, ref, projections[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		again, want, _, err := pageBothWays(e, big, ref, projections[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		if msg := sameViews(again, want); msg != "" {
			t.Fatalf("%s: %s", ref.Branch, msg)
		}
		if len(first) == 0 || len(first) != len(again) {
			t.Fatalf("%s: pages of %d and %d records", ref.Branch, len(first), len(again))
		}
		for i := range first {
			if first[i] != again[i] || !first[i].Cached() {
				t.Fatalf("%s: record %s read again, not served from the cache", ref.Branch, first[i].ID)
			}
			v, err := e.GetView(big, ref, "items", first[i].ID)
			if err != nil {
				t.Fatal(err)
			}
			if v != first[i] {
				t.Fatalf("%s: point read of %s does not find the page's view", ref.Branch, first[i].ID)
			}
		}
	}
}

// pageBothWays reads some rows of a table of a branch as views of the
// columns p selects, through the record cache c and from storage, at one
// snapshot; the rows are live and deleted ones in random order (every
// row, ascending, with rng nil). n is how many rows it asked for.
func pageBothWays(e *Engine, c *RecordCache, ref Ref, p *index.Projection, rng *rand.Rand) (got, want []*RecordView, n int, err error) {
	src, release, err := e.openSource(context.Background(), ref, "items", memstore.Need{})
	if err != nil {
		return nil, nil, 0, err
	}
	defer release()
	// The projection was parsed against main's table: the same columns.
	var rows []uint32
	for row := range uint32(80) {
		rows = append(rows, row)
	}
	if rng != nil {
		rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		rows = rows[:1+rng.IntN(30)]
	}
	if got, err = src.views(rows, p, c); err != nil {
		return nil, nil, 0, err
	}
	if want, err = src.views(rows, p, nil); err != nil {
		return nil, nil, 0, err
	}
	return got, want, len(rows), nil
}

// sameViews describes how two pages of views differ, or is "".
func sameViews(got, want []*RecordView) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d records, from storage %d", len(got), len(want))
	}
	type field struct {
		Path  string
		Type  ColumnType
		Value any
	}
	flat := func(v *RecordView) []field {
		out := make([]field, len(v.Fields))
		for i, f := range v.Fields {
			out[i] = field{f.Path, f.Type, f.Value}
		}
		return out
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Version != w.Version || !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) ||
			!reflect.DeepEqual(flat(g), flat(w)) {
			return fmt.Sprintf("record %d is %s v%d %+v, from storage %s v%d %+v", i, g.ID, g.Version, flat(g), w.ID, w.Version, flat(w))
		}
	}
	return ""
}
