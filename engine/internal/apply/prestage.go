package apply

import (
	"runtime"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Prestaging. Most of the work of a bulk insert under the writer lock is
// spent working out, record by record, the bitmaps each new row joins and
// staging them one (row, bitmap) at a time. None of that depends on the
// database's rows: only on the table's schema and the records. So a bulk
// insert works it out before it waits for the lock, while another write
// holds it, into the bitmaps its records join, each with the list of its
// records, once per bitmap. Under the lock, each new row takes its row id
// as before and the rows are then staged bitmap by bitmap, with one
// lookup of each bitmap per command instead of one per record. The result
// is the same staged changes, in the same order, as record by record.
//
// It is used only when nothing in the command reads the staged bitmaps
// while the records are written (no unique column) and the table the
// command finds under the lock is the one it was worked out for (a
// published table is immutable: the same one has the same columns). A
// record whose id the command finds stored takes the usual path, after
// the rows before it are staged.

// prestageWhen says when bulk inserts are prestaged.
type prestageWhen uint8

// When bulk inserts are prestaged.
const (
	prestageWhenBusy prestageWhen = iota
	prestageNever
	prestageAlways
)

// prestages reports whether a bulk insert on d arriving now is prestaged:
// when another write is under way, so that the work overlaps with it.
// With none there is nothing to overlap, and prestaging would only cost
// more work, taken from the queries running meanwhile.
func (a *Applier) prestages(d *DB) bool {
	switch a.prestaging {
	case prestageNever:
		return false
	case prestageAlways:
		return true
	}
	return d.writing()
}

// prestaged is the bitmaps the records of a bulk insert join, worked out
// before the command is applied.
type prestaged struct {
	table *model.Table // the table the records were filled against
	// ids are the bitmaps by id, in first-seen order, and recs the
	// records joining each, by index in the command's ops, ascending.
	ids  []string
	recs [][]int32
	// terms are the words of the records' searchable text, and lens the
	// lengths of each record's text fields.
	terms []string
	lens  [][]layers.FieldLength
}

// prestage works out the bitmaps of w's records against the database's
// published state, or returns nil when w is not a bulk insert of one
// table that can be prestaged, or a record is refused (the command then
// reports it under the lock as usual).
func prestage(d *DB, w *WriteRecords) *prestaged {
	if !w.Bulk || len(w.Ops) < minPrestage {
		return nil
	}
	br := d.State().Branches.At(w.Branch)
	if br == nil {
		return nil
	}
	name := w.Ops[0].Table
	t, err := br.Schema.Table(name)
	if err != nil {
		return nil
	}
	for _, c := range t.Leaves {
		if c.Unique {
			return nil
		}
	}
	p := &prestaged{table: t, lens: make([][]layers.FieldLength, len(w.Ops))}
	at := map[string]int{}
	terms := map[string]struct{}{}
	fw := &writer{br: br, now: w.Now, bulk: true}
	var rec codec.Record
	for i := range w.Ops {
		if i%yieldEvery == yieldEvery-1 {
			runtime.Gosched()
		}
		op := &w.Ops[i]
		if op.Kind != model.OpInsert || op.Table != name || op.MissingNotFound {
			return nil
		}
		if model.CheckNoFiles(t, op.Values) != nil {
			return nil
		}
		if err := fw.fill(t, &rec, op.Values, true, false); err != nil {
			return nil
		}
		layers.VisitMemberships(t, &rec, func(id []byte, term string) {
			k, ok := at[string(id)]
			if !ok {
				k = len(p.ids)
				at[string(id)] = k
				p.ids = append(p.ids, string(id))
				p.recs = append(p.recs, nil)
			}
			p.recs[k] = append(p.recs[k], int32(i))
			if term != "" {
				terms[term] = struct{}{}
				return
			}
			if fl, ok := layers.LengthOfID(id); ok {
				p.lens[i] = append(p.lens[i], fl)
			}
		})
	}
	p.terms = make([]string, 0, len(terms))
	for term := range terms {
		p.terms = append(p.terms, term)
	}
	return p
}

// minPrestage is the fewest records worth prestaging: below it, the
// lookups saved do not pay for the lists.
const minPrestage = 16

// prestagedRows is a writer's use of a command's prestaged bitmaps: the
// row each record took, while not yet staged.
type prestagedRows struct {
	p    *prestaged
	pt   *layers.PendingTable
	rows []uint32 // by op index; 0: not a new row of this command
	// from is the first op whose row is not staged yet; any says whether
	// a row was taken since.
	from int
	any  bool
}

// usePrestaged makes the writer stage w's records from p, when p was
// worked out for the table the command sees.
func (wr *writer) usePrestaged(w *WriteRecords) {
	p := w.pre
	if p == nil {
		return
	}
	if t, err := wr.br.Schema.Table(p.table.Name); err != nil || t != p.table {
		return
	}
	wr.pre = &prestagedRows{p: p, rows: make([]uint32, len(w.Ops))}
}

// join records that the current op's record takes row as a new row, to
// be staged with the others; it returns false when the op is not
// prestaged.
func (wr *writer) join(pt *layers.PendingTable, row uint32) bool {
	pr := wr.pre
	if pr == nil || wr.usual {
		return false
	}
	pr.pt, pr.rows[wr.op], pr.any = pt, row, true
	tx := wr.tx
	ch := &tx.changes[len(tx.changes)-1]
	ch.Lens = append(ch.Lens, pr.p.lens[wr.op]...)
	return true
}

// stagePrestaged stages the rows the ops before to took, bitmap by
// bitmap, and notes the records' words as new to the layer.
func (wr *writer) stagePrestaged(to int) {
	pr := wr.pre
	if pr == nil || !pr.any {
		return
	}
	var rows []uint32
	for k, id := range pr.p.ids {
		rows = rows[:0]
		for _, i := range pr.p.recs[k] {
			if int(i) >= pr.from && int(i) < to && pr.rows[i] != 0 {
				rows = append(rows, pr.rows[i])
			}
		}
		if len(rows) > 0 {
			pr.pt.AddRows(id, rows)
		}
	}
	terms := wr.tx.termsOf(wr.br.ID, pr.p.table.ID)
	for _, term := range pr.p.terms {
		terms[term] = struct{}{}
	}
	pr.from, pr.any = to, false
}
