package apply

import (
	"runtime"
	"slices"
	"strings"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Preparing a write of new records. Most of what inserting a record costs
// depends on the record and its table's schema only: converting its
// values, tokenizing its text, and listing the bitmaps it joins. A write
// whose operations all insert into one table works that out in its
// caller's goroutine before it takes the writer lock (or queues for a
// group), so that concurrent writers prepare side by side while another
// commits, and gathers the bitmaps of all its records into posting lists
// by bitmap: under the lock, once its new records have row ids, each
// bitmap takes its rows in one go instead of one staged change per row
// and bitmap.
//
// What is prepared is a cache, not part of the command: it holds for the
// schema it was made from (the table's identity: a schema change copies
// the tables it changes), and the writer works everything out under the
// lock as before when the table changed meanwhile, for a record whose
// values it could not convert (the error is reported from there), and
// for what reads the state: the record's previous version, link targets
// and row ids. Either way the command writes the same bytes.

// prepared is what a write of new records into one table worked out
// before it took the writer lock.
type prepared struct {
	table *model.Table
	// recs are the records' converted fields by operation, nil where
	// converting failed.
	recs []*codec.Record
	// lens are the lengths of each record's text fields.
	lens [][]layers.FieldLength
	// postings are the bitmaps the records join, in id order, each with
	// the operations whose records join it, in increasing order; joins
	// counts these.
	postings []posting
	joins    int
	// known are the remembered words of the table's top layer when the
	// write was prepared, nil if none were; a posting's word found there
	// is marked known.
	known *knownWords
}

// posting is one bitmap that prepared records join.
type posting struct {
	id   string
	term string // the word a term bitmap names, for the vocabulary
	ops  []int32
	// known: the word was remembered as stored when the write was
	// prepared.
	known bool
}

// prepareMinOps is the fewest operations a write prepares for on its
// own: preparing pays for itself once a write holds many records, whose
// bitmaps it gathers. A single-record write prepares only while writes
// of its database are applied in groups (DB.grouping): it waits anyway,
// and the writer applying its group stages the bitmaps of all the
// group's prepared records at once, in id order (flushGroupJoins). A
// lone single-record writer does not: preparing would only move its
// work, and sort its bitmaps. Tests that compare prepared writes with
// unprepared ones lower it.
var prepareMinOps = 16

// prepare works out c's records and their bitmaps from the state of d
// when every operation of c inserts into one table without conditions,
// and keeps them in c for its application under the writer lock. grouped
// says that c is applied in a group.
func (c *WriteRecords) prepare(d *DB, grouped bool) {
	c.prep = nil
	st := d.State()
	if len(c.Ops) < prepareMinOps && !(grouped && len(c.Ops) == 1) {
		return
	}
	name := c.Ops[0].Table
	for i := range c.Ops {
		op := &c.Ops[i]
		if op.Kind != model.OpInsert || op.Table != name || op.IfVersion != nil {
			return
		}
	}
	br, err := st.Branch(c.Branch)
	if err != nil {
		return
	}
	t, err := br.Schema.Table(name)
	if err != nil {
		return
	}
	for _, col := range t.Leaves {
		if col.Unique || model.IsFileType(col.Type) {
			// Checking a unique column reads the staged bitmaps record by
			// record; a file's value is made final under the lock.
			return
		}
	}
	if len(c.Ops) == 1 {
		c.prep = prepareOne(br, t, c)
		return
	}
	p := &prepared{
		table: t,
		recs:  make([]*codec.Record, len(c.Ops)),
		lens:  make([][]layers.FieldLength, len(c.Ops)),
	}
	w := &writer{br: br, now: c.Now}
	byID := map[string]int{}
	for i := range c.Ops {
		// Writes prepare side by side and may take every processor: they
		// yield as the writer does (yieldEvery), so that a query made
		// runnable meanwhile does not wait for preemption.
		if i%yieldEvery == yieldEvery-1 {
			runtime.Gosched()
		}
		rec := &codec.Record{}
		if err := w.fill(t, rec, c.Ops[i].Values, true, false); err != nil {
			continue
		}
		p.recs[i] = rec
		layers.VisitMemberships(t, rec, func(id []byte, term string) {
			k, ok := byID[string(id)]
			if !ok {
				k = len(p.postings)
				byID[string(id)] = k
				p.postings = append(p.postings, posting{id: string(id), term: term})
			}
			ps := &p.postings[k]
			if n := len(ps.ops); n > 0 && ps.ops[n-1] == int32(i) {
				return // a value the record holds twice
			}
			ps.ops = append(ps.ops, int32(i))
			p.joins++
			if fl, ok := layers.LengthOfID(id); ok {
				p.lens[i] = append(p.lens[i], fl)
			}
		})
	}
	// In id order, the order in which their keys are written, so that
	// staging them (flushJoins) leaves nothing to sort under the lock.
	// Sorting their indexes moves less than sorting them.
	order := make([]int32, len(p.postings))
	for k := range order {
		order[k] = int32(k)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(p.postings[a].id, p.postings[b].id) })
	sorted := make([]posting, len(order))
	for k, o := range order {
		sorted[k] = p.postings[o]
	}
	p.postings = sorted
	p.markKnown(d, br)
	c.prep = p
}

