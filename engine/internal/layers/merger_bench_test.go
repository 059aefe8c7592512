package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/coppice-db/coppice/codec"
)

// mergerBenchOperands returns the operands a hot word's posting gathers
// during a bulk load, oldest first: a Full base of base rows, then n small
// add-only operands (a few rows of one batch each, rows growing from batch
// to batch) and, if removes, an occasional removal of an older row.
func mergerBenchOperands(base, n int, removes bool) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	full := roaring.New()
	for i := range base {
		full.Add(uint32(3 * i))
	}
	ops := [][]byte{codec.AppendDelta(nil, codec.Delta{Adds: full, Full: true})}
	row := uint32(3 * base)
	for i := range n {
		if removes && i%50 == 49 {
			ops = append(ops, codec.AppendDelta(nil, codec.DelDelta(uint32(rng.IntN(int(row))))))
			continue
		}
		rows := make([]uint32, 1+rng.IntN(6))
		for j := range rows {
			row += 1 + uint32(rng.IntN(200))
			rows[j] = row
		}
		ops = append(ops, codec.AppendAddsDelta(nil, rows))
	}
	return ops
}

// BenchmarkMerger folds realistic operand sequences as Pebble does:
// newest first (flushes, compactions, forward reads) and oldest first
// (reverse reads), with and without the Full base below.
func BenchmarkMerger(b *testing.B) {
	cases := []struct {
		name          string
		base, n       int
		removes, keep bool // keep: fold the base too
	}{
		{"adds-20", 0, 20, false, false},
		{"adds-1e3", 0, 1000, false, false},
		{"adds-1e4", 0, 10000, false, false},
		{"adds-removes-1e4", 0, 10000, true, false},
		{"full-1e5-adds-1e3", 100000, 1000, false, true},
		{"full-1e5-adds-removes-1e4", 100000, 10000, true, true},
	}
	for _, c := range cases {
		ops := mergerBenchOperands(c.base, c.n, c.removes)
		if !c.keep {
			ops = ops[1:]
		}
		b.Run(c.name+"/newest-first", func(b *testing.B) {
			for b.Loop() {
				vm, err := Merger.Merge(nil, ops[len(ops)-1])
				for i := len(ops) - 2; i >= 0 && err == nil; i-- {
					err = vm.MergeOlder(ops[i])
				}
				if err == nil {
					_, _, err = vm.Finish(c.keep)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/oldest-first", func(b *testing.B) {
			for b.Loop() {
				vm, err := Merger.Merge(nil, ops[0])
				for i := 1; i < len(ops) && err == nil; i++ {
					err = vm.MergeNewer(ops[i])
				}
				if err == nil {
					_, _, err = vm.Finish(true)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// A Full newest operand over many older ones: a compaction below a
	// rewrite, where the older operands are only checked.
	ops := mergerBenchOperands(1000, 10000, false)
	top := codec.AppendDelta(nil, codec.Delta{Adds: roaring.BitmapOf(1, 2, 3), Full: true})
	b.Run("full-over-adds-1e4/newest-first", func(b *testing.B) {
		for b.Loop() {
			vm, err := Merger.Merge(nil, top)
			for i := len(ops) - 1; i >= 0 && err == nil; i-- {
				err = vm.MergeOlder(ops[i])
			}
			if err == nil {
				_, _, err = vm.Finish(false)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMergerOneOperand merges a key that has one add-only operand, as
// a compaction finds each chunk no write touched since the last one: 4,000
// rows as runs and as an array (the most a chunk holds in the form
// codec.AppendAddsDelta writes without a bitmap), and a batch's few rows,
// written back as the result, with and without the base.
func BenchmarkMergerOneOperand(b *testing.B) {
	runs, array := make([]uint32, 0, 4300), make([]uint32, 0, 4000)
	for i := range 4300 {
		if i%20 != 19 {
			runs = append(runs, 7<<16|uint32(i))
		}
	}
	for i := range 4000 {
		array = append(array, 7<<16|uint32(16*i+i%5))
	}
	for _, c := range []struct {
		name string
		rows []uint32
	}{{"runs-4e3", runs[:4000]}, {"array-4e3", array}, {"array-5", array[:5]}} {
		op := codec.AppendAddsDelta(nil, c.rows)
		for _, includesBase := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/base=%v", c.name, includesBase), func(b *testing.B) {
				b.SetBytes(int64(len(op)))
				for b.Loop() {
					vm, err := Merger.Merge(nil, op)
					if err != nil {
						b.Fatal(err)
					}
					_, closer, err := vm.Finish(includesBase)
					if err != nil {
						b.Fatal(err)
					}
					closer.Close()
				}
			})
		}
	}
}
