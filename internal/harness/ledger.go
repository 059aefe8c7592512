package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
)

// Ledger is a model of one table that writers fill: every record write the
// server acknowledged, and every write whose answer never came (the server
// was killed, the request failed). Verify reads the table back and checks
// it against the model: each acknowledged write must be there with its
// content, and a request whose answer was lost must have been applied
// entirely or not at all. Each writer owns its records, so the model of a
// record is exact. It is safe for concurrent use.
type Ledger struct {
	DB, Table string

	mu      sync.Mutex
	recs    map[string]*entry
	owned   [][]string // per writer: ids of records that exist
	next    []int      // per writer: the sequence number of its next new id
	open    []*change  // changes whose outcome Verify has yet to decide
	stats   LedgerStats
	rejects []string
}

// LedgerStats are the counts of a ledger.
type LedgerStats struct {
	Acked        int // requests acknowledged
	AckedRecords int // record writes in them
	Uncertain    int // requests whose answer was lost or not a success
	Applied      int // of those, found applied by Verify
	NotApplied   int // of those, found not applied
	Rejected     int // requests answered 4xx: a bug of the test or the server
	Checked      int // record reads compared with the model, over all Verify calls
	Lost         int // acknowledged record writes missing or with other content
	Torn         int // uncertain requests found applied in part
	Unexpected   int // records present that no write made
}

// value is the content of a record as the writers write it: a unique
// token, a counter and text derived from the token.
type value struct {
	V   string `json:"v"`
	N   int64  `json:"n"`
	Pad string `json:"pad"`
}

// newValue returns the value with token v.
func newValue(v string, n int64) value {
	return value{V: v, N: n, Pad: strings.Repeat(v+" ", 1+int(n%7))}
}

// entry is the model of one record.
type entry struct {
	exists  bool  // as last acknowledged (or decided by Verify)
	val     value // when exists
	pending *change
	newVal  value // pending's value for this record
}

// change is one request: the records it writes and their new values.
type change struct {
	kind string
	ids  []string
	vals []value
}

// NewLedger returns an empty model of table in database db for the given
// number of writers.
func NewLedger(db, table string, writers int) *Ledger {
	return &Ledger{DB: db, Table: table, recs: map[string]*entry{}, owned: make([][]string, writers), next: make([]int, writers)}
}

// path is the path of the table's branch.
func (l *Ledger) path() string { return "/db/" + l.DB + ":main/tables/" + l.Table }

// Setup creates the database, the table and its columns.
func (l *Ledger) Setup(c *Client, ws string) error {
	if _, err := c.Must(201, "PUT", "/workspaces/"+ws+"/dbs/"+l.DB, `{"region":"local"}`); err != nil {
		return err
	}
	if _, err := c.Must(201, "PUT", l.path(), nil); err != nil {
		return err
	}
	for _, col := range []string{`{"name":"v","type":"string"}`, `{"name":"n","type":"int"}`, `{"name":"pad","type":"text"}`} {
		if _, err := c.Must(200, "POST", l.path()+"/columns", col); err != nil {
			return err
		}
	}
	return nil
}

// Stats returns the counts so far.
func (l *Ledger) Stats() LedgerStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// Rejections returns the 4xx answers writers got.
func (l *Ledger) Rejections() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.rejects...)
}

// Run runs one writer per slot of the ledger until ctx ends or each has
// had a request fail (after which the model of its records is uncertain
// until Verify). A writer mixes single inserts, updates, transactions and
// bulk inserts, one request at a time.
func (l *Ledger) Run(ctx context.Context, c *Client, seed uint64) {
	var wg sync.WaitGroup
	for w := range l.owned {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for ctx.Err() == nil && l.step(c, w, rng) {
			}
		}()
	}
	wg.Wait()
}

// step makes one request of writer w and records its outcome; it reports
// whether the writer may go on.
func (l *Ledger) step(c *Client, w int, rng *rand.Rand) bool {
	l.mu.Lock()
	owned := l.owned[w]
	newID := func() string {
		l.next[w]++
		return fmt.Sprintf("w%02d-%06d", w, l.next[w])
	}
	pick := func(n int) []string {
		if len(owned) < n {
			return nil
		}
		ids := make([]string, 0, n)
		for _, i := range rng.Perm(len(owned))[:n] {
			ids = append(ids, owned[i])
		}
		return ids
	}
	ch := &change{}
	p := rng.IntN(100)
	switch {
	case p < 35 || len(owned) < 2:
		ch.kind, ch.ids = "insert", []string{newID()}
	case p < 65:
		ch.kind, ch.ids = "update", pick(1)
	case p < 85:
		ch.kind, ch.ids = "transaction", append([]string{newID(), newID()}, pick(2)...)
	default:
		ch.kind = "bulk"
		for range 5 + rng.IntN(16) {
			ch.ids = append(ch.ids, newID())
		}
	}
	for _, id := range ch.ids {
		ch.vals = append(ch.vals, newValue(fmt.Sprintf("%s/%d", id, rng.Uint32()), rng.Int64N(1000)))
	}
	l.mu.Unlock()

	want, method, path, body := 200, "POST", "", any(nil)
	switch ch.kind {
	case "insert":
		want, method, path, body = 201, "PUT", l.path()+"/data/"+ch.ids[0], ch.vals[0]
	case "update":
		method, path, body = "PATCH", l.path()+"/data/"+ch.ids[0], ch.vals[0]
	case "transaction":
		var ops []any
		for i, id := range ch.ids {
			if i < 2 {
				rec := map[string]any{"id": id, "v": ch.vals[i].V, "n": ch.vals[i].N, "pad": ch.vals[i].Pad}
				ops = append(ops, map[string]any{"insert": map[string]any{"table": l.Table, "record": rec, "createOnly": true}})
			} else {
				ops = append(ops, map[string]any{"update": map[string]any{"table": l.Table, "id": id, "fields": ch.vals[i]}})
			}
		}
		path, body = "/db/"+l.DB+":main/transaction", map[string]any{"operations": ops}
	case "bulk":
		var recs []any
		for i, id := range ch.ids {
			recs = append(recs, map[string]any{"id": id, "v": ch.vals[i].V, "n": ch.vals[i].N, "pad": ch.vals[i].Pad})
		}
		path, body = l.path()+"/bulk", map[string]any{"records": recs}
	}
	r, err := c.Do(method, path, body)
	switch {
	case err == nil && r.Status == want:
		l.ack(w, ch)
		return true
	case err == nil && r.Status >= 400 && r.Status < 500:
		l.reject(w, ch, fmt.Sprintf("%s %s: %s", method, path, r))
		return false
	default:
		l.uncertain(ch)
		return false
	}
}