// markKnown marks the postings whose words are remembered as stored,
// looked up here rather than under the writer lock: a word a table's
// remembered words hold stays there for as long as they are remembered
// (forgetTerms).
func (p *prepared) markKnown(d *DB, br *model.Branch) {
	d.knownMu.RLock()
	p.known = d.knownTerms[layerTable{br.Lineage[0].Layer, p.table.ID}]
	for k := range p.postings {
		if ps := &p.postings[k]; ps.term != "" && p.known.has(ps.term) {
			ps.known = true
		}
	}
	d.knownMu.RUnlock()
}

// opZero is the operations of a posting of a single-record write.
var opZero = []int32{0}

// prepareOne prepares the one record of c, an insert into table t of
// branch br, or returns nil when its values do not convert. With one
// record, its postings are its bitmaps, sorted without a map; their ids
// share one string. Which of its words are remembered as stored is left
// to the writer, which looks them up once for the group (flushGroupJoins).
func prepareOne(br *model.Branch, t *model.Table, c *WriteRecords) *prepared {
	rec := &codec.Record{}
	w := &writer{br: br, now: c.Now}
	if err := w.fill(t, rec, c.Ops[0].Values, true, false); err != nil {
		return nil
	}
	p := &prepared{table: t, recs: []*codec.Record{rec}, lens: make([][]layers.FieldLength, 1)}
	// Spans of one buffer, without pointers, sort without write
	// barriers; the postings are made once sorted.
	type span struct{ from, to, term int32 }
	var ids []byte
	var spans []span
	var terms []string
	layers.VisitMemberships(t, rec, func(id []byte, term string) {
		sp := span{int32(len(ids)), int32(len(ids) + len(id)), -1}
		if term != "" {
			sp.term = int32(len(terms))
			terms = append(terms, term)
		}
		spans = append(spans, sp)
		ids = append(ids, id...)
		if fl, ok := layers.LengthOfID(id); ok {
			p.lens[0] = append(p.lens[0], fl)
		}
	})
	all := string(ids)
	slices.SortFunc(spans, func(a, b span) int { return strings.Compare(all[a.from:a.to], all[b.from:b.to]) })
	p.postings = make([]posting, 0, len(spans))
	for _, sp := range spans {
		id := all[sp.from:sp.to]
		if n := len(p.postings); n > 0 && p.postings[n-1].id == id {
			continue // a value the record holds twice
		}
		ps := posting{id: id, ops: opZero}
		if sp.term >= 0 {
			ps.term = terms[sp.term]
		}
		p.postings = append(p.postings, ps)
	}
	p.joins = len(p.postings)
	return p
}

// preparedRec returns the prepared fields of the operation being applied
// into table t, or nil when there are none for t as it is now.
func (w *writer) preparedRec(t *model.Table) *codec.Record {
	if w.prep == nil || w.prep.table != t {
		return nil
	}
	return w.prep.recs[w.op]
}

// checkLinks checks that the links of prepared fields name existing
// records, as filling them under the lock does.
func (w *writer) checkLinks(t *model.Table, fields []codec.Field) error {
	for _, f := range fields {
		c := t.ByID[f.Col]
		if c != nil && c.Type == model.TypeLink && !f.Val.IsNull() {
			if err := w.checkLink(c, f.Val.Str); err != nil {
				return err
			}
		}
	}
	return nil
}

// deferJoin notes that the new row of the operation being applied, whose
// record was prepared, joins its prepared bitmaps, and reports whether it
// did: the bitmaps take their rows when the write's records are all
// applied (flushJoins). It does not once anything else was staged in
// between.
func (w *writer) deferJoin(t *model.Table, row uint32) bool {
	if !w.prepRec || w.noDefer || w.prep.table != t {
		return false
	}
	if w.rows == nil {
		w.rows = make([]uint32, len(w.prep.recs))
	}
	w.rows[w.op] = row
	w.deferred++
	w.tx.changes[len(w.tx.changes)-1].Lens = w.prep.lens[w.op]
	return true
}

