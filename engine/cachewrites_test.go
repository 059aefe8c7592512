package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCachesUnderWrites reads records and queries through the record and
// bitmap caches while writers update, insert and delete random records of
// the same table on two branches (main and a child forked from it), and
// checks every answer against a read without the cache of the same state:
// a point read holds its record's lock (writers of that record wait; every
// other record goes on being written), and a query holds out every writer
// and is checked against a model of the table. Cached views must also
// survive writes of other records, or the cache would not be doing its job.
// It runs with column stores and without (queries then read postings and
// column scans through the bitmap cache).
func TestCachesUnderWrites(t *testing.T) {
	for _, storeless := range []bool{false, true} {
		t.Run(storePath(storeless), func(t *testing.T) { cachesUnderWrites(t, storeless) })
	}
}

// cacheItems makes the "items" table the cache tests write under
// concurrency, and returns random values for a record of it.
func cacheItems(t *testing.T) (*Engine, Ref) {
	return recFixture(t, map[string][]ColumnDef{
		"items": {
			{Name: "s", Type: TypeString},
			{Name: "n", Type: TypeInt},
			{Name: "m", Type: TypeMultiple},
		},
	})
}

// cacheItemValues returns random values of an "items" record (cacheItems).
func cacheItemValues(rng *rand.Rand) map[string]any {
	words := [...]string{"red", "green", "blue", "grey"}
	v := map[string]any{"s": words[rng.IntN(len(words))], "n": json.Number(fmt.Sprint(rng.IntN(10)))}
	if rng.IntN(3) > 0 {
		v["m"] = []any{words[rng.IntN(len(words))]}
	}
	return v
}

// cacheItemID is the id of the i-th "items" record.
func cacheItemID(i int) string { return fmt.Sprintf("r%02d", i) }

