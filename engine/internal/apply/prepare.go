package apply

import (
	"runtime"
	"slices"
	"strings"
	"sync"

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
// and its values and words are then converted and tokenized beside the
// writer applying a group rather than by it (prepareOne). A lone
// single-record writer does not: that would only move its work. Tests
// that compare prepared writes with unprepared ones lower it.
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
		if col.Unique || len(c.Ops) == 1 && model.IsFileType(col.Type) {
			// Checking a unique column reads the staged bitmaps record by
			// record; the file a single-record write carries is stored,
			// and its value made final, under the lock (bulk inserts
			// carry none).
			return
		}
	}
	if len(c.Ops) == 1 {
		c.prep = prepareOne(d, br, t, c)
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
		// runnable meanwhile does not wait for preemption, and let their
		// caller hold them back (Yield).
		if i%yieldEvery == yieldEvery-1 {
			if c.Yield != nil {
				c.Yield()
			}
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
// branch br, or returns nil when its values do not convert. Its postings
// are its bitmaps as they come, their ids in one string: the writer
// stages them as they are, and sorts a group's bitmaps once
// (layers.Pending.Write). A value the record holds twice is a posting
// twice, as when the writer stages the record itself (joinAll).
func prepareOne(d *DB, br *model.Branch, t *model.Table, c *WriteRecords) *prepared {
	rec := &codec.Record{}
	w := &writer{br: br, now: c.Now}
	if err := w.fill(t, rec, c.Ops[0].Values, true, false); err != nil {
		return nil
	}
	p := &prepared{table: t, recs: []*codec.Record{rec}, lens: make([][]layers.FieldLength, 1)}
	sc := oneScratchPool.Get().(*oneScratch)
	layers.VisitMemberships(t, rec, func(id []byte, term string) {
		sc.ids = append(sc.ids, id...)
		sc.spans = append(sc.spans, oneSpan{len(sc.ids), term})
		if fl, ok := layers.LengthOfID(id); ok {
			p.lens[0] = append(p.lens[0], fl)
		}
	})
	all := string(sc.ids)
	p.postings = make([]posting, len(sc.spans))
	from := 0
	for k, sp := range sc.spans {
		p.postings[k] = posting{id: all[from:sp.to], term: sp.term, ops: opZero}
		from = sp.to
	}
	if cap(sc.ids) <= maxOneScratch {
		clear(sc.spans) // the words are the record's, not the pool's
		sc.ids, sc.spans = sc.ids[:0], sc.spans[:0]
		oneScratchPool.Put(sc)
	}
	p.joins = len(p.postings)
	p.markKnown(d, br)
	return p
}

// oneScratch is what prepareOne gathers a record's bitmaps in before it
// copies them out at their size: a record of a long text joins a hundred
// bitmaps and more, which growing these anew for every write would
// allocate several times over.
type oneScratch struct {
	ids   []byte
	spans []oneSpan
}

// oneSpan is where a bitmap id ends in oneScratch.ids, and the word it
// names.
type oneSpan struct {
	to   int
	term string
}

// maxOneScratch is the most bytes of bitmap ids whose scratch goes back
// to the pool: a record of a very long text does not keep its room.
const maxOneScratch = 64 << 10

// oneScratchPool recycles prepareOne's scratch.
var oneScratchPool = sync.Pool{New: func() any { return new(oneScratch) }}

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
	if w.deferred == 0 {
		return
	}
	w.noDefer = true
	w.deferred = 0
	p, tx := w.prep, w.tx
	top := w.br.Lineage[0].Layer
	pt := tx.pendingTable(top, p.table.ID)
	pt.Expect(max(len(p.postings), tx.oneBitmaps), max(p.joins, tx.oneJoins))
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