// flushJoins stages the deferred rows in their bitmaps, bitmap by bitmap,
// and notes the words new to the layer, but those remembered as stored.
// From then on rows join their bitmaps one by one, so that the changes
// of each bitmap stay in the order they were made.
func (w *writer) flushJoins() {
	w.tx.flushGroupJoins()
	if w.deferred == 0 {
		return
	}
	w.noDefer = true
	w.deferred = 0
	p, tx := w.prep, w.tx
	top := w.br.Lineage[0].Layer
	pt := tx.pendingTable(top, p.table.ID)
	pt.Expect(len(p.postings), p.joins)
	known := tx.d.knownTerms[layerTable{top, p.table.ID}]
	// The words found remembered when the write was prepared are still
	// remembered if these are the same remembered words; the others are
	// looked up now.
	same := known != nil && known == p.known
	var terms map[string]struct{}
	rows := make([]uint32, 0, len(w.rows))
	for k := range p.postings {
		ps := &p.postings[k]
		rows = rows[:0]
		for _, i := range ps.ops {
			if r := w.rows[i]; r != 0 {
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			continue
		}
		pt.AddRows(ps.id, rows)
		if ps.term != "" && !(same && ps.known) && !known.has(ps.term) {
			if terms == nil {
				terms = tx.termsOf(w.br.ID, p.table.ID)
			}
			terms[ps.term] = struct{}{}
		}
	}
}

// groupJoins are the deferred bitmaps of the prepared writes of a group
// applied so far (group.go), all of new records of one table of one
// branch: the writer applying the group stages them once its writes are
// all applied, or before anything else is staged.
type groupJoins struct {
	br    *model.Branch
	table *model.Table
	// preps are the writes' prepared records and rows the row ids of
	// their operations (0 for an operation that wrote no new row of its
	// prepared record), write by write in the order applied.
	preps []*prepared
	rows  [][]uint32
}

// endJoins ends the deferral of the bitmaps of the writer's new rows: in
// a group, they join those of the writes applied before it, to be staged
// together; otherwise they are staged now.
func (w *writer) endJoins() {
	g := w.tx.group
	if g == nil || w.deferred == 0 {
		w.flushJoins()
		return
	}
	if len(g.preps) > 0 && (g.table != w.prep.table || g.br.ID != w.br.ID) {
		w.tx.flushGroupJoins()
	}
	g.br, g.table = w.br, w.prep.table
	g.preps = append(g.preps, w.prep)
	g.rows = append(g.rows, w.rows)
	w.deferred, w.noDefer = 0, true
}

// flushGroupJoins stages the deferred bitmaps of a group's prepared
// writes (endJoins): their postings, each write's in id order, are merged
// into one list in id order, so that each bitmap takes the rows of all
// the writes at once, in increasing order, and the bitmaps come staged
// in the order their keys are written. Words new to the layer are noted
// as flushJoins does.
func (tx *Tx) flushGroupJoins() {
	g := tx.group
	if g == nil || len(g.preps) == 0 {
		return
	}
	top := g.br.Lineage[0].Layer
	pt := tx.pendingTable(top, g.table.ID)
	n, joins := 0, 0
	for _, p := range g.preps {
		n += len(p.postings)
		joins += p.joins
	}
	pt.Expect(n, joins)
	known := tx.d.knownTerms[layerTable{top, g.table.ID}]
	var terms map[string]struct{}
	// h is a heap of the writes by their next posting's id, then by
	// their order: the rows of one bitmap come in the order applied.
	pos := make([]int, len(g.preps))
	h := make([]int, 0, len(g.preps))
	less := func(a, b int) bool {
		ia, ib := g.preps[a].postings[pos[a]].id, g.preps[b].postings[pos[b]].id
		return ia < ib || ia == ib && a < b
	}
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(h) {
				return
			}
			if c+1 < len(h) && less(h[c+1], h[c]) {
				c++
			}
			if !less(h[c], h[i]) {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for k, p := range g.preps {
		if len(p.postings) > 0 {
			h = append(h, k)
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	rows := make([]uint32, 0, len(g.preps))
	for len(h) > 0 {
		id := g.preps[h[0]].postings[pos[h[0]]].id
		rows = rows[:0]
		term, remembered := "", true
		for len(h) > 0 {
			k := h[0]
			p := g.preps[k]
			ps := &p.postings[pos[k]]
			if ps.id != id {
				break
			}
			for _, i := range ps.ops {
				if r := g.rows[k][i]; r != 0 {
					rows = append(rows, r)
				}
			}
			if ps.term != "" && !(known != nil && known == p.known && ps.known) {
				remembered = false
			}
			term = ps.term
			if pos[k]++; pos[k] == len(p.postings) {
				h[0] = h[len(h)-1]
				h = h[:len(h)-1]
			}
			down(0)
		}
		if len(rows) == 0 {
			continue
		}
		pt.AddRows(id, rows)
		if term != "" && !remembered && !known.has(term) {
			if terms == nil {
				terms = tx.termsOf(g.br.ID, g.table.ID)
			}
			terms[term] = struct{}{}
		}
	}
	g.preps, g.rows = g.preps[:0], g.rows[:0]
}
