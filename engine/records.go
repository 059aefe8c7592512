package engine

import (
	"bytes"
	"context"
	"errors"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/layers"
	"github.com/coppice-db/coppice/engine/internal/model"
	"github.com/coppice-db/coppice/index"
)

// Ref addresses a branch: a workspace (core id), a database name and a
// branch name.
type Ref struct {
	Workspace string
	Database  string
	Branch    string
}

// Record is a record as callers see it.
type Record struct {
	ID        string
	Version   uint64
	CreatedAt time.Time
	UpdatedAt time.Time
	// Values holds the non-null columns by name; object columns are nested
	// map[string]any. Value types are those FromValue documents.
	Values map[string]any

	stored *codec.Record // the stored version, for projections
}

// OpResult is the outcome of one operation.
type OpResult struct {
	Kind OpKind
	ID   string
	// Rows is 1 when the operation wrote or found a record, else 0.
	Rows int
	// Created is true when an insert or upsert created the record.
	Created bool
	// Record is the record after the write; for a delete, before it; for a
	// get, the record read (nil when missing).
	Record *Record
}

// Limits of one request.
const (
	MaxBulkRecords   = 1000
	MaxTransactionOp = 1000
)

// resolveOps fixes the non-deterministic parts of a write before it is
// applied: generated ids and the time. It returns the operations whose ids
// are invalid; bulk says they are the records of a bulk insert.
func (e *Engine) resolveOps(ops []Op, bulk bool) (time.Time, []OpError) {
	now := e.now()
	var errs []OpError
	for i := range ops {
		op := &ops[i]
		if err := e.resolveOp(op, now, true); err != nil {
			errs = append(errs, OpError{Index: i, Err: opError(op, err, bulk)})
		}
	}
	return now, errs
}

// opError names the table in an error of a transaction's operation, as
// writer.apply does; errors of bulk inserts (bulk) and single-record
// writes stay as they are.
func opError(op *Op, err *Error, bulk bool) *Error {
	if op.MissingNotFound || bulk || strings.HasPrefix(err.Message, "table [") {
		return err
	}
	return &Error{Code: err.Code, Message: "table [" + op.Table + "]: " + err.Message}
}

// resolveOp checks the id of one operation, taking it from the body or,
// when generate is set, generating one for an insert without.
func (e *Engine) resolveOp(op *Op, now time.Time, generate bool) *Error {
	if op.Values != nil {
		if v, ok := op.Values["id"]; ok {
			s, isStr := v.(string)
			if !isStr {
				return model.Invalidf("id must be a string")
			}
			if op.ID == "" && op.Kind == OpInsert {
				op.ID = s
			} else if s != op.ID {
				return model.Invalidf("id [%s] in the body does not match the record id [%s]", s, op.ID)
			}
		}
	}
	if op.ID == "" {
		if op.Kind != OpInsert {
			return model.Invalidf("record id is required")
		}
		if generate {
			op.ID = e.ids.Next("rec_", now)
		}
		return nil
	}
	return model.RecordIDError(op.ID)
}

// CheckOps checks operations against the schema of a branch alone, without
// running them: tables, record ids, columns, value types, notNull columns
// without a default on inserts, numeric operators and file values. It
// reports every failing operation in *OpErrors, and nil when all pass;
// what depends on the records (existence, versions, unique values, link
// targets) is left to Write.
func (e *Engine) CheckOps(ref Ref, ops []Op) error {
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return err
	}
	b, err := d.state.Load().branch(ref.Branch)
	if err != nil {
		return err
	}
	if errs := e.checkOps(b.Schema, ops, nil, false); errs != nil {
		return &OpErrors{Errors: errs}
	}
	return nil
}

// checkOps adds to errs, in index order, the operations not named there
// yet that fail against schema s; see CheckOps. bulk says they are the
// records of a bulk insert.
func (e *Engine) checkOps(s *model.Schema, ops []Op, errs []OpError, bulk bool) []OpError {
	named := make(map[int]bool, len(errs))
	for _, oe := range errs {
		named[oe.Index] = true
	}
	for i := range ops {
		if named[i] {
			continue
		}
		op := ops[i] // a copy: resolveOp may set its id
		if err := e.checkOp(s, &op, bulk); err != nil {
			errs = append(errs, OpError{Index: i, Err: err})
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Index < errs[j].Index })
	return errs
}

