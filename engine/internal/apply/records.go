package apply

import (
	"bytes"
	"cmp"
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// WriteRecords writes records, with everything non-deterministic
// resolved: record ids and the time. Applying it reads only the database
// state. Bulk marks the records of a bulk insert, whose errors name no
// table. The result is an []OpResult, one per operation.
type WriteRecords struct {
	Branch string     `json:"branch"`
	Now    time.Time  `json:"now"`
	Ops    []model.Op `json:"ops"`
	Bulk   bool       `json:"bulk,omitempty"`
	// Queued, when set, is called once the write joins the writes
	// waiting to be applied in a group (group.go): from then on its
	// caller only waits, for the group and for its sync, while the
	// writer applying the group does the work. It is not part of the
	// command: a replica never sees it.
	Queued func() `json:"-"`
	// Yield, when set, is called every yieldEvery records while the
	// caller prepares them (prepare.go), holding no lock; it may block.
	// Neither is it part of the command.
	Yield func() `json:"-"`
	// WriterYield, when set, is called where the writer applying the
	// command yields its processor under the writer lock: every
	// yieldEvery records, and while it stages the bitmaps (Tx.yield). It
	// must return promptly. Neither is it part of the command.
	WriterYield func() `json:"-"`
	// prep is what the caller worked out before the writer lock
	// (prepare.go); neither is it part of the command.
	prep *prepared
}

func (c *WriteRecords) apply(tx *Tx) (any, error) {
	b, err := tx.st.Branch(c.Branch)
	if err != nil {
		return nil, err
	}
	w := &writer{tx: tx, br: b, now: c.Now, bulk: c.Bulk, prep: c.prep}
	if c.WriterYield != nil && tx.yield == nil {
		tx.yield = c.WriterYield
	}
	if err := w.resolveLinks(); err != nil {
		return nil, err
	}
	results := make([]OpResult, len(c.Ops))
	for i := range c.Ops {
		w.op = i
		if i%yieldEvery == yieldEvery-1 {
			if c.WriterYield != nil {
				c.WriterYield()
			}
			runtime.Gosched()
		}
		r, err := w.apply(&c.Ops[i])
		if err != nil {
			var ee *model.Error
			if !errors.As(err, &ee) {
				return nil, err
			}
			return nil, &model.OpErrors{Errors: []model.OpError{{Index: i, Err: ee}}}
		}
		results[i] = r
	}
	w.flushJoins()
	return results, nil
}

// yieldEvery is how many records a write applies between yields of its
// processor. A bulk write runs for a while under the writer lock without
// blocking; a query that becomes runnable meanwhile would wait for the
// scheduler to preempt it, up to ~10 ms, on a machine with few cores.
// Yielding every few records, a fraction of a millisecond of work, lets a
// waiting query run first, at the cost of a call that returns at once
// when nothing waits.
const yieldEvery = 8

// OpResult is the outcome of one operation as a command returns it: the
// record as stored, which the caller turns into the public form.
type OpResult struct {
	Kind    model.OpKind
	ID      string
	Rows    int
	Created bool
	Table   uint32 // the id of the table written
	// Rec is the record after the write; for a delete, before it; for a
	// get, the record read (nil when missing). It is the result's own.
	// Tbl is its table, as the command saw it; a decoded result has none.
	Rec *codec.Record
	Tbl *model.Table
}

// writer applies operations inside one command.
type writer struct {
	tx   *Tx
	br   *model.Branch
	now  time.Time
	bulk bool // the records of a bulk insert: errors name no table
	// before and after are the bitmap memberships of the row writeRow is
	// writing, kept between rows so that their maps do not grow anew.
	before, after map[string]struct{}

	// prep is what the command's caller prepared (prepare.go), or nil;
	// op is the index of the operation being applied and prepRec says
	// whether its record is the prepared one.
	prep    *prepared
	op      int
	prepRec bool
	// rows are the row ids of the prepared new records whose bitmaps
	// are not staged yet (deferred of them), by operation; noDefer is set
	// once they were.
	rows     []uint32
	deferred int
	noDefer  bool
	// linked are the link targets found to exist, while every operation
	// inserts (prep is set).
	linked map[linkTarget]struct{}
	// given marks, by column id, the columns fill was given a value for;
	// one slice for every record the writer fills (givenOf).
	given []bool
}

// apply applies one operation; its errors name the table unless the
// operation is a single-record write or part of a bulk insert.
func (w *writer) apply(op *model.Op) (OpResult, error) {
	t, err := w.br.Schema.Table(op.Table)
	if err != nil {
		return OpResult{}, err
	}
	if !op.MissingNotFound {
		// Bulk inserts and transactions carry no files (files.go).
		if err := model.CheckNoFiles(t, op.Values); err != nil {
			return OpResult{}, err
		}
	}
	res, err := w.applyTable(t, op)
	if err != nil && !op.MissingNotFound && !w.bulk {
		var ee *model.Error
		if errors.As(err, &ee) && !strings.HasPrefix(ee.Message, "table [") {
			return res, &model.Error{Code: ee.Code, Message: "table [" + t.Name + "]: " + ee.Message}
		}
	}
	return res, err
}

// applyTable applies op to table t: reads the visible version of the
// record, then inserts, updates, deletes or gets it.
func (w *writer) applyTable(t *model.Table, op *model.Op) (OpResult, error) {
	tx := w.tx
	lin := w.br.Lineage
	w.prepRec = false
	ent, idLevel, exists, err := tx.d.IDs.LookupID(tx.batch, tx.d.ID, lin, t.ID, op.ID)
	if err != nil {
		return OpResult{}, err
	}
	var old codec.Record
	oldLevel := -1
	if exists {
		lvl, ok, err := layers.ReadRow(tx.batch, tx.d.ID, lin, t.ID, ent.Row, &old)
		if err != nil {
			return OpResult{}, err
		}
		if !ok {
			return OpResult{}, errors.New("engine: id map names a deleted row")
		}
		oldLevel = lvl
	}
	res := OpResult{Kind: op.Kind, ID: op.ID, Table: t.ID, Tbl: t}
	checkVersion := func() error {
		if op.IfVersion != nil && (!exists || old.Version != *op.IfVersion) {
			return model.Errorf(model.CodePrecondition, "version condition not met")
		}
		return nil
	}
	switch op.Kind {
	case model.OpGet:
		if exists {
			res.Rows = 1
			res.Rec = old.Clone()
		}
		return res, nil
	case model.OpDelete:
		if !exists {
			switch {
			case op.MissingNotFound:
				return res, model.NotFoundf("record [%s] not found", op.ID)
			case op.FailIfMissing:
				return res, model.Invalidf("no rows deleted")
			}
			return res, nil
		}
		if err := checkVersion(); err != nil {
			return res, err
		}
		res.Rows = 1
		res.Rec = old.Clone()
		if err := w.writeRow(t, ent.Row, &old, oldLevel, nil); err != nil {
			return res, err
		}
		return res, w.writeID(t, op.ID, ent.Row, idLevel, true)
	case model.OpInsert:
		if exists && op.CreateOnly {
			return res, model.Errorf(model.CodeAlreadyExists, "record [%s] already exists", op.ID)
		}
		if err := checkVersion(); err != nil {
			return res, err
		}
		rec := &codec.Record{ID: op.ID, Seq: tx.seq, CreatedAt: w.now.UnixNano(), UpdatedAt: w.now.UnixNano()}
		if pr := w.preparedRec(t); pr != nil {
			if err := w.checkLinks(t, pr.Fields); err != nil {
				return res, err
			}
			rec.Fields, w.prepRec = pr.Fields, true
		} else if err := w.fill(t, rec, op.Values, true, false); err != nil {
			return res, err
		}
		if exists {
			rec.Version = old.Version + 1
			rec.CreatedAt = old.CreatedAt
			return w.finishWrite(t, res, ent.Row, &old, oldLevel, rec)
		}
		res.Created = true
		return w.insertNew(t, res, rec, idLevel)
	case model.OpUpdate:
		if !exists {
			if !op.Upsert {
				return res, model.NotFoundf("record [%s] not found", op.ID)
			}
			rec := &codec.Record{ID: op.ID, Seq: tx.seq, CreatedAt: w.now.UnixNano(), UpdatedAt: w.now.UnixNano()}
			// An upsert that inserts applies numeric operators to null (0).
			if err := w.fill(t, rec, op.Values, true, true); err != nil {
				return res, err
			}
			res.Created = true
			return w.insertNew(t, res, rec, idLevel)
		}
		if err := checkVersion(); err != nil {
			return res, err
		}
		rec := old.Clone()
		rec.Seq, rec.Version, rec.UpdatedAt = tx.seq, old.Version+1, w.now.UnixNano()
		if err := w.fill(t, rec, op.Values, false, true); err != nil {
			return res, err
		}
		return w.finishWrite(t, res, ent.Row, &old, oldLevel, rec)
	}
	return res, model.Invalidf("unknown operation")
}

// insertNew writes rec as a new row of t, with a new row id. idLevel is
// the lineage index of the tombstone of its id, -1 for none.
func (w *writer) insertNew(t *model.Table, res OpResult, rec *codec.Record, idLevel int) (OpResult, error) {
	row, err := w.tx.allocRow(t.ID)
	if err != nil {
		return res, err
	}
	if err := w.check(t, row, nil, rec); err != nil {
		return res, err
	}
	if err := w.writeRow(t, row, nil, -1, rec); err != nil {
		return res, err
	}
	if err := w.writeID(t, rec.ID, row, idLevel, false); err != nil {
		return res, err
	}
	res.Rows = 1
	res.Rec = rec
	return res, nil
}

// finishWrite writes rec as the new version of row, replacing old.
func (w *writer) finishWrite(t *model.Table, res OpResult, row uint32, old *codec.Record, oldLevel int, rec *codec.Record) (OpResult, error) {
	if err := w.check(t, row, old, rec); err != nil {
		return res, err
	}
	if err := w.writeRow(t, row, old, oldLevel, rec); err != nil {
		return res, err
	}
	res.Rows = 1
	res.Rec = rec
	return res, nil
}

// fill sets the columns of rec from input values. full means the input
// replaces the record (insert, replace): absent columns get their default.
// Otherwise only the named columns change (update). numOps allows the
// numeric operators ($increment, ...), which apply to the current value.
func (w *writer) fill(t *model.Table, rec *codec.Record, values map[string]any, full, numOps bool) error {
	if full {
		if rec.Fields == nil {
			// Most writes give most columns: one array, not one per
			// column added.
			rec.Fields = make([]codec.Field, 0, len(t.Leaves))
		}
		rec.Fields = rec.Fields[:0]
	} else {
		// Drop values of columns the schema no longer has.
		kept := rec.Fields[:0]
		for _, f := range rec.Fields {
			if t.ByID[f.Col] != nil {
				kept = append(kept, f)
			}
		}
		rec.Fields = kept
	}
	given := w.givenOf(t)
	var walk func(prefix string, m map[string]any) error
	walk = func(prefix string, m map[string]any) error {
		keys := model.SortedKeys(m)
		for _, k := range keys {
			v := m[k]
			if prefix == "" && (k == "id" || k == "svc" || k == "xata") {
				continue
			}
			path := prefix + k
			c := t.ByPath[path]
			if c == nil {
				return model.Invalidf("column [%s]: column not found", path)
			}
			if c.Type == model.TypeObject {
				if v == nil {
					for _, leaf := range t.Leaves {
						if strings.HasPrefix(leaf.Path, path+".") {
							rec.Set(leaf.ID, codec.Null())
							given[leaf.ID] = true
						}
					}
					continue
				}
				sub, ok := v.(map[string]any)
				if !ok {
					return model.Invalidf("column [%s]: invalid value: expected an object", path)
				}
				if err := walk(path+".", sub); err != nil {
					return err
				}
				continue
			}
			given[c.ID] = true
			if ops, ok := v.(map[string]any); ok && (c.Type == model.TypeInt || c.Type == model.TypeFloat) {
				nv, err := w.numericOp(c, rec, ops, numOps)
				if err != nil {
					return err
				}
				rec.Set(c.ID, nv)
				continue
			}
			val, err := model.ToValue(c, v)
			if err != nil {
				return err
			}
			if val.IsNull() && c.NotNull {
				return model.Invalidf("column [%s]: null value on a notNull column", path)
			}
			if c.Type == model.TypeLink && !val.IsNull() && w.tx != nil {
				if err := w.checkLink(c, val.Str); err != nil {
					return err
				}
			}
			rec.Set(c.ID, val)
		}
		return nil
	}
	if err := walk("", values); err != nil {
		return err
	}
	if !full {
		return nil
	}
	for _, c := range t.Leaves {
		if given[c.ID] {
			continue
		}
		switch {
		case c.DefaultNow:
			rec.Set(c.ID, codec.Datetime(w.now))
		case c.DefaultVal != nil:
			v, err := model.ToValue(c, c.DefaultVal)
			if err != nil {
				return err
			}
			rec.Set(c.ID, v)
		case c.NotNull:
			return model.Invalidf("column [%s]: a value is required on a notNull column", c.Path)
		}
	}
	return nil
}

// givenOf returns w.given emptied, with room for the id of every leaf
// column of t.
func (w *writer) givenOf(t *model.Table) []bool {
	n := int(t.NextCol) + 1
	for _, c := range t.Leaves {
		n = max(n, int(c.ID)+1)
	}
	w.given = slices.Grow(w.given[:0], n)[:n]
	clear(w.given)
	return w.given
}

// numericOp applies $increment, $decrement, $multiply or $divide to the
// current value of a number column; a null counts as 0.
func (w *writer) numericOp(c *model.Column, rec *codec.Record, ops map[string]any, allowed bool) (codec.Value, error) {
	if len(ops) != 1 || !allowed {
		return codec.Value{}, model.Invalidf("column [%s]: invalid value: expected a number or one of $increment, $decrement, $multiply, $divide", c.Path)
	}
	var name string
	var arg any
	for name, arg = range ops {
	}
	operand, err := model.ToValue(&model.Column{Path: c.Path, Type: model.TypeFloat}, arg)
	if err != nil || operand.IsNull() {
		return codec.Value{}, model.Invalidf("column [%s]: %s needs a number", c.Path, name)
	}
	cur, _ := rec.Get(c.ID)
	x := operand.Float
	if c.Type == model.TypeInt {
		iv, err := model.ToValue(c, arg)
		if err != nil {
			return codec.Value{}, model.Invalidf("column [%s]: %s needs an integer on an int column", c.Path, name)
		}
		a, b := cur.Int, iv.Int
		var r int64
		switch name {
		case "$increment":
			r = a + b
		case "$decrement":
			r = a - b
		case "$multiply":
			r = a * b
		case "$divide":
			if b == 0 {
				return codec.Value{}, model.Invalidf("column [%s]: division by zero", c.Path)
			}
			r = a / b
		default:
			return codec.Value{}, model.Invalidf("column [%s]: unknown operator %s", c.Path, name)
		}
		return codec.Int(r), nil
	}
	a := cur.Float
	var r float64
	switch name {
	case "$increment":
		r = a + x
	case "$decrement":
		r = a - x
	case "$multiply":
		r = a * x
	case "$divide":
		if x == 0 {
			return codec.Value{}, model.Invalidf("column [%s]: division by zero", c.Path)
		}
		r = a / x
	default:
		return codec.Value{}, model.Invalidf("column [%s]: unknown operator %s", c.Path, name)
	}
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return codec.Value{}, model.Invalidf("column [%s]: result is not a finite number", c.Path)
	}
	return codec.Float(r), nil
}

