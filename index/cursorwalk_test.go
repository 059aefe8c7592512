package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/coppice-db/coppice/codec"
)

// TestWalkWindows walks sort orders a window at a time, each starting
// after the last key of the one before (or, in reverse, before the first),
// on sort columns with many ties and some nulls, read from in-memory
// orders: the windows together must hold every candidate once, in the
// order a heap over all of them gives.
func TestWalkWindows(t *testing.T) {
	items, _, _ := filterTestTables("svc")
	r := rand.New(rand.NewPCG(7, 11))
	rows := map[uint32]*codec.Record{}
	ids := r.Perm(400)
	for i := range 400 {
		line := fmt.Sprintf(`{"id": "r%03d", "count": %d, "price": %d.5, "active": %v}`, ids[i], r.IntN(6), r.IntN(4), r.IntN(3) > 0)
		if i%17 == 0 {
			line = fmt.Sprintf(`{"id": "r%03d", "active": true}`, ids[i])
		}
		rows[uint32(i)] = must(goldenRecord(items, line))
	}
	src := &memSource{t: items, rows: rows, dense: true, indexed: true}
	ctx := context.Background()
	f := func(filter, sort string, size int) {
		t.Helper()
		cand := must(Matching(ctx, src, must(ReadFilter([]byte(filter)))))
		o := must(ParseSort(items, must(ReadSort([]byte(sort))).v))
		want, _ := must2(selectHeap(ctx, src, cand, o, Window{Limit: len(rows)}, nil))
		var got []uint32
		var at *Key
		for {
			page, keys := must2(walk(ctx, src, candidates{set: cand}, o, Window{After: at, Limit: size}, nil))
			got = append(got, page...)
			if len(page) < size || len(got) > len(want) {
				break
			}
			at = &keys[len(keys)-1]
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s %s, windows of %d after the last: %v, want %v", filter, sort, size, got, want)
		}
		got, at = nil, nil
		for {
			page, keys := must2(walk(ctx, src, candidates{set: cand}, o, Window{Before: at, Limit: size, Reverse: true}, nil))
			for _, row := range page {
				got = append([]uint32{row}, got...)
			}
			if len(page) < size || len(got) > len(want) {
				break
			}
			at = &keys[len(keys)-1]
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s %s, windows of %d before the first: %v, want %v", filter, sort, size, got, want)
		}
	}
	for _, size := range []int{1, 7, 20} {
		f(`{"active": true}`, `{"count": "asc"}`, size)
		f(`{"active": true}`, `{"count": "desc"}`, size)
		f(`{"active": true}`, `{"price": "desc"}`, size)
		f(`{}`, `{"price": "asc"}`, size)
		f(`{"count": {"$ge": 2}}`, `[{"price": "asc"}, {"count": "desc"}]`, size)
	}
}

func must2[T, U any](a T, b U, err error) (T, U) {
	if err != nil {
		panic(err)
	}
	return a, b
}