// checkOp checks one operation against schema s. Its errors read as
// writer.apply's do.
func (e *Engine) checkOp(s *model.Schema, op *Op, bulk bool) *Error {
	t, err := s.Table(op.Table)
	if err != nil {
		return err.(*Error)
	}
	if ee := e.resolveOp(op, time.Time{}, false); ee != nil {
		return opError(op, ee, bulk)
	}
	var ee *Error
	if !op.MissingNotFound && errors.As(model.CheckNoFiles(t, op.Values), &ee) {
		return ee // named without the table, as in bulk inserts
	}
	// Filling a scratch record checks every value; without a transaction
	// the writer leaves link targets alone, which earlier operations of
	// the same request may still create.
	w := &writer{now: time.Unix(0, 0)}
	var werr error
	switch op.Kind {
	case OpInsert:
		werr = w.fill(t, &codec.Record{}, op.Values, true, false)
	case OpUpdate:
		// An upsert may insert, but whether it does depends on the records.
		werr = w.fill(t, &codec.Record{}, op.Values, false, true)
	}
	if errors.As(werr, &ee) {
		return opError(op, ee, bulk)
	}
	return nil
}

// Write applies ops as one transaction on a branch: all of them or none.
// Later operations see earlier ones. A failing operation returns *OpErrors
// naming it; unless single is set, messages are prefixed with the table.
//
// A write whose ctx has ended is not started; once it has the database,
// it runs to the end, so that applying it depends on nothing but the
// database and the operations.
func (e *Engine) Write(ctx context.Context, ref Ref, ops []Op) ([]OpResult, error) {
	return e.write(ctx, ref, ops, false)
}