func cachesUnderWrites(t *testing.T, storeless bool) {
	e, main := cacheItems(t)
	e.mem.SetStoreless(storeless)
	// Records below steady are never deleted: their versions only grow.
	const ids, steady = 60, 10
	values, idOf := cacheItemValues, cacheItemID

	// model[branch][id] is the values of a live record; guarded by the
	// record's lock in locks, and by gate for whole-table reads.
	type branchModel struct {
		ref    Ref
		locks  [ids]sync.Mutex
		live   [ids]map[string]any
		gen    [ids]atomic.Int64 // writes of each record
		writes atomic.Int64      // write commands on the branch
	}
	rng := rand.New(rand.NewPCG(1, 2))
	mainM := &branchModel{ref: main}
	for i := range ids {
		if i%3 == 0 && i >= steady {
			continue
		}
		v := values(rng)
		if _, err := e.WriteOne(main, Op{Kind: OpInsert, Table: "items", ID: idOf(i), Values: v}); err != nil {
			t.Fatal(err)
		}
		mainM.live[i] = v
	}
	dev := Ref{Workspace: main.Workspace, Database: main.Database, Branch: "dev"}
	if err := e.Branches().Create(dev, CreateBranchRequest{From: "main"}); err != nil {
		t.Fatal(err)
	}
	devM := &branchModel{ref: dev}
	devM.live = mainM.live
	models := []*branchModel{mainM, devM}

	var gate sync.RWMutex // writers and point readers share it; query checks hold it alone
	var failed atomic.Bool
	fail := func(format string, args ...any) {
		if failed.CompareAndSwap(false, true) {
			t.Errorf(format, args...)
		}
	}
	writesEach, readsEach, queryRounds := 300, 1500, 40
	if testing.Short() {
		writesEach, readsEach, queryRounds = 120, 600, 15
	}
	c := NewRecordCache(1 << 20)
	var wg sync.WaitGroup
	var writersLeft atomic.Int32
	writersLeft.Store(2)

	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer writersLeft.Add(-1)
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range writesEach {
				if failed.Load() {
					return
				}
				m := models[rng.IntN(2)]
				picked := map[int]bool{}
				for n := 1 + rng.IntN(3); len(picked) < n; {
					picked[rng.IntN(ids)] = true
				}
				idx := slices.Sorted(func(yield func(int) bool) {
					for i := range picked {
						if !yield(i) {
							return
						}
					}
				})
				gate.RLock()
				for _, i := range idx {
					m.locks[i].Lock()
				}
				ops := make([]Op, len(idx))
				next := make([]map[string]any, len(idx))
				for j, i := range idx {
					switch {
					case m.live[i] == nil:
						next[j] = values(rng)
						ops[j] = Op{Kind: OpInsert, Table: "items", ID: idOf(i), Values: next[j]}
					case i >= steady && rng.IntN(4) == 0:
						ops[j] = Op{Kind: OpDelete, Table: "items", ID: idOf(i)}
					default:
						next[j] = values(rng)
						ops[j] = Op{Kind: OpUpdate, Table: "items", ID: idOf(i), Values: next[j]}
					}
				}
				_, err := e.Write(context.Background(), m.ref, ops)
				if err != nil {
					fail("write %v on %s: %v", ops, m.ref.Branch, err)
				}
				for j, i := range idx {
					if err == nil {
						if next[j] != nil && m.live[i] != nil {
							// An update replaces the columns it names.
							merged := map[string]any{}
							for k, v := range m.live[i] {
								merged[k] = v
							}
							for k, v := range next[j] {
								merged[k] = v
							}
							next[j] = merged
						}
						m.live[i] = next[j]
						m.gen[i].Add(1)
					}
					m.locks[i].Unlock()
				}
				m.writes.Add(1)
				gate.RUnlock()
			}
		}()
	}

	var reads, kept atomic.Int64
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 11))
			type seen struct {
				v           *RecordView
				gen, writes int64
			}
			last := map[string]seen{}
			for range readsEach {
				if failed.Load() {
					return
				}
				m := models[rng.IntN(2)]
				i := rng.IntN(ids)
				gate.RLock()
				m.locks[i].Lock()
				v, err := e.GetView(c, m.ref, "items", idOf(i))
				want, werr := e.Get(m.ref, "items", idOf(i))
				gen, writes := m.gen[i].Load(), m.writes.Load()
				live := m.live[i]
				m.locks[i].Unlock()
				gate.RUnlock()
				reads.Add(1)
				if CodeOf(err) != CodeOf(werr) || (live == nil) != (werr != nil) {
					fail("read %s/%s: cached error %v, uncached %v, model %v", m.ref.Branch, idOf(i), err, werr, live)
					return
				}
				if werr != nil {
					continue
				}
				got := viewRecord(v)
				if got.Version != want.Version || !reflect.DeepEqual(got.Values, want.Values) {
					fail("read %s/%s: cached %+v, uncached %+v", m.ref.Branch, idOf(i), got, want)
					return
				}
				key := m.ref.Branch + "/" + idOf(i)
				if s, ok := last[key]; ok && s.gen == gen && s.writes != writes && s.v == v {
					kept.Add(1)
				}
				last[key] = seen{v, gen, writes}
			}
		}()
	}

	// A reader holding no lock races the writers on the steady records: a
	// cached read after an uncached one must not show an older version,
	// also while a write of the record is in flight.
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(3, 13))
		for writersLeft.Load() > 0 && !failed.Load() {
			m := models[rng.IntN(2)]
			id := idOf(rng.IntN(steady))
			want, err := e.Get(m.ref, "items", id)
			if err != nil {
				fail("read %s/%s: %v", m.ref.Branch, id, err)
				return
			}
			v, err := e.GetView(c, m.ref, "items", id)
			if err != nil {
				fail("read %s/%s: %v", m.ref.Branch, id, err)
				return
			}
			if v.Version < want.Version {
				fail("read %s/%s: cached version %d after version %d", m.ref.Branch, id, v.Version, want.Version)
				return
			}
		}
	}()

	queries := []string{
		`{"s":"red"}`,
		`{"s":{"$any":["green","grey"]},"n":{"$ge":3}}`,
		`{"n":{"$lt":5}}`,
		`{"m":{"$includes":"blue"}}`,
		`{"$not":{"s":"blue"}}`,
		`{"$exists":"m"}`,
	}
	match := func(q string, v map[string]any) bool {
		n, _ := v["n"].(json.Number).Int64()
		s := v["s"].(string)
		m, _ := v["m"].([]any)
		switch q {
		case queries[0]:
			return s == "red"
		case queries[1]:
			return (s == "green" || s == "grey") && n >= 3
		case queries[2]:
			return n < 5
		case queries[3]:
			return slices.Contains(m, any("blue"))
		case queries[4]:
			return s != "blue"
		case queries[5]:
			return m != nil
		}
		panic(q)
	}
	size := 200
	checked := 0
	for round := 0; round < queryRounds && !failed.Load(); round++ {
		gate.Lock()
		for _, m := range models {
			for _, q := range queries {
				res, err := e.Query(context.Background(), m.ref, "items", QueryRequest{Filter: mustFilter(q), Page: PageInput{Size: &size}}, QueryOptions{})
				if err != nil {
					fail("query %s on %s: %v", q, m.ref.Branch, err)
					continue
				}
				var got, want []string
				for _, r := range res.Records {
					got = append(got, r.ID)
				}
				for i, v := range m.live {
					if v != nil && match(q, v) {
						want = append(want, idOf(i))
					}
				}
				sort.Strings(got)
				if !slices.Equal(got, want) {
					fail("query %s on %s, round %d:\ngot  %v\nwant %v", q, m.ref.Branch, round, got, want)
				}
				checked++
			}
			// Groups come from whole-column scans, which the cache keeps.
			sum, err := e.Summarize(context.Background(), m.ref, "items", SummarizeRequest{Columns: []string{"s"}, Summaries: []Summary{{Name: "c", Function: "count", Column: "*"}}})
			if err != nil {
				fail("summarize on %s: %v", m.ref.Branch, err)
				continue
			}
			got, want := map[string]int64{}, map[string]int64{}
			for _, r := range sum.Rows {
				got[fmt.Sprint(r.Groups[0])] = r.Summaries[0].(int64)
			}
			for _, v := range m.live {
				if v != nil {
					want[v["s"].(string)]++
				}
			}
			if !reflect.DeepEqual(got, want) {
				fail("summarize on %s, round %d: got %v, want %v", m.ref.Branch, round, got, want)
			}
			checked++
		}
		gate.Unlock()
		if writersLeft.Load() == 0 && round > 1 {
			break
		}
	}
	wg.Wait()
	t.Logf("%d point reads (%d served by a view kept across other writes), %d queries and summaries checked", reads.Load(), kept.Load(), checked)
	if !failed.Load() && kept.Load() == 0 {
		t.Errorf("no cached view survived a write of another record")
	}
}
