package engine

import (
	"errors"
	"fmt"
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