// write is Write; bulk says ops are the records of a bulk insert.
func (e *Engine) write(ctx context.Context, ref Ref, ops []Op, bulk bool) ([]OpResult, error) {
	if len(ops) > MaxTransactionOp {
		return nil, model.Invalidf("a transaction holds at most %d operations, got %d", MaxTransactionOp, len(ops))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return nil, err
	}
	ops = append([]Op(nil), ops...)
	now, errs := e.resolveOps(ops, bulk)
	if len(ops) > 0 && !bulk && !ops[0].MissingNotFound {
		// A transaction reports every operation that cannot run, not only
		// the first: check them all against the schema before running any.
		b, err := d.state.Load().branch(ref.Branch)
		if err != nil {
			return nil, err
		}
		errs = e.checkOps(b.Schema, ops, errs, false)
	}
	if errs != nil {
		return nil, &OpErrors{Errors: errs}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := e.apply(d, &writeRecords{Branch: ref.Branch, Now: now, Ops: ops, Bulk: bulk})
	if err != nil {
		return nil, err
	}
	applied := res.([]opResult)
	results := make([]OpResult, len(applied))
	for i, r := range applied {
		results[i] = r.public()
	}
	return results, nil
}

// writeRecords writes records, with everything non-deterministic
// resolved: record ids and the time. Applying it reads only the database
// state. Bulk marks the records of a bulk insert, whose errors name no
// table. The result is an []opResult, one per operation.
type writeRecords struct {
	Branch string    `json:"branch"`
	Now    time.Time `json:"now"`
	Ops    []Op      `json:"ops"`
	Bulk   bool      `json:"bulk,omitempty"`
}

func (c *writeRecords) apply(tx *dbTx) (any, error) {
	b, err := tx.st.branch(c.Branch)
	if err != nil {
		return nil, err
	}
	w := &writer{tx: tx, br: b, now: c.Now, bulk: c.Bulk}
	results := make([]opResult, len(c.Ops))
	for i := range c.Ops {
		r, err := w.apply(&c.Ops[i])
		if err != nil {
			var ee *Error
			if !errors.As(err, &ee) {
				return nil, err
			}
			return nil, &OpErrors{Errors: []OpError{{Index: i, Err: ee}}}
		}
		results[i] = r
	}
	return results, nil
}

// opResult is the outcome of one operation as a command returns it: the
// record as stored, which the caller turns into the public form.
type opResult struct {
	Kind    OpKind
	ID      string
	Rows    int
	Created bool
	Table   uint32 // the id of the table written
	// rec is the record after the write; for a delete, before it; for a
	// get, the record read (nil when missing). It is the result's own. t
	// is its table.
	rec *codec.Record
	t   *model.Table
}

// public returns the result as callers see it.
func (r *opResult) public() OpResult {
	out := OpResult{Kind: r.Kind, ID: r.ID, Rows: r.Rows, Created: r.Created}
	if r.rec != nil {
		out.Record = ownedPublicRecord(r.t, r.rec)
	}
	return out
}

// WriteOne applies a single operation and returns its result; failures are
// plain *Error values.
func (e *Engine) WriteOne(ref Ref, op Op) (OpResult, error) {
	op.MissingNotFound = true
	res, err := e.Write(context.Background(), ref, []Op{op})
	var oe *OpErrors
	if errors.As(err, &oe) && len(oe.Errors) == 1 {
		return OpResult{}, oe.Errors[0].Err
	}
	if err != nil {
		return OpResult{}, err
	}
	return res[0], nil
}

// BulkInsert inserts up to MaxBulkRecords records in one batch: all or
// nothing. Invalid records are all reported in *OpErrors. ctx is as for
// Write.
func (e *Engine) BulkInsert(ctx context.Context, ref Ref, tableName string, records []map[string]any) ([]OpResult, error) {
	if len(records) > MaxBulkRecords {
		return nil, model.Invalidf("bulk insert takes at most %d records, got %d", MaxBulkRecords, len(records))
	}
	ops := make([]Op, len(records))
	for i, r := range records {
		ops[i] = Op{Kind: OpInsert, Table: tableName, Values: r, CreateOnly: true}
	}
	res, err := e.write(ctx, ref, ops, true)
	var oe *OpErrors
	if errors.As(err, &oe) {
		// Report every invalid record, not only the first: check the rest
		// against the schema alone (a missing table is one failure, not
		// one per record). Checking only after a failure keeps the common,
		// valid bulk from filling every record twice.
		if _, b, _, terr := e.resolveTable(ref, tableName); terr == nil {
			oe.Errors = e.checkOps(b.Schema, ops, oe.Errors, true)
		}
	}
	return res, err
}

// Get reads one record of a branch.
func (e *Engine) Get(ref Ref, tableName, id string) (*Record, error) {
	d, err := e.database(ref.Workspace, ref.Database)
	if err != nil {
		return nil, err
	}
	d.gcMu.RLock()
	defer d.gcMu.RUnlock()
	b, err := d.state.Load().branch(ref.Branch)
	if err != nil {
		return nil, err
	}
	t, err := b.Schema.Table(tableName)
	if err != nil {
		return nil, err
	}
	var rec codec.Record
	if err := e.readRecord(d, b, t, id, &rec); err != nil {
		return nil, err
	}
	return publicRecord(t, &rec), nil
}

// publicRecord converts a stored record to its public form.
func publicRecord(t *model.Table, rec *codec.Record) *Record {
	return ownedPublicRecord(t, rec.Clone())
}

// ownedPublicRecord is publicRecord of a record nobody else holds, which
// the result keeps.
func ownedPublicRecord(t *model.Table, rec *codec.Record) *Record {
	out := &Record{
		stored: rec,
		ID:     rec.ID, Version: rec.Version,
		CreatedAt: time.Unix(0, rec.CreatedAt).UTC(), UpdatedAt: time.Unix(0, rec.UpdatedAt).UTC(),
		Values: make(map[string]any, len(rec.Fields)),
	}
	for _, f := range rec.Fields {
		c := t.ByID[f.Col]
		if c == nil {
			continue // a deleted column
		}
		index.SetPath(out.Values, c.Path, model.FromValue(c, f.Val))
	}
	return out
}

// writer applies operations inside one command.
type writer struct {
	tx   *dbTx
	br   *model.Branch
	now  time.Time
	bulk bool // the records of a bulk insert: errors name no table
	// before and after are the bitmap memberships of the row writeRow is
	// writing, kept between rows so that their maps do not grow anew.
	before, after map[string]struct{}
}

func (w *writer) apply(op *Op) (opResult, error) {
	t, err := w.br.Schema.Table(op.Table)
	if err != nil {
		return opResult{}, err
	}
	if !op.MissingNotFound {
		// Bulk inserts and transactions carry no files (files.go).
		if err := model.CheckNoFiles(t, op.Values); err != nil {
			return opResult{}, err
		}
	}
	res, err := w.applyTable(t, op)
	if err != nil && !op.MissingNotFound && !w.bulk {
		var ee *Error
		if errors.As(err, &ee) && !strings.HasPrefix(ee.Message, "table [") {
			return res, &Error{Code: ee.Code, Message: "table [" + t.Name + "]: " + ee.Message}
		}
	}
	return res, err
}

func (w *writer) applyTable(t *model.Table, op *Op) (opResult, error) {
	tx := w.tx
	lin := w.br.Lineage
	ent, idLevel, exists, err := layers.LookupID(tx.batch, tx.d.id, lin, t.ID, op.ID)
	if err != nil {
		return opResult{}, err
	}
	var old codec.Record
	oldLevel := -1
	if exists {
		lvl, ok, err := layers.ReadRow(tx.batch, tx.d.id, lin, t.ID, ent.Row, &old)
		if err != nil {
			return opResult{}, err
		}
		if !ok {
			return opResult{}, errors.New("engine: id map names a deleted row")
		}
		oldLevel = lvl
	}
	res := opResult{Kind: op.Kind, ID: op.ID, Table: t.ID, t: t}
	checkVersion := func() error {
		if op.IfVersion != nil && (!exists || old.Version != *op.IfVersion) {
			return Errorf(CodePrecondition, "version condition not met")
		}
		return nil
	}
	switch op.Kind {
	case OpGet:
		if exists {
			res.Rows = 1
			res.rec = old.Clone()
		}
		return res, nil
	case OpDelete:
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
		res.rec = old.Clone()
		if err := w.writeRow(t, ent.Row, &old, oldLevel, nil); err != nil {
			return res, err
		}
		return res, w.writeID(t, op.ID, ent.Row, idLevel, true)
	case OpInsert:
		if exists && op.CreateOnly {
			return res, Errorf(CodeAlreadyExists, "record [%s] already exists", op.ID)
		}
		if err := checkVersion(); err != nil {
			return res, err
		}
		rec := &codec.Record{ID: op.ID, Seq: tx.seq, CreatedAt: w.now.UnixNano(), UpdatedAt: w.now.UnixNano()}
		if err := w.fill(t, rec, op.Values, true, false); err != nil {
			return res, err
		}
		if exists {
			rec.Version = old.Version + 1
			rec.CreatedAt = old.CreatedAt
			return w.finishWrite(t, res, ent.Row, &old, oldLevel, rec)
		}
		res.Created = true
		return w.insertNew(t, res, rec)
	case OpUpdate:
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
			return w.insertNew(t, res, rec)
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

func (w *writer) insertNew(t *model.Table, res opResult, rec *codec.Record) (opResult, error) {
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
	if err := w.writeID(t, rec.ID, row, -1, false); err != nil {
		return res, err
	}
	res.Rows = 1
	res.rec = rec
	return res, nil
}

func (w *writer) finishWrite(t *model.Table, res opResult, row uint32, old *codec.Record, oldLevel int, rec *codec.Record) (opResult, error) {
	if err := w.check(t, row, old, rec); err != nil {
		return res, err
	}
	if err := w.writeRow(t, row, old, oldLevel, rec); err != nil {
		return res, err
	}
	res.Rows = 1
	res.rec = rec
	return res, nil
}

// fill sets the columns of rec from input values. full means the input
// replaces the record (insert, replace): absent columns get their default.
// Otherwise only the named columns change (update). numOps allows the
// numeric operators ($increment, ...), which apply to the current value.
func (w *writer) fill(t *model.Table, rec *codec.Record, values map[string]any, full, numOps bool) error {
	if full {
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
	given := map[uint32]bool{}
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
			if c.Type == TypeObject {
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
			if ops, ok := v.(map[string]any); ok && (c.Type == TypeInt || c.Type == TypeFloat) {
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
			if c.Type == TypeLink && !val.IsNull() && w.tx != nil {
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
	operand, err := model.ToValue(&model.Column{Path: c.Path, Type: TypeFloat}, arg)
	if err != nil || operand.IsNull() {
		return codec.Value{}, model.Invalidf("column [%s]: %s needs a number", c.Path, name)
	}
	cur, _ := rec.Get(c.ID)
	x := operand.Float
	if c.Type == TypeInt {
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
	target := w.br.Schema.ByID[c.LinkTable]
	if target == nil {
		return model.Invalidf("column [%s]: link target table not found", c.Path)
	}
	_, _, ok, err := layers.LookupID(w.tx.batch, w.tx.d.id, w.br.Lineage, target.ID, id)
	if err != nil {
		return err
	}
	if !ok {
		return model.Invalidf("column [%s]: linked record [%s] not found in table [%s]", c.Path, id, target.Name)
	}
	return nil
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
		rows, err := layers.ReadBitmap(w.tx.batch, w.tx.d.id, w.br.Lineage, t.ID, id, w.tx.pending)
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
	// File content goes in the same batch; rec's file values become final.
	if err := w.writeFiles(t, old, rec); err != nil {
		return err
	}
	tx := w.tx
	top := w.br.Lineage[0].Layer
	hasParent := len(w.br.Lineage) > 1
	forkSeq, forked := tx.state().forks[top]
	tx.d.filled.MarkFilled(top, t.ID, codec.KindRecordCur)
	key := codec.RecordKey(nil, tx.d.id, top, t.ID, row)
	if old != nil && oldLevel == 0 && forked && old.Seq <= forkSeq {
		hk := codec.RecordHistKey(nil, tx.d.id, top, t.ID, row, old.Seq)
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
	tx.changes = append(tx.changes, rowChange{branch: w.br.ID, table: t.ID, row: row, rec: rec})
	// Bitmaps of the top layer.
	if w.before == nil {
		w.before, w.after = map[string]struct{}{}, map[string]struct{}{}
	}
	before, after := w.before, w.after
	clear(before)
	clear(after)
	if old != nil && oldLevel == 0 {
		layers.AddMemberships(before, t, old)
	}
	if old != nil && oldLevel > 0 {
		tx.addBitmap(top, t.ID, string(codec.MaskBitmapID()), row, true)
	}
	if rec != nil {
		layers.AddMemberships(after, t, rec)
		tx.changes[len(tx.changes)-1].lens = layers.FieldLengths(after)
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			tx.addBitmap(top, t.ID, id, row, false)
		}
	}
	var terms map[string]struct{}
	for id := range after {
		if _, ok := before[id]; !ok {
			tx.addBitmap(top, t.ID, id, row, true)
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

// writeID stores (or, deleted, removes) the id map entry of a record in the
// branch's top layer. level is the lineage index of the visible entry, -1
// for none.
func (w *writer) writeID(t *model.Table, id string, row uint32, level int, deleted bool) error {
	tx := w.tx
	top := w.br.Lineage[0].Layer
	tx.d.filled.MarkFilled(top, t.ID, codec.KindIDMapCur)
	key := codec.IDMapKey(nil, tx.d.id, top, t.ID, id)
	forkSeq, forked := tx.state().forks[top]
	if v, closer, err := tx.batch.Get(key); err == nil {
		cur, derr := layers.DecodeIDEntry(v)
		raw := append([]byte(nil), v...)
		closer.Close()
		if derr != nil {
			return derr
		}
		if forked && cur.Seq <= forkSeq {
			hk := codec.IDMapHistKey(nil, tx.d.id, top, t.ID, id, cur.Seq)
			if err := tx.batch.Set(hk, raw, nil); err != nil {
				return err
			}
		}
	} else if !errors.Is(err, pebble.ErrNotFound) {
		return err
	}
	// A tombstone is kept while the layer has forks or lower layers: a
	// missing current key means "absent at every seq" to readers.
	if deleted && len(w.br.Lineage) == 1 && !forked {
		// For that to hold, the id's history goes too. Versions kept for
		// forks that have since been deleted would otherwise outlive
		// the current key: once the id is written again under a later
		// fork, that fork would find the stale version instead of
		// "absent" (and fail writing the id: a deleted row).
		if err := dropIDHistory(tx.batch, codec.IDMapHistKey(nil, tx.d.id, top, t.ID, id, 0)); err != nil {
			return err
		}
		return tx.batch.Delete(key, nil)
	}
	return tx.batch.Set(key, layers.EncodeIDEntry(layers.IDEntry{Row: row, Seq: tx.seq, Deleted: deleted}), nil)
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