// checkLink verifies that a link names an existing record of its target.
func (w *writer) checkLink(c *model.Column, id string) error {
	target := w.br.Schema.TableByID(c.LinkTable)
	if target == nil {
		return model.Invalidf("column [%s]: link target table not found", c.Path)
	}
	key := linkTarget{target.ID, id}
	if _, ok := w.linked[key]; ok {
		return nil
	}
	_, _, ok, err := w.tx.d.IDs.LookupID(w.tx.batch, w.tx.d.ID, w.br.Lineage, target.ID, id)
	if err != nil {
		return err
	}
	if !ok {
		return model.Invalidf("column [%s]: linked record [%s] not found in table [%s]", c.Path, id, target.Name)
	}
	if w.prep != nil {
		// Every operation of a prepared write inserts: a record found
		// stays there until the command is applied, and the records of a
		// bulk write link to the same few often.
		if w.linked == nil {
			w.linked = map[linkTarget]struct{}{}
		}
		w.linked[key] = struct{}{}
	}
	return nil
}

// resolveLinks looks up the link targets of a prepared write's records
// before its operations are applied, in the order of their id-map keys
// through one iterator (layers.SeekReader), and notes those found in
// w.linked: the records of a bulk write link to hundreds of records, each
// of which checkLink would otherwise look up with a storage read of its
// own. Every operation of a prepared write inserts, so a target found now
// is there when its record is applied; one not found is looked up again
// then (an earlier record of the write may insert it), and reported
// missing from there. A write of fewer than prepareMinOps records looks
// its targets up one by one.
func (w *writer) resolveLinks() error {
	p := w.prep
	if p == nil || len(p.recs) < prepareMinOps {
		return nil
	}
	t, err := w.br.Schema.Table(p.table.Name)
	if err != nil || t != p.table {
		return nil // applied as unprepared records
	}
	var links []*model.Column
	for _, c := range t.Leaves {
		if c.Type == model.TypeLink && w.br.Schema.TableByID(c.LinkTable) != nil {
			links = append(links, c)
		}
	}
	if len(links) == 0 {
		return nil
	}
	var targets []linkTarget
	for _, rec := range p.recs {
		if rec == nil {
			continue
		}
		for _, c := range links {
			if v, ok := rec.Get(c.ID); ok && !v.IsNull() {
				targets = append(targets, linkTarget{c.LinkTable, v.Str})
			}
		}
	}
	slices.SortFunc(targets, func(a, b linkTarget) int {
		return cmp.Or(cmp.Compare(a.table, b.table), strings.Compare(a.id, b.id))
	})
	targets = slices.Compact(targets)
	r := layers.NewSeekReader(w.tx.batch)
	defer r.Close()
	for _, k := range targets {
		_, _, ok, err := w.tx.d.IDs.LookupID(r, w.tx.d.ID, w.br.Lineage, k.table, k.id)
		if err != nil {
			return err
		}
		if ok {
			if w.linked == nil {
				w.linked = make(map[linkTarget]struct{}, len(targets))
			}
			w.linked[k] = struct{}{}
		}
	}
	return r.Close()
}

