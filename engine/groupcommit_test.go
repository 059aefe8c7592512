package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
)

// TestConcurrentSingleWrites runs many single-record writes at once, so
// that they are applied in groups: creates of colliding ids, values of a
// unique column that collide, and increments of one counter. Every write
// acknowledged must be there, exactly once, and every refusal must be the
// one its collision calls for, before and after a reopen.
func TestConcurrentSingleWrites(t *testing.T) {
	db := openTestDB(t, Options{})
	ref := db.ref("main")
	if _, err := db.e.WriteOne(ref, Op{Kind: OpInsert, Table: "items", ID: "counter", Values: map[string]any{"n": 0}}); err != nil {
		t.Fatal(err)
	}
	// An outcome is a create's answer: it is checked once every write is
	// answered, as a refusal may stem from a write answered at once.
	type outcome struct {
		id, code string
		err      error
	}
	const clients, each, ids, nCodes = 32, 30, 400, 300
	var (
		mu         sync.Mutex
		created    = map[string]string{} // id → code
		increments int
		outcomes   []outcome
		wg         sync.WaitGroup
	)

	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				k := c*each + i
				if k%3 == 0 {
					_, err := db.e.WriteOne(ref, Op{Kind: OpUpdate, Table: "items", ID: "counter",
						Values: map[string]any{"n": map[string]any{"$increment": 1}}})
					if err != nil {
						t.Errorf("increment: %v", err)
						return
					}
					mu.Lock()
					increments++
					mu.Unlock()
					continue
				}
				id, code := fmt.Sprintf("r%03d", k*7%ids), fmt.Sprintf("c%03d", k*11%nCodes)
				_, err := db.e.WriteOne(ref, Op{Kind: OpInsert, Table: "items", ID: id, CreateOnly: true,
					Values: map[string]any{"code": code, "note": "word" + code}})
				mu.Lock()
				outcomes = append(outcomes, outcome{id, code, err})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	codes := map[string]string{} // code → id
	for _, o := range outcomes {
		if o.err != nil {
			continue
		}
		if _, dup := created[o.id]; dup {
			t.Errorf("%s created twice", o.id)
		}
		if other, dup := codes[o.code]; dup {
			t.Errorf("%s and %s both hold code %s", o.id, other, o.code)
		}
		created[o.id], codes[o.code] = o.code, o.id
	}
	for _, o := range outcomes {
		var ee *Error
		switch {
		case o.err == nil:
		case !errors.As(o.err, &ee):
			t.Errorf("insert %s: %v", o.id, o.err)
		case ee.Code == CodeAlreadyExists:
			if _, ok := created[o.id]; !ok {
				t.Errorf("insert %s: %v, but it was never created", o.id, o.err)
			}
		case ee.Code == CodeInvalid:
			if _, ok := codes[o.code]; !ok {
				t.Errorf("insert %s: %v, but no record holds %s", o.id, o.err, o.code)
			}
		default:
			t.Errorf("insert %s: %v", o.id, o.err)
		}
	}
	check := func(when string) {
		recs, err := db.scanTable("main", "items")
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(created)+1 {
			t.Fatalf("%s: %d records, want %d", when, len(recs), len(created)+1)
		}
		for _, r := range recs {
			if r.ID == "counter" {
				if n := r.Values["n"]; n != int64(increments) {
					t.Errorf("%s: counter %v, want %d", when, n, increments)
				}
				continue
			}
			if code, ok := created[r.ID]; !ok || r.Values["code"] != code {
				t.Errorf("%s: record %s with code %v, want %q", when, r.ID, r.Values["code"], code)
			}
		}
		for id, code := range created {
			rows, err := db.e.FilterRows(ref, "items", mustFilter(fmt.Sprintf(`{"code":%q}`, code)))
			if err != nil {
				t.Fatal(err)
			}
			if rows.GetCardinality() != 1 {
				t.Errorf("%s: code %s of %s is on %d rows", when, code, id, rows.GetCardinality())
			}
		}
	}
	check("after the writes")
	db.reopen()
	check("after a reopen")
}

