package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/memstore"
)

// TestBitmapCacheUnderBulkWrites reads bitmaps through the table's bitmap
// cache, as queries do, while writers apply bulk commands (inserts of
// hundreds of records, each with unique values, so that a command changes
// more bitmaps than the cache follows one by one; bulk updates and
// deletes; single writes) on main and on a child forked from it, whose
// updates of inherited records change its mask. Every bitmap read through
// the cache must equal the same bitmap composed from storage at the same
// snapshot. Cached bitmaps must also be carried across bulk commands by
// their deltas, or the cache would be emptied by every bulk load.
func TestBitmapCacheUnderBulkWrites(t *testing.T) {
	const uniques = 10 // columns of unique values: a bulk insert changes thousands of bitmaps
	cols := []ColumnDef{
		{Name: "s", Type: TypeString},
		{Name: "n", Type: TypeInt},
		{Name: "m", Type: TypeMultiple},
	}
	for k := range uniques {
		cols = append(cols, ColumnDef{Name: fmt.Sprintf("u%d", k), Type: TypeString})
	}
	e, main := recFixture(t, map[string][]ColumnDef{"items": cols})
	words := []string{"red", "green", "blue", "grey"}
	var serial atomic.Int64
	values := func(rng *rand.Rand) map[string]any {
		v := map[string]any{
			"s": words[rng.IntN(len(words))],
			"n": json.Number(fmt.Sprint(rng.IntN(5))),
			"m": []any{words[rng.IntN(len(words))], words[rng.IntN(len(words))]},
		}
		for k := range uniques {
			v[fmt.Sprintf("u%d", k)] = fmt.Sprintf("v%d", serial.Add(1))
		}
		return v
	}

	// live[i] are the records of a branch; only its writer uses them.
	type branch struct {
		ref  Ref
		live []string
		next int
	}
	rng := rand.New(rand.NewPCG(5, 6))
	bulk := func(rng *rand.Rand, br *branch, prefix string, n int) []Op {
		ops := make([]Op, n)
		for i := range ops {
			id := fmt.Sprintf("%s%05d", prefix, br.next)
			br.next++
			br.live = append(br.live, id)
			ops[i] = Op{Kind: OpInsert, Table: "items", ID: id, Values: values(rng)}
		}
		return ops
	}
	mainB := &branch{ref: main}
	if _, err := e.Write(context.Background(), main, bulk(rng, mainB, "a", 600)); err != nil {
		t.Fatal(err)
	}
	dev := Ref{Workspace: main.Workspace, Database: main.Database, Branch: "dev"}
	if err := e.Branches().Create(dev, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	devB := &branch{ref: dev, live: append([]string(nil), mainB.live...)}

	// The bitmaps queries of this table read: live rows, exists and the
	// postings of every value of the low-cardinality columns.
	var hot [][]byte
	{
		_, _, tbl, err := e.resolveTable(main, "items")
		if err != nil {
			t.Fatal(err)
		}
		hot = append(hot, codec.LiveBitmapID())
		for _, c := range tbl.Leaves {
			hot = append(hot, codec.ExistsBitmapID(c.ID))
			var vals []codec.Value
			switch c.Name {
			case "s", "m":
				for _, w := range words {
					vals = append(vals, codec.Value{Kind: codec.KindString, Str: w})
				}
			case "n":
				for k := range 5 {
					vals = append(vals, codec.Value{Kind: codec.KindInt, Int: int64(k)})
				}
			}
			for _, v := range vals {
				id, err := codec.PostingBitmapID(nil, c.ID, v)
				if err != nil {
					t.Fatal(err)
				}
				hot = append(hot, id)
			}
		}
	}

	var failed atomic.Bool
	fail := func(format string, args ...any) {
		if failed.CompareAndSwap(false, true) {
			t.Errorf(format, args...)
		}
	}
	// check reads every hot bitmap of a branch through the cache and from
	// storage at one snapshot, and reports how many it read.
	check := func(ref Ref) int {
		src, release, err := e.openSource(context.Background(), ref, "items", memstore.Need{Store: memstore.Without})
		if err != nil {
			fail("open %s: %v", ref.Branch, err)
			return 0
		}
		defer release()
		for _, id := range hot {
			got, err := src.bitmap(id)
			if err != nil {
				fail("read %x on %s: %v", id, ref.Branch, err)
				return 0
			}
			want, err := layers.ReadBitmap(src.snap, src.d.ID, src.b.Lineage, src.t.ID, id, nil)
			if err != nil {
				fail("read %x on %s: %v", id, ref.Branch, err)
				return 0
			}
			if !got.Equals(want) {
				fail("bitmap %x on %s at epoch %d (cached: %v): got %d rows, want %d; extra %v, missing %v",
					id, ref.Branch, src.epoch, src.cache != nil, got.GetCardinality(), want.GetCardinality(),
					xorPart(got, want), xorPart(want, got))
				return 0
			}
		}
		return len(hot)
	}

	commands := 24
	if testing.Short() {
		commands = 10
	}
	var wg sync.WaitGroup
	var writersLeft atomic.Int32
	writersLeft.Store(2)
	for w, br := range []*branch{mainB, devB} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer writersLeft.Add(-1)
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			prefix := []string{"b", "c"}[w]
			for range commands {
				if failed.Load() {
					return
				}
				var ops []Op
				switch rng.IntN(4) {
				case 0, 1: // a bulk load
					ops = bulk(rng, br, prefix, 450+rng.IntN(150))
				case 2: // bulk updates, and some deletes
					picked := map[int]bool{}
					for range 200 {
						picked[rng.IntN(len(br.live))] = true
					}
					var kept []string
					for i, id := range br.live {
						switch {
						case !picked[i]:
							kept = append(kept, id)
						case rng.IntN(5) == 0:
							ops = append(ops, Op{Kind: OpDelete, Table: "items", ID: id})
						default:
							kept = append(kept, id)
							ops = append(ops, Op{Kind: OpUpdate, Table: "items", ID: id, Values: values(rng)})
						}
					}
					br.live = kept
				default: // a single write
					ops = []Op{{Kind: OpUpdate, Table: "items", ID: br.live[rng.IntN(len(br.live))], Values: values(rng)}}
				}
				if _, err := e.Write(context.Background(), br.ref, ops); err != nil {
					fail("write of %d ops on %s: %v", len(ops), br.ref.Branch, err)
					return
				}
			}
		}()
	}
	var checked atomic.Int64
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			refs := []Ref{main, dev}
			for i := r; writersLeft.Load() > 0 && !failed.Load(); i++ {
				checked.Add(int64(check(refs[i%2])))
			}
		}()
	}
	wg.Wait()
	for _, ref := range []Ref{main, dev} {
		check(ref)
		check(ref) // the second read is served by the cache
	}
	hits, misses, writes, overflows, kept := BitmapCacheCounts(e)
	t.Logf("%d bitmaps checked during the writes; %d hits, %d misses; %d commands noted, %d overflowing, %d entries kept",
		checked.Load(), hits, misses, writes, overflows, kept)
	if failed.Load() {
		return
	}
	if overflows == 0 {
		t.Errorf("no command changed more bitmaps than the cache follows one by one")
	}
	if kept == 0 {
		t.Errorf("no cached bitmap was carried across a command by its deltas")
	}
}

// xorPart returns up to 10 rows of a not in b.
func xorPart(a, b interface {
	ToArray() []uint32
	Contains(uint32) bool
}) []uint32 {
	var out []uint32
	for _, r := range a.ToArray() {
		if !b.Contains(r) && len(out) < 10 {
			out = append(out, r)
		}
	}
	return out
}