// linkTarget is a record a link names: its table's id and its id.
type linkTarget struct {
	table uint32
	id    string
}

// check enforces unique columns for a row about to hold rec.
func (w *writer) check(t *model.Table, row uint32, old, rec *codec.Record) error {
	for _, c := range t.Leaves {
		if !c.Unique {
			continue
		}
		v, ok := rec.Get(c.ID)
		if !ok {
			continue
		}
		if old != nil {
			if ov, had := old.Get(c.ID); had && codec.Equal(ov, v) {
				continue
			}
		}
		id, err := codec.PostingBitmapID(nil, c.ID, v)
		if err != nil {
			return err
		}
		rows, err := layers.ReadBitmap(w.tx.batch, w.tx.d.ID, w.br.Lineage, t.ID, id, w.tx.pending)
		if err != nil {
			return err
		}
		rows.Remove(row)
		if !rows.IsEmpty() {
			return model.Invalidf("column [%s]: value is not unique", c.Path)
		}
	}
	return nil
}

// writeRow stores a new version of a row (rec nil: a delete) in the branch's
// top layer and stages its bitmap changes. old is the visible version (nil
// for a new row) and oldLevel the lineage index it was read from.
func (w *writer) writeRow(t *model.Table, row uint32, old *codec.Record, oldLevel int, rec *codec.Record) error {
	// model.File content goes in the same batch; rec's file values become final.
	if err := w.writeFiles(t, old, rec); err != nil {
		return err
	}
	tx := w.tx
	top := w.br.Lineage[0].Layer
	hasParent := len(w.br.Lineage) > 1
	forkSeq, forked := tx.state().Fork(top)
	tx.d.Filled.MarkFilled(top, t.ID, codec.KindRecordCur)
	key := codec.RecordKey(nil, tx.d.ID, top, t.ID, row)
	if old != nil && oldLevel == 0 && forked && old.Seq <= forkSeq {
		hk := codec.RecordHistKey(nil, tx.d.ID, top, t.ID, row, old.Seq)
		if err := tx.batch.Set(hk, codec.AppendRecord(nil, old), nil); err != nil {
			return err
		}
	}
	switch {
	case rec != nil:
		rec.Seq = tx.seq
		if err := tx.batch.Set(key, codec.AppendRecord(nil, rec), nil); err != nil {
			return err
		}
	case hasParent || forked:
		tomb := &codec.Record{ID: old.ID, Seq: tx.seq, Deleted: true}
		if err := tx.batch.Set(key, codec.AppendRecord(nil, tomb), nil); err != nil {
			return err
		}
	default:
		if err := tx.batch.Delete(key, nil); err != nil {
			return err
		}
	}
	tx.changes = append(tx.changes, RowChange{Branch: w.br.ID, Table: t.ID, Row: row, Rec: rec})
	// Bitmaps of the top layer.
	if old == nil && rec != nil && w.deferJoin(t, row) {
		return nil
	}
	w.flushJoins()
	pt := tx.pendingTable(top, t.ID)
	if old != nil && oldLevel > 0 {
		pt.Add(codec.MaskBitmapID(), row, true)
	}
	if old == nil || oldLevel > 0 {
		// Nothing to take away: the row joins each of its bitmaps, staged
		// straight from the record.
		if rec != nil {
			w.joinAll(pt, t, row, rec)
		}
		return nil
	}
	if w.before == nil {
		w.before, w.after = map[string]struct{}{}, map[string]struct{}{}
	}
	before, after := w.before, w.after
	clear(before)
	clear(after)
	layers.AddMemberships(before, t, old)
	if rec != nil {
		layers.AddMemberships(after, t, rec)
		tx.changes[len(tx.changes)-1].Lens = layers.FieldLengths(after)
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			pt.Add([]byte(id), row, false)
		}
	}
	var terms map[string]struct{}
	for id := range after {
		if _, ok := before[id]; !ok {
			pt.Add([]byte(id), row, true)
			if term, ok := layers.TermOf(id); ok {
				if terms == nil {
					terms = tx.termsOf(w.br.ID, t.ID)
				}
				terms[term] = struct{}{}
			}
		}
	}
	return nil
}