// TestConcurrentBulkInserts runs bulk inserts from many clients at once,
// so that they are applied in groups. Some requests share an id or a value
// of a unique column with others, and some hold an invalid record after
// valid ones. Each request must be applied whole or not at all; a request
// with nothing wrong in it must be applied whatever the others hold; one
// that fails must fail for its own invalid record or for a collision with
// a request that was applied. The same holds after a reopen.
func TestConcurrentBulkInserts(t *testing.T) {
	db := openTestDB(t, Options{})
	ref := db.ref("main")
	const clients, rounds, size = 12, 8, 40
	type request struct {
		recs   []map[string]any
		shared string // an id other requests may hold too, or ""
		code   string // a unique value other requests may hold too, or ""
		bad    bool   // it holds an invalid record
		err    error
	}
	reqs := make([]*request, clients*rounds)
	for k := range reqs {
		r := &request{}
		for i := range size {
			r.recs = append(r.recs, map[string]any{"id": fmt.Sprintf("q%03d-%02d", k, i), "n": k, "note": "word" + fmt.Sprint(k%9)})
		}
		if k%3 == 0 {
			r.shared = fmt.Sprintf("shared%d", k%5)
			r.recs[size/2]["id"] = r.shared
		}
		if k%7 == 0 {
			r.code = fmt.Sprintf("code%d", k%2)
			r.recs[size/3]["code"] = r.code
		}
		if k%5 == 1 {
			r.bad = true
			r.recs[size-3]["n"] = "not a number"
		}
		reqs[k] = r
	}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				r := reqs[i*clients+c]
				_, r.err = db.e.BulkInsert(context.Background(), ref, "items", r.recs)
			}
		}()
	}
	wg.Wait()
	sharedBy, codeBy := map[string]int{}, map[string]int{}
	for k, r := range reqs {
		if r.err != nil {
			continue
		}
		if r.bad {
			t.Errorf("request %d holds an invalid record and was applied", k)
		}
		if r.shared != "" {
			if o, dup := sharedBy[r.shared]; dup {
				t.Errorf("requests %d and %d both created %s", o, k, r.shared)
			}
			sharedBy[r.shared] = k
		}
		if r.code != "" {
			if o, dup := codeBy[r.code]; dup {
				t.Errorf("requests %d and %d both hold code %s", o, k, r.code)
			}
			codeBy[r.code] = k
		}
	}
	for k, r := range reqs {
		if r.err == nil {
			continue
		}
		_, sharedTaken := sharedBy[r.shared]
		_, codeTaken := codeBy[r.code]
		if !r.bad && !(r.shared != "" && sharedTaken) && !(r.code != "" && codeTaken) {
			t.Errorf("request %d has nothing wrong with it and failed: %v", k, r.err)
		}
	}
	check := func(when string) {
		recs, err := db.scanTable("main", "items")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, rec := range recs {
			got[rec.ID] = rec.Values["n"].(int64)
		}
		want := 0
		for k, r := range reqs {
			for _, rec := range r.recs {
				id := rec["id"].(string)
				n, ok := got[id]
				switch {
				case r.err == nil:
					want++
					if !ok || n != int64(k) {
						t.Errorf("%s: record %s of applied request %d: present %v, n %d", when, id, k, ok, n)
					}
				case ok && n == int64(k):
					t.Errorf("%s: record %s of failed request %d is there", when, id, k)
				}
				// Read by id too: the id map must agree with the rows.
				got, err := db.e.Get(ref, "items", id)
				switch {
				case err != nil && CodeOf(err) != CodeNotFound:
					t.Fatal(err)
				case r.err == nil && (err != nil || got.Values["n"] != int64(k)):
					t.Errorf("%s: get %s of applied request %d: %v, %v", when, id, k, got, err)
				case r.err != nil && err == nil && got.Values["n"] == int64(k):
					t.Errorf("%s: get %s of failed request %d found it", when, id, k)
				case r.err != nil && err == nil && id != r.shared:
					t.Errorf("%s: get %s of failed request %d found %v", when, id, k, got.Values)
				}
			}
		}
		if len(recs) != want {
			t.Errorf("%s: %d records, want %d", when, len(recs), want)
		}
		for code, k := range codeBy {
			rows, err := db.e.FilterRows(ref, "items", mustFilter(fmt.Sprintf(`{"code":%q}`, code)))
			if err != nil {
				t.Fatal(err)
			}
			if rows.GetCardinality() != 1 {
				t.Errorf("%s: code %s of request %d is on %d rows", when, code, k, rows.GetCardinality())
			}
		}
	}
	check("after the writes")
	db.reopen()
	check("after a reopen")
}