// TestCursorWalksShareQueries follows cursors of one filter and sort from
// several goroutines at once, which share the decoded filter and sort of
// the cursors (readCursorQuery): each walk must see every match once, in
// the order of a walk alone.
func TestCursorWalksShareQueries(t *testing.T) {
	items, _, _ := filterTestTables("svc")
	rows := map[uint32]*codec.Record{}
	for i := range 300 {
		rows[uint32(i)] = must(goldenRecord(items, fmt.Sprintf(`{"id": "r%03d", "count": %d, "price": %d.5, "active": %v}`, i, i%6, i%4, i%3 > 0)))
	}
	src := &memSource{t: items, rows: rows, dense: true, indexed: true}
	size := 7
	opts := QueryOptions{Secret: testSecret, MaxSize: 200, MaxOffset: 800, DefaultSize: 20}
	walkAll := func() ([]uint32, error) {
		in := QueryRequest{Filter: must(ReadFilter([]byte(`{"active": true, "count": {"$ge": 1}}`))),
			Sort: must(ReadSort([]byte(`[{"price": "desc"}, {"count": "asc"}]`))), Page: PageInput{Size: &size}}
		var got []uint32
		for {
			page, err := Query(context.Background(), src, in, opts)
			if err != nil {
				return nil, err
			}
			got = append(got, page.Rows...)
			if !page.More {
				return got, nil
			}
			cursor := page.Cursor
			in = QueryRequest{Page: PageInput{After: &cursor}}
		}
	}
	want, err := walkAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 10*size {
		t.Fatalf("%d matches: too few pages", len(want))
	}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			got, err := walkAll()
			if err == nil && !slices.Equal(got, want) {
				err = fmt.Errorf("walked %v, want %v", got, want)
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestWalkTiesReuseKeys walks a two-key order whose first key ties on
// every candidate: the keys of the rows weighed and dropped are reused
// from walk to walk, so a walk allocates far less than a key per row.
func TestWalkTiesReuseKeys(t *testing.T) {
	items, _, _ := filterTestTables("svc")
	rows := map[uint32]*codec.Record{}
	const n = 2000
	for i := range n {
		line := fmt.Sprintf(`{"id": "r%04d", "count": 3, "price": %d.5, "active": true}`, i, i%97)
		rows[uint32(i)] = must(goldenRecord(items, line))
	}
	src := &storedSource{memSource: &memSource{t: items, rows: rows, dense: true, indexed: true}, vals: map[*Column]ColumnValues{}}
	ctx := context.Background()
	cand := must(Matching(ctx, src, must(ReadFilter([]byte(`{"active": true}`)))))
	o := must(ParseSort(items, must(ReadSort([]byte(`[{"count": "desc"}, {"price": "asc"}]`))).v))
	want, _ := must2(selectHeap(ctx, src, cand, o, Window{Limit: 20}, nil))
	var got []uint32
	walkOnce := func() { got, _ = must2(walk(ctx, src, candidates{set: cand}, o, Window{Limit: 20}, nil)) }
	walkOnce()
	if !slices.Equal(got, want) {
		t.Fatalf("walk: %v, want %v", got, want)
	}
	const runs = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		walkOnce()
	}
	runtime.ReadMemStats(&after)
	perRow := float64(after.TotalAlloc-before.TotalAlloc) / runs / n
	// A key of two values held for every row weighed is over 100 bytes.
	if perRow > 64 {
		t.Errorf("a walk over %d ties allocates %.1f bytes a row, want at most 64", n, perRow)
	}
}

// storedSource is a memSource whose value stores are built once, as a
// table's column store keeps them.
type storedSource struct {
	*memSource
	vals map[*Column]ColumnValues
}

func (s *storedSource) Values(c *Column) (ColumnValues, error) {
	if v, ok := s.vals[c]; ok {
		return v, nil
	}
	v, err := s.memSource.Values(c)
	if mi, ok := v.(memIndexed); ok {
		v = &storedIndexed{memIndexed: mi, order: mi.Order(), strs: mi.Strings()}
	}
	s.vals[c] = v
	return v, err
}

// storedIndexed is an indexed store of a memSource whose order and packed
// strings are built once, as a column store keeps them.
type storedIndexed struct {
	memIndexed
	order []uint32
	strs  PackedStrings
}

func (d *storedIndexed) Order() []uint32        { return d.order }
func (d *storedIndexed) Strings() PackedStrings { return d.strs }

// TestWalkLargeTieGroup walks a two-key order whose first key ties on
// more candidates than the reader's scratch room keeps for reuse: the
// walk weighs them keeping keys only for the rows the window can take,
// so it allocates far less than a key per row (7 MB for this group).
func TestWalkLargeTieGroup(t *testing.T) {
	items, _, _ := filterTestTables("svc")
	rows := map[uint32]*codec.Record{}
	const n = 40000
	for i := range n {
		line := fmt.Sprintf(`{"id": "r%05d", "count": 3, "price": %d.5, "active": true}`, i, (i*7919)%1009)
		rows[uint32(i)] = must(goldenRecord(items, line))
	}
	src := &storedSource{memSource: &memSource{t: items, rows: rows, dense: true, indexed: true}, vals: map[*Column]ColumnValues{}}
	ctx := context.Background()
	cand := must(Matching(ctx, src, must(ReadFilter([]byte(`{"active": true}`)))))
	for _, sort := range []string{`[{"count": "desc"}, {"price": "asc"}]`, `[{"count": "asc"}, {"price": "desc"}]`} {
		o := must(ParseSort(items, must(ReadSort([]byte(sort))).v))
		want, _ := must2(selectHeap(ctx, src, cand, o, Window{Limit: 21}, nil))
		var got []uint32
		walkOnce := func() { got, _ = must2(walk(ctx, src, candidates{set: cand}, o, Window{Limit: 21}, nil)) }
		walkOnce()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: walk %v, want %v", sort, got, want)
		}
		const runs = 5
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			walkOnce()
		}
		runtime.ReadMemStats(&after)
		if perWalk := (after.TotalAlloc - before.TotalAlloc) / runs; perWalk > 1<<20 {
			t.Errorf("%s: a walk over %d ties allocates %d bytes, want at most 1 MiB", sort, n, perWalk)
		}
	}
}