// joinAll stages the addition of a row to every bitmap rec belongs to,
// notes the words new to the layer and the lengths of its text fields.
func (w *writer) joinAll(pt *layers.PendingTable, t *model.Table, row uint32, rec *codec.Record) {
	tx := w.tx
	ch := &tx.changes[len(tx.changes)-1]
	var terms map[string]struct{}
	layers.VisitMemberships(t, rec, func(id []byte, term string) {
		pt.Add(id, row, true)
		if term != "" {
			if terms == nil {
				terms = tx.termsOf(w.br.ID, t.ID)
			}
			if _, ok := terms[term]; !ok {
				terms[term] = struct{}{}
			}
			return
		}
		if fl, ok := layers.LengthOfID(id); ok {
			ch.Lens = append(ch.Lens, fl)
		}
	})
}

// writeID stores (or, deleted, removes) the id map entry of a record in the
// branch's top layer. level is the lineage index of the visible entry (a
// tombstone included), -1 for none: only an entry of the top layer (0)
// is read again, and only to keep its version for the layer's forks.
func (w *writer) writeID(t *model.Table, id string, row uint32, level int, deleted bool) error {
	tx := w.tx
	top := w.br.Lineage[0].Layer
	tx.d.Filled.MarkFilled(top, t.ID, codec.KindIDMapCur)
	tx.d.IDs.Add(top, t.ID, id)
	key := codec.IDMapKey(nil, tx.d.ID, top, t.ID, id)
	forkSeq, forked := tx.state().Fork(top)
	if forked && level == 0 {
		if err := w.keepIDVersion(t, key, id, forkSeq); err != nil {
			return err
		}
	}
	// A tombstone is kept while the layer has forks or lower layers: a
	// missing current key means "absent at every seq" to readers.
	if deleted && len(w.br.Lineage) == 1 && !forked {
		// For that to hold, the id's history goes too. Versions kept for
		// forks that have since been deleted would otherwise outlive
		// the current key: once the id is written again under a later
		// fork, that fork would find the stale version instead of
		// "absent" (and fail writing the id: a deleted row).
		if err := dropIDHistory(tx.batch, codec.IDMapHistKey(nil, tx.d.ID, top, t.ID, id, 0)); err != nil {
			return err
		}
		return tx.batch.Delete(key, nil)
	}
	return tx.batch.Set(key, layers.EncodeIDEntry(layers.IDEntry{Row: row, Seq: tx.seq, Deleted: deleted}), nil)
}

// keepIDVersion copies the current id map entry at key, of a layer with
// forks, to its history when a fork made since forkSeq may read it.
func (w *writer) keepIDVersion(t *model.Table, key []byte, id string, forkSeq uint64) error {
	tx := w.tx
	v, closer, err := tx.batch.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	cur, derr := layers.DecodeIDEntry(v)
	raw := append([]byte(nil), v...)
	closer.Close()
	if derr != nil {
		return derr
	}
	if cur.Seq > forkSeq {
		return nil
	}
	hk := codec.IDMapHistKey(nil, tx.d.ID, w.br.Lineage[0].Layer, t.ID, id, cur.Seq)
	return tx.batch.Set(hk, raw, nil)
}

// dropIDHistory deletes the history versions of one id-map entry; histKey is
// any of its history keys (the seq suffix is ignored). No branch reads them
// any more when this is called, and there are usually none.
func dropIDHistory(b *pebble.Batch, histKey []byte) error {
	prefix := histKey[:len(histKey)-8]
	it, err := b.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return err
	}
	var keys [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, bytes.Clone(it.Key()))
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, k := range keys {
		if err := b.Delete(k, nil); err != nil {
			return err
		}
	}
	return nil
}