// ack records an acknowledged change of writer w.
func (l *Ledger) ack(w int, ch *change) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stats.Acked++
	l.stats.AckedRecords += len(ch.ids)
	for i, id := range ch.ids {
		e := l.recs[id]
		if e == nil {
			e = &entry{}
			l.recs[id] = e
			l.owned[w] = append(l.owned[w], id)
		}
		e.exists, e.val = true, ch.vals[i]
	}
}

// reject records a change the server refused: it must have changed
// nothing, which Verify checks like a change never made.
func (l *Ledger) reject(w int, ch *change, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stats.Rejected++
	l.rejects = append(l.rejects, msg)
}

// uncertain records a change whose outcome is unknown.
func (l *Ledger) uncertain(ch *change) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stats.Uncertain++
	for i, id := range ch.ids {
		e := l.recs[id]
		if e == nil {
			e = &entry{}
			l.recs[id] = e
		}
		e.pending, e.newVal = ch, ch.vals[i]
	}
	l.open = append(l.open, ch)
}

// Verify reads the whole table and compares it with the model; uncertain
// changes are then decided by what was found, and the model becomes what
// was found, so that a fault is counted once. It returns what this call
// found wrong, as text, and adds its counts to the ledger's. Writers must
// not run meanwhile.
func (l *Ledger) Verify(c *Client) ([]string, error) {
	got, err := l.scan(c)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var bad []string
	applied := map[*change][]bool{}
	for id, e := range l.recs {
		l.stats.Checked++
		v, present := got[id]
		delete(got, id)
		before := present == e.exists && (!present || v == e.val)
		switch {
		case e.pending != nil && present && v == e.newVal:
			applied[e.pending] = append(applied[e.pending], true)
		case e.pending != nil && before:
			applied[e.pending] = append(applied[e.pending], false)
		case e.pending != nil:
			l.stats.Lost++
			bad = append(bad, fmt.Sprintf("record %s: found %v %+v; acknowledged %v %+v, or the lost %s %+v", id, present, v, e.exists, e.val, e.pending.kind, e.newVal))
		case !before:
			l.stats.Lost++
			bad = append(bad, fmt.Sprintf("record %s: found %v %+v; acknowledged %v %+v", id, present, v, e.exists, e.val))
		}
		e.pending, e.exists, e.val = nil, present, v
		if !present {
			delete(l.recs, id)
		}
	}
	for id, v := range got {
		l.stats.Unexpected++
		bad = append(bad, fmt.Sprintf("record %s: present as %+v, never written", id, v))
		l.recs[id] = &entry{exists: true, val: v}
	}
	for _, ch := range l.open {
		res := applied[ch]
		all, none := true, true
		for _, a := range res {
			all, none = all && a, none && !a
		}
		switch {
		case len(res) < len(ch.ids):
			// A record of it had other content: counted as lost above.
		case all:
			l.stats.Applied++
		case none:
			l.stats.NotApplied++
		default:
			l.stats.Torn++
			bad = append(bad, fmt.Sprintf("%s of %v applied in part: %v", ch.kind, ch.ids, res))
		}
	}
	l.open = nil
	for w := range l.owned {
		l.owned[w] = l.owned[w][:0]
	}
	for id := range l.recs {
		w := 0
		fmt.Sscanf(id, "w%d-", &w)
		l.owned[w] = append(l.owned[w], id)
	}
	return bad, nil
}

// scan reads every record of the table, by pages of a query.
func (l *Ledger) scan(c *Client) (map[string]value, error) {
	got := map[string]value{}
	body := map[string]any{"columns": []string{"v", "n", "pad"}, "page": map[string]any{"size": 200}}
	for {
		r, err := c.Must(200, "POST", l.path()+"/query", body)
		if err != nil {
			return nil, err
		}
		var page struct {
			Records []struct {
				ID string `json:"id"`
				value
			} `json:"records"`
			Meta struct {
				Page struct {
					Cursor string `json:"cursor"`
					More   bool   `json:"more"`
				} `json:"page"`
			} `json:"meta"`
		}
		if err := json.Unmarshal(r.Body, &page); err != nil {
			return nil, fmt.Errorf("query page: %v", err)
		}
		for _, rec := range page.Records {
			got[rec.ID] = rec.value
		}
		if !page.Meta.Page.More {
			return got, nil
		}
		body = map[string]any{"columns": []string{"v", "n", "pad"}, "page": map[string]any{"size": 200, "after": page.Meta.Page.Cursor}}
	}
}