// TestConcurrentSingleInsertsIndexed inserts records one per write from
// many clients at once into a table with text, string, multiple and
// number columns and no unique one, so that they are applied in groups
// and, once groups are under way, prepared before the writer lock. Each
// acknowledged record must be found at once by a search for its own word,
// and in the end every filter must count exactly the records written.
func TestConcurrentSingleInsertsIndexed(t *testing.T) {
	e, ref := recFixture(t, searchTables)
	const clients, each = 24, 12
	errs := make(chan error, clients)
	for c := range clients {
		go func() {
			rng := rand.New(rand.NewSource(int64(c)))
			for i := range each {
				word := fmt.Sprintf("own%sx%s", letters(c), letters(i))
				doc := map[string]any{"title": "marker " + word, "body": randomText(rng, 15) + " " + word,
					"tags": []any{fmt.Sprint("t", c%4), "all", "all"}, "n": c}
				res, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: "docs", Values: doc})
				if err != nil {
					errs <- err
					return
				}
				q, f := word, 0.0
				found, err := e.SearchTable(ctx, ref, "docs", SearchRequest{Query: &q, Fuzziness: &f}, SearchOptions{})
				if err != nil {
					errs <- err
					return
				}
				if len(found.Records) != 1 || found.Records[0].Doc.ID != res.Record.ID {
					errs <- fmt.Errorf("%s acknowledged, then a search for %q found %d records", res.Record.ID, word, len(found.Records))
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		count := func(filter string) uint64 {
			rows, err := e.FilterRows(ref, "docs", mustFilter(filter))
			if err != nil {
				t.Fatal(err)
			}
			return rows.GetCardinality()
		}
		if n := count(`{"tags":{"$includes":"all"}}`); n != clients*each {
			t.Errorf("%s: %d records tagged all, want %d", when, n, clients*each)
		}
		for c := range 4 {
			if n := count(fmt.Sprintf(`{"tags":{"$includes":"t%d"}}`, c)); n != clients/4*each {
				t.Errorf("%s: %d records tagged t%d, want %d", when, n, c, clients/4*each)
			}
		}
		for c := range clients {
			if n := count(fmt.Sprintf(`{"n":%d}`, c)); n != each {
				t.Errorf("%s: %d records of client %d, want %d", when, n, c, each)
			}
		}
		q, f, size := "marker", 0.0, 1
		res, err := e.SearchTable(ctx, ref, "docs", SearchRequest{Query: &q, Fuzziness: &f, Size: &size}, SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.TotalCount != clients*each {
			t.Errorf("%s: a search for marker counts %d, want %d", when, res.TotalCount, clients*each)
		}
	}
	check("after the writes")
}

// letters spells n in letters, so that a word made of it stays one word.
func letters(n int) string {
	s := []byte{byte('a' + n%26)}
	for n /= 26; n > 0; n /= 26 {
		s = append(s, byte('a'+n%26))
	}
	return string(s)
}
