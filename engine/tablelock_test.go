package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coppice-db/coppice/engine/internal/apply"
	"github.com/coppice-db/coppice/index"
)

// TestWriteHoldsBackOnlyItsTables holds a write of one table in the middle
// of its command (it holds the locks of what it writes, its batch not yet
// visible) and queries every table of the database meanwhile. The queries
// of the other tables answer: that of a table whose link reaches the
// written one (a filter through the link sees the written table as it was
// before the write), the first query of a table, which builds its
// structures, and the first point read of a table through a record cache,
// which makes the table's cache. A query of the written table waits for
// the write and then sees it, as a fresh read does.
func TestWriteHoldsBackOnlyItsTables(t *testing.T) {
	e, ref := recFixture(t, map[string][]ColumnDef{
		"owners": {{Name: "name", Type: TypeString}},
		"docs": {
			{Name: "title", Type: TypeString},
			{Name: "owner", Type: TypeLink, Link: &LinkDef{Table: "owners"}},
		},
		"other": {{Name: "x", Type: TypeString}},
		"fresh": {{Name: "y", Type: TypeString}},
		"point": {{Name: "z", Type: TypeString}},
	})
	ctx := context.Background()
	write := func(table, id string, values map[string]any) {
		t.Helper()
		if _, err := e.WriteOne(ref, Op{Kind: OpInsert, Table: table, ID: id, Values: values}); err != nil {
			t.Fatal(err)
		}
	}
	write("owners", "o1", map[string]any{"name": "ann"})
	write("owners", "o2", map[string]any{"name": "bob"})
	for i := range 6 {
		write("docs", fmt.Sprintf("d%d", i), map[string]any{"title": fmt.Sprint("t", i), "owner": fmt.Sprint("o", 1+i%2)})
	}
	write("other", "x0", map[string]any{"x": "a"})
	write("fresh", "y0", map[string]any{"y": "a"})
	write("point", "p0", map[string]any{"z": "a"})
	recCache := NewRecordCache(1 << 20)

	// ids returns the ids of the records of table the filter finds.
	ids := func(table string, filter map[string]any) ([]string, error) {
		res, err := e.Query(ctx, ref, table, QueryRequest{Filter: index.FilterOf(filter)}, QueryOptions{})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, r := range res.Records {
			out = append(out, r.ID)
		}
		slices.Sort(out)
		return out, nil
	}
	type query struct {
		table  string
		filter map[string]any
	}
	annDocs := query{"docs", map[string]any{"owner.name": "ann"}}
	anns := query{"owners", map[string]any{"name": "ann"}}
	others := query{"other", nil}
	fresh := query{"fresh", nil} // first read while a write is held: its store is built then
	for _, q := range []query{annDocs, anns, others} {
		if _, err := ids(q.table, q.filter); err != nil { // stores built, as a steady reader has them
			t.Fatal(err)
		}
	}

	// The held command is the first that writes rows once armed.
	var armed atomic.Bool

	for _, c := range []struct {
		name  string
		write func() error
		// answer are the queries that must answer while the write is held,
		// with what they find, and points the tables whose record id+"0" a
		// point read through the record cache must find meanwhile; wait is
		// the one that waits, with what it finds after the write; later
		// are queries after the write.
		answer map[*query][]string
		points []string
		wait   *query
		later  map[*query][]string
	}{
		{
			name: "other",
			write: func() error {
				_, err := e.BulkInsert(ctx, ref, "other", []map[string]any{{"x": "b"}, {"x": "c"}})
				return err
			},
			answer: map[*query][]string{&annDocs: {"d0", "d2", "d4"}, &anns: {"o1"}, &fresh: {"y0"}},
			points: []string{"point"},
			wait:   &others,
		},
		{
			name: "owners",
			write: func() error {
				_, err := e.WriteOne(ref, Op{Kind: OpUpdate, Table: "owners", ID: "o2", Values: map[string]any{"name": "ann"}})
				return err
			},
			answer: map[*query][]string{&annDocs: {"d0", "d2", "d4"}},
			wait:   &anns,
			later:  map[*query][]string{&anns: {"o1", "o2"}, &annDocs: {"d0", "d1", "d2", "d3", "d4", "d5"}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, err := ids(c.wait.table, c.wait.filter)
			if err != nil {
				t.Fatal(err)
			}
			held, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			unhold := func() { once.Do(func() { close(release) }) }
			e.mem.SetPrepared(func(*apply.Tx) {
				if armed.CompareAndSwap(true, false) {
					close(held)
					<-release
				}
			})
			armed.Store(true)
			written := make(chan error, 1)
			go func() { written <- c.write() }()
			defer func() {
				unhold()
				if err := <-written; err != nil {
					t.Error(err)
				}
				e.mem.SetPrepared(nil)
			}()
			<-held

			waited := make(chan []string, 1)
			go func() {
				got, err := ids(c.wait.table, c.wait.filter)
				if err != nil {
					t.Error(err)
				}
				waited <- got
			}()
			for q, want := range c.answer {
				got := make(chan []string, 1)
				go func() {
					r, err := ids(q.table, q.filter)
					if err != nil {
						t.Error(err)
					}
					got <- r
				}()
				select {
				case r := <-got:
					if !slices.Equal(r, want) {
						t.Errorf("%s %v while the write of %s is held: %v, want %v", q.table, q.filter, c.name, r, want)
					}
				case <-time.After(10 * time.Second):
					unhold()
					<-got
					t.Fatalf("%s %v waits for the write of %s", q.table, q.filter, c.name)
				}
			}
			for _, table := range c.points {
				id := table[:1] + "0"
				got := make(chan error, 1)
				go func() {
					v, err := e.GetView(recCache, ref, table, id)
					if err == nil && v.ID != id {
						err = fmt.Errorf("found %s", v.ID)
					}
					got <- err
				}()
				select {
				case err := <-got:
					if err != nil {
						t.Errorf("point read of %s/%s while the write of %s is held: %v", table, id, c.name, err)
					}
				case <-time.After(10 * time.Second):
					unhold()
					<-got
					t.Fatalf("point read of %s/%s waits for the write of %s", table, id, c.name)
				}
			}
			select {
			case r := <-waited:
				t.Fatalf("%s %v answered %v while the write of its table was held", c.wait.table, c.wait.filter, r)
			case <-time.After(100 * time.Millisecond):
			}
			unhold()
			got := <-waited
			want, err := ids(c.wait.table, c.wait.filter)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Equal(want, before) || !slices.Equal(got, want) {
				t.Errorf("%s %v after waiting for the write: %v, then %v; before the write %v", c.wait.table, c.wait.filter, got, want, before)
			}
			for q, want := range c.later {
				r, err := ids(q.table, q.filter)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(r, want) {
					t.Errorf("%s %v after the write: %v, want %v", q.table, q.filter, r, want)
				}
			}
		})
	}
}
